// Streamed reports: table_copy reads the table as snapshot() does, in less
// memory; report_stream hands the report over in bounded chunks that add up to
// report(); --top=N picks the N first of the full order.
#include <unistd.h>

#include <arenastat/arenastat.hpp>
#include <arenastat/dump.hpp>
#include <catch2/catch.hpp>
#include <memory_resource>
#include <nlohmann/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "chunk_stream.hpp"

using nlohmann::json;

namespace {

// N scopes "stream-test/<tag>/<i>" whose peaks grow with i: chunk i is 128 + 64 * i bytes.
void fold_scopes(const std::string& tag, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    arenastat::scope s{"stream-test/" + tag + "/" + std::to_string(i)};
    arenastat::arena_resource arena("node", {.initial_chunk = 128 + 64 * i});
    (void)arena.allocate(8);
  }
}

std::vector<std::string> chunks_of(arenastat::report_stream s) {
  std::vector<std::string> out;
  std::string_view c;
  while (s.next(c)) out.emplace_back(c);
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s;
  return out;
}

// The report without the process's figures (VmRSS moves between two reports).
std::string without_process(const std::string& report) {
  if (report.starts_with("{")) {
    json j = json::parse(report);
    j.erase("process");
    return j.dump();
  }
  std::string out;
  std::size_t at = 0;
  while (at < report.size()) {
    std::size_t end = report.find('\n', at);
    end = end == std::string::npos ? report.size() : end + 1;
    const std::string_view line(report.data() + at, end - at);
    if (!line.starts_with("Process: ") && !line.starts_with("jemalloc: ")) out += line;
    at = end;
  }
  return out;
}

}  // namespace

TEST_CASE("table_copy reads every entry as snapshot() does", "[report][stream]") {
  fold_scopes("copy", 50);
  // An account with a declared tag, so that a scope read after it into the
  // same entry must clear the account's fields (tags_used among them).
  arenastat::tracking_resource tagged("stream/tagged", "stream_tag", std::pmr::new_delete_resource());
  const arenastat::table_copy c = arenastat::table_copy::take();
  const std::vector<arenastat::entry> snap = arenastat::snapshot();
  REQUIRE(c.size() == snap.size());
  arenastat::entry e;
  // Forwards (scopes, then accounts and folded rows), then backwards.
  for (std::size_t k = 0; k < 2 * c.size(); ++k) {
    const std::size_t i = k < c.size() ? k : 2 * c.size() - 1 - k;
    c.read(i, e);  // one entry reused: every field must be overwritten
    INFO("entry " << i << " " << snap[i].name);
    CHECK(e.name == snap[i].name);
    CHECK(c.name(i) == snap[i].name);
    CHECK(c.kind(i) == snap[i].kind);
    CHECK(e.kind == snap[i].kind);
    CHECK(e.peak_bytes == snap[i].peak_bytes);
    CHECK(e.at_peak == snap[i].at_peak);
    CHECK(e.count == snap[i].count);
    CHECK(e.counters == snap[i].counters);
    CHECK(e.live_bytes == snap[i].live_bytes);
    CHECK(e.allocations == snap[i].allocations);
    CHECK(e.live_by_tag == snap[i].live_by_tag);
    CHECK(e.tags_used == snap[i].tags_used);
    CHECK(e.folded_entries == snap[i].folded_entries);
  }
}

TEST_CASE("table_copy holds the table's compact records, not entries", "[report][stream]") {
  fold_scopes("size", 200);
  const arenastat::table_copy c = arenastat::table_copy::take();
  const arenastat::table_status st = c.status();
  REQUIRE(st.scope_entries >= 200);
  // A scope record: a 56-byte header, its name, 9 bytes per tag and 17 plus
  // the name per counter, rounded up to 8 bytes; plus an 8-byte offset. The
  // scopes of this test binary have short names, at most 2 tags and 2
  // counters: bound each by a 1 KiB name.
  std::size_t scope_bound = 0;
  arenastat::entry e;
  std::size_t others = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (c.kind(i) != arenastat::entry_kind::scope) {
      ++others;
      continue;
    }
    c.read(i, e);
    std::size_t bytes = 56 + e.name.size() + 9 * e.at_peak.size();
    for (const auto& k : e.counters) bytes += 17 + k.name.size();
    scope_bound += (bytes + 7) / 8 * 8 + 8;
  }
  // Accounts and folded rows are held as entries (few: the program's own objects).
  const std::size_t other_bound = others * (sizeof(arenastat::entry) + 2048);
  CHECK(c.bytes_held() <= scope_bound + other_bound);
  CHECK(c.bytes_held() < st.scope_entries * sizeof(arenastat::entry));
}

TEST_CASE("a streamed report adds up to report() in chunks of about 64 KiB", "[report][stream]") {
  fold_scopes("chunks", 3000);  // ~100 bytes of JSON each: over 4 chunks
  for (const char* options : {"--json", "", "-H --sort=name", "--tree"}) {
    INFO("options '" << options << "'");
    const std::vector<std::string> chunks = chunks_of(arenastat::stream_report(options));
    CHECK(without_process(joined(chunks)) == without_process(arenastat::report(options)));
    if (std::string_view(options) == "--tree") continue;  // the tree is built whole, then handed over
    CHECK(chunks.size() >= 4);
    for (std::size_t i = 0; i + 1 < chunks.size(); ++i) {
      // A chunk is handed over once it reaches 64 KiB: at most one row more.
      CHECK(chunks[i].size() >= arenastat::detail::chunk_bytes);
      CHECK(chunks[i].size() < arenastat::detail::chunk_bytes + 4096);
    }
  }
  const json j = json::parse(joined(chunks_of(arenastat::stream_report("--json"))));
  std::size_t mine = 0;
  for (const auto& e : j.at("entries"))
    if (e.at("name").get<std::string>().starts_with("stream-test/chunks/")) ++mine;
  CHECK(mine == 3000);
}

TEST_CASE("a report stream checks its options before copying", "[report][stream]") {
  CHECK_THROWS_WITH(arenastat::stream_report("--top=0"), Catch::Contains("--top"));
  CHECK_THROWS_AS(arenastat::stream_report("--bogus"), std::invalid_argument);
}

TEST_CASE("a finished report stream holds nothing", "[report][stream]") {
  arenastat::report_stream s = arenastat::stream_report("--json");
  CHECK(s.bytes_held() >= arenastat::detail::chunk_bytes);
  std::string_view c;
  while (s.next(c)) {
  }
  CHECK(s.bytes_held() == 0);
  CHECK_FALSE(s.next(c));
}

TEST_CASE("a stream of a format made whole first counts the whole text it holds", "[report][stream]") {
  // --tree, --html and prometheus need every row before their first byte: the
  // control server bounds the answers it holds by bytes_held(), so it must be
  // the whole text, not one chunk (text and JSON render a chunk at a time).
  fold_scopes("whole", 3000);
  for (const char* options : {"--tree", "--html", "--prometheus"}) {
    INFO("options '" << options << "'");
    arenastat::report_stream s = arenastat::stream_report(options);
    const std::size_t held = s.bytes_held();
    std::size_t total = 0;
    std::string_view c;
    while (s.next(c)) total += c.size();
    if (std::string_view(options) != "--prometheus") CHECK(total > arenastat::detail::chunk_bytes);
    CHECK(held >= total);
    CHECK(s.bytes_held() == 0);
  }
}

TEST_CASE("a report cut by --top=N shows the N first entries of the full order, for every sort key", "[report][stream]") {
  fold_scopes("top", 40);
  for (const char* sort : {"peak", "count", "name", "live"}) {
    INFO("--sort=" << sort);
    const json all = json::parse(arenastat::report(std::string("--json --sort=") + sort));
    const json top = json::parse(arenastat::report(std::string("--json --top=7 --sort=") + sort));
    REQUIRE(all.at("entries").size() > 7);
    REQUIRE(top.at("entries").size() == 7);
    for (std::size_t i = 0; i < 7; ++i) CHECK(top.at("entries")[i].at("name") == all.at("entries")[i].at("name"));
    CHECK(top.at("omitted_beyond_top") == all.at("entries").size() - 7);
  }
  // Among this test's scopes, peak order is known: chunk i is 128 + 64 * i bytes.
  const json top = json::parse(arenastat::report("--json --top=100000 --sort=peak"));
  std::vector<std::string> mine;
  for (const auto& e : top.at("entries")) {
    const std::string name = e.at("name");
    if (name.starts_with("stream-test/top/")) mine.push_back(name);
  }
  REQUIRE(mine.size() == 40);
  for (std::size_t k = 0; k < 40; ++k) CHECK(mine[k] == "stream-test/top/" + std::to_string(39 - k));
}

namespace {

bool by_peak_then_name(const arenastat::scope_key& a, const arenastat::scope_key& b, const void*) {
  return a.peak != b.peak ? a.peak > b.peak : a.name < b.name;
}

std::size_t scopes_in(const arenastat::table_copy& c) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < c.size(); ++i) n += c.kind(i) == arenastat::entry_kind::scope;
  return n;
}

}  // namespace

TEST_CASE("a bounded copy takes the top scope entries only, chosen on the locked table", "[report][stream]") {
  fold_scopes("bound", 300);
  std::vector<arenastat::entry> scopes;
  for (auto& e : arenastat::snapshot())
    if (e.kind == arenastat::entry_kind::scope) scopes.push_back(e);
  std::sort(scopes.begin(), scopes.end(), [](const auto& a, const auto& b) {
    return a.peak_bytes != b.peak_bytes ? a.peak_bytes > b.peak_bytes : a.name < b.name;
  });
  REQUIRE(scopes.size() >= 300);
  const arenastat::table_copy full = arenastat::table_copy::take();
  const arenastat::table_copy top = arenastat::table_copy::take({.top = 5, .before = by_peak_then_name});
  REQUIRE(scopes_in(top) == 5);
  CHECK(top.scopes_beyond_top() == scopes.size() - 5);
  CHECK(top.scopes_below_min() == 0);
  std::vector<std::string> names;
  for (std::size_t i = 0; i < top.size(); ++i)
    if (top.kind(i) == arenastat::entry_kind::scope) names.emplace_back(top.name(i));
  std::vector<std::string> expected;
  for (std::size_t k = 0; k < 5; ++k) expected.push_back(scopes[k].name);
  std::sort(expected.begin(), expected.end());  // a copy keeps name order
  CHECK(names == expected);
  // Five records instead of every one (accounts and folded rows are whole in both).
  CHECK(top.bytes_held() * 10 < full.bytes_held());
}

TEST_CASE("a bounded copy leaves out scope entries below its minimum peak and counts them", "[report][stream]") {
  fold_scopes("minimum", 50);  // peaks 128, 192, ..., 3264
  std::size_t below = 0, at_least = 0, accounts_below = 0;
  for (const auto& e : arenastat::snapshot()) {
    if (e.kind == arenastat::entry_kind::account) accounts_below += e.peak_bytes < 1000;
    if (e.kind != arenastat::entry_kind::scope) continue;
    ++(e.peak_bytes < 1000 ? below : at_least);
  }
  const arenastat::table_copy c = arenastat::table_copy::take({.min_peak = 1000});
  CHECK(c.scopes_below_min() == below);
  CHECK(scopes_in(c) == at_least);
  const json j = json::parse(arenastat::report("--json -s=1000"));
  CHECK(j.at("omitted_smaller") == below + accounts_below);  // -s hides accounts too
  CHECK(j.at("table").at("scope_entries") == below + at_least);
}

TEST_CASE("a bounded copy without an order for its top is refused", "[report][stream]") {
  CHECK_THROWS_AS(arenastat::table_copy::take({.top = 3}), std::invalid_argument);
}

TEST_CASE("a dump larger than a chunk is written as render_dump renders it", "[report][stream]") {
  fold_scopes("dump", 2000);  // ~100 bytes a line: several chunks
  char dir[] = "/tmp/arenastat-stream-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/dump.txt";
  REQUIRE(arenastat::write_dump(path, arenastat::dump_sort::size) == path);
  std::ifstream in(path);
  const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string rendered = arenastat::render_dump(arenastat::snapshot(), arenastat::dump_sort::size, {});
  REQUIRE(written.size() > arenastat::detail::chunk_bytes);
  // The TOTAL line carries the pid, program and time: the rest must be equal.
  CHECK(written.substr(written.find('\n')) == rendered.substr(rendered.find('\n')));
  CHECK(written.substr(0, written.find(" pid=")) == rendered.substr(0, rendered.find(" pid=")));
  std::remove(path.c_str());
  ::rmdir(dir);
}

namespace {

arenastat::detail::chunk_stream failing_after_one_chunk() {
  std::string out = "first";
  co_yield out;
  throw std::runtime_error("renderer failed");
}

arenastat::detail::chunk_stream counted(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    out += std::to_string(i) + ',';
    if (out.size() >= 4) co_yield out;
  }
  co_yield out;
}

}  // namespace

TEST_CASE("a chunk stream hands over every chunk once and skips empty ones", "[report][stream]") {
  arenastat::detail::chunk_stream s = counted(12);  // handed over at 4 bytes or more: "10," waits for "11,"
  std::vector<std::string> got;
  std::string_view c;
  while (s.next(c)) got.emplace_back(c);
  CHECK(got == std::vector<std::string>{"0,1,", "2,3,", "4,5,", "6,7,", "8,9,", "10,11,"});
  CHECK_FALSE(s.next(c));
  arenastat::detail::chunk_stream empty = counted(0);
  CHECK_FALSE(empty.next(c));
}

TEST_CASE("a chunk stream rethrows what its renderer threw, then ends", "[report][stream]") {
  arenastat::detail::chunk_stream s = failing_after_one_chunk();
  std::string_view c;
  REQUIRE(s.next(c));
  CHECK(c == "first");
  CHECK_THROWS_WITH(s.next(c), "renderer failed");
  CHECK_FALSE(s.next(c));
}
