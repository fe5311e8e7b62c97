// The option table mechanism and the report options' table (options.hpp).
#include "options.hpp"
#include "quoted.hpp"

#include <cctype>
#include <charconv>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace arenastat::opt {
namespace {

bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The i-th alternative of "a|b|c", or "" past the last.
std::string_view choice_at(std::string_view choices, std::size_t i) {
  for (; i > 0; --i) {
    const std::size_t bar = choices.find('|');
    if (bar == std::string_view::npos) return {};
    choices.remove_prefix(bar + 1);
  }
  return choices.substr(0, choices.find('|'));
}

constexpr std::uint64_t unbounded = std::numeric_limits<std::uint64_t>::max();

// "expected --top=N with N a whole number of at least 1", "expected -d SECONDS with ...".
std::string expectation(const spec& s) {
  const std::string u = usage(s);
  switch (s.type) {
    case kind::flag: return std::string(s.name) + " takes no value";
    case kind::count:
      if (s.max == unbounded)
        return "expected " + u + " with " + std::string(s.value) + " a whole number of at least " +
               std::to_string(s.min);
      return "expected " + u + " with " + std::string(s.value) + " from " + std::to_string(s.min) + " to " +
             std::to_string(s.max);
    case kind::real:
      return "expected " + u + " with " + std::string(s.value) + " from " + number_text(s.lo) + " to " +
             number_text(s.hi);
    case kind::choice: {
      std::string out = "expected ";
      std::size_t n = 0;
      while (!choice_at(s.choices, n).empty()) ++n;
      for (std::size_t i = 0; i < n; ++i) {
        if (i > 0) out += i + 1 == n ? " or " : ", ";
        out += std::string(s.name) + "=" + std::string(choice_at(s.choices, i));
      }
      return out;
    }
    case kind::size:
      return "expected " + u + (s.example.empty() ? std::string() : ", e.g. " + std::string(s.name) + "=" +
                                                                        std::string(s.example));
    case kind::text: return "expected " + u;
  }
  return "expected " + u;
}

// Checks and converts `v.text` for its option; throws the option's message.
void convert(const grammar& g, value& v) {
  const spec& s = *v.option;
  if (s.type != kind::flag && v.text.empty()) fail(g, v.word, expectation(s));
  switch (s.type) {
    case kind::flag:
    case kind::size:
    case kind::text: return;
    case kind::count: {
      std::uint64_t n = 0;
      for (const char c : v.text) {
        if (c < '0' || c > '9') fail(g, v.word, expectation(s));
        const auto d = static_cast<std::uint64_t>(c - '0');
        if (n > (unbounded - d) / 10) {
          if (s.max == unbounded) fail(g, v.word, std::string(s.value) + " does not fit in 64 bits");
          fail(g, v.word, expectation(s));
        }
        n = n * 10 + d;
      }
      if (n < s.min && s.max == unbounded)
        fail(g, v.word, std::string(s.value) + " must be at least " + std::to_string(s.min) +
                            (s.hint.empty() ? std::string() : " (" + std::string(s.hint) + ")"));
      if (n < s.min || n > s.max) fail(g, v.word, expectation(s));
      v.number = n;
      return;
    }
    case kind::real: {
      // Decimal digits, a point and an exponent only: no blanks, sign, hex,
      // inf or nan (as the counts take no blanks or signs either). from_chars
      // takes no blanks, '+' or hex, but does take '-', inf and nan: the
      // first character must be a digit or the point.
      double d = 0;
      const char* first = v.text.data();
      const char* last = first + v.text.size();
      const bool starts_well = !v.text.empty() && (std::isdigit(static_cast<unsigned char>(v.text[0])) || v.text[0] == '.');
      const auto [end, ec] = std::from_chars(first, last, d, std::chars_format::general);
      if (!starts_well || ec != std::errc{} || end != last || !(d >= s.lo && d <= s.hi)) fail(g, v.word, expectation(s));
      v.real = d;
      return;
    }
    case kind::choice:
      for (std::size_t i = 0;; ++i) {
        const std::string_view c = choice_at(s.choices, i);
        if (c.empty()) fail(g, v.word, expectation(s));
        if (c == v.text) {
          v.choice = i;
          return;
        }
      }
  }
}

bool named(const spec& s, std::string_view name) { return name == s.name || (!s.alias.empty() && name == s.alias); }

[[noreturn]] void unknown(const grammar& g, std::string_view word) {
  throw error(std::string(g.who) + "unknown option " + detail::quoted(word) + " (expected " +
              expected_list(g.specs) + ")");
}

}  // namespace

std::vector<std::string_view> split_words(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < text.size()) {
    if (is_space(text[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < text.size() && !is_space(text[j])) ++j;
    words.push_back(text.substr(i, j - i));
    i = j;
  }
  return words;
}

void fail(const grammar& g, std::string_view word, std::string_view why) {
  throw error(std::string(g.who) + "bad option " + detail::quoted(word) + ": " + std::string(why));
}

parsed parse(const grammar& g, std::span<const std::string_view> words, operands rest) {
  parsed out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string_view w = words[i];
    if (rest == operands::stop && !w.starts_with('-')) {
      out.operands.assign(words.begin() + static_cast<std::ptrdiff_t>(i), words.end());
      break;
    }
    value v;
    for (const spec& s : g.specs) {
      if (named(s, w)) {  // exactly the name: a flag, a missing value, or the value in the next word
        v.option = &s;
        v.word = std::string(w);
        if (s.type != kind::flag && (s.forms & next_word) && i + 1 < words.size()) {
          v.text = words[++i];
          v.word += ' ';
          v.word += v.text;
        }
        break;
      }
      for (const std::string_view n : {s.name, s.alias}) {
        if (n.empty() || !w.starts_with(n) || w.size() == n.size()) continue;
        if (w[n.size()] == '=') {
          v.text = w.substr(n.size() + 1);
        } else if (s.type != kind::flag && (s.forms & attached)) {
          v.text = w.substr(n.size());
        } else {
          continue;
        }
        v.option = &s;
        v.word = std::string(w);
        if (s.type == kind::flag) fail(g, w, expectation(s));  // --json=1
        break;
      }
      if (v.option != nullptr) break;
    }
    if (v.option == nullptr) {
      if (rest == operands::pass) {
        out.operands.push_back(w);
        continue;
      }
      unknown(g, w);
    }
    convert(g, v);
    if (v.option->group != 0) {
      for (const value& before : out.values) {
        if (before.option->group == v.option->group && before.option != v.option)
          throw error(std::string(g.who) + "bad option " + detail::quoted(before.word) + " with " + detail::quoted(v.word) + ": " +
                      std::string(g.group_clash));
      }
    }
    out.values.push_back(std::move(v));
  }
  return out;
}

parsed parse(const grammar& g, std::string_view text, operands rest) {
  const std::vector<std::string_view> words = split_words(text);
  return parse(g, std::span<const std::string_view>(words), rest);
}

std::string usage(const spec& s) {
  std::string out(s.name);
  if (s.type == kind::flag) return out;
  out += (s.forms & next_word) ? ' ' : '=';
  out += s.type == kind::choice ? s.choices : s.value;
  return out;
}

std::string expected_list(std::span<const spec> specs) {
  std::string out;
  for (const spec& s : specs) {
    if (!out.empty()) out += ", ";
    out += usage(s);
  }
  return out;
}

std::string synopsis(std::span<const spec> specs) {
  std::string out;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const int group = specs[i].group;
    if (group != 0 && std::any_of(specs.begin(), specs.begin() + static_cast<std::ptrdiff_t>(i),
                                  [&](const spec& s) { return s.group == group; }))
      continue;  // written with the group's first member
    if (!out.empty()) out += ' ';
    out += '[';
    out += usage(specs[i]);
    if (group != 0)
      for (std::size_t j = i + 1; j < specs.size(); ++j)
        if (specs[j].group == group) out += '|' + usage(specs[j]);
    out += ']';
  }
  return out;
}

std::string help_text(std::span<const spec> specs, std::string_view indent) {
  std::vector<std::string> left;
  std::size_t width = 0;
  for (const spec& s : specs) {
    std::string l = usage(s);
    if (!s.alias.empty()) l += ", " + std::string(s.alias);
    width = std::max(width, l.size());
    left.push_back(std::move(l));
  }
  std::string out;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    out += indent;
    out += left[i];
    out.append(width - left[i].size() + 2, ' ');
    out += specs[i].help;
    out += '\n';
  }
  return out;
}

// ---------------------------------------------------------------- the report options

namespace {

constexpr int format_group = 1;

constexpr spec min_size{.name = "-s", .type = kind::size, .value = "SIZE",
                        .help = "hide entries whose peak is below SIZE bytes (suffix k, m or g)", .example = "10m"};
constexpr spec human{.name = "-H", .help = "human-readable sizes (37B, 512K, 1.5M)"};
constexpr spec sort{.name = "--sort", .type = kind::choice,
                    .help = "order: largest peak (default), most runs or allocations, name, most live bytes",
                    .choices = "peak|count|name|live"};
constexpr spec top{.name = "--top", .type = kind::count, .value = "N", .help = "show at most N entries",
                   .min = 1, .hint = "leave --top out to show every entry"};
constexpr spec json{.name = "--json", .help = "JSON, schema version 1", .group = format_group};
constexpr spec tree{.name = "--tree", .help = "names split on '/' as a tree", .group = format_group};
constexpr spec prometheus{.name = "--prometheus", .help = "the Prometheus text exposition of every entry",
                          .group = format_group};
constexpr spec html{.name = "--html", .help = "a self-contained HTML page with a map of the name tree",
                    .group = format_group};

// diff takes the same options, minus two formats, with its own meanings of -s
// and --sort (docs/cli.md, "diff"): the parser is the same, the help is diff's.
constexpr spec diff_min_size{.name = "-s", .type = kind::size, .value = "SIZE",
                             .help = "hide entries whose live and peak changes are both below SIZE bytes",
                             .example = "10m"};
constexpr spec diff_human{.name = "-H", .help = "human-readable sizes and changes (1.5M, +512K)"};
constexpr spec diff_sort{.name = "--sort", .type = kind::choice,
                         .help = "order: largest live or peak change (default), count change, name, live change",
                         .choices = "peak|count|name|live"};
constexpr spec diff_json{.name = "--json", .help = "JSON, schema version 1", .group = format_group};
constexpr spec diff_html{.name = "--html", .help = "a self-contained HTML page with a map of the changes",
                         .group = format_group};

constexpr std::array report_table{min_size, human, sort, top, json, tree, prometheus, html};
constexpr std::array diff_table{diff_min_size, diff_human, diff_sort, top, diff_json, diff_html};

}  // namespace

std::span<const spec> report_specs() noexcept { return report_table; }
std::span<const spec> diff_specs() noexcept { return diff_table; }

const grammar& report_grammar() noexcept {
  static const grammar g{.who = "arenastat: ", .specs = report_table};
  return g;
}

}  // namespace arenastat::opt
