// `arenastat <pid> top`: a live terminal view of one process, like top(1).
//
// Every refresh is one `stats --json --sort=KEY --top=N` request (N = the rows
// that fit), so it costs the target what `stats --top` costs. Growth per second
// is each entry's size (an account's live bytes, a scope's peak) against the
// previous refresh. On a terminal: alternate screen, raw keys (q quit, s sort,
// p pause), SIGWINCH re-layout, terminal restored on exit, error and Ctrl-C.
// When stdout is not a terminal (or --batch): plain snapshots, -n N of them.
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>
#include <wchar.h>
#include <locale.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <clocale>
#include <cstdlib>
#include <ctime>
#include <cwchar>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bounded_json.hpp"
#include "cli.hpp"
#include "socket_naming.hpp"
#include "terminal_text.hpp"

namespace arenastat::cli {
namespace {

enum class order { live, peak, growth };

const char* order_name(order o) {
  switch (o) {
    case order::live: return "live";
    case order::peak: return "peak";
    case order::growth: return "growth";
  }
  return "live";
}

struct top_options {
  double delay_s = 1.0;
  order sort = order::live;
  bool batch = false;
  std::optional<long> iterations;  // -n
  std::optional<long> rows;        // --top
  bool human = false;              // batch: sizes as 1.5M (the terminal view always)
};

enum class top_spec { delay, sort, batch, iterations, rows, human };
constexpr std::array top_table{
    opt::spec{.name = "-d", .type = opt::kind::real, .value = "SECONDS", .help = "seconds between refreshes (default 1)",
              .lo = 0.1, .hi = 3600, .forms = opt::next_word | opt::attached},
    opt::spec{.name = "--sort", .type = opt::kind::choice,
              .help = "order: live bytes (default), peak, growth per second", .choices = "live|peak|growth"},
    opt::spec{.name = "--batch", .help = "plain snapshots, also on a terminal", .alias = "-b"},
    opt::spec{.name = "-n", .type = opt::kind::count, .value = "N", .help = "stop after N refreshes (a terminal shows the last one for one delay)", .min = 1,
              .max = 1000000000, .forms = opt::next_word | opt::attached},
    opt::spec{.name = "--top", .type = opt::kind::count, .value = "N",
              .help = "at most N rows (default: the rows that fit)", .min = 1, .max = 100000},
    opt::spec{.name = "-H", .help = "batch: human-readable sizes"},
};

top_options parse_top_options(const std::vector<std::string>& args) {
  top_options o;
  for (const opt::value& v : parse_options(top_grammar(), args).values) {
    switch (opt::which<top_spec>(top_grammar(), v)) {
      case top_spec::delay: o.delay_s = v.real; break;
      case top_spec::sort: o.sort = static_cast<order>(v.choice); break;  // in the order of `choices`
      case top_spec::batch: o.batch = true; break;
      case top_spec::iterations: o.iterations = static_cast<long>(v.number); break;
      case top_spec::rows: o.rows = static_cast<long>(v.number); break;
      case top_spec::human: o.human = true; break;
    }
  }
  return o;
}

// ------------------------------------------------------------------ data

struct row {
  std::string name;
  bool account = false;
  std::int64_t live = 0;
  std::uint64_t peak = 0;
  std::uint64_t runs = 0;
  std::uint64_t limit_hits = 0;
  std::optional<double> growth;  // bytes per second since the previous refresh
  std::int64_t size() const { return account ? live : static_cast<std::int64_t>(peak); }
  std::string key() const { return (account ? "a:" : "s:") + name; }
};

struct frame {
  long pid = 0;
  std::uint64_t rss = 0, hwm = 0, anon = 0;
  std::size_t total_entries = 0;
  std::size_t overflow_rows = 0;        // rows standing for entries folded beyond the table's cap
  std::uint64_t folded_entries = 0;     // the entries they stand for
  std::vector<row> rows;
  std::string time;  // local wall-clock time of the refresh
};

// An answer that is JSON but not a stats --json report: what is wrong with it.
struct not_a_report {
  std::string why;
};

// The member `key` of object `j`, which must be there.
const nlohmann::json& member(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) throw not_a_report{std::string("expected an object holding '") + key + "'"};
  const auto it = j.find(key);
  if (it == j.end()) throw not_a_report{std::string("no '") + key + "'"};
  return *it;
}

// The whole number of at least 0 under `key` in object `j`; 0 when absent.
std::uint64_t u64(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) throw not_a_report{std::string("expected an object holding '") + key + "'"};
  const auto it = j.find(key);
  if (it == j.end()) return 0;
  if (!it->is_number_unsigned()) throw not_a_report{std::string("'") + key + "' is not a whole number of at least 0"};
  return it->get<std::uint64_t>();
}

std::string now_text() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

// The bounds of a stats --json answer of at most `entries` entries: it nests
// 4 levels (the answer, its entries, an entry, an entry's tags or counters),
// an entry holds at most about 110 values (32 tags, 3 x 8 counters), the
// rest of the answer (process, table, options, at most 65 folded rows) about
// 1000.
json_bounds answer_bounds(std::size_t entries) { return {.max_depth = 8, .max_values = 4096 + entries * 256}; }

// The target's stats --json answer, parsed within answer_bounds (a malformed
// or oversized answer is exit 3).
nlohmann::json parse_answer(const std::string& body, std::size_t entries) {
  try {
    return parse_bounded_json(body, answer_bounds(entries));
  } catch (const json_bound_exceeded& e) {
    throw failure{exit_unreachable, "top: refusing the target's stats --json answer for " + std::to_string(entries) +
                                        " entries: " + e.what()};
  } catch (const std::exception& e) {
    throw failure{exit_unreachable, std::string("top: the target's stats --json is not JSON: ") + e.what()};
  }
}

class sampler {
 public:
  sampler(const ask_fn& ask) : ask_(ask) {}

  // One refresh: `rows` entries for the order (growth: ranked among a wider fetch by live).
  frame sample(order sort, std::size_t rows, const interruption& watch) {
    const std::size_t fetch = sort == order::growth ? std::max<std::size_t>(rows * 4, 100) : rows;
    const std::string line = std::string("stats --json --sort=") + (sort == order::peak ? "peak" : "live") +
                             " --top=" + std::to_string(std::max<std::size_t>(fetch, 1));
    const std::string body = ask_(line, watch);
    const auto when = std::chrono::steady_clock::now();
    const nlohmann::json j = parse_answer(body, fetch);
    try {
      return read_frame(j, sort, rows, when);
    } catch (const not_a_report& e) {
      throw failure{exit_unreachable, "top: the target's stats --json answer is not a report: " + e.why};
    }
  }

 private:
  // The frame of a parsed answer; throws not_a_report.
  frame read_frame(const nlohmann::json& j, order sort, std::size_t rows, std::chrono::steady_clock::time_point when) {
    frame f;
    f.pid = static_cast<long>(u64(j, "pid"));
    const nlohmann::json& p = member(j, "process");
    f.rss = u64(p, "rss_bytes");
    f.hwm = u64(p, "hwm_bytes");
    f.anon = u64(p, "rss_anon_bytes");
    f.time = now_text();
    const nlohmann::json& entries = member(j, "entries");
    if (!entries.is_array()) throw not_a_report{"'entries' is not an array"};
    f.total_entries = entries.size() + u64(j, "omitted_beyond_top") + u64(j, "omitted_smaller");
    if (const auto folded = j.find("folded"); folded != j.end()) {
      if (!folded->is_array()) throw not_a_report{"'folded' is not an array"};
      f.overflow_rows = folded->size();
    }
    if (const auto table = j.find("table"); table != j.end()) f.folded_entries = u64(*table, "folded_entries");
    std::map<std::string, std::pair<std::int64_t, std::chrono::steady_clock::time_point>> seen;
    for (const nlohmann::json& e : entries) {
      row r;
      const nlohmann::json& name = member(e, "name");
      if (!name.is_string()) throw not_a_report{"an entry's 'name' is not a string"};
      r.name = name.get<std::string>();
      const nlohmann::json& kind = member(e, "kind");
      if (kind != "account" && kind != "scope") throw not_a_report{"an entry's 'kind' is neither \"scope\" nor \"account\""};
      r.account = kind == "account";
      r.peak = u64(e, "peak_bytes");
      if (r.account) {
        const auto live = e.find("live_bytes");
        if (live != e.end() && !live->is_number_integer()) throw not_a_report{"an account's 'live_bytes' is not a whole number"};
        r.live = live == e.end() ? 0 : live->get<std::int64_t>();
      } else {
        r.runs = u64(e, "count");
        r.limit_hits = u64(e, "oom_count");
      }
      const auto before = previous_.find(r.key());
      if (before != previous_.end()) {
        const double dt = std::chrono::duration<double>(when - before->second.second).count();
        if (dt > 0) r.growth = static_cast<double>(r.size() - before->second.first) / dt;
      }
      seen[r.key()] = {r.size(), when};
      f.rows.push_back(std::move(r));
    }
    // Entries not fetched this time keep their last value (a sort change must not lose them).
    for (auto& [k, v] : seen) previous_[k] = v;
    if (sort == order::growth) {
      std::stable_sort(f.rows.begin(), f.rows.end(), [](const row& a, const row& b) {
        const double ga = a.growth.value_or(0), gb = b.growth.value_or(0);
        if (ga != gb) return ga > gb;
        return a.size() > b.size();
      });
    }
    if (f.rows.size() > rows) f.rows.resize(rows);
    return f;
  }

  const ask_fn& ask_;
  std::map<std::string, std::pair<std::int64_t, std::chrono::steady_clock::time_point>> previous_;
};

// ------------------------------------------------------------------ formatting

std::string human(double v) {
  const bool neg = v < 0;
  double b = std::fabs(v);
  char buf[32];
  if (b < 1024) {
    std::snprintf(buf, sizeof buf, "%s%.0fB", neg ? "-" : "", b);
    return buf;
  }
  const char* units = "KMGTPE";
  int i = -1;
  while (b >= 1024 && i < 5) {
    b /= 1024;
    ++i;
  }
  if (b < 9.95) std::snprintf(buf, sizeof buf, "%s%.1f%c", neg ? "-" : "", b, units[i]);
  else std::snprintf(buf, sizeof buf, "%s%.0f%c", neg ? "-" : "", b, units[i]);
  return buf;
}

std::string bytes_cell(double v, bool h) {
  if (h) return human(v);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

std::string growth_cell(const row& r, bool h) {
  if (!r.growth) return "-";
  const double g = *r.growth;
  if (std::fabs(g) < 0.5) return "0";
  std::string cell = g > 0 ? "+" : "";
  cell += bytes_cell(g, h);
  return cell;
}

std::string pad_left(const std::string& s, std::size_t w) { return s.size() >= w ? s : std::string(w - s.size(), ' ') + s; }
std::string pad_right(const std::string& s, std::size_t w) { return s.size() >= w ? s : s + std::string(w - s.size(), ' '); }

// The fixed columns of a row: LIVE, PEAK, GROWTH/s and RUNS right-aligned,
// the L mark, KIND; each followed by a blank; then the bar and the name.
constexpr std::size_t live_width = 9, peak_width = 9, growth_width = 10, runs_width = 6, kind_width = 7;
constexpr std::string_view column_header = "     LIVE      PEAK   GROWTH/s   RUNS L KIND    ";
// Where the L column's `!` is in a row (and the L in the header).
constexpr std::size_t limit_column = live_width + 1 + peak_width + 1 + growth_width + 1 + runs_width + 1;
constexpr std::size_t fixed_width = limit_column + 2 + kind_width + 1;
static_assert(column_header[limit_column] == 'L' && column_header.size() == fixed_width);

std::string columns(const row& r, bool h) {
  return pad_left(r.account ? bytes_cell(static_cast<double>(r.live), h) : "-", live_width) + " " +
         pad_left(bytes_cell(static_cast<double>(r.peak), h), peak_width) + " " +
         pad_left(growth_cell(r, h), growth_width) + " " +
         pad_left(r.account ? "-" : std::to_string(r.runs), runs_width) + " " + (r.limit_hits ? "!" : " ") + " " +
         pad_right(r.account ? "account" : "scope", kind_width) + " ";
}

// Below compact_below columns the view keeps one figure, the one it is
// sorted by, and the L mark, so that names keep room (the 48 fixed columns
// left a 48-column terminal no name at all).
constexpr int compact_below = static_cast<int>(fixed_width) + 16;
constexpr std::size_t compact_figure_width = growth_width;
constexpr std::size_t compact_limit_column = compact_figure_width + 1;

std::string compact_header(order o) {
  const char* figure = o == order::live ? "LIVE" : o == order::peak ? "PEAK" : "GROWTH/s";
  return pad_left(figure, compact_figure_width) + " L ";
}

std::string compact_columns(const row& r, order o, bool h) {
  std::string figure;
  switch (o) {
    case order::live: figure = r.account ? bytes_cell(static_cast<double>(r.live), h) : "-"; break;
    case order::peak: figure = bytes_cell(static_cast<double>(r.peak), h); break;
    case order::growth: figure = growth_cell(r, h); break;
  }
  return pad_left(figure, compact_figure_width) + " " + (r.limit_hits ? "!" : " ") + " ";
}

double sort_figure(const row& r, order o) {
  switch (o) {
    case order::live: return static_cast<double>(r.account ? r.live : 0);
    case order::peak: return static_cast<double>(r.peak);
    case order::growth: return std::fabs(r.growth.value_or(0));
  }
  return 0;
}

std::string process_line(const frame& f, bool h) {
  return "VmRSS " + bytes_cell(static_cast<double>(f.rss), h) + "  VmHWM " + bytes_cell(static_cast<double>(f.hwm), h) +
         "  RssAnon " + bytes_cell(static_cast<double>(f.anon), h) + "  entries " + std::to_string(f.total_entries) +
         (f.overflow_rows == 0 ? std::string()
                               : "  overflow rows " + std::to_string(f.overflow_rows) + " (" +
                                     std::to_string(f.folded_entries) + " entries folded)");
}

// ------------------------------------------------------------------ batch

// A row's name as the text reports print it: the answer's JSON string marks
// invalid bytes (U+FFFD and two hex digits; a literal U+FFFD twice), so the
// name is unmarked back to its bytes first, then escape_text'ed, so a name
// cannot end a line, move the cursor or forge a row, in the batch output and
// on the screen alike ("bad\xff" reads as `stats` shows it, not "bad\uFFFDff").
std::string shown_name(const row& r) { return detail::escape_text(detail::unmark_utf8(r.name)); }

int run_batch(long pid, const top_options& o, sampler& s) {
  const std::size_t rows = static_cast<std::size_t>(o.rows.value_or(20));
  const std::string program = escape_for_terminal(naming::program_of(pid), false);
  for (long i = 0; !o.iterations || i < *o.iterations; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::duration<double>(o.delay_s));
    const frame f = s.sample(o.sort, rows, {});
    std::string out = "arenastat top: pid " + std::to_string(pid) + " " + program + "  " + f.time + "  sort " +
                      order_name(o.sort) + "\n" + process_line(f, o.human) + "\n" + std::string(column_header) + "NAME\n";
    for (const row& r : f.rows) out += columns(r, o.human) + shown_name(r) + "\n";
    out += "\n";
    write_stdout(out);
  }
  return exit_ok;
}

// ------------------------------------------------------------------ terminal

volatile sig_atomic_t got_winch = 0;
volatile sig_atomic_t got_stop = 0;  // the signal that ended the view (SIGINT, SIGTERM, SIGHUP)
int wake_pipe[2] = {-1, -1};

void on_signal(int sig) {
  if (sig == SIGWINCH) got_winch = 1;
  else got_stop = sig;
  const int saved = errno;
  if (wake_pipe[1] >= 0) [[maybe_unused]] const ssize_t n = ::write(wake_pipe[1], "x", 1);
  errno = saved;
}

// A view ended by SIGINT, SIGTERM or SIGHUP, once the terminal is restored:
// the process ends by that signal, as it would have without the view, so a
// shell's loop or a supervisor sees it (status 130, 143, 129 in a shell)
// rather than a success (should the signal not end it, the status is
// 128 + the signal all the same).
[[noreturn]] void die_of_signal(int sig) {
  std::fflush(nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
  ::raise(sig);
  std::_Exit(128 + sig);
}

// Raw keys, alternate screen, hidden cursor, signal handlers; all undone by the destructor.
class terminal {
 public:
  terminal() {
    if (::tcgetattr(STDIN_FILENO, &saved_) == 0) {
      termios raw = saved_;
      raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      restore_attr_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    if (::pipe(wake_pipe) != 0) wake_pipe[0] = wake_pipe[1] = -1;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    // A stopping signal the process was started with ignored (nohup, trap ''
    // in a script) stays ignored: the view does not end on it.
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGWINCH}) {
      ::sigaction(sig, nullptr, &old_[sig]);
      if (sig != SIGWINCH && old_[sig].sa_handler == SIG_IGN) continue;
      ::sigaction(sig, &sa, nullptr);
    }
    put("\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J");
  }
  ~terminal() {
    put("\x1b[0m\x1b[?25h\x1b[?1049l");
    if (restore_attr_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGWINCH}) ::sigaction(sig, &old_[sig], nullptr);
    if (wake_pipe[0] >= 0) {
      ::close(wake_pipe[0]);
      ::close(wake_pipe[1]);
      wake_pipe[0] = wake_pipe[1] = -1;
    }
  }
  terminal(const terminal&) = delete;
  terminal& operator=(const terminal&) = delete;

  static void put(const std::string& s) {
    std::size_t done = 0;
    while (done < s.size()) {
      const ssize_t n = ::write(STDOUT_FILENO, s.data() + done, s.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      done += static_cast<std::size_t>(n);
    }
  }
  static std::pair<int, int> size() {
    winsize ws{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) return {ws.ws_col, ws.ws_row};
    return {80, 24};
  }

 private:
  termios saved_{};
  bool restore_attr_ = false;
  struct sigaction old_[NSIG] {};
};

// Display columns of a code point on a terminal: glibc's wcwidth in the
// C.UTF-8 locale (2 for East Asian wide and most emoji, 0 for combining
// marks), 1 when it gives none.
int columns_of(char32_t code) {
  static const locale_t utf8 = ::newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  if (utf8 == static_cast<locale_t>(nullptr)) return 1;
  const locale_t before = ::uselocale(utf8);
  const int w = ::wcwidth(static_cast<wchar_t>(code));
  ::uselocale(before);
  return w < 0 ? 1 : w;
}

// The bytes of the escape starting at s[i] (a backslash): "\\\\" and "\\xHH"
// as escape_text writes them, else the backslash alone.
std::size_t escape_length(const std::string& s, std::size_t i) {
  const auto hex = [&](std::size_t k) { return k < s.size() && std::isxdigit(static_cast<unsigned char>(s[k])) != 0; };
  if (i + 1 < s.size() && s[i + 1] == '\\') return 2;
  if (i + 1 < s.size() && s[i + 1] == 'x' && hex(i + 2) && hex(i + 3)) return 4;
  return 1;
}

// Cuts a line to `width` display columns: a character, or an escape of a
// name, that would cross the edge is left out whole (a cut "\\xe2\\x80\\"
// would read as another escape); control bytes (the lines hold none: names
// are escaped) show as '?', and a byte outside UTF-8 as one column.
std::string fit(const std::string& s, int width) {
  std::string out;
  int cols = 0;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\\') {  // an escape of a name ("\\\\", "\\xHH") is kept whole or left out
      const std::size_t n = escape_length(s, i);
      if (cols + static_cast<int>(n) > width) break;
      out.append(s, i, n);
      cols += static_cast<int>(n);
      i += n;
      continue;
    }
    const std::size_t n = c < 0x80 ? 1 : detail::utf8_sequence(std::string_view(s).substr(i));
    if (n <= 1) {
      if (cols + 1 > width) break;
      out += c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c);
      ++cols;
      ++i;
      continue;
    }
    char32_t code = c & (0x7f >> n);
    for (std::size_t k = 1; k < n; ++k) code = (code << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
    const int w = columns_of(code);
    if (cols + w > width) break;
    out.append(s, i, n);
    cols += w;
    i += n;
  }
  return out;
}

// `width` cells: '#' for `figure`'s share of `largest`, blanks for the rest.
// A figure of 0 or below (an account's negative live bytes: frees of memory
// allocated before it was tracked) draws no '#'.
std::string bar(double figure, double largest, int width) {
  const double share = largest > 0 && figure > 0 ? std::min(figure / largest, 1.0) : 0.0;
  const auto filled = static_cast<std::size_t>(std::lround(width * share));
  return std::string(filled, '#') + std::string(static_cast<std::size_t>(width) - filled, ' ');
}

// A row with the `!` of the L column drawn in red (on its own column only:
// a name may hold a `!` too).
std::string limit_mark_in_red(const std::string& shown, std::size_t column) {
  if (shown.size() <= column || shown[column] != '!') return shown;
  return shown.substr(0, column) + "\x1b[31;1m!\x1b[0m" + shown.substr(column + 1);
}

// `waiting_s`: seconds the refresh under way has waited for its answer (0:
// none is late), shown first on the title line.
std::string screen(long pid, const std::string& program, const top_options& o, order sort, bool paused,
                   long waiting_s, const frame& f, int width, int height) {
  std::vector<std::string> lines;
  char delay[32];
  std::snprintf(delay, sizeof delay, "%g", o.delay_s);
  // The marks first: a narrow terminal cuts the end of the line.
  const std::string marks = (waiting_s > 0 ? "[no answer for " + std::to_string(waiting_s) + " s] " : std::string()) +
                            (paused ? "[paused] " : "");
  lines.push_back(fit(marks + "arenastat top - pid " + std::to_string(pid) + " " + program + "  " + f.time +
                          "  every " + delay + " s  sort " + order_name(sort),
                      width));
  lines.push_back(fit(process_line(f, true), width));
  lines.push_back(fit("keys: q quit  s sort (live, peak, growth)  p pause    L: ! = hit its memory limit", width));
  const int fixed = static_cast<int>(fixed_width);
  const bool compact = width < compact_below;
  const int bar_width = width >= fixed + 30 ? std::min(30, (width - fixed) / 3) : 0;
  const std::string head =
      compact ? compact_header(sort) + "NAME"
              : std::string(column_header) +
                    (bar_width ? std::string(static_cast<std::size_t>(bar_width), ' ') + " " : "") + "NAME";
  lines.push_back("\x1b[7m" + pad_right(fit(head, width), static_cast<std::size_t>(width)) + "\x1b[0m");
  double largest = 0;
  for (const row& r : f.rows) largest = std::max(largest, sort_figure(r, sort));
  for (const row& r : f.rows) {
    if (static_cast<int>(lines.size()) >= height) break;
    std::string line = compact ? compact_columns(r, sort, true) : columns(r, true);
    if (bar_width) line += bar(sort_figure(r, sort), largest, bar_width) + " ";
    line += shown_name(r);
    lines.push_back(limit_mark_in_red(fit(line, width), compact ? compact_limit_column : limit_column));
  }
  // A terminal lower than the four header lines keeps the first ones (the
  // title first): a line past the bottom would scroll the title away.
  if (static_cast<int>(lines.size()) > height) lines.resize(static_cast<std::size_t>(std::max(1, height)));
  std::string out = "\x1b[H";
  for (std::size_t i = 0; i < lines.size(); ++i) out += lines[i] + (i + 1 < lines.size() ? "\x1b[K\r\n" : "\x1b[K");
  out += "\x1b[J";  // clears what a taller previous frame left
  return out;
}

// What the keys change, and when to fetch next.
struct view_state {
  order sort;
  bool paused = false;
  bool force = false;  // fetch now even when paused (the sort changed)
  std::chrono::steady_clock::time_point next = std::chrono::steady_clock::now();
};

// Waits up to `wait_ms` (-1: no limit) for a key or a signal, applies the
// keys to `v`; true when the view must end (q, Ctrl-C, SIGTERM, SIGHUP, the
// terminal gone). With `wait_ms` 0 it only takes what is there: a request to
// a slow target asks it (interruption), so q and Ctrl-C work during a refresh.
bool handle_input(view_state& v, int wait_ms) {
  pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {wake_pipe[0], POLLIN, 0}};
  const int r = ::poll(fds, 2, wait_ms);
  if (got_stop) return true;
  if (r > 0 && (fds[1].revents & POLLIN)) {
    char drain[64];
    [[maybe_unused]] const ssize_t n = ::read(wake_pipe[0], drain, sizeof drain);
  }
  got_winch = 0;
  if (r <= 0 || (fds[0].revents & (POLLIN | POLLHUP)) == 0) return false;
  char keys[64];
  const ssize_t n = ::read(STDIN_FILENO, keys, sizeof keys);
  if (n == 0 && (fds[0].revents & POLLHUP)) return true;  // the terminal went away
  for (ssize_t i = 0; i < n; ++i) {
    const char k = keys[i];
    if (k == 'q' || k == 'Q') return true;
    if (k == 's' || k == 'S') {
      v.sort = v.sort == order::live ? order::peak : v.sort == order::peak ? order::growth : order::live;
      v.force = true;  // refetch in the new order now
    }
    if (k == 'p' || k == 'P') {
      v.paused = !v.paused;
      if (!v.paused) v.next = std::chrono::steady_clock::now();
    }
  }
  return false;
}

int run_terminal(long pid, const top_options& o, sampler& s) {
  terminal term;
  const std::string program = escape_for_terminal(naming::program_of(pid), false);
  view_state v{.sort = o.sort};
  frame last;
  bool have = false;
  auto asked = std::chrono::steady_clock::now();  // when the refresh under way was asked for
  // A refresh waiting on a stalled target still takes keys and signals, and
  // after a second without an answer the screen says so, every second.
  const auto show_waiting = [&] {
    const long waited = static_cast<long>(
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - asked).count());
    auto [width, height] = terminal::size();
    // Before the first answer there is nothing to show under the title.
    terminal::put(screen(pid, program, o, v.sort, v.paused, std::max(1L, waited), last, width, have ? height : 1));
  };
  const interruption watch{.fds = {STDIN_FILENO, wake_pipe[0]},
                           .stop = [&] { return handle_input(v, 0); },
                           .idle = show_waiting,
                           .idle_every = std::chrono::milliseconds(1000)};
  long refreshes = 0;  // -n N: the view ends when the N-th refresh has been shown for one delay
  for (;;) {
    auto [width, height] = terminal::size();
    const std::size_t rows = static_cast<std::size_t>(std::max(1, height - 4));
    if (v.force || (!v.paused && std::chrono::steady_clock::now() >= v.next)) {
      const bool timed = !v.force;  // not a fetch again for a new order
      if (timed && o.iterations && refreshes >= *o.iterations) return exit_ok;
      v.force = false;
      if (timed) ++refreshes;
      asked = std::chrono::steady_clock::now();
      try {
        last = s.sample(v.sort, o.rows ? std::min<std::size_t>(rows, static_cast<std::size_t>(*o.rows)) : rows, watch);
      } catch (const interrupted&) {
        return exit_ok;
      }
      have = true;
      v.next = std::chrono::steady_clock::now() + std::chrono::microseconds(static_cast<long>(o.delay_s * 1e6));
    }
    // A sort changed during the refresh: fetch again before drawing.
    if (have && !v.force) terminal::put(screen(pid, program, o, v.sort, v.paused, 0, last, width, height));
    // Wait for a key, a signal or the next refresh.
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(v.next - std::chrono::steady_clock::now()).count();
    if (handle_input(v, v.force ? 0 : v.paused ? -1 : static_cast<int>(std::max<long long>(left, 0)))) return exit_ok;
  }
}

}  // namespace

const opt::grammar& top_grammar() noexcept {
  static const opt::grammar g{.who = "top: ", .specs = top_table};
  return g;
}

int run_top(long pid, const std::vector<std::string>& args, const ask_fn& ask) {
  top_options o = parse_top_options(args);
  if (!o.batch && (!::isatty(STDOUT_FILENO) || !::isatty(STDIN_FILENO))) o.batch = true;
  sampler s(ask);
  if (o.batch) return run_batch(pid, o, s);
  const int status = run_terminal(pid, o, s);  // the terminal and the signal handlers are restored
  if (got_stop != 0) die_of_signal(got_stop);
  return status;
}

}  // namespace arenastat::cli
