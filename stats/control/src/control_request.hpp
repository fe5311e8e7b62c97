// The control socket's request grammar, shared by the server (stats/control/src) and
// the CLI (stats/control/cli). Self-contained on purpose: it depends on the standard
// library and the option tables (stats/report/src/options.hpp, equally standalone)
// only, so the fuzz target (fuzz/control_request_fuzz.cpp) compiles it alone.
//
//   request line = command [ SP options ] LF        at most max_request_bytes
//   command      = "help" | "info" | "stats" | "baseline" | "diff" | "reset"
//                | "process" | "dump" | "metrics"
//   options      = printable text (bytes 0x20..0x7e and 0x80..0xff, TAB)
//
// Every response starts with a status line, "ok" or "error <message>", then
// the body; the server closes the connection after the body (docs/cli.md).
#pragma once
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "options.hpp"

namespace arenastat::wire {

// Longest request line accepted, newline included.
inline constexpr std::size_t max_request_bytes = 4096;

enum class command { help, info, stats, baseline, diff, reset, process, dump, metrics };

struct command_info {
  command cmd;
  std::string_view name;
  std::span<const opt::spec> options;  // the command's options (help and synopsis come from them)
  std::string_view operands;           // synopsis of what follows the options ("[PATH]"), "" for none
  std::string_view description;        // one line
  bool takes_arguments;
  // Its answer copies or walks every entry (time grows with the table): the
  // server answers one such request per turn of its loop, the others at once
  // (control_server.cpp), so a burst of them does not hold the others up.
  bool walks_table;
};

// Synopsis of what may follow the command: "[-H] [--json]", "[PATH]", "".
std::string arguments(const command_info& c);

// One command's entry in `help`: "  name synopsis\n      description\n" and
// its options' help lines. The CLI appends its own commands (html, top) to a
// target's help in the same form.
std::string help_entry(std::string_view name, std::string_view synopsis, std::string_view description,
                       std::span<const opt::spec> options);

// The grammars of the commands' options. stats and diff: opt::report_grammar().
const opt::grammar& process_grammar() noexcept;
enum class process_spec { human, json };
const opt::grammar& metrics_grammar() noexcept;
enum class metrics_spec { openmetrics, depth };
// Largest --depth (and ARENASTAT_METRICS_DEPTH): prometheus.hpp's max_metrics_depth.
inline constexpr unsigned max_metrics_depth = 64;

// Every command in the order `help` lists them.
std::span<const command_info> commands() noexcept;

// The entry for `name`, or nullptr for a word that names no command.
const command_info* find_command(std::string_view name) noexcept;
// Whether a complete request line asks for a command whose answer walks the
// table (command_info::walks_table); false for a line that does not parse
// (its answer is one error line).
bool walks_table(std::string_view line) noexcept;

struct request {
  command cmd = command::help;
  std::string arguments;  // trimmed text after the command word ("" when none)
};

// Result of parsing one request line: a request, or an error message that
// names what was wrong (suitable for an "error <message>" status line).
struct parse_result {
  std::optional<request> value;
  std::string error;
};

// Parses one line without its terminating LF (a trailing CR is dropped).
parse_result parse_request(std::string_view line);

// Accumulates the bytes of one connection until a full request line arrived.
class request_reader {
 public:
  enum class state {
    incomplete,  // feed more bytes
    complete,    // line() holds the request line (LF removed)
    too_long,    // max_request_bytes passed without a LF
  };

  // Feeds bytes read from the socket. Bytes after the first LF are ignored.
  state feed(std::string_view bytes);
  state current() const noexcept { return state_; }
  std::string_view line() const noexcept { return line_; }
  std::size_t bytes_seen() const noexcept { return seen_; }

 private:
  std::string line_;
  std::size_t seen_ = 0;
  state state_ = state::incomplete;
};

// What ends a message single_line cut.
inline constexpr std::string_view cut_mark = "...";

// Turns any text into one safe status-line message: control characters
// become spaces. A text longer than max_request_bytes is cut, between UTF-8
// sequences, so that with cut_mark after it the message holds at most
// max_request_bytes bytes.
std::string single_line(std::string_view text);

}  // namespace arenastat::wire
