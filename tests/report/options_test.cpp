// The report option grammar: every option and every malformed form.
#include <catch2/catch.hpp>
#include <stdexcept>

#include "arenastat/report.hpp"

using arenastat::parse_report_options;
using arenastat::report_format;
using arenastat::sort_key;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

TEST_CASE("options: no options gives the defaults", "[options]") {
  const auto o = parse_report_options("");
  CHECK(o.min_size == 0);
  CHECK_FALSE(o.human);
  CHECK(o.sort == sort_key::peak);
  CHECK_FALSE(o.top.has_value());
  CHECK(o.format == report_format::text);
  CHECK(parse_report_options(" \t\n ").format == report_format::text);
}

TEST_CASE("options: -s=SIZE sets the minimum size", "[options]") {
  CHECK(parse_report_options("-s=4096").min_size == 4096);
  CHECK(parse_report_options("-s=10m").min_size == 10485760);
  CHECK(parse_report_options("-s=1K").min_size == 1024);
}

TEST_CASE("options: -H asks for human sizes", "[options]") {
  CHECK(parse_report_options("-H").human);
}

TEST_CASE("options: --sort takes each key", "[options]") {
  CHECK(parse_report_options("--sort=peak").sort == sort_key::peak);
  CHECK(parse_report_options("--sort=count").sort == sort_key::count);
  CHECK(parse_report_options("--sort=name").sort == sort_key::name);
  CHECK(parse_report_options("--sort=live").sort == sort_key::live);
}

TEST_CASE("options: --top=N limits the entries", "[options]") {
  CHECK(parse_report_options("--top=1").top == std::optional<std::size_t>{1});
  CHECK(parse_report_options("--top=25").top == std::optional<std::size_t>{25});
}

TEST_CASE("options: --json and --tree choose the format", "[options]") {
  CHECK(parse_report_options("--json").format == report_format::json);
  CHECK(parse_report_options("--tree").format == report_format::tree);
}

TEST_CASE("options: options combine, separated by any whitespace", "[options]") {
  const auto o = parse_report_options("  -H\t-s=2k\n--sort=name   --top=3 --json ");
  CHECK(o.human);
  CHECK(o.min_size == 2048);
  CHECK(o.sort == sort_key::name);
  CHECK(o.top == std::optional<std::size_t>{3});
  CHECK(o.format == report_format::json);
}

TEST_CASE("options: a repeated option takes its last value", "[options]") {
  const auto o = parse_report_options("-s=1k -s=2k --sort=count --sort=name");
  CHECK(o.min_size == 2048);
  CHECK(o.sort == sort_key::name);
}

TEST_CASE("options: a bad size names the option and the size", "[options]") {
  CHECK_THROWS_WITH(parse_report_options("-s=10x"),
                    StartsWith("arenastat: bad option '-s=10x': invalid size '10x'"));
  CHECK_THROWS_AS(parse_report_options("-H -s=10x"), std::invalid_argument);
  CHECK_THROWS_WITH(parse_report_options("-s=1.5m"), Contains("'-s=1.5m'"));
  CHECK_THROWS_WITH(parse_report_options("-s=-1"), Contains("'-s=-1'"));
}

TEST_CASE("options: a bad size with control bytes is quoted escaped, twice", "[options]") {
  CHECK_THROWS_WITH(parse_report_options("-s=1\x1b[0m"),
                    StartsWith("arenastat: bad option '-s=1\\x1b[0m': invalid size '1\\x1b[0m'"));
}

TEST_CASE("options: -s without a value is an error", "[options]") {
  CHECK_THROWS_WITH(parse_report_options("-s="),
                    "arenastat: bad option '-s=': expected -s=SIZE, e.g. -s=10m");
  CHECK_THROWS_WITH(parse_report_options("-s"),
                    "arenastat: bad option '-s': expected -s=SIZE, e.g. -s=10m");
}

TEST_CASE("options: an unknown sort key is an error listing the keys", "[options]") {
  CHECK_THROWS_WITH(parse_report_options("--sort=size"),
                    "arenastat: bad option '--sort=size': expected --sort=peak, --sort=count, "
                    "--sort=name or --sort=live");
  CHECK_THROWS_WITH(parse_report_options("--sort="), Contains("'--sort='"));
  CHECK_THROWS_WITH(parse_report_options("--sort=PEAK"), Contains("'--sort=PEAK'"));
}

TEST_CASE("options: --top needs a whole number of at least 1", "[options]") {
  CHECK_THROWS_WITH(parse_report_options("--top=0"),
                    StartsWith("arenastat: bad option '--top=0': N must be at least 1"));
  CHECK_THROWS_WITH(parse_report_options("--top=abc"),
                    "arenastat: bad option '--top=abc': expected --top=N with N a whole number "
                    "of at least 1");
  CHECK_THROWS_WITH(parse_report_options("--top="), Contains("'--top='"));
  CHECK_THROWS_WITH(parse_report_options("--top"), Contains("'--top'"));
  CHECK_THROWS_WITH(parse_report_options("--top=-1"), Contains("'--top=-1'"));
  CHECK_THROWS_WITH(parse_report_options("--top=3x"), Contains("'--top=3x'"));
  CHECK_THROWS_WITH(parse_report_options("--top=99999999999999999999"),
                    "arenastat: bad option '--top=99999999999999999999': N does not fit in 64 bits");
}

TEST_CASE("options: an unknown option is named with the grammar", "[options]") {
  CHECK_THROWS_WITH(parse_report_options("--foo"),
                    "arenastat: unknown option '--foo' (expected -s=SIZE, -H, "
                    "--sort=peak|count|name|live, --top=N, --json, --tree, --prometheus, --html)");
  CHECK_THROWS_WITH(parse_report_options("-H --foo --json"), Contains("'--foo'"));
}

TEST_CASE("options: near misses of known options are unknown options", "[options]") {
  CHECK_THROWS_WITH(parse_report_options("-h"), Contains("unknown option '-h'"));
  CHECK_THROWS_WITH(parse_report_options("-s10m"), Contains("unknown option '-s10m'"));
  CHECK_THROWS_WITH(parse_report_options("-Hx"), Contains("unknown option '-Hx'"));
  CHECK_THROWS_WITH(parse_report_options("--json=1"), "arenastat: bad option '--json=1': --json takes no value");
  CHECK_THROWS_WITH(parse_report_options("--sorted=peak"),
                    Contains("unknown option '--sorted=peak'"));
}

TEST_CASE("options: stray words are unknown options", "[options]") {
  CHECK_THROWS_WITH(parse_report_options("-H peak"), Contains("unknown option 'peak'"));
  CHECK_THROWS_WITH(parse_report_options("-s 10m"), Contains("'-s'"));
  CHECK_THROWS_WITH(parse_report_options("1"), Contains("unknown option '1'"));
}

TEST_CASE("options: --json with --tree is an error in either order", "[options]") {
  CHECK_THROWS_WITH(parse_report_options("--json --tree"),
                    "arenastat: bad option '--json' with '--tree': choose one output format");
  CHECK_THROWS_AS(parse_report_options("--tree -H --json"), std::invalid_argument);
}
