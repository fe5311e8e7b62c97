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

const std::vector<entry> sample{account_entry("cache", 5000, 8000, 12, 2),  // size 5000, count 10
                                scope_entry("compile/a", 7000, 3),          // size 7000, count 3
                                account_entry("index", 100, 100, 60, 10)};  // size 100, count 50

}  // namespace

TEST_CASE("a dump starts with the TOTAL line and lists the largest size first", "[control][dump]") {
  const auto l = lines(render_dump(sample, dump_sort::size, {42, "demo", 0}));
  REQUIRE(l.size() == 5);
  CHECK(l[0] == "TOTAL size=12100 count=63 entries=3 pid=42 program=demo time=1970-01-01 00:00:00 UTC sort=size");
  CHECK(l[1] == "                size            count                 peak  kind     name");
  CHECK(l[2] == "                7000                3                 7000  scope    compile/a");
  CHECK(l[3] == "                5000               10                 8000  account  cache");
  CHECK(l[4] == "                 100               50                  100  account  index");
}

TEST_CASE("a dump sorted by count lists the most blocks or runs first", "[control][dump]") {
  const auto l = lines(render_dump(sample, dump_sort::count, {42, "demo", 0}));
  REQUIRE(l.size() == 5);
  CHECK(l[0].find(" sort=count") != std::string::npos);
  CHECK(l[2].find("index") != std::string::npos);
  CHECK(l[3].find("cache") != std::string::npos);
  CHECK(l[4].find("compile/a") != std::string::npos);
}

TEST_CASE("dump file names carry the pid and the UTC time", "[control][dump]") {
  CHECK(dump_file_name(1234, 1763778600) == "arenastat.1234.20251122023000.txt");
}

TEST_CASE("the dump sort is parsed from size or count only", "[control][dump]") {
  CHECK(parse_dump_sort("size") == dump_sort::size);
  CHECK(parse_dump_sort("count") == dump_sort::count);
  CHECK_THROWS_WITH(parse_dump_sort("peak"), "dump sort 'peak': expected size or count");
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
  CHECK(text.find("                 777                1                  777  account  dump_test/written\n") !=
        std::string::npos);
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
                    Catch::Matchers::StartsWith("dump: cannot create /nonexistent-dir/x.txt"));
}

TEST_CASE("install_dump_signal accepts only SIGUSR1 and SIGUSR2", "[control][dump]") {
  CHECK_THROWS_WITH(install_dump_signal(SIGTERM),
                    "dump signal " + std::to_string(SIGTERM) + ": only SIGUSR1 and SIGUSR2 may trigger dumps");
}
