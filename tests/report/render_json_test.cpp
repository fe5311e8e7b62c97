// render_report, JSON: parsed back with nlohmann and checked field by field
// against schema version 1 (docs/report.md).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sample_entries.hpp"

using namespace report_test;
using nlohmann::json;

namespace {

json parse(const std::string& options) { return json::parse(render(options)); }

std::vector<std::string> names(const json& j) {
  std::vector<std::string> v;
  for (const auto& e : j.at("entries")) v.push_back(e.at("name").get<std::string>());
  return v;
}

const json& entry_named(const json& j, const std::string& name) {
  for (const auto& e : j.at("entries"))
    if (e.at("name") == name) return e;
  FAIL("no entry named " << name);
  throw;  // not reached
}

}  // namespace

TEST_CASE("json: the top level has version, pid, process and entries", "[json]") {
  const json j = parse("--json");
  REQUIRE(j.is_object());
  CHECK(j.at("version") == 1);
  CHECK(j.at("pid") == 4242);
  CHECK(j.at("process").at("rss_bytes") == 1048576);
  CHECK(j.at("process").at("hwm_bytes") == 2097152);
  CHECK(j.at("process").at("rss_anon_bytes") == 524288);
  CHECK_FALSE(j.at("process").contains("jemalloc"));
  REQUIRE(j.at("entries").is_array());
  CHECK(j.at("entries").size() == 5);
}

TEST_CASE("json: a scope entry has every schema field with its value", "[json]") {
  const json e = entry_named(parse("--json"), "compile/Foo::bar");
  CHECK(e.at("kind") == "scope");
  CHECK(e.at("peak_bytes").is_number_unsigned());
  CHECK(e.at("peak_bytes") == 3000);
  CHECK(e.at("at_peak") == json{{"node", 1000}, {"resource", 2000}});
  CHECK(e.at("count") == 2);
  CHECK(e.at("last_peak_bytes") == 1500);
  CHECK(e.at("counters") == json{{"nodes", 42}});
  CHECK(e.at("time_s").is_number_float());
  CHECK(e.at("time_s") == 0.5);
  CHECK(e.at("last_time_s") == 0.25);
  CHECK(e.at("result") == "ok");
  CHECK(e.at("oom_count") == 0);
  CHECK(e.at("err_count") == 0);
  CHECK(e.at("thread") == 111);
  CHECK_FALSE(e.contains("live_bytes"));
}

TEST_CASE("json: a scope without counters has an empty counters object", "[json]") {
  const json e = entry_named(parse("--json"), "parse/main");
  CHECK(e.at("counters").is_object());
  CHECK(e.at("counters").empty());
  CHECK(e.at("at_peak") == json{{"resource", 500}});
}

TEST_CASE("json: an account entry has every schema field with its value", "[json]") {
  const json e = entry_named(parse("--json"), "cache/lru");
  CHECK(e.at("kind") == "account");
  CHECK(e.at("peak_bytes") == 4096);
  CHECK(e.at("at_peak") == json{{"heap", 4096}});
  CHECK(e.at("live_bytes") == 2048);
  CHECK(e.at("allocated_bytes") == 10000);
  CHECK(e.at("allocations") == 10);
  CHECK(e.at("frees") == 5);
  CHECK(e.at("live_by_tag") == json{{"heap", 2048}});
  CHECK_FALSE(e.contains("count"));
  CHECK_FALSE(e.contains("counters"));
}

TEST_CASE("json: entries follow the sort order", "[json]") {
  using v = std::vector<std::string>;
  CHECK(names(parse("--json")) ==
        v{"cache/lru", "compile/Foo::bar", "compile/Baz::qux", "parse/main", "cache/index"});
  CHECK(names(parse("--json --sort=peak")) == names(parse("--json")));
  // count: runs for scopes, allocations for accounts; ties by peak.
  CHECK(names(parse("--json --sort=count")) ==
        v{"cache/lru", "parse/main", "compile/Foo::bar", "compile/Baz::qux", "cache/index"});
  CHECK(names(parse("--json --sort=name")) ==
        v{"cache/index", "cache/lru", "compile/Baz::qux", "compile/Foo::bar", "parse/main"});
  // live: accounts by live bytes; scopes have none and follow by peak.
  CHECK(names(parse("--json --sort=live")) ==
        v{"cache/lru", "compile/Foo::bar", "compile/Baz::qux", "parse/main", "cache/index"});
}

TEST_CASE("json: -s and --top apply and the omitted counts are given", "[json]") {
  const json j = parse("--json -s=1000 --top=2");
  CHECK(names(j) == std::vector<std::string>{"cache/lru", "compile/Foo::bar"});
  CHECK(j.at("omitted_smaller") == 2);
  CHECK(j.at("omitted_beyond_top") == 1);
  CHECK(j.at("options") == json{{"min_size_bytes", 1000}, {"sort", "peak"}, {"top", 2}});
  CHECK(parse("--json").at("options").at("top").is_null());
}

TEST_CASE("json: -H does not change the numbers", "[json]") {
  CHECK(parse("--json -H") == parse("--json"));
}

TEST_CASE("json: jemalloc totals are an object under process when present", "[json]") {
  auto proc = sample_process();
  proc.jemalloc = true;
  proc.je_allocated = 1;
  proc.je_active = 2;
  proc.je_resident = 3;
  proc.je_mapped = 4;
  const json j = json::parse(
      arenastat::render_report(sample(), proc, arenastat::parse_report_options("--json")));
  CHECK(j.at("process").at("jemalloc") ==
        json{{"allocated_bytes", 1}, {"active_bytes", 2}, {"resident_bytes", 3},
             {"mapped_bytes", 4}});
}

TEST_CASE("json: names that are not UTF-8 still give valid JSON", "[json]") {
  std::vector<arenastat::entry> v{make_scope("bad\xff name", 1, {}, 1, 0, "ok", 1)};
  const std::string text =
      arenastat::render_report(v, sample_process(), arenastat::parse_report_options("--json"));
  const json j = json::parse(text);
  CHECK(j.at("entries").at(0).at("name") == "bad\xEF\xBF\xBD" "ff name");  // U+FFFD and the byte in hex
}

TEST_CASE("json report: counters carry the shown value, the value at the peak and the last value", "[render]") {
  arenastat::entry e = make_scope("task", 100, {}, 1, 1.0, "ok", 1);
  e.counters = {{"at", 7, 9, true}, {"late", 0, 5, false}};
  const auto j = nlohmann::json::parse(
      arenastat::render_report({e}, sample_process(), arenastat::parse_report_options("--json")));
  const auto& row = j.at("entries").at(0);
  CHECK(row["counters"] == nlohmann::json{{"at", 7}, {"late", 5}});
  CHECK(row["counters_at_peak"] == nlohmann::json{{"at", 7}});  // "late" had no value at the peak
  CHECK(row["counters_last"] == nlohmann::json{{"at", 9}, {"late", 5}});
}
