// The one option grammar of the project: a table of options (name, value kind
// and range, help line) from which come the parser, its error messages, the
// "expected ..." list, the synopsis and the help text. Used by the report
// options (report.cpp: stats, diff, ARENASTAT_AT_EXIT, print_at_exit), the
// control commands' options (process, metrics: control_request.cpp) and the
// CLI's own options (arenastat, html, top). Standard library only, so the CLI
// (not linked with the library) and the request fuzzer link it alone
// (object library arenastat_options). Not installed.
//
// Words are split on ASCII whitespace by split_words, the one word splitter.
// A word is an option when it is exactly a table name (a flag, or a valued
// option followed by its value in the next word when `next_word` allows it),
// NAME=VALUE, or, for `attached` short options, NAME immediately followed by
// VALUE (-d5). Messages, each prefixed by the grammar's `who`:
//   unknown option 'W' (expected -s=SIZE, -H, --sort=peak|count|name|live, ...)
//   bad option 'W': expected --top=N with N a whole number of at least 1
//   bad option 'W': --json takes no value
//   bad option 'A' with 'B': choose one output format   (two of one group)
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace arenastat::opt {

enum class kind {
  flag,    // no value
  count,   // a whole number in [min, max]
  real,    // a decimal number in [lo, hi]
  choice,  // one of `choices` ("peak|count|name|live")
  size,    // non-empty text the caller converts (parse_size), reporting with fail()
  text,    // any non-empty text (a file name)
};

// Forms a valued option may take besides NAME=VALUE.
inline constexpr unsigned next_word = 1;  // NAME VALUE (two words)
inline constexpr unsigned attached = 2;   // NAMEVALUE (short options: -d5)

struct spec {
  std::string_view name;            // "--top", "-s", "-H"
  kind type = kind::flag;
  std::string_view value = {};      // the value's name in messages and help: "N", "SIZE"
  std::string_view help = {};       // one line
  std::uint64_t min = 0, max = std::numeric_limits<std::uint64_t>::max();  // count
  double lo = 0, hi = 0;            // real
  std::string_view choices = {};    // choice: "a|b|c"
  std::string_view example = {};    // size: a valid value shown when it is missing ("10m")
  std::string_view hint = {};       // count: said after "N must be at least MIN"
  int group = 0;                    // non-zero: at most one option of the group per line
  std::string_view alias = {};      // a second name ("-b" for "--batch")
  unsigned forms = 0;               // next_word | attached
};

struct grammar {
  std::string_view who;             // message prefix: "arenastat: ", "metrics: ", "top: "
  std::span<const spec> specs;
  std::string_view group_clash = "choose one output format";
};

// What the words that are not options become.
enum class operands {
  none,  // every word must be an option
  stop,  // options first: the first word not starting with '-' and all after it are operands
  pass,  // words that are no option of the table are operands, in order (checked elsewhere)
};

struct value {
  const spec* option = nullptr;
  std::string word;          // as written ("--top=3", "-n 5"), for messages
  std::string_view text;     // the value as written ("" for a flag)
  std::uint64_t number = 0;  // count
  double real = 0;           // real
  std::size_t choice = 0;    // choice: index in `choices`
};

struct parsed {
  std::vector<value> values;  // in the order given
  std::vector<std::string_view> operands;
};

// The option of `v` as its index in g.specs, as the enum that names the table's rows.
template <class E>
E which(const grammar& g, const value& v) noexcept {
  return static_cast<E>(v.option - g.specs.data());
}

// Thrown by parse and fail: std::invalid_argument with the message above.
struct error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// The one word splitter: words separated by any ASCII whitespace.
std::vector<std::string_view> split_words(std::string_view text);

parsed parse(const grammar& g, std::span<const std::string_view> words, operands rest = operands::none);
parsed parse(const grammar& g, std::string_view text, operands rest = operands::none);

// Throws error "<who>bad option '<word>': <why>" (a value the caller rejects).
[[noreturn]] void fail(const grammar& g, std::string_view word, std::string_view why);

// "-s=SIZE", "--sort=peak|count|name|live", "-n N", "-H".
std::string usage(const spec& s);
// "-s=SIZE, -H, --sort=peak|count|name|live, --top=N": what "unknown option" lists.
std::string expected_list(std::span<const spec> specs);
// "[-s=SIZE] [-H] [--sort=peak|count|name|live] [--json|--tree]": a group in one bracket.
std::string synopsis(std::span<const spec> specs);
// One line per option: `indent`, the usage (and alias) padded to one column, its help.
std::string help_text(std::span<const spec> specs, std::string_view indent = "  ");

// The report options (report.hpp; stats, diff, ARENASTAT_AT_EXIT,
// print_at_exit) in the order `report_spec` names them.
enum class report_spec { min_size, human, sort, top, json, tree, prometheus, html };
std::span<const spec> report_specs() noexcept;
// The subset `diff` accepts (no --tree, no --prometheus), for its synopsis.
std::span<const spec> diff_specs() noexcept;
// The report grammar: who "arenastat: ".
const grammar& report_grammar() noexcept;

}  // namespace arenastat::opt
