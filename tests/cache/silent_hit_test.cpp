// sharded_cache's silent hits: hits that change nothing, served without the
// shard lock (a sequence-lock read under the shard's version).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <thread>
#include <vector>

#include "../../bench/zipf.hpp"
#include "arenastat/cache/sharded_cache.hpp"
#include "cache_test_support.hpp"

using namespace arenastat;
using cache_test::live;
using cache_test::start_gate;
using u64 = std::uint64_t;

namespace {

// A value the silent path cannot copy as bytes (not trivially copyable).
struct boxed {
  u64 v = 0;
  boxed() = default;
  explicit boxed(u64 x) : v(x) {}
  boxed(const boxed& o) noexcept : v(o.v) {}
  boxed& operator=(const boxed& o) noexcept {
    v = o.v;
    return *this;
  }
};

// A value of eight words, each a function of the key and a generation: a
// read that mixes two writes (of one key, or of two keys that used the same
// node) breaks it.
constexpr u64 tie(u64 key, u64 a) { return (a * 0x9E3779B97F4A7C15ull) ^ key; }
struct wide_value {
  u64 w[8];
  static wide_value make(u64 key, u64 gen) {
    wide_value v;
    for (u64 j = 0; j < 8; ++j) v.w[j] = tie(key, gen * 8 + j);
    return v;
  }
  // Whether every word belongs to key and to one generation.
  bool whole(u64 key) const {
    const u64 first = (w[0] ^ key) * 0xF1DE83E19937733Dull;  // the inverse of tie's multiplier mod 2^64
    return first % 8 == 0 && *this == make(key, first / 8);
  }
  bool operator==(const wide_value&) const = default;
};


}  // namespace

TEST_CASE("silent hits: which sharded caches have them", "[cache][sharded][silent]") {
  STATIC_REQUIRE(sharded_tinylfu_cache<u64, u64>::silent_hits);
  STATIC_REQUIRE(sharded_cache<u64, wide_value, tinylfu_fixed_window>::silent_hits);
  // LRU moves every hit to the front: no hit changes nothing.
  STATIC_REQUIRE_FALSE(sharded_lru_cache<u64, u64>::silent_hits);
  // Values (or keys) not copied as bytes always take the lock.
  STATIC_REQUIRE_FALSE(sharded_tinylfu_cache<u64, boxed>::silent_hits);
  STATIC_REQUIRE_FALSE(sharded_tinylfu_cache<std::string, u64>::silent_hits);
}

TEST_CASE("silent hits: from the hit that finds the count saturated, each hit is silent and counted once",
          "[cache][sharded][silent]") {
  // 32 entries: no window tuner (it starts at 64). The key's put counts it
  // in a fresh sketch (estimate 1) and the entry starts at that count; each
  // of the first 14 hits raises it (to 15, the most 4 bits hold), so those
  // take the lock, and every hit after them changes nothing.
  sharded_tinylfu_cache<u64, u64> c{"test.silent.saturate", {.max_entries = 32, .shards = 1}};
  c.put(7, 25);
  for (int k = 1; k <= 14; ++k) {
    REQUIRE(c.get(7) == 25u);
    CHECK(c.silent_hit_count() == 0);
  }
  for (int k = 1; k <= 6; ++k) {
    REQUIRE(c.get(7) == 25u);
    CHECK(c.silent_hit_count() == static_cast<u64>(k));
  }
  CHECK(c.get_or_load(7, [](u64) -> u64 { FAIL("loader called on a hit"); return 0; }) == 25u);
  CHECK(c.silent_hit_count() == 7);
  const auto s = c.stats();
  CHECK(s.hits == 21);
  CHECK(s.misses == 0);
  // A miss is never silent.
  CHECK_FALSE(c.get(8).has_value());
  CHECK(c.stats().misses == 1);
  CHECK(c.silent_hit_count() == 7);
  // put replaces the value through the lock; the next silent hit sees it.
  c.put(7, 26);
  CHECK(c.get(7) == 26u);
  CHECK(c.silent_hit_count() == 8);
}

TEST_CASE("silent hits: clear() zeroes their count with the other statistics", "[cache][sharded][silent]") {
  sharded_tinylfu_cache<u64, u64> c{"test.silent.clear", {.max_entries = 32, .shards = 2}};
  c.put(3, 9);
  for (int k = 0; k < 20; ++k) REQUIRE(c.get(3) == 9u);
  CHECK(c.silent_hit_count() == 6);
  c.clear();
  CHECK(c.silent_hit_count() == 0);
  CHECK(c.stats().hits == 0);
  c.put(3, 10);
  for (int k = 0; k < 16; ++k) REQUIRE(c.get(3) == 10u);
  CHECK(c.silent_hit_count() == 2);
  CHECK(c.stats().hits == 16);
}

TEST_CASE("silent hits: a cache with them decides exactly as one that takes the lock for every hit",
          "[cache][sharded][silent]") {
  // 20,000 entries in 4 shards, with the shared window tuner (sampled keys
  // are never silent); 400,000 Zipfian read-through accesses, one thread.
  // boxed values disable the silent path; the policy is the same.
  sharded_tinylfu_cache<u64, u64> fast{"test.silent.same.fast", {.max_entries = 20'000, .shards = 4}};
  sharded_tinylfu_cache<u64, boxed> locked{"test.silent.same.locked", {.max_entries = 20'000, .shards = 4}};
  const bench::zipf_params zp(200'000, 0.99);
  bench::zipf_generator g(zp, 1802);
  u64 disagreements = 0;
  for (int i = 0; i < 400'000; ++i) {
    const u64 key = g.next();
    bool fast_missed = false, locked_missed = false;
    const u64 a = fast.get_or_load(key, [&](u64 k) { fast_missed = true; return k * 2 + 11; });
    const boxed b = locked.get_or_load(key, [&](u64 k) { locked_missed = true; return boxed{k * 2 + 11}; });
    REQUIRE(a == key * 2 + 11);
    REQUIRE(b.v == key * 2 + 11);
    if (fast_missed != locked_missed) ++disagreements;
  }
  CHECK(disagreements == 0);
  CHECK(fast.stats().hits == locked.stats().hits);
  CHECK(fast.window_percent() == locked.window_percent());
  CHECK(locked.silent_hit_count() == 0);
  // Most hits on the hottest keys are silent.
  CHECK(fast.silent_hit_count() > fast.stats().hits / 2);
}

TEMPLATE_TEST_CASE("silent hits: concurrent readers never see a torn or mixed value, and every access counts once",
                   "[cache][sharded][silent][threads]", tinylfu, tinylfu_fixed_window) {
  // 64 hot keys in a 4096-entry cache: their counts saturate, so most reads
  // are silent (with the tuner, those of the three in four keys outside its
  // sample: its ghosts hold 1024 of the 4096 entries' keys), while two
  // writers replace the same keys' values and erase them (an erased key's
  // node is the next insertion's).
  const std::string name = std::is_same_v<TestType, tinylfu> ? "test.silent.stress.tuned" : "test.silent.stress.fixed";
  constexpr int readers = 2, writers = 2, ops = 300'000;
  {
    sharded_cache<u64, wide_value, TestType> c{name, {.max_entries = 4096, .shards = 4}};
    std::atomic<u64> gets{0}, wrong{0};
    start_gate gate(readers + writers);
    std::vector<std::thread> pool;
    for (int t = 0; t < readers; ++t) {
      pool.emplace_back([&, t] {
        std::mt19937_64 rng(static_cast<u64>(t) + 1);
        gate.arrive_and_wait();
        for (int i = 0; i < ops; ++i) {
          const u64 key = rng() % 64;
          gets.fetch_add(1, std::memory_order_relaxed);
          if (i % 2 == 0) {
            if (auto v = c.get(key); v && !v->whole(key)) wrong.fetch_add(1);
          } else {
            const wide_value v = c.get_or_load(key, [](u64 k) { return wide_value::make(k, 0); });
            if (!v.whole(key)) wrong.fetch_add(1);
          }
        }
      });
    }
    for (int t = 0; t < writers; ++t) {
      pool.emplace_back([&, t] {
        std::mt19937_64 rng(static_cast<u64>(t) + 99);
        gate.arrive_and_wait();
        for (u64 i = 1; i <= ops; ++i) {
          const u64 key = rng() % 64;
          if (i % 8 == 0) c.erase(key);
          else c.put(key, wide_value::make(key, i));
        }
      });
    }
    for (auto& th : pool) th.join();
    CHECK(wrong.load() == 0);
    const auto s = c.stats();
    CHECK(s.hits + s.misses == gets.load());
    CHECK(c.silent_hit_count() > 0);
    CHECK(c.silent_hit_count() <= s.hits);
    CHECK(live(name) == static_cast<std::int64_t>(s.own_bytes));
  }
  CHECK(live(name) == 0);
}

TEST_CASE("silent hits: clear() while readers run frees nothing they read, and their count never wraps",
          "[cache][sharded][silent][threads]") {
  // Under AddressSanitizer a reader inside a cleared shard's freed table or
  // pages would be reported; here values must also stay whole.
  const std::string name = "test.silent.clear.race";
  {
    // The fixed window: below 1024 entries the tuner samples every key.
    sharded_cache<u64, wide_value, tinylfu_fixed_window> c{name, {.max_entries = 256, .shards = 2}};
    std::atomic<bool> stop{false};
    std::atomic<u64> wrong{0}, reads{0};
    start_gate gate(3);
    std::vector<std::thread> pool;
    for (int t = 0; t < 2; ++t) {
      pool.emplace_back([&, t] {
        std::mt19937_64 rng(static_cast<u64>(t) + 7);
        gate.arrive_and_wait();
        while (!stop.load(std::memory_order_relaxed)) {
          const u64 key = rng() % 16;
          const wide_value v = c.get_or_load(key, [](u64 k) { return wide_value::make(k, 1); });
          if (!v.whole(key)) wrong.fetch_add(1);
          // Read while clear() may run: never below 0 (no wrap-around).
          if (c.silent_hit_count() > (u64{1} << 40)) wrong.fetch_add(1);
          reads.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    // Each clear() waits for 200 more reads and for a silent hit since the
    // last clear (10 s at most), so readers are on the lock-free path when it
    // runs, however the threads are scheduled (a count of reads alone left
    // every round without one when the machine was busy).
    std::atomic<int> rounds_with_silent{0};
    pool.emplace_back([&] {
      gate.arrive_and_wait();
      for (int round = 0; round < 300; ++round) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while ((reads.load(std::memory_order_relaxed) < static_cast<u64>(round) * 200 || c.silent_hit_count() == 0) &&
               std::chrono::steady_clock::now() < until)
          std::this_thread::yield();
        if (c.silent_hit_count() > 0) rounds_with_silent.fetch_add(1);
        c.clear();
      }
      stop = true;
    });
    for (auto& th : pool) th.join();
    CHECK(wrong.load() == 0);
    CHECK(rounds_with_silent.load() == 300);  // readers were inside while every clear() ran
    c.clear();
    CHECK(live(name) == static_cast<std::int64_t>(c.fixed_bytes()));
    CHECK(c.silent_hit_count() == 0);
  }
  CHECK(live(name) == 0);
}

TEST_CASE("silent hits: the stripes' hit count stays exact across folds, read while threads count",
          "[cache][sharded][silent][threads]") {
  // Folding every 8 hits (every 2^46 in the caches): 4 threads each serve
  // 50,000 hits on their stripes while another reads the sum, which must
  // never fall and never exceed what was served; at the end it is exact.
  using stripes_t = detail::basic_read_stripes<8>;
  stripes_t stripes;
  constexpr int threads = 4, hits_each = 50'000;
  std::atomic<u64> served{0}, wrong{0};
  std::atomic<bool> done{false};
  start_gate gate(threads + 1);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      gate.arrive_and_wait();
      for (int i = 0; i < hits_each; ++i) {
        stripes_t::stripe* s = stripes.enter();  // no reclaimer: never nullptr
        if (s == nullptr) {
          wrong.fetch_add(1);
          continue;
        }
        stripes.leave(*s, i % 3 != 0);
        if (i % 3 != 0) served.fetch_add(1);
      }
    });
  }
  std::thread reader([&] {
    gate.arrive_and_wait();
    u64 last = 0;
    while (!done.load()) {
      const u64 n = stripes.hits();
      const u64 upper = served.load() + threads;  // each thread: a hit counted before `served` knows it
      if (n < last || n > upper) wrong.fetch_add(1);
      last = n;
    }
  });
  for (auto& th : pool) th.join();
  done = true;
  reader.join();
  CHECK(wrong.load() == 0);
  const u64 expected = static_cast<u64>(threads) * (hits_each - (hits_each + 2) / 3);
  CHECK(served.load() == expected);
  CHECK(stripes.hits() == expected);
}
