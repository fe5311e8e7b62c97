// render_report, text format, on hand-built entries: exact rows, sort orders,
// the -s footer, --top, human sizes and the process lines.
#include <catch2/catch.hpp>

#include "sample_entries.hpp"

using namespace report_test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

TEST_CASE("text report: legend first, then process lines, scopes, accounts, totals", "[render]") {
  const std::string text = render("");
  CHECK_THAT(text, StartsWith("arenastat report\nLegend:\n  peak "));
  const std::string expected =
      "Process: pid 4242  VmRSS 1048576  VmHWM 2097152  RssAnon 524288\n"
      "\n"
      "Scopes (3):\n"
      "peak  node  resource  counters  count   time  result  thread  name\n"
      "3000  1000      2000  nodes=42      2  0.500  ok         111  compile/Foo::bar\n"
      "1000  1000         0  -             1  0.250  oom        222  compile/Baz::qux\n"
      " 500     0       500  -             5  1.000  ok         333  parse/main\n"
      "\n"
      "Accounts (2):\n"
      "peak  live  allocated  allocations  frees  heap  name\n"
      "4096  2048      10000           10      5  4096  cache/lru\n"
      " 100     0        100            1      1   100  cache/index\n"
      "\n"
      "Total: 5 entries shown; scope peaks sum to 4500; account peaks sum to 4196, live 2048\n";
  CHECK(from(text, "Process:") == expected);
}

TEST_CASE("text report: the legend explains every column", "[render]") {
  const std::string text = render("");
  for (const char* column : {"  peak ", "  <tag> ", "  counters ", "  count ", "  time ",
                             "  result ", "  thread ", "  live ", "  allocated "})
    CHECK_THAT(text, Contains(column));
}

TEST_CASE("text report: -H prints human sizes in every size column", "[render]") {
  const std::string text = render("-H");
  CHECK_THAT(text, Contains("Process: pid 4242  VmRSS 1.0M  VmHWM 2.0M  RssAnon 512K\n"));
  CHECK_THAT(text, Contains("2.9K  1000B      2.0K  nodes=42      2  0.500  ok         111  "
                            "compile/Foo::bar\n"));
  CHECK_THAT(text, Contains("4.0K  2.0K       9.8K           10      5  4.0K  cache/lru\n"));
  CHECK_THAT(text, Contains("scope peaks sum to 4.4K; account peaks sum to 4.1K, live 2.0K\n"));
}

TEST_CASE("text report: jemalloc totals appear when jemalloc is the allocator", "[render]") {
  auto proc = sample_process();
  const auto options = arenastat::parse_report_options("");
  CHECK_THAT(arenastat::render_report(sample(), proc, options), !Contains("jemalloc:"));
  proc.jemalloc = true;
  proc.je_allocated = 1000;
  proc.je_active = 2000;
  proc.je_resident = 3000;
  proc.je_mapped = 4000;
  CHECK_THAT(arenastat::render_report(sample(), proc, options),
             Contains("RssAnon 524288\njemalloc: allocated 1000  active 2000  resident 3000  "
                      "mapped 4000\n"));
}

TEST_CASE("text report: -s hides small entries and says how many", "[render]") {
  const std::string text = render("-s=1000");
  CHECK_THAT(text, Contains("Scopes (2 of 3):\n"));
  CHECK_THAT(text, !Contains("parse/main"));
  CHECK_THAT(text, !Contains("cache/index"));
  CHECK_THAT(text, Contains("Accounts (1 of 2):\n"));
  CHECK_THAT(text, Contains("Total: 3 entries shown; scope peaks sum to 4000; account peaks sum "
                            "to 4096, live 2048\n(2 entries smaller than 1000 omitted)\n"));
}

TEST_CASE("text report: the -s footer uses the size format of the report", "[render]") {
  CHECK_THAT(render("-s=1k"), Contains("(3 entries smaller than 1024 omitted)\n"));
  CHECK_THAT(render("-s=1k -H"), Contains("(3 entries smaller than 1.0K omitted)\n"));
  CHECK_THAT(render("-s=200"), Contains("(1 entry smaller than 200 omitted)\n"));
}

TEST_CASE("text report: no footer line when nothing was omitted", "[render]") {
  const std::string text = render("-s=100");
  CHECK_THAT(text, !Contains("omitted"));
}

TEST_CASE("text report: a section with nothing to show says so", "[render]") {
  const std::string text = render("-s=4k");
  CHECK_THAT(text, Contains("Scopes: none shown of 3\n"));
  CHECK_THAT(text, Contains("Accounts (1 of 2):\n"));
}

TEST_CASE("text report: --top keeps the first N after sorting and filtering", "[render]") {
  const std::string text = render("--top=2");
  CHECK_THAT(text, Contains("Scopes (1 of 3):\n"));
  CHECK_THAT(text, Contains("compile/Foo::bar\n"));
  CHECK_THAT(text, Contains("Accounts (1 of 2):\n"));
  CHECK_THAT(text, Contains("cache/lru\n"));
  CHECK_THAT(text, Contains("(3 entries beyond --top=2 omitted)\n"));

  const std::string both = render("-s=1000 --top=1");
  CHECK_THAT(both, Contains("Scopes: none shown of 3\n"));
  CHECK_THAT(both, Contains("(2 entries smaller than 1000 omitted)\n"
                            "(2 entries beyond --top=1 omitted)\n"));
}

TEST_CASE("text report: --sort orders the rows of each section", "[render]") {
  const std::string by_name = render("--sort=name");
  CHECK(by_name.find("compile/Baz::qux\n") < by_name.find("compile/Foo::bar\n"));
  CHECK(by_name.find("compile/Foo::bar\n") < by_name.find("parse/main\n"));
  CHECK(by_name.find("cache/index\n") < by_name.find("cache/lru\n"));

  const std::string by_count = render("--sort=count");
  CHECK(by_count.find("parse/main\n") < by_count.find("compile/Foo::bar\n"));
  CHECK(by_count.find("compile/Foo::bar\n") < by_count.find("compile/Baz::qux\n"));
}

TEST_CASE("text report: no entries at all", "[render]") {
  const std::string text = arenastat::render_report({}, sample_process(),
                                                    arenastat::parse_report_options(""));
  CHECK_THAT(text, Contains("Scopes: none shown\n\nAccounts: none shown\n\nTotal: 0 entries "
                            "shown; scope peaks sum to 0; account peaks sum to 0, live 0\n"));
}

TEST_CASE("text report: negative tag bytes and live bytes keep their sign", "[render]") {
  std::vector<arenastat::entry> v{make_account("odd", 10, -2048, 0, 0, 1, {{"heap", -5}})};
  const std::string text = arenastat::render_report(v, sample_process(),
                                                    arenastat::parse_report_options("-H"));
  CHECK_THAT(text, Contains("peak   live  allocated  allocations  frees  heap  name\n"
                            " 10B  -2.0K         0B            0      1   -5B  odd\n"));
}

TEST_CASE("text report: tag names in the column headers are escaped like names", "[render]") {
  // Tag names reach the report as strings (an entry read back, another
  // process's answer): a byte that is not UTF-8 or a line break in one must
  // not reach the header raw.
  std::vector<arenastat::entry> v{make_account("a", 10, 10, 0, 0, 0, {{"t\xff", 7}, {"x\ny", 3}})};
  const std::string text = arenastat::render_report(v, sample_process(), arenastat::parse_report_options(""));
  CHECK_THAT(text, Contains("peak  live  allocated  allocations  frees  t\\xff  x\\x0ay  name\n"
                            "  10    10          0            0      0      7       3  a\n"));
}

TEST_CASE("text report: the result cell counts earlier limit hits and failures", "[render]") {
  arenastat::entry ok_now = make_scope("req/a", 100, {}, 5, 1.0, "ok", 1);
  ok_now.oom_count = 2;  // two earlier runs hit their limit; the latest was fine
  arenastat::entry oom_now = make_scope("req/b", 50, {}, 5, 1.0, "oom", 1);
  oom_now.oom_count = 3;
  oom_now.err_count = 1;
  arenastat::entry clean = make_scope("req/c", 10, {}, 1, 1.0, "ok", 1);
  const std::string text = arenastat::render_report({ok_now, oom_now, clean}, sample_process(),
                                                    arenastat::parse_report_options(""));
  CHECK_THAT(text, Contains("  ok (2 oom)               1  req/a\n"));
  CHECK_THAT(text, Contains("  oom (3 oom, 1 err)       1  req/b\n"));
  CHECK_THAT(text, Contains("  ok                       1  req/c\n"));
}

TEST_CASE("text report: a counter shows its value at the peak, else its last value", "[render]") {
  arenastat::entry e = make_scope("task", 100, {}, 1, 1.0, "ok", 1);
  e.counters = {{"at", 7, 9, true}, {"late", 0, 5, false}};
  const std::string text = arenastat::render_report({e}, sample_process(), arenastat::parse_report_options(""));
  CHECK_THAT(text, Contains(" at=7,late=5 "));
}
