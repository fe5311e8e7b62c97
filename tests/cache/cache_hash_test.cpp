// The caches' hash mixing (hash.hpp): keys with structure in their low or
// high bits, hashed by std::hash (the identity), fill a cache without a
// refusal. A refusal means a probe distance above the 63 a table slot holds,
// which a working hash does not reach at load 3/4 or below (docs/cache.md,
// "Layout and bytes per entry"); the mixing before session 20's extra round
// refused 80,428 of the first case's keys and 1,806 of the last's.
#include <catch2/catch.hpp>

#include <cstdint>

#include "arenastat/cache/cache.hpp"
#include "arenastat/cache/sharded_cache.hpp"

using namespace arenastat;
using u64 = std::uint64_t;

namespace {

u64 bit_reversed(u64 x) {
  u64 r = 0;
  for (int i = 0; i < 64; ++i, x >>= 1) r = r << 1 | (x & 1);
  return r;
}

// Puts keys key(0) .. key(n - 1) into `c`; the number refused.
template <class C, class F>
u64 refusals(C& c, u64 n, F key) {
  u64 refused = 0;
  for (u64 i = 0; i < n; ++i) refused += c.put(key(i), i) ? 0 : 1;
  return refused;
}

}  // namespace

TEST_CASE("cache hash: a sharded cache takes every key of 1M page addresses (multiples of 4 KiB)", "[cache][hash]") {
  constexpr u64 n = 1'000'000;
  sharded_lru_cache<u64, u64> c{"test.hash.pages", {.max_entries = n, .shards = 512}};
  CHECK(refusals(c, n, [](u64 i) { return i << 12; }) == 0);
  CHECK(c.size() == n - c.stats().evictions);  // every key went in (some evicting others of their shard)
}

TEST_CASE("cache hash: a sharded cache takes every key of 1M multiples of 64 KiB", "[cache][hash]") {
  constexpr u64 n = 1'000'000;
  sharded_lru_cache<u64, u64> c{"test.hash.64k", {.max_entries = n, .shards = 512}};
  CHECK(refusals(c, n, [](u64 i) { return i << 16; }) == 0);
}

TEST_CASE("cache hash: a cache takes every one of 500,000 bit-reversed ids", "[cache][hash]") {
  constexpr u64 n = 500'000;
  lru_cache<u64, u64> c{"test.hash.reversed", {.max_entries = n}};
  CHECK(refusals(c, n, bit_reversed) == 0);
  CHECK(c.size() == n);
}

TEST_CASE("cache hash: a cache takes every one of 1M ids that differ only in their top 20 bits", "[cache][hash]") {
  constexpr u64 n = 1'000'000;
  tinylfu_cache<u64, u64> c{"test.hash.top-bits", {.max_entries = n}};
  CHECK(refusals(c, n, [](u64 i) { return i << 44; }) == 0);
  CHECK(c.size() == n);
}
