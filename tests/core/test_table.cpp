#include <catch2/catch.hpp>

#include <malloc.h>

#include <atomic>
#include <cstdio>
#include <stdexcept>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "support.hpp"

using arenastat::arena_resource;
using arenastat::entry_kind;
using arenastat::scope;

TEST_CASE("snapshot lists scopes then accounts, each in name order", "[table]") {
  { scope s{"test/table/b"}; }
  { scope s{"test/table/a"}; }
  arenastat::account::get("test.table.account");
  const auto all = arenastat::snapshot();
  std::size_t first_account = all.size();
  for (std::size_t i = 0; i < all.size(); ++i)
    if (all[i].kind == entry_kind::account) {
      first_account = i;
      break;
    }
  for (std::size_t i = first_account; i < all.size(); ++i) CHECK(all[i].kind == entry_kind::account);
  for (std::size_t i = 1; i < first_account; ++i) CHECK(all[i - 1].name < all[i].name);
  for (std::size_t i = first_account + 1; i < all.size(); ++i) CHECK(all[i - 1].name < all[i].name);
  CHECK(arenastat::scope_entry_count() == first_account);
  CHECK(arenastat::account_entry_count() == all.size() - first_account);
}

TEST_CASE("entries are eternal and keyed by name", "[table]") {
  const std::size_t before = arenastat::scope_entry_count();
  for (int i = 0; i < 5; ++i) scope s{"test/table/same-name"};
  { scope s{"test/table/other-name"}; }
  CHECK(arenastat::scope_entry_count() == before + 2);
  CHECK(test::find_entry("test/table/same-name", entry_kind::scope).count == 5);
}

TEST_CASE("a table entry costs at most 128 bytes plus its name", "[table]") {
  // Measured with glibc's own accounting, over 10000 new names of 28 characters,
  // each entry with one tag and one counter in its breakdown. The cap is lifted
  // so that every name stays an entry.
  constexpr int n = 10000;
  const std::size_t old_max = arenastat::table_max();
  arenastat::set_table_max(0);
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back("test/table/per-entry/" + std::to_string(1000000 + i));
  const std::size_t before = mallinfo2().uordblks;
  {
    arena_resource a{"node", {.initial_chunk = 1024}};
    for (const std::string& name : names) {
      scope s{name};
      s.set_counter("nodes", 1);
      (void)a.allocate(8, 8);  // one chunk  // one chunk each: a breakdown with one tag
      a.release();
    }
  }
  const std::size_t after = mallinfo2().uordblks;
  arenastat::set_table_max(old_max);
  const double per_entry = static_cast<double>(after - before) / n;
  WARN("table memory per entry: " << per_entry << " bytes, name " << names[0].size() << " bytes");
  CHECK(per_entry <= 128.0 + static_cast<double>(names[0].size()));
}

namespace {

// Runs one scope of `name` whose peak is `bytes` (0: no allocation).
void run_scope(const std::string& name, std::size_t bytes) {
  scope s{name};
  if (bytes == 0) return;
  arena_resource a{"node", {.initial_chunk = bytes}};
  (void)a.allocate(8, 8);  // one chunk of `bytes`
}

const arenastat::entry* find_in(const std::vector<arenastat::entry>& all, const std::string& name,
                                entry_kind kind) {
  for (const auto& e : all)
    if (e.name == name && e.kind == kind) return &e;
  return nullptr;
}

}  // namespace

TEST_CASE("the cap is ARENASTAT_TABLE_MAX's default of 10000 and can be set from code", "[table][cap]") {
  const std::size_t old_max = arenastat::table_max();
  CHECK(arenastat::default_table_max == 10000);
  arenastat::set_table_max(123456);
  CHECK(arenastat::table_max() == 123456);
  CHECK(arenastat::table_status_now().max == 123456);
  arenastat::set_table_max(old_max);
}

TEST_CASE("past the cap the cheapest entries by peak fold into a row per name prefix", "[table][cap]") {
  const std::size_t old_max = arenastat::table_max();
  arenastat::set_table_max(0);
  const std::size_t prior = arenastat::scope_entry_count();
  const auto status_before = arenastat::table_status_now();
  // 16 entries to keep (1 MiB peaks) and 16 cheaper ones (1 KiB) so that the
  // max/8 + 1 entries folded below are never the ones kept, whatever ran before.
  constexpr std::size_t kept = 16, filler = 16;
  const std::size_t max = prior + kept + filler;
  arenastat::set_table_max(max);
  for (std::size_t i = 0; i < kept; ++i) run_scope("~cap/keep/" + std::to_string(i), 1 << 20);
  for (std::size_t i = 0; i < filler; ++i) run_scope("~cap/fill/" + std::to_string(i), 1024);
  REQUIRE(arenastat::scope_entry_count() == max);  // at the cap: nothing folded yet
  // One more name, peak 0: the cheapest (peak 0, one run, '!' sorts first) of
  // the max/8 + 1 entries folded to bring the table to max - max/8.
  run_scope("!cap/cheap", 0);
  const auto status = arenastat::table_status_now();
  CHECK(status.scope_entries == max - max / 8);
  CHECK(status.folded_entries == status_before.folded_entries + max / 8 + 1);
  const auto all = arenastat::snapshot();
  CHECK(find_in(all, "!cap/cheap", entry_kind::scope) == nullptr);
  const arenastat::entry* row = find_in(all, "!cap/", entry_kind::folded);
  REQUIRE(row != nullptr);
  CHECK(row->folded_entries == 1);
  CHECK(row->count == 1);
  CHECK(row->peak_sum_bytes == 0);
  CHECK(row->peak_bytes == 0);
  for (std::size_t i = 0; i < kept; ++i)
    CHECK(find_in(all, "~cap/keep/" + std::to_string(i), entry_kind::scope) != nullptr);
  // Folded rows come last in the snapshot.
  CHECK(all.back().kind == entry_kind::folded);

  SECTION("a folded name's later run starts a new entry; its folded runs stay in the row") {
    run_scope("!cap/cheap", 4096);
    const auto again = arenastat::snapshot();
    const arenastat::entry* e = find_in(again, "!cap/cheap", entry_kind::scope);
    REQUIRE(e != nullptr);
    CHECK(e->count == 1);
    CHECK(e->peak_bytes == 4096);
    CHECK(find_in(again, "!cap/", entry_kind::folded)->folded_entries == 1);
    CHECK(find_in(again, "!cap/", entry_kind::folded)->count == 1);
  }
  arenastat::set_table_max(old_max);
}

// reset_peaks makes entries forget their largest run; an overflow row forgets
// its largest folded peak the same way, and keeps its counts.
TEST_CASE("reset_peaks sets the overflow rows' peak max to 0 and keeps their counts", "[table][cap]") {
  const std::size_t old_max = arenastat::table_max();
  arenastat::set_table_max(0);
  run_scope("?reset/big", 8192);
  run_scope("?reset/small", 1024);
  // A cap of 1 folds all entries but the one of the largest peak: "?reset/small"
  // at least (smaller than "?reset/big"), "?reset/big" too unless it is that one.
  arenastat::set_table_max(1);
  const auto folded = arenastat::snapshot();
  const bool big_kept = find_in(folded, "?reset/big", entry_kind::scope) != nullptr;
  REQUIRE(find_in(folded, "?reset/small", entry_kind::scope) == nullptr);
  const arenastat::entry* row = find_in(folded, "?reset/", entry_kind::folded);
  REQUIRE(row != nullptr);
  const std::uint64_t entries = big_kept ? 1 : 2;
  CHECK(row->folded_entries == entries);
  CHECK(row->count == entries);
  CHECK(row->peak_bytes == (big_kept ? 1024u : 8192u));
  CHECK(row->peak_sum_bytes == (big_kept ? 1024u : 8192u + 1024u));
  arenastat::reset_peaks();
  const auto after = arenastat::snapshot();
  const arenastat::entry* reset = find_in(after, "?reset/", entry_kind::folded);
  REQUIRE(reset != nullptr);
  CHECK(reset->peak_bytes == 0);
  CHECK(reset->folded_entries == entries);
  CHECK(reset->count == entries);
  CHECK(reset->peak_sum_bytes == (big_kept ? 1024u : 8192u + 1024u));
  arenastat::set_table_max(old_max);
}

TEST_CASE("beyond 64 prefixes folded entries go to one (other) row", "[table][cap]") {
  const std::size_t old_max = arenastat::table_max();
  arenastat::set_table_max(0);
  auto rows_now = [] {
    std::vector<arenastat::entry> rows;
    for (auto& e : arenastat::snapshot())
      if (e.kind == entry_kind::folded) rows.push_back(e);
    return rows;
  };
  const auto rows_before = rows_now();
  std::size_t prefix_rows = 0;
  std::uint64_t other_before = 0;
  for (const auto& r : rows_before) {
    if (r.name == "(other)") other_before = r.folded_entries;
    else ++prefix_rows;
  }
  for (int i = 0; i < 16; ++i) run_scope("~pfx/fill/" + std::to_string(i), 1024);  // a cap of at least 16
  constexpr int fresh = 70;  // more new prefixes than rows left
  char name[32];
  for (int i = 0; i < fresh; ++i) {
    std::snprintf(name, sizeof name, "!p%02d/x", i);
    run_scope(name, 0);
  }
  // Folding down to max - max/8 takes these 70 first: peak 0, one run, and
  // names that sort before every other test's ("test/...", "~cap/...", "~pfx/...").
  const std::size_t max = arenastat::scope_entry_count() - fresh;
  arenastat::set_table_max(max);
  const auto rows = rows_now();
  std::size_t prefixes_after = 0;
  std::uint64_t other_after = 0;
  for (const auto& r : rows) {
    if (r.name == "(other)") other_after = r.folded_entries;
    else ++prefixes_after;
  }
  CHECK(prefixes_after == arenastat::max_folded_rows);
  REQUIRE(!rows.empty());
  CHECK(rows.back().name == "(other)");
  const std::size_t with_rows = arenastat::max_folded_rows - prefix_rows;  // the first fresh prefixes
  for (int i = 0; i < fresh; ++i) {
    std::snprintf(name, sizeof name, "!p%02d/", i);
    const bool has_row = find_in(rows, name, entry_kind::folded) != nullptr;
    CHECK(has_row == (static_cast<std::size_t>(i) < with_rows));
  }
  CHECK(other_after >= other_before + (fresh - with_rows));
  arenastat::set_table_max(old_max);
}

TEST_CASE("names longer than 1 KiB are refused with the limit named", "[table][names]") {
  const std::string longest(arenastat::max_name_bytes, 'n');
  CHECK_NOTHROW(scope{longest});
  const std::string too_long(arenastat::max_name_bytes + 1, 'n');
  CHECK_THROWS_MATCHES(scope{too_long}, std::invalid_argument,
                       Catch::Message("arenastat::scope: name of 1025 bytes is longer than the maximum of "
                                      "1024 bytes (arenastat::max_name_bytes)"));
  CHECK_THROWS_MATCHES(arenastat::account::get(too_long), std::invalid_argument,
                       Catch::Message("arenastat::account: name of 1025 bytes is longer than the maximum of "
                                      "1024 bytes (arenastat::max_name_bytes)"));
  CHECK_THROWS_MATCHES(scope{""}, std::invalid_argument, Catch::Message("arenastat::scope: empty name"));
}

TEST_CASE("kind_name spells each kind once", "[table]") {
  CHECK(std::string(arenastat::kind_name(entry_kind::scope)) == "scope");
  CHECK(std::string(arenastat::kind_name(entry_kind::account)) == "account");
  CHECK(std::string(arenastat::kind_name(entry_kind::folded)) == "folded");
}

TEST_CASE("breakdowns survive being rewritten in place and reallocated", "[table]") {
  // Same layout (one tag, one counter of the same length): rewritten in place;
  // a longer counter name: the record is reallocated under the same name.
  {
    scope s{"test/table/rewrite"};
    s.set_counter("ab", 1);
    run_scope("test/table/rewrite/inner", 0);
    arena_resource a{"node", {.initial_chunk = 1024}};
    (void)a.allocate(8, 8);  // one chunk
  }
  {
    scope s{"test/table/rewrite"};
    s.set_counter("cd", 2);
    arena_resource a{"node", {.initial_chunk = 2048}};
    (void)a.allocate(8, 8);  // one chunk
  }
  auto e = test::find_entry("test/table/rewrite", entry_kind::scope);
  CHECK(e.peak_bytes == 2048);
  CHECK(e.counters == std::vector<arenastat::counter_value>{{"cd", 2, 2, true}});
  {
    scope s{"test/table/rewrite"};
    s.set_counter("longer-name", 3);
    s.set_counter("x", 4);
    arena_resource a{"node", {.initial_chunk = 4096}};
    (void)a.allocate(8, 8);  // one chunk
  }
  e = test::find_entry("test/table/rewrite", entry_kind::scope);
  CHECK(e.peak_bytes == 4096);
  CHECK(e.count == 3);
  CHECK(e.counters == std::vector<arenastat::counter_value>{{"longer-name", 3, 3, true}, {"x", 4, 4, true}});
  CHECK(e.at_peak == std::vector<arenastat::tag_bytes>{{"node", 4096}});
}

TEST_CASE("runs folded again on one thread keep the largest run's breakdown; an equal peak replaces it",
          "[table]") {
  // One name in a loop on one thread: after the first run the fold finds the
  // record from the thread's memo. Smaller runs must not touch the breakdown,
  // a run as large as the largest replaces it, and every run is counted.
  const auto run = [](const char* tag, std::size_t chunk, const char* counter) {
    scope s{"test/table/memo"};
    if (counter) s.set_counter(counter, static_cast<std::int64_t>(chunk));
    arena_resource a{tag, {.initial_chunk = chunk}};
    (void)a.allocate(8, 8);  // one chunk of exactly `chunk` bytes
  };
  run("memo-a", 4096, "n");
  run("memo-b", 1024, nullptr);  // smaller: breakdown and counters stay the first run's
  auto e = test::find_entry("test/table/memo", entry_kind::scope);
  CHECK(e.count == 2);
  CHECK(e.peak_bytes == 4096);
  CHECK(e.last_peak_bytes == 1024);
  CHECK(e.at_peak == std::vector<arenastat::tag_bytes>{{"memo-a", 4096}});
  CHECK(e.counters == std::vector<arenastat::counter_value>{{"n", 4096, 4096, true}});
  run("memo-b", 4096, nullptr);  // as large: its breakdown (no counters) replaces the first
  e = test::find_entry("test/table/memo", entry_kind::scope);
  CHECK(e.count == 3);
  CHECK(e.peak_bytes == 4096);
  CHECK(e.at_peak == std::vector<arenastat::tag_bytes>{{"memo-b", 4096}});
  CHECK(e.counters.empty());
  for (int i = 0; i < 3; ++i) {  // empty runs: counted, peak and breakdown kept
    scope s{"test/table/memo"};
  }
  e = test::find_entry("test/table/memo", entry_kind::scope);
  CHECK(e.count == 6);
  CHECK(e.peak_bytes == 4096);
  CHECK(e.last_peak_bytes == 0);
  CHECK(e.at_peak == std::vector<arenastat::tag_bytes>{{"memo-b", 4096}});
}

TEST_CASE("an empty run folded again keeps a tagless record's peak of 0 and counts each run", "[table]") {
  for (int i = 0; i < 4; ++i) {
    scope s{"test/table/memo-empty"};
    s.set_counter("i", i);  // counters: the general path; the last run's wins at an equal peak
  }
  for (int i = 0; i < 4; ++i) {
    scope s{"test/table/memo-empty"};  // no counters, no tags: the inline path once the record has none
  }
  const auto e = test::find_entry("test/table/memo-empty", entry_kind::scope);
  CHECK(e.count == 8);
  CHECK(e.peak_bytes == 0);
  CHECK(e.at_peak.empty());
  CHECK(e.counters.empty());  // the first counterless run at the equal peak of 0 replaced them
}

TEST_CASE("concurrent scopes, arenas handed between threads and shared accounts stay exact",
          "[table][threads]") {
  // Producers compile in scopes and hand a finished arena to a consumer thread
  // that releases it (cross-thread credit) while a reader takes snapshots.
  constexpr int producers = 3, tasks = 300;
  arenastat::tracking_resource shared{"test.table.stress"};
  std::mutex m;
  std::vector<std::unique_ptr<arena_resource>> handed;
  std::atomic<int> done{0};
  std::atomic<bool> stop_reader{false};

  auto producer = [&](int id) {
    for (int t = 0; t < tasks; ++t) {
      scope s{"test/table/stress/" + std::to_string(id)};
      auto a = std::make_unique<arena_resource>("node", arenastat::arena_options{.initial_chunk = 1024});
      (void)a->allocate(500, 8);
      void* p = shared.allocate(64, 8);
      shared.deallocate(p, 64, 8);
      std::lock_guard lock(m);
      handed.push_back(std::move(a));
    }
    done.fetch_add(1);
  };
  auto consumer = [&] {
    for (;;) {
      std::vector<std::unique_ptr<arena_resource>> batch;
      {
        std::lock_guard lock(m);
        batch.swap(handed);
      }
      batch.clear();  // releases on this thread
      if (done.load() == producers) {
        std::lock_guard lock(m);
        if (handed.empty()) return;
      }
      std::this_thread::yield();
    }
  };
  auto reader = [&] {
    while (!stop_reader.load()) (void)arenastat::snapshot();
  };
  std::thread r(reader);
  std::thread c(consumer);
  std::vector<std::thread> ps;
  for (int i = 0; i < producers; ++i) ps.emplace_back(producer, i);
  for (auto& p : ps) p.join();
  c.join();
  stop_reader = true;
  r.join();

  for (int i = 0; i < producers; ++i) {
    const auto e = test::find_entry("test/table/stress/" + std::to_string(i), entry_kind::scope);
    CHECK(e.count == tasks);
    CHECK(e.peak_bytes == 1024 + 64);
  }
  const auto t = shared.tracked_account().totals();
  CHECK(t.allocations == producers * tasks);
  CHECK(t.frees == producers * tasks);
  CHECK(t.live_bytes == 0);
}
