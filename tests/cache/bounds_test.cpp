// Byte bounds, accounting and the layout's bytes per entry.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>

#include "arenastat/cache/cache.hpp"
#include "arenastat/cache/sharded_cache.hpp"
#include "../../bench/zipf.hpp"
#include "cache_test_support.hpp"

using namespace arenastat;
using cache_test::live;
using u64 = std::uint64_t;

TEST_CASE("layout: node and entry sizes for 8-byte keys and values", "[cache][layout]") {
  using C = tinylfu_cache<u64, u64>;
  CHECK(C::node_bytes == 24);   // key 8 + value 8 + prev 4 + next 4 (policy state in next's top byte)
  CHECK(C::entry_bytes == 24);  // nothing else per entry: no stored hash
  CHECK(C::slot_count_for(1'000'000) == 1'333'334);  // load 3/4
  // The sketch (32 bytes per 8 slots, to a multiple of 64) and the window
  // tuner's four ghosts of 4096 entries, 92,928 bytes each
  // (window_tuner_test.cpp derives them).
  CHECK(C::policy_bytes_for(1'000'000, 1'333'334) == 5'333'376u + 4 * 92'928u);
  CHECK(lru_cache<u64, u64>::policy_bytes_for(1'000'000, 1'333'334) == 0);
}

TEST_CASE("layout: footprint of a full 1M-entry cache, derived", "[cache][layout]") {
  // lru: slots 1,333,334 x 4 = 5,333,336; page directory 245 x 8 = 1,960;
  // entries 1,000,000 x 24 = 24,000,000.
  // tinylfu: the same, plus the sketch: ceil(1,333,334 / 8) = 166,667
  // blocks of 32 bytes (64 counters) = 5,333,344, rounded to 5,333,376 (a
  // multiple of 64), plus the window tuner's ghosts: 4 x 92,928 = 371,712.
  CHECK(lru_cache<u64, u64>::footprint_bytes(1'000'000) == 5'333'336u + 1'960u + 24'000'000u);
  CHECK(tinylfu_cache<u64, u64>::footprint_bytes(1'000'000) ==
        5'333'336u + 5'333'376u + 371'712u + 1'960u + 24'000'000u);
}

TEMPLATE_TEST_CASE("bytes per entry at full capacity: tracked, exact and <= 40", "[cache][layout]", lru, tinylfu) {
  using C = basic_cache<u64, u64, TestType>;
  const std::string name = std::string("test.bpe.") + std::string(TestType::name);
  {
    C c{name, {.max_entries = 1'000'000}};
    for (u64 k = 0; k < 1'000'000; ++k) c.put(k, k);
    REQUIRE(c.size() == 1'000'000);
    const auto s = c.stats();
    CHECK(s.own_bytes == C::footprint_bytes(1'000'000));
    CHECK(s.live_bytes == static_cast<std::int64_t>(s.own_bytes));
    CHECK(s.peak_bytes == s.own_bytes);
    const double expected = std::string_view(TestType::name) == "lru" ? 29.335296 : 35.040384;
    CHECK(s.bytes_per_entry == Approx(expected).epsilon(1e-9));
    CHECK(s.bytes_per_entry <= 40.0);
  }
  CHECK(live(name) == 0);
}

TEST_CASE("bounds: max_bytes gives the largest capacity whose footprint fits", "[cache][bounds]") {
  using C = tinylfu_cache<u64, u64>;
  const std::size_t cap = C::capacity_for_bytes(100'000);
  CHECK(C::footprint_bytes(cap) <= 100'000);
  CHECK(C::footprint_bytes(cap + 1) > 100'000);
  C c{"test.bounds.cap", {.max_bytes = 100'000}};
  CHECK(c.capacity() == cap);
  C both{"test.bounds.both", {.max_entries = 100, .max_bytes = 100'000}};
  CHECK(both.capacity() == 100);
}

TEST_CASE("bounds: invalid options are refused with a message naming them", "[cache][bounds]") {
  using C = lru_cache<u64, u64>;
  CHECK_THROWS_WITH((C{"test.bad", {}}), Catch::Contains("max_entries, max_bytes"));
  CHECK_THROWS_WITH((C{"", {.max_entries = 1}}), Catch::Contains("name"));
  CHECK_THROWS_WITH((C{"test.bad", {.max_entries = C::max_capacity + 1}}), Catch::Contains("per-cache limit"));
  CHECK_THROWS_WITH((C{"test.bad", {.max_bytes = 10}}), Catch::Contains("below the footprint"));
  CHECK_THROWS_WITH((sharded_lru_cache<u64, u64>{"test.bad", {.max_entries = 3, .shards = 4}}),
                    Catch::Contains("below the shard count"));
}

TEMPLATE_TEST_CASE("bounds: the account never exceeds max_bytes in a randomized run", "[cache][bounds]", lru, tinylfu) {
  using C = basic_cache<u64, u64, TestType>;
  const std::string name = std::string("test.bounds.random.") + std::string(TestType::name);
  const std::uint64_t bound = 300'000;
  C c{name, {.max_bytes = bound}};
  std::mt19937_64 rng(7);
  std::uint64_t peak = 0;
  for (int step = 0; step < 60'000; ++step) {
    const u64 key = rng() % 40'000;
    switch (rng() % 8) {
      case 0: c.erase(key); break;
      case 1: c.get(key); break;
      case 2:
        if (step % 5000 == 0) c.clear();
        break;
      default: c.get_or_load(key, [](u64 k) { return k + 1; }); break;
    }
    const std::int64_t now = live(name);
    REQUIRE(now <= static_cast<std::int64_t>(bound));
    REQUIRE(now == static_cast<std::int64_t>(c.own_bytes()));
    if (static_cast<std::uint64_t>(now) > peak) peak = static_cast<std::uint64_t>(now);
  }
  CHECK(peak == C::footprint_bytes(c.capacity()));
  CHECK(account::get(name).peak_bytes() <= bound);
}

TEMPLATE_TEST_CASE("accounting: back to 0 after clear and after destruction", "[cache][bounds]", lru, tinylfu) {
  using C = basic_cache<u64, u64, TestType>;
  const std::string name = std::string("test.zero.") + std::string(TestType::name);
  {
    C c{name, {.max_entries = 10'000}};
    CHECK(live(name) == 0);  // nothing is allocated before the first insertion
    for (u64 k = 0; k < 5000; ++k) c.put(k, k);
    CHECK(live(name) > 0);
    c.clear();
    CHECK(live(name) == 0);
    CHECK(c.size() == 0);
    CHECK_FALSE(c.contains(1));
    for (u64 k = 0; k < 20'000; ++k) c.put(k, k);
    CHECK(c.size() == 10'000);
    CHECK(live(name) == static_cast<std::int64_t>(C::footprint_bytes(10'000)));
  }
  CHECK(live(name) == 0);
}

TEST_CASE("accounting: a sharded cache after clear holds exactly its shard array and tuner", "[cache][bounds]") {
  const std::string name = "test.zero.sharded";
  {
    sharded_tinylfu_cache<u64, u64> c{name, {.max_entries = 8000, .shards = 8}};
    for (u64 k = 0; k < 20'000; ++k) c.put(k, k);
    CHECK(c.size() == 8000);
    // The shared tuner's four ghosts of 1024 entries (8000 / 16 = 500, raised
    // to the 1024 minimum): 4 x 23,296.
    CHECK(c.tuner_bytes() == 4 * 23'296u);
    CHECK(live(name) == static_cast<std::int64_t>(c.shard_array_bytes() + c.tuner_bytes() +
                                                   8 * sharded_tinylfu_cache<u64, u64>::shard_cache::footprint_bytes(1000)));
    c.clear();
    CHECK(live(name) == static_cast<std::int64_t>(c.shard_array_bytes() + c.tuner_bytes()));
  }
  CHECK(live(name) == 0);
}

TEST_CASE("table: an insert beyond the probe distance limit is refused, not crashed", "[cache][bounds]") {
  // With one hash for every key, key k sits at distance k from the shared home
  // slot; distances stop at max_probe_distance (63), so key 64 cannot be placed.
  using C = basic_cache<u64, u64, lru, cache_test::constant_hash>;
  STATIC_REQUIRE(C::max_probe_distance == 63);
  C c{"test.table.probe", {.max_entries = 400}};
  for (u64 k = 0; k < 64; ++k) REQUIRE(c.put(k, k));
  CHECK_FALSE(c.put(64, 64));
  CHECK(c.size() == 64);
  CHECK(c.stats().rejected == 1);
  for (u64 k = 0; k < 64; ++k) CHECK(c.get(k) == k);
  CHECK(c.erase(0));
  CHECK(c.put(64, 64));  // room again after an erase shifted the cluster back
  CHECK(c.get(64) == 64u);
}

TEST_CASE("table: no insert is refused filling 4M entries with a working hash", "[cache][bounds]") {
  // 6 distance bits (63 slots) are far beyond what load 3/4 needs: a full
  // 4M-entry cache, 3 x capacity puts of sequential and random keys, nothing
  // refused (the same holds at 16M entries: docs/cache.md).
  constexpr u64 n = u64{1} << 22;
  lru_cache<u64, u64> c{"test.table.no-refusal", {.max_entries = n}};
  bench::splitmix64 r(1);
  for (u64 i = 0; i < 3 * n; ++i) c.put(i % 2 ? r.next() : i, i);
  CHECK(c.size() == c.capacity());
  CHECK(c.stats().rejected == 0);
}

TEST_CASE("bounds: a sharded cache's account, shard array included, stays within max_bytes", "[cache][bounds]") {
  const std::string name = "test.bounds.sharded";
  const std::uint64_t bound = 200'000;
  sharded_tinylfu_cache<u64, u64> c{name, {.max_bytes = bound, .shards = 4}};
  // The largest per-shard capacity whose four shards and the tuner for their
  // total capacity fit: the tuner has ghosts of ghost_entries(total)
  // entries (the total up to 1024, then total / 16 within 1024..4096), and
  // only from 64 entries in all.
  using S = sharded_tinylfu_cache<u64, u64>::shard_cache;
  using ghost_policy = basic_tinylfu<1, 20, true, 8, true, true, false>;
  auto tuner_bytes = [](std::size_t total) -> std::uint64_t {
    return total < 64 ? 0
                      : 4 * detail::ghost_cache<ghost_policy>::bytes_for(
                                detail::window_tuner<ghost_policy>::ghost_entries(total));
  };
  std::size_t per_shard = 0;
  while (4 * S::footprint_bytes(per_shard + 1) + tuner_bytes(4 * (per_shard + 1)) <= bound - c.shard_array_bytes())
    ++per_shard;
  CHECK(c.capacity() == 4 * per_shard);
  std::mt19937_64 rng(11);
  for (int step = 0; step < 30'000; ++step) {
    c.get_or_load(rng() % 20'000, [](u64 k) { return k; });
    REQUIRE(live(name) <= static_cast<std::int64_t>(bound));
  }
  CHECK(c.size() == c.capacity());
  CHECK(live(name) == static_cast<std::int64_t>(c.fixed_bytes() +
                                                 4 * sharded_tinylfu_cache<u64, u64>::shard_cache::footprint_bytes(per_shard)));
  CHECK_THROWS_WITH((sharded_lru_cache<u64, u64>{"test.bad", {.max_bytes = 64, .shards = 4}}),
                    Catch::Contains("does not exceed the shard array"));
}

TEST_CASE("bounds: a sharded cache's bounds are refused with the values given, not a shard's", "[cache][bounds]") {
  using C = sharded_lru_cache<u64, u64>;
  const std::size_t most = C::shard_cache::max_capacity;  // 16,777,215 entries per shard
  CHECK_THROWS_WITH((C{"test.many", {.max_entries = 2 * most + 1, .shards = 2}}),
                    "sharded_cache 'test.many': max_entries " + std::to_string(2 * most + 1) +
                        " exceeds what 2 shards hold (" + std::to_string(most) + " entries each: " +
                        std::to_string(2 * most) + "); use at least 3 shards (at most 4096)");
  CHECK_NOTHROW((C{"test.many", {.max_entries = 2 * most, .shards = 2, .track = false}}));
  // At the most shards there are no more to suggest.
  const std::uint64_t all = std::uint64_t{most} * C::max_shards;
  CHECK_THROWS_WITH((C{"test.many", {.max_entries = all + 1, .shards = C::max_shards}}),
                    "sharded_cache 'test.many': max_entries " + std::to_string(all + 1) + " exceeds what 4096 shards hold (" +
                        std::to_string(most) + " entries each: " + std::to_string(all) +
                        "); no cache holds more than " + std::to_string(all) + " entries (4096 shards is the most)");
  // Fewer shards than the most, but even the most would not do: no suggestion of more.
  CHECK_THROWS_WITH((C{"test.many", {.max_entries = all + 1, .shards = 256}}),
                    "sharded_cache 'test.many': max_entries " + std::to_string(all + 1) + " exceeds what 256 shards hold (" +
                        std::to_string(most) + " entries each: " + std::to_string(std::uint64_t{most} * 256) +
                        "); no cache holds more than " + std::to_string(all) + " entries (4096 shards is the most)");
  // 64 shards: what is left after the shard array, split 64 ways, is one byte
  // below a one-entry cache's footprint in every shard (LRU: no tuner).
  const std::uint64_t one = C::shard_cache::footprint_bytes(1);
  const C probe{"test.probe", {.max_entries = 64, .shards = 64, .track = false}};
  const std::uint64_t thin = probe.shard_array_bytes() + 64 * (one - 1);
  try {
    C c{"test.thin", {.max_bytes = thin, .shards = 64}};
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Catch::StartsWith("sharded_cache 'test.thin': max_bytes " + std::to_string(thin) +
                                       " leaves each of its 64 shards " + std::to_string(one - 1) + " bytes"));
    CHECK_THAT(what, Catch::EndsWith("bytes, below the footprint of a one-entry cache (" + std::to_string(one) +
                                     " bytes); use fewer shards or more bytes"));
  }
}

TEST_CASE("bounds: a small byte budget gets a sharded tinylfu cache with a tuner its size", "[cache][bounds]") {
  // 64 KiB for one shard: the tuner for c entries (c >= 64) has four ghosts
  // of c entries (c stays under 1024 here), so c is the largest with footprint(c) + that
  // within 64 KiB less the shard array.
  using S = sharded_tinylfu_cache<u64, u64>::shard_cache;
  using ghost = detail::ghost_cache<basic_tinylfu<1, 20, true, 8, true, true, false>>;
  const std::string name = "test.bounds.sharded.small";
  const std::uint64_t bound = 64 * 1024;
  sharded_tinylfu_cache<u64, u64> c{name, {.max_bytes = bound, .shards = 1}};
  std::size_t expected = 0;
  auto fits = [&](std::size_t n) {
    const std::uint64_t tuner = n < 64 ? 0 : 4 * ghost::bytes_for(static_cast<std::uint32_t>(n));
    return S::footprint_bytes(n) + tuner <= bound - c.shard_array_bytes();
  };
  while (fits(expected + 1)) ++expected;
  REQUIRE(expected >= 64);
  CHECK(c.capacity() == expected);
  CHECK(c.tuner_bytes() == 4 * ghost::bytes_for(static_cast<std::uint32_t>(expected)));
  for (u64 k = 0; k < 10'000; ++k) c.get_or_load(k, [](u64 v) { return v; });
  CHECK(live(name) <= static_cast<std::int64_t>(bound));
  CHECK(live(name) == static_cast<std::int64_t>(c.fixed_bytes() + S::footprint_bytes(expected)));
}

TEST_CASE("bounds: default shards with both bounds follow the smaller capacity, the byte bound's here",
          "[cache][bounds]") {
  // 1M entries but 100,000 bytes: the bytes hold a few thousand entries, so
  // the default shard count must be the one max_bytes alone gets. Counted
  // from max_entries it was 128 x hardware threads, whose shard array alone
  // outgrew the bytes (tinylfu: refused; lru: 512 entries instead of 3386).
  using T = sharded_tinylfu_cache<u64, u64>;
  using L = sharded_lru_cache<u64, u64>;
  const sharded_cache_options both{.max_entries = 1'000'000, .max_bytes = 100'000};
  const sharded_cache_options bytes{.max_bytes = 100'000};
  CHECK(T::default_shards(both) == T::default_shards(bytes));
  CHECK(L::default_shards(both) == L::default_shards(bytes));
  T t{"test.bounds.default_shards.both", both};
  const T t_bytes{"test.bounds.default_shards.bytes", bytes};
  CHECK(t.capacity() == t_bytes.capacity());
  const L l{"test.bounds.default_shards.lru", both};
  const L l_bytes{"test.bounds.default_shards.lru_bytes", bytes};
  CHECK(l.capacity() == l_bytes.capacity());
  // The entry bound still wins when it is the smaller.
  const sharded_cache_options few{.max_entries = 2048, .max_bytes = 100'000'000};
  CHECK(T::default_shards(few) == T::default_shards({.max_entries = 2048}));
}
