// The option table (stats/report/src/options.hpp): the parser, every message
// and the help text come from the table.
#include <catch2/catch.hpp>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "options.hpp"

namespace opt = arenastat::opt;
using Catch::Matchers::Contains;

namespace {

enum class row { flag, count, bounded, real, choice, size, text };
constexpr std::array table{
    opt::spec{.name = "-f", .help = "a flag", .alias = "--flag"},
    opt::spec{.name = "--count", .type = opt::kind::count, .value = "N", .help = "a count", .min = 1,
              .hint = "leave it out for all"},
    opt::spec{.name = "--depth", .type = opt::kind::count, .value = "N", .help = "a bounded count", .min = 1,
              .max = 64},
    opt::spec{.name = "-d", .type = opt::kind::real, .value = "SECONDS", .help = "a delay", .lo = 0.1, .hi = 3600,
              .forms = opt::next_word | opt::attached},
    opt::spec{.name = "--sort", .type = opt::kind::choice, .help = "an order", .choices = "a|b|c", .group = 0},
    opt::spec{.name = "-s", .type = opt::kind::size, .value = "SIZE", .help = "a size", .example = "10m"},
    opt::spec{.name = "-o", .type = opt::kind::text, .value = "FILE", .help = "a file", .forms = opt::next_word},
};
const opt::grammar g{.who = "t: ", .specs = table};

}  // namespace

TEST_CASE("option table: one word splitter, on any ASCII whitespace", "[options][table]") {
  const auto w = opt::split_words(" a\tb\n\nc \r\f\vd ");
  REQUIRE(w.size() == 4);
  CHECK(w[0] == "a");
  CHECK(w[3] == "d");
  CHECK(opt::split_words(" \t ").empty());
}

TEST_CASE("option table: every value form is parsed and converted", "[options][table]") {
  const auto p = opt::parse(g, "-f --flag --count=7 --depth=64 -d 0.5 -d2 -d=3 --sort=c -s=1k -o out -o=x");
  REQUIRE(p.values.size() == 11);
  CHECK(opt::which<row>(g, p.values[1]) == row::flag);  // the alias
  CHECK(p.values[2].number == 7);
  CHECK(p.values[3].number == 64);
  CHECK(p.values[4].real == 0.5);
  CHECK(p.values[4].word == "-d 0.5");
  CHECK(p.values[5].real == 2);
  CHECK(p.values[6].real == 3);
  CHECK(p.values[7].choice == 2);
  CHECK(p.values[8].text == "1k");  // a size is converted by the caller
  CHECK(p.values[9].text == "out");
  CHECK(p.values[10].text == "x");
}

namespace {

// The message parsing `text` with the test grammar throws, or "no error".
std::string bad(std::string_view text) {
  try {
    opt::parse(g, text);
  } catch (const opt::error& e) {
    return std::string(e.what());
  }
  return std::string("no error");
}

// What "unknown option" lists after the word, for the test grammar.
const std::string expected = " (expected -f, --count=N, --depth=N, -d SECONDS, --sort=a|b|c, -s=SIZE, -o FILE)";

}  // namespace

TEST_CASE("option table: each bad input has its message", "[options][table]") {
  CHECK(bad("--nope") == "t: unknown option '--nope'" + expected);
  CHECK(bad("-fx") == "t: unknown option '-fx'" + expected);         // a near miss
  CHECK(bad("--sorted=a") == "t: unknown option '--sorted=a'" + expected);
  CHECK(bad("-s10m") == "t: unknown option '-s10m'" + expected);     // not an attached option
  CHECK(bad("-f=1") == "t: bad option '-f=1': -f takes no value");
  CHECK(bad("--count") == "t: bad option '--count': expected --count=N with N a whole number of at least 1");
  CHECK(bad("--count=x") == "t: bad option '--count=x': expected --count=N with N a whole number of at least 1");
  CHECK(bad("--count=0") == "t: bad option '--count=0': N must be at least 1 (leave it out for all)");
  CHECK(bad("--count=99999999999999999999") == "t: bad option '--count=99999999999999999999': N does not fit in 64 bits");
  CHECK(bad("--depth=0") == "t: bad option '--depth=0': expected --depth=N with N from 1 to 64");
  CHECK(bad("--depth=65") == "t: bad option '--depth=65': expected --depth=N with N from 1 to 64");
  CHECK(bad("--depth=99999999999999999999") ==
        "t: bad option '--depth=99999999999999999999': expected --depth=N with N from 1 to 64");
  CHECK(bad("-d 0") == "t: bad option '-d 0': expected -d SECONDS with SECONDS from 0.1 to 3600");
  CHECK(bad("-dx") == "t: bad option '-dx': expected -d SECONDS with SECONDS from 0.1 to 3600");
  CHECK(bad("-d") == "t: bad option '-d': expected -d SECONDS with SECONDS from 0.1 to 3600");
  CHECK(bad("-d 0x1") == "t: bad option '-d 0x1': expected -d SECONDS with SECONDS from 0.1 to 3600");  // no hex
  CHECK(bad("-d +1") == "t: bad option '-d +1': expected -d SECONDS with SECONDS from 0.1 to 3600");    // no sign
  CHECK(bad("-d=inf") == "t: bad option '-d=inf': expected -d SECONDS with SECONDS from 0.1 to 3600");
  CHECK(bad("-d=1,5") == "t: bad option '-d=1,5': expected -d SECONDS with SECONDS from 0.1 to 3600");
  CHECK(opt::parse(g, "-d=1e1").values.at(0).real == 10);  // an exponent is a number
  // With a range that takes 0, a sign, inf and nan are still refused.
  constexpr std::array from_zero{opt::spec{.name = "-x", .type = opt::kind::real, .value = "X", .lo = 0, .hi = 10}};
  const opt::grammar gz{.who = "", .specs = from_zero};
  for (const char* w : {"-x=-0", "-x=nan", "-x=inf", "-x=-1"})
    CHECK_THROWS_WITH(opt::parse(gz, w), std::string("bad option '") + w + "': expected -x=X with X from 0 to 10");
  CHECK(opt::parse(gz, "-x=0").values.at(0).real == 0);
  CHECK(opt::parse(gz, "-x=.5").values.at(0).real == 0.5);
  const std::vector<std::string_view> blank{"-d", " 1"};  // one argv word with a blank (never split)
  CHECK_THROWS_WITH(opt::parse(g, blank), "t: bad option '-d  1': expected -d SECONDS with SECONDS from 0.1 to 3600");
  CHECK(bad("--sort=d") == "t: bad option '--sort=d': expected --sort=a, --sort=b or --sort=c");
  CHECK(bad("--sort=") == "t: bad option '--sort=': expected --sort=a, --sort=b or --sort=c");
  CHECK(bad("-s=") == "t: bad option '-s=': expected -s=SIZE, e.g. -s=10m");
  CHECK(bad("-o") == "t: bad option '-o': expected -o FILE");
}

TEST_CASE("option table: a bad word is quoted escaped and cut, as a warning quotes a value", "[options][table]") {
  // A terminal escape, a byte above ASCII, a quote and a backslash: each
  // written so that the message is one printable line and reads back one way.
  CHECK(bad("--x\x1b[2J") == "t: unknown option '--x\\x1b[2J'" + expected);
  CHECK(bad("--x\x1b[2J\xc3\xa9'\\") == "t: unknown option '--x\\x1b[2J\\xc3\\xa9\\x27\\\\'" + expected);
  CHECK(bad("--sort=\x07") == "t: bad option '--sort=\\x07': expected --sort=a, --sort=b or --sort=c");
  // A word of 300 bytes: its first 200 quoted, then its length.
  const std::string long_word = "--" + std::string(298, 'w');
  CHECK(bad(long_word) == "t: unknown option '--" + std::string(198, 'w') + "'... (300 bytes)" + expected);
}

TEST_CASE("option table: two options of one group clash, named in the order given", "[options][table]") {
  constexpr std::array grouped{opt::spec{.name = "--x", .group = 1}, opt::spec{.name = "--y", .group = 1},
                               opt::spec{.name = "--z"}};
  const opt::grammar gg{.who = "", .specs = grouped, .group_clash = "choose one"};
  CHECK_THROWS_WITH(opt::parse(gg, "--y --z --x"), "bad option '--y' with '--x': choose one");
  CHECK(opt::parse(gg, "--x --x --z").values.size() == 3);  // a repeat is no clash
  CHECK(opt::synopsis(grouped) == "[--x|--y] [--z]");
}

TEST_CASE("option table: operands stop the options or pass through", "[options][table]") {
  const auto stop = opt::parse(g, "-f 123 stats -f", opt::operands::stop);
  CHECK(stop.values.size() == 1);
  REQUIRE(stop.operands.size() == 3);
  CHECK(stop.operands[0] == "123");
  CHECK(stop.operands[2] == "-f");
  const auto pass = opt::parse(g, "--json -o f --top=3", opt::operands::pass);
  CHECK(pass.values.size() == 1);
  REQUIRE(pass.operands.size() == 2);
  CHECK(pass.operands[1] == "--top=3");
  CHECK_THROWS_WITH(opt::parse(g, "123"), Contains("unknown option '123'"));
}

TEST_CASE("option table: the help has a line for every option of the table", "[options][table]") {
  for (const std::span<const opt::spec> specs : {std::span<const opt::spec>(table), opt::report_specs()}) {
    const std::string help = opt::help_text(specs);
    const std::string synopsis = opt::synopsis(specs);
    const std::string expected = opt::expected_list(specs);
    std::size_t lines = 0;
    for (const char c : help) lines += c == '\n';
    CHECK(lines == specs.size());
    for (const opt::spec& s : specs) {
      INFO(s.name);
      CHECK(help.find("  " + opt::usage(s)) != std::string::npos);
      CHECK(help.find(std::string(s.help)) != std::string::npos);
      CHECK(synopsis.find(opt::usage(s)) != std::string::npos);
      CHECK(expected.find(opt::usage(s)) != std::string::npos);
      if (!s.alias.empty()) CHECK(help.find(std::string(s.alias)) != std::string::npos);
    }
  }
  // One column: the longest usage ("--sort=a|b|c") and two blanks.
  CHECK(opt::help_text(table).starts_with("  -f, --flag    a flag\n  --count=N     a count\n"));
}

TEST_CASE("option table: the report's grammar is the documented one", "[options][table]") {
  CHECK(opt::expected_list(opt::report_specs()) ==
        "-s=SIZE, -H, --sort=peak|count|name|live, --top=N, --json, --tree, --prometheus, --html");
  CHECK(opt::synopsis(opt::diff_specs()) == "[-s=SIZE] [-H] [--sort=peak|count|name|live] [--top=N] [--json|--html]");
}
