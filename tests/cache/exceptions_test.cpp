// Exception safety: a throwing upstream, loader and hash leave the cache
// consistent (put: strong guarantee) and its accounting exact.
#include <catch2/catch.hpp>

#include <cstdint>
#include <stdexcept>

#include "arenastat/cache/cache.hpp"
#include "arenastat/cache/sharded_cache.hpp"
#include "arenastat/test_resource.hpp"
#include "cache_test_support.hpp"

using namespace arenastat;
using cache_test::live;
using u64 = std::uint64_t;

namespace {

// Throws for key 13, hashes every other key normally.
struct picky_hash {
  std::size_t operator()(u64 k) const {
    if (k == 13) throw std::runtime_error("hash refuses 13");
    return k;
  }
};

template <class C>
void check_contents(const C& c, u64 first, u64 end) {
  for (u64 k = first; k < end; ++k) REQUIRE(c.contains(k));
}

}  // namespace

// Allocation order of a cache of 10,000 entries: 1 table, 2 page directory,
// 3 tinylfu's sketch (lru has none), then one page per 4096 entries.
TEMPLATE_TEST_CASE("exceptions: bad_alloc from the upstream on every allocation in turn", "[cache][exceptions]", lru,
                   tinylfu) {
  using C = basic_cache<u64, u64, TestType>;
  const std::string name = std::string("test.exc.upstream.") + std::string(TestType::name);
  const std::size_t tables = std::string_view(TestType::name) == "tinylfu" ? 3 : 2;
  for (std::size_t fail_at = 1; fail_at <= tables + 3; ++fail_at) {
    CAPTURE(fail_at);
    arenastat::test_resource upstream{"test.exc.upstream", {.charge_scopes = false}};
    upstream.set_allocation_limit(static_cast<std::int64_t>(fail_at) - 1);  // the fail_at-th throws
    {
      C c{name, {.max_entries = 10'000}, &upstream};
      u64 stored = 0;
      bool threw = false;
      for (u64 k = 0; k < 10'000 && !threw; ++k) {
        try {
          c.put(k, k * 3);
          ++stored;
        } catch (const std::bad_alloc&) {
          threw = true;
        }
      }
      REQUIRE(threw);
      // The failing allocation is the table set (nothing stored) or page p (4096 p stored).
      const u64 expected_stored = fail_at <= tables ? 0 : 4096 * (fail_at - tables - 1);
      CHECK(stored == expected_stored);
      CHECK(c.size() == expected_stored);
      CHECK_FALSE(c.contains(expected_stored));
      check_contents(c, 0, stored);
      CHECK(c.stats().evictions == 0);
      // Accounting is exact: the account, the cache and the upstream agree.
      CHECK(live(name) == upstream.bytes_in_use());
      CHECK(live(name) == static_cast<std::int64_t>(c.own_bytes()));
      // The cache keeps working once the upstream does.
      for (u64 k = stored; k < 10'000; ++k) c.put(k, k * 3);
      CHECK(c.size() == 10'000);
      CHECK(c.get(9'999) == 29'997u);
      CHECK(live(name) == static_cast<std::int64_t>(C::footprint_bytes(10'000)));
    }
    CHECK(live(name) == 0);
    CHECK(upstream.bytes_in_use() == 0);
  }
}

namespace {

// A value whose copy throws while `armed` (moves never throw, as the cache requires).
struct fragile {
  static inline bool armed = false;
  u64 v = 0;
  explicit fragile(u64 x) : v(x) {}
  fragile(const fragile& o) : v(o.v) {
    if (armed) throw std::runtime_error("copy refused");
  }
  fragile(fragile&&) noexcept = default;
  fragile& operator=(const fragile&) = default;
  fragile& operator=(fragile&&) noexcept = default;
};

}  // namespace

TEST_CASE("exceptions: a value whose copy throws on a hit leaves the counts and the order as they were",
          "[cache][exceptions]") {
  // LRU of 2: 1 is the least recent. A hit on 1 whose copy throws must not
  // count the hit nor move 1 to the front, so inserting 3 evicts 1.
  lru_cache<u64, fragile> c{"test.exc.copy", {.max_entries = 2}};
  c.put(1, fragile{10});
  c.put(2, fragile{20});
  fragile::armed = true;
  CHECK_THROWS_AS(c.get(1), std::runtime_error);
  CHECK_THROWS_AS(c.get_or_load(1, [](u64 k) { return fragile{k}; }), std::runtime_error);
  fragile::armed = false;
  CHECK(c.stats().hits == 0);
  CHECK(c.stats().misses == 0);
  c.put(3, fragile{30});
  CHECK_FALSE(c.contains(1));
  CHECK(c.contains(2));
  CHECK(c.get(2)->v == 20);
  CHECK(c.stats().hits == 1);
}

TEST_CASE("exceptions: a throwing loader leaves the cache unchanged", "[cache][exceptions]") {
  const std::string name = "test.exc.loader";
  tinylfu_cache<u64, u64> c{name, {.max_entries = 4}};
  for (u64 k = 0; k < 4; ++k) c.put(k, k);
  const std::int64_t before = live(name);
  CHECK_THROWS_AS(c.get_or_load(99, [](u64) -> u64 { throw std::runtime_error("no"); }), std::runtime_error);
  CHECK(c.size() == 4);
  CHECK_FALSE(c.contains(99));
  for (u64 k = 0; k < 4; ++k) CHECK(c.contains(k));
  CHECK(c.stats().evictions == 0);
  CHECK(c.stats().loads == 1);
  CHECK(live(name) == before);
}

// get_or_load counts a missed key when it stores the value (after the
// eviction): a load that throws stores nothing and counts nothing in the
// policy, only the miss and the load in the statistics.
TEST_CASE("exceptions: a throwing loader leaves the key's count as it was", "[cache][exceptions]") {
  tinylfu_cache<u64, u64> c{"test.exc.loader-count", {.max_entries = 4}};
  for (u64 k = 0; k < 4; ++k) c.put(k, k);
  const std::uint32_t h = c.hash_key(99).h32();
  CHECK_FALSE(c.get(99).has_value());  // two counted misses
  CHECK_FALSE(c.get(99).has_value());
  REQUIRE(c.policy().frequency(h) == 2);
  CHECK_THROWS_AS(c.get_or_load(99, [](u64) -> u64 { throw std::runtime_error("no"); }), std::runtime_error);
  CHECK(c.policy().frequency(h) == 2);
  CHECK(c.stats().misses == 3);
  CHECK(c.stats().loads == 1);
  // A load that succeeds counts the access once: the new entry starts at 3.
  CHECK(c.get_or_load(99, [](u64 k) { return k; }) == 99);
  CHECK(c.policy().frequency(h) == 3);
  CHECK(c.stats().misses == 4);
}

TEST_CASE("exceptions: a throwing hash leaves the cache unchanged", "[cache][exceptions]") {
  const std::string name = "test.exc.hash";
  basic_cache<u64, u64, lru, picky_hash> c{name, {.max_entries = 3}};
  c.put(1, 1);
  c.put(2, 2);
  c.put(3, 3);
  const std::int64_t before = live(name);
  CHECK_THROWS_AS(c.put(13, 13), std::runtime_error);
  CHECK_THROWS_AS(c.get(13), std::runtime_error);
  CHECK_THROWS_AS(c.get_or_load(13, [](u64 k) { return k; }), std::runtime_error);
  CHECK_THROWS_AS(c.erase(13), std::runtime_error);
  CHECK(c.size() == 3);
  CHECK(cache_test::lru_order(c) == std::vector<u64>{3, 2, 1});
  CHECK(c.stats().evictions == 0);
  CHECK(c.stats().hits + c.stats().misses == 0);
  CHECK(live(name) == before);
}

TEST_CASE("exceptions: a sharded cache passes a loader's exception to every waiter", "[cache][exceptions]") {
  const std::string name = "test.exc.sharded";
  sharded_lru_cache<u64, u64> c{name, {.max_entries = 64, .shards = 4}};
  CHECK_THROWS_AS(c.get_or_load(5, [](u64) -> u64 { throw std::runtime_error("no"); }), std::runtime_error);
  CHECK(c.size() == 0);
  CHECK(c.get_or_load(5, [](u64 k) { return k + 1; }) == 6u);
  CHECK(c.size() == 1);
}

namespace {

// Refuses the key *refused points at (0: none). Eviction hashes stored keys
// (an entry keeps no hash), so this throws in the middle of a put.
struct armed_hash {
  const u64* refused;
  std::size_t operator()(u64 k) const {
    if (*refused != 0 && k == *refused) throw std::runtime_error("hash refuses a stored key");
    return k;
  }
};

template <class C>
std::vector<u64> all_keys(const C& c, u64 end) {
  std::vector<u64> out;
  for (u64 k = 1; k < end; ++k)
    if (c.contains(k)) out.push_back(k);
  return out;
}

}  // namespace

TEMPLATE_TEST_CASE("exceptions: a hash throwing on a stored key during eviction leaves the cache unchanged",
                   "[cache][exceptions]", lru, tinylfu) {
  const std::string name = std::string("test.exc.evict-hash.") + std::string(TestType::name);
  u64 refused = 0;
  basic_cache<u64, u64, TestType, armed_hash> c{name, {.max_entries = 20}, std::pmr::get_default_resource(),
                                                 armed_hash{&refused}};
  for (u64 k = 1; k <= 20; ++k) c.put(k, k);
  for (u64 k = 5; k <= 20; ++k) c.get(k);  // key 1 stays at the back: LRU's victim, in tinylfu's sample
  c.get(20);  // tinylfu: the candidate, 20 (count 4), beats the back, key 1 (1),
  c.get(20);  // by more than the admission margin, so key 1 is hashed as the victim
  const auto keys_before = all_keys(c, 100);
  const auto stats_before = c.stats();
  const std::int64_t before = live(name);
  refused = 1;  // the new key hashes fine; the eviction hashes key 1 and throws
  CHECK_THROWS_AS(c.put(50, 50), std::runtime_error);
  CHECK_THROWS_AS(c.get_or_load(51, [](u64 k) { return k; }), std::runtime_error);
  refused = 0;
  CHECK(all_keys(c, 100) == keys_before);
  CHECK(c.size() == 20);
  CHECK(c.stats().evictions == stats_before.evictions);
  CHECK(live(name) == before);
  // Still consistent: the same put now succeeds and evicts one entry.
  CHECK(c.put(50, 50));
  CHECK(c.contains(50));
  CHECK(c.size() == 20);
  CHECK(c.stats().evictions == stats_before.evictions + 1);
}

TEST_CASE("exceptions: a hash throwing on the candidate leaves the window's order and second chances as they were",
          "[cache][exceptions][tinylfu]") {
  u64 refused = 0;
  using cache_t = basic_cache<u64, u64, tinylfu, armed_hash>;
  cache_t c{"test.exc.window-clock", {.max_entries = 300}, std::pmr::get_default_resource(), armed_hash{&refused}};
  REQUIRE(c.policy().window_max() == 3);
  for (u64 k = 1; k <= 300; ++k) c.put(k, k);  // the window holds 300, 299, 298 (front to back)
  c.get(298);
  c.get(299);  // the back two are referenced: the candidate is 300
  const auto window = [&] {
    std::vector<u64> out;
    c.policy().for_each(tinylfu_segment::window, [&](std::uint32_t i) { out.push_back(c.key_at(i)); });
    return out;
  };
  REQUIRE(window() == std::vector<u64>{300, 299, 298});
  // 300's count is 1, no more than any entry's (each was counted once when
  // put): it loses its duel, so the duel hashes 300 (not a victim), which throws.
  c.policy().for_each(tinylfu_segment::window, [&](std::uint32_t i) {
    if (c.key_at(i) == 300) REQUIRE(c.policy().entry_frequency(i) == 1);
  });
  refused = 300;
  CHECK_THROWS_AS(c.put(1000, 1000), std::runtime_error);
  CHECK(window() == std::vector<u64>{300, 299, 298});  // no second chance given yet
  refused = 0;
  CHECK(c.put(1000, 1000));
  // 298 and 299 got their second chances (to the front, bits cleared), 300 left.
  CHECK(window() == std::vector<u64>{1000, 299, 298});
  CHECK(c.put(1001, 1001));  // 298 is the back now, unreferenced: it leaves
  CHECK(window() == std::vector<u64>{1001, 1000, 299});
}
