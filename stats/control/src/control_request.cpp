#include "control_request.hpp"

#include <array>

#include "text_escape.hpp"

namespace arenastat::wire {
namespace {

constexpr std::array process_table{
    opt::spec{.name = "-H", .help = "human-readable sizes"},
    opt::spec{.name = "--json", .help = "compact JSON: the report's \"process\" object plus \"pid\""},
};
constexpr std::array metrics_table{
    opt::spec{.name = "--openmetrics", .help = "OpenMetrics 1.0.0 instead of the text format 0.0.4"},
    opt::spec{.name = "--depth", .type = opt::kind::count, .value = "N",
              .help = "scope groups keep N parts of the name (default ARENASTAT_METRICS_DEPTH, else 1)", .min = 1,
              .max = max_metrics_depth},
};

// In a function: the report's tables live in another file (no static initialisation order to rely on).
const std::array<command_info, 9>& command_table() {
  static const std::array<command_info, 9> table{{
    {command::help, "help", {}, "", "list the commands", false, false},
    {command::info, "info", {}, "", "pid, program, socket and connection counters of the server", false, false},
    {command::stats, "stats", opt::report_specs(), "", "the report of every scope and account", true, true},
    {command::baseline, "baseline", {}, "", "record the current entries as the baseline for diff", false, true},
    {command::diff, "diff", opt::diff_specs(), "", "every entry's change since the baseline, largest first", true, true},
    {command::reset, "reset", {}, "", "reset every peak to its current value", false, false},
    {command::process, "process", process_table, "",
     "VmRSS, VmHWM, RssAnon and jemalloc's figures when jemalloc is in use", true, false},
    {command::dump, "dump", {}, "[PATH]",
     "write the summary to PATH (default arenastat.<pid>.<YYYYmmddHHMMSS>.txt) and print its path", true, true},
    {command::metrics, "metrics", metrics_table, "",
     "the Prometheus exposition (text format 0.0.4, or OpenMetrics 1.0.0)", true, true},
  }};
  return table;
}

bool is_space(char c) noexcept { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Bytes a request may contain: printable ASCII, TAB, and any byte >= 0x80 (UTF-8 paths).
bool allowed_byte(unsigned char c) noexcept { return c == '\t' || (c >= 0x20 && c != 0x7f); }

std::string hex_byte(unsigned char c) {
  constexpr char digits[] = "0123456789abcdef";
  return {'0', 'x', digits[c >> 4], digits[c & 0xf]};
}

parse_result fail(std::string message) { return {std::nullopt, std::move(message)}; }

}  // namespace

std::span<const command_info> commands() noexcept { return command_table(); }

std::string arguments(const command_info& c) {
  std::string out = opt::synopsis(c.options);
  if (!c.operands.empty()) {
    if (!out.empty()) out += ' ';
    out += c.operands;
  }
  return out;
}

std::string help_entry(std::string_view name, std::string_view synopsis, std::string_view description,
                       std::span<const opt::spec> options) {
  // Appended piece by piece: "literal" + std::string trips a GCC 12 -O3
  // false positive (-Wrestrict).
  std::string out = "  ";
  out += name;
  if (!synopsis.empty()) {
    out += ' ';
    out += synopsis;
  }
  out += "\n      ";
  out += description;
  out += '\n';
  out += opt::help_text(options, "        ");
  return out;
}

const opt::grammar& process_grammar() noexcept {
  static const opt::grammar g{.who = "process: ", .specs = process_table};
  return g;
}

const opt::grammar& metrics_grammar() noexcept {
  static const opt::grammar g{.who = "metrics: ", .specs = metrics_table};
  return g;
}

const command_info* find_command(std::string_view name) noexcept {
  for (const command_info& c : command_table()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

parse_result parse_request(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() >= max_request_bytes) {
    return fail("request longer than " + std::to_string(max_request_bytes - 1) + " bytes");
  }
  for (std::size_t i = 0; i < line.size(); ++i) {
    const auto c = static_cast<unsigned char>(line[i]);
    if (!allowed_byte(c)) {
      return fail("request contains control byte " + hex_byte(c) + " at offset " + std::to_string(i));
    }
  }
  const std::string_view text = trim(line);
  if (text.empty()) return fail("empty request: expected a command (try 'help')");

  std::size_t end = 0;
  while (end < text.size() && !is_space(text[end])) ++end;
  const std::string_view word = text.substr(0, end);
  const std::string_view rest = trim(text.substr(end));

  const command_info* info = find_command(word);
  if (info == nullptr) {
    return fail("unknown command '" + detail::escape_text(word.substr(0, 64)) + "' (try 'help')");
  }
  if (!info->takes_arguments && !rest.empty()) {
    return fail("command '" + std::string(info->name) + "' takes no arguments, got '" +
                detail::escape_text(rest.substr(0, 64)) + "'");
  }
  return {request{info->cmd, std::string(rest)}, {}};
}

bool walks_table(std::string_view line) noexcept {
  try {
    const parse_result r = parse_request(line);
    if (!r.value) return false;
    for (const command_info& c : command_table())
      if (c.cmd == r.value->cmd) return c.walks_table;
  } catch (...) {  // out of memory: answered at once (its answer will say so)
  }
  return false;
}

request_reader::state request_reader::feed(std::string_view bytes) {
  if (state_ != state::incomplete) return state_;
  seen_ += bytes.size();
  const std::size_t lf = bytes.find('\n');
  const std::string_view part = lf == std::string_view::npos ? bytes : bytes.substr(0, lf);
  // The limit counts the LF: a line of max_request_bytes - 1 bytes plus LF fits.
  if (line_.size() + part.size() + (lf == std::string_view::npos ? 0 : 1) > max_request_bytes ||
      (lf == std::string_view::npos && line_.size() + part.size() >= max_request_bytes)) {
    state_ = state::too_long;
    line_.clear();
    return state_;
  }
  line_.append(part);
  if (lf != std::string_view::npos) state_ = state::complete;
  return state_;
}

std::string single_line(std::string_view text) {
  std::string out;
  const bool cut = text.size() > max_request_bytes;
  std::size_t n = cut ? max_request_bytes - cut_mark.size() : text.size();
  // Cut between UTF-8 sequences, not inside one: a continuation byte (10xxxxxx)
  // at n means the sequence before it goes too (a sequence has at most 3).
  for (int back = 0; cut && back < 3 && (static_cast<unsigned char>(text[n]) & 0xc0) == 0x80; ++back) --n;
  out.reserve(n + (cut ? cut_mark.size() : 0));
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    out.push_back(c < 0x20 || c == 0x7f ? ' ' : static_cast<char>(c));
  }
  if (cut) out += cut_mark;
  return out;
}

}  // namespace arenastat::wire
