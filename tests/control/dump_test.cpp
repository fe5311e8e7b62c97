// Summary dumps (dump.hpp): the rendered text, file names and writing.
#include <catch2/catch.hpp>

#include "entries.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <arenastat/arenastat.hpp>
#include <arenastat/dump.hpp>

#include "harness.hpp"

using namespace arenastat;

namespace {

using test_entries::account_entry;
using test_entries::scope_entry;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::vector<entry> sample{account_entry("cache", 5000, 8000, 12, 2),  // size 5000, count 12, blocks 10
                                scope_entry("compile/a", 7000, 3),          // size 7000, count 3, blocks 0
                                account_entry("index", 100, 100, 60, 10)};  // size 100, count 60, blocks 50

}  // namespace

TEST_CASE("a dump starts with the TOTAL line and lists the largest size first", "[control][dump]") {
  const auto l = lines(render_dump(sample, dump_sort::size, {42, "demo", 0}));
  REQUIRE(l.size() == 5);
  CHECK(l[0] ==
        "TOTAL size=12100 count=75 blocks=60 entries=3 pid=42 program=demo time=1970-01-01 00:00:00 UTC sort=size");
  CHECK(l[1] == "                size            count           blocks                 peak  kind     name");
  CHECK(l[2] == "                7000                3                0                 7000  scope    compile/a");
  CHECK(l[3] == "                5000               12               10                 8000  account  cache");
  CHECK(l[4] == "                 100               60               50                  100  account  index");
}

TEST_CASE("a dump sorted by count lists the most allocations or runs first", "[control][dump]") {
  const auto l = lines(render_dump(sample, dump_sort::count, {42, "demo", 0}));
  REQUIRE(l.size() == 5);
  CHECK(l[0].find(" sort=count") != std::string::npos);
  CHECK(l[2].find("index") != std::string::npos);      // 60 allocations
  CHECK(l[3].find("cache") != std::string::npos);      // 12
  CHECK(l[4].find("compile/a") != std::string::npos);  // 3 runs
}

TEST_CASE("a dump sorted by blocks lists the most live blocks first", "[control][dump]") {
  const auto l = lines(render_dump({scope_entry("compile/a", 7000, 300), account_entry("cache", 5000, 8000, 12, 2),
                                    account_entry("index", 100, 100, 9, 0)},
                                   dump_sort::blocks, {42, "demo", 0}));
  REQUIRE(l.size() == 5);
  CHECK(l[0].find(" sort=blocks") != std::string::npos);
  CHECK(l[2].find("cache") != std::string::npos);      // 10 blocks
  CHECK(l[3].find("index") != std::string::npos);      // 9
  CHECK(l[4].find("compile/a") != std::string::npos);  // a scope has none
}

TEST_CASE("a dump escapes names and the program name", "[control][dump][names]") {
  const auto l = lines(render_dump({scope_entry("evil\nTOTAL size=0\x1b[2J", 1, 1)}, dump_sort::size,
                                   {42, "de\rmo", 0, 3}));
  REQUIRE(l.size() == 3);
  CHECK(l[0] ==
        "TOTAL size=1 count=1 blocks=0 entries=1 pid=42 program=de\\x0dmo time=1970-01-01 00:00:00 UTC sort=size "
        "lost_folds=3");
  CHECK(l[2] == "                   1                1                0                    1  scope    evil\\x0aTOTAL size=0\\x1b[2J");
}

TEST_CASE("a folded row is a dump line whose size is its peak sum", "[control][dump]") {
  entry f;
  f.name = "request/";
  f.kind = arenastat::entry_kind::folded;
  f.peak_bytes = 400;
  f.peak_sum_bytes = 1000;
  f.count = 7;
  f.folded_entries = 5;
  const auto l = lines(render_dump({f}, dump_sort::size, {42, "demo", 0}));
  REQUIRE(l.size() == 3);
  CHECK(l[2] == "                1000                7                0                  400  folded   request/");
}

TEST_CASE("dump file names carry the pid and the UTC time", "[control][dump]") {
  CHECK(dump_file_name(1234, 1763778600) == "arenastat.1234.20251122023000.txt");
}

TEST_CASE("the dump sort is parsed from size, count or blocks only", "[control][dump]") {
  CHECK(parse_dump_sort("size") == dump_sort::size);
  CHECK(parse_dump_sort("count") == dump_sort::count);
  CHECK(parse_dump_sort("blocks") == dump_sort::blocks);
  CHECK_THROWS_WITH(parse_dump_sort("peak"), "dump sort 'peak': expected size, count or blocks");
}

TEST_CASE("write_dump to a path writes the current table there", "[control][dump]") {
  control_test::temp_dir dir;
  static tracking_resource r("dump_test/written");
  void* p = r.allocate(777);
  const std::string path = write_dump(dir.file("out.txt"), dump_sort::size);
  r.deallocate(p, 777);
  CHECK(path == dir.file("out.txt"));
  const std::string text = slurp(path);
  CHECK(text.rfind("TOTAL size=", 0) == 0);
  CHECK(text.find("                 777                1                1                  777  account  dump_test/written\n") != std::string::npos);
}

TEST_CASE("write_dump without a path never overwrites an earlier dump", "[control][dump]") {
  control_test::temp_dir dir;
  ::setenv("ARENASTAT_DUMP_DIR", dir.path().c_str(), 1);
  const std::string first = write_dump();
  const std::string second = write_dump();
  ::unsetenv("ARENASTAT_DUMP_DIR");
  const std::string prefix = dir.path() + "/arenastat." + std::to_string(::getpid()) + ".";
  CHECK(first.rfind(prefix, 0) == 0);
  CHECK(first.size() == prefix.size() + 14 + 4);  // YYYYmmddHHMMSS.txt
  CHECK(second != first);
  CHECK(control_test::exists(first));
  CHECK(control_test::exists(second));
}

TEST_CASE("write_dump names the path it cannot create", "[control][dump]") {
  CHECK_THROWS_WITH(write_dump("/nonexistent-dir/x.txt"),
                    Catch::Matchers::StartsWith("dump: cannot create '/nonexistent-dir/x.txt': "));
}

TEST_CASE("install_dump_signal accepts only SIGUSR1 and SIGUSR2", "[control][dump]") {
  CHECK_THROWS_WITH(install_dump_signal(SIGTERM),
                    "dump signal " + std::to_string(SIGTERM) + ": only SIGUSR1 and SIGUSR2 may trigger dumps");
}
