// The sharded cache: concurrent stress and single-flight loading.
#include <catch2/catch.hpp>

#include <bit>

#include <algorithm>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <optional>
#include <stdexcept>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "arenastat/cache/sharded_cache.hpp"
#include "cache_test_support.hpp"

using namespace arenastat;
using cache_test::live;
using cache_test::start_gate;
using u64 = std::uint64_t;

TEST_CASE("sharded: shards split the entry bound, the rest goes to the first shards", "[cache][sharded]") {
  sharded_lru_cache<u64, u64> c{"test.sharded.split", {.max_entries = 1003, .shards = 4}};
  CHECK(c.shard_count() == 4);
  CHECK(c.capacity() == 1003);
  for (u64 k = 0; k < 100'000; ++k) c.put(k, k);
  CHECK(c.size() == 1003);
}

TEST_CASE("sharded: the default shard count keeps at least 1024 entries per shard", "[cache][sharded]") {
  using C = sharded_tinylfu_cache<u64, u64>;
  const std::size_t hw = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t many = std::min<std::size_t>(std::bit_ceil(128 * hw), C::max_shards);
  // 1M entries: 512 shards hold 1953 each, 1024 would hold 976.
  CHECK(C::default_shards({.max_entries = 1'000'000}) == std::min<std::size_t>(many, 512));
  CHECK(C::default_shards({.max_entries = 5'000}) == 4);  // 1250 each; 8 would hold 625
  CHECK(C::default_shards({.max_entries = 1'000}) == 1);
  // A byte bound counts the entries one cache of that many bytes holds.
  const std::size_t by_bytes = C::shard_cache::capacity_for_bytes(8 << 20);
  std::size_t expected = many;
  while (expected > 1 && by_bytes / expected < 1024) expected /= 2;
  CHECK(C::default_shards({.max_bytes = 8 << 20}) == expected);
  C c{"test.sharded.default", {.max_entries = 5'000}};
  CHECK(c.shard_count() == 4);
}

TEMPLATE_TEST_CASE("sharded: concurrent get, put, get_or_load and erase stay consistent", "[cache][sharded][threads]",
                   lru, tinylfu) {
  const std::string name = std::string("test.sharded.stress.") + std::string(TestType::name);
  constexpr int threads = 4;
  constexpr int ops = 20'000;
  {
    sharded_cache<u64, u64, TestType> c{name, {.max_entries = 512, .shards = 8}};
    std::atomic<u64> gets{0}, wrong{0};
    start_gate gate(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        std::mt19937_64 rng(static_cast<u64>(t) + 1);
        gate.arrive_and_wait();
        for (int i = 0; i < ops; ++i) {
          const u64 key = rng() % 2048;
          switch (rng() % 4) {
            case 0: c.put(key, key * 2 + 11); break;
            case 1:
              gets.fetch_add(1);
              if (auto v = c.get(key); v && *v != key * 2 + 11) wrong.fetch_add(1);
              break;
            case 2:
              gets.fetch_add(1);
              if (c.get_or_load(key, [](u64 k) { return k * 2 + 11; }) != key * 2 + 11) wrong.fetch_add(1);
              break;
            default: c.erase(key); break;
          }
        }
      });
    }
    for (auto& th : pool) th.join();
    CHECK(wrong.load() == 0);
    const auto s = c.stats();
    CHECK(s.hits + s.misses == gets.load());
    CHECK(s.size <= 512);
    CHECK(s.size == c.size());
    CHECK(live(name) == static_cast<std::int64_t>(s.own_bytes));
  }
  CHECK(live(name) == 0);
}

TEST_CASE("sharded: a loader runs once when 8 threads ask for the same key", "[cache][sharded][threads]") {
  sharded_tinylfu_cache<u64, u64> c{"test.sharded.flight", {.max_entries = 1024, .shards = 4}};
  constexpr int threads = 8;
  std::atomic<int> calls{0};
  std::atomic<u64> sum{0};
  start_gate gate(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      gate.arrive_and_wait();
      sum.fetch_add(c.get_or_load(77, [&](u64 k) {
        calls.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        return k * 2 + 11;
      }));
    });
  }
  for (auto& th : pool) th.join();
  CHECK(calls.load() == 1);
  CHECK(sum.load() == threads * 165u);
  CHECK(c.stats().loads == 1);
  CHECK(c.size() == 1);
}

TEST_CASE("sharded: every waiter of a failing load gets the exception, the loader ran once",
          "[cache][sharded][threads]") {
  sharded_lru_cache<u64, u64> c{"test.sharded.flight.fail", {.max_entries = 64, .shards = 2}};
  constexpr int threads = 8;
  std::atomic<int> calls{0}, failures{0};
  std::atomic<bool> all_asked{false};
  start_gate gate(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      gate.arrive_and_wait();
      try {
        c.get_or_load(3, [&](u64) -> u64 {
          calls.fetch_add(1);
          // Fail only once every thread has asked: each records its miss and,
          // in the same hold of the shard lock, becomes the loader or one of
          // its waiters, so none can come late and start a second load.
          const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
          while (c.stats().misses < threads && std::chrono::steady_clock::now() < until) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
          all_asked = c.stats().misses == threads;
          throw std::runtime_error("backend down");
        });
      } catch (const std::runtime_error&) {
        failures.fetch_add(1);
      }
    });
  }
  for (auto& th : pool) th.join();
  CHECK(all_asked.load());  // else the threads did not all ask within 10 s
  CHECK(calls.load() == 1);
  CHECK(failures.load() == threads);
  CHECK(c.size() == 0);
}

TEST_CASE("sharded: a loader asking for its own key gets logic_error, not a wait for itself",
          "[cache][sharded]") {
  sharded_lru_cache<u64, u64> c{"test.sharded.flight.recursive", {.max_entries = 64, .shards = 2}};
  int outer_calls = 0;
  bool inner_threw = false;
  const u64 v = c.get_or_load(5, [&](u64 k) -> u64 {
    ++outer_calls;
    try {
      c.get_or_load(5, [](u64) -> u64 { return 1; });  // would wait for this very load
    } catch (const std::logic_error& e) {
      inner_threw = std::string(e.what()).find("test.sharded.flight.recursive") != std::string::npos;
    }
    return k * 10;
  });
  CHECK(inner_threw);
  CHECK(outer_calls == 1);
  CHECK(v == 50);
  CHECK(c.stats().misses == 1);  // the refused request counts nothing, as in basic_cache
  CHECK(c.stats().loads == 1);
  CHECK(c.get(5) == std::optional<u64>(50));
}

TEST_CASE("sharded: a loader that writes its own key and asks for it every time is refused at the bound",
          "[cache][sharded]") {
  // As basic_cache: each ask after the erase starts a new load (the running
  // ones are superseded), up to max_stale_nested_loads of them on this thread.
  sharded_tinylfu_cache<u64, u64> c{"test.sharded.flight.restarts", {.max_entries = 64, .shards = 2}};
  unsigned calls = 0;
  std::function<u64(u64)> loader = [&](u64 k) {
    ++calls;
    c.erase(k);
    return c.get_or_load(k, loader);
  };
  std::string what;
  try {
    c.get_or_load(9, loader);
  } catch (const std::logic_error& e) {
    what = e.what();
  }
  CHECK(what.find("test.sharded.flight.restarts") != std::string::npos);
  CHECK(what.find("wrote it and asked for it " + std::to_string(max_stale_nested_loads) + " times over") !=
        std::string::npos);
  CHECK(calls == max_stale_nested_loads);
  CHECK(c.size() == 0);
  // One miss per load started; the refused ask beyond the bound counts nothing.
  CHECK(c.stats().misses == max_stale_nested_loads);
  CHECK(c.stats().loads == max_stale_nested_loads);
  CHECK(c.get_or_load(9, [](u64) -> u64 { return 90; }) == 90);  // no flight left behind
}

TEST_CASE("sharded: stale nested loads of one key below the bound all run", "[cache][sharded]") {
  sharded_lru_cache<u64, u64> c{"test.sharded.flight.restarts.below", {.max_entries = 64, .shards = 2}};
  const unsigned levels = max_stale_nested_loads;
  CHECK(cache_test::load_nested(c, 2, levels) == levels - 1);
  // Only the innermost load was not superseded (each outer one's loader
  // erased its key), so only its value, 0, is stored.
  CHECK(c.get(2) == std::optional<u64>(0));
}

TEST_CASE("sharded: loaders on two threads waiting for each other's keys get logic_error, not a deadlock",
          "[cache][sharded][threads]") {
  sharded_lru_cache<u64, u64> c{"test.sharded.flight.cycle", {.max_entries = 64, .shards = 2}};
  start_gate both_loading(2);
  std::atomic<int> cycle_errors{0}, other_outcomes{0};
  // Key `mine`'s loader runs once both loads are in flight, then asks for the
  // other thread's key: one of the two waits would close the cycle.
  const auto run = [&](u64 mine, u64 theirs) {
    try {
      c.get_or_load(mine, [&](u64) -> u64 {
        both_loading.arrive_and_wait();
        return c.get_or_load(theirs, [](u64) -> u64 { return 0; }) + 1;
      });
      other_outcomes.fetch_add(1);
    } catch (const std::logic_error& e) {
      if (std::string(e.what()).find("would wait for each other forever") != std::string::npos &&
          std::string(e.what()).find("test.sharded.flight.cycle") != std::string::npos)
        cycle_errors.fetch_add(1);
      else
        other_outcomes.fetch_add(1);
    } catch (...) {
      other_outcomes.fetch_add(1);
    }
  };
  std::thread a(run, 1, 2), b(run, 2, 1);
  a.join();
  b.join();
  // The refused wait fails its thread's load; the other thread, waiting for
  // that load, gets the same exception and fails its own.
  CHECK(cycle_errors.load() == 2);
  CHECK(other_outcomes.load() == 0);
  CHECK(c.size() == 0);
  // Two loads, each a miss, and the one wait that was not refused; the
  // refused one counts nothing.
  CHECK(c.stats().misses == 3);
  CHECK(c.stats().loads == 2);
  CHECK(detail::process_load_waits().size() == 0);
  CHECK(c.get_or_load(1, [](u64) -> u64 { return 10; }) == 10);
  CHECK(c.get_or_load(2, [](u64) -> u64 { return 20; }) == 20);
}

TEST_CASE("sharded: a thread whose load another thread waited for may then wait for that thread's load",
          "[cache][sharded][threads]") {
  sharded_lru_cache<u64, u64> c{"test.sharded.flight.nocycle", {.max_entries = 64, .shards = 2}};
  start_gate started(2);
  std::atomic<bool> waiter_waits{false};
  u64 from_l = 0, from_w = 0;
  // W's load of 10 waits for L's load of 20; L, once that load has ended,
  // asks for 10 (W's load, or its stored value): no cycle, as 20's load is over.
  std::thread w([&] {
    from_w = c.get_or_load(10, [&](u64) -> u64 {
      started.arrive_and_wait();
      waiter_waits = true;
      return c.get_or_load(20, [](u64) -> u64 { return 0; }) + 1;
    });
  });
  std::thread l([&] {
    c.get_or_load(20, [&](u64) -> u64 {
      started.arrive_and_wait();
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (detail::process_load_waits().size() == 0 && std::chrono::steady_clock::now() < until)
        std::this_thread::yield();  // W is waiting for this load
      return 200;
    });
    from_l = c.get_or_load(10, [](u64) -> u64 { return 0; });
  });
  w.join();
  l.join();
  CHECK(waiter_waits.load());
  CHECK(from_w == 201);
  CHECK(from_l == 201);
  CHECK(detail::process_load_waits().size() == 0);
}

TEST_CASE("sharded: a recursive load's logic_error not caught by the loader fails the outer load",
          "[cache][sharded]") {
  sharded_lru_cache<u64, u64> c{"test.sharded.flight.recursive2", {.max_entries = 64, .shards = 2}};
  // Key 7's loader asks for key 8, whose loader asks for key 7 again.
  const auto load8 = [&](u64) -> u64 { return c.get_or_load(7, [](u64) -> u64 { return 0; }); };
  CHECK_THROWS_AS(c.get_or_load(7, [&](u64) -> u64 { return c.get_or_load(8, load8); }), std::logic_error);
  CHECK(c.size() == 0);
  // Both loads have ended: the keys load normally now.
  CHECK(c.get_or_load(7, [](u64) -> u64 { return 70; }) == 70);
  CHECK(c.get_or_load(8, [](u64) -> u64 { return 80; }) == 80);
}

TEST_CASE("sharded: an untracked cache's peak is the most it held at once, not the sum of its shards' peaks",
          "[cache][sharded]") {
  for (const bool track : {true, false}) {
    sharded_lru_cache<u64, u64> c{track ? "test.sharded.peak.tracked" : "test.sharded.peak.untracked",
                                  {.max_bytes = 4000, .shards = 2, .track = track}};
    // A key of each shard (the shard: the low half of the mixed hash, scaled to 2).
    const auto shard_of = [&](u64 k) { return (std::uint64_t{c.hash_key(k).low()} * 2) >> 32; };
    u64 a = 0, b = 0;
    while (shard_of(a) != 0) ++a;
    while (shard_of(b) != 1) ++b;
    c.put(a, 1);  // shard 0 allocates its table and first page
    const std::uint64_t one_shard_full = c.stats().own_bytes;
    c.clear();    // and gives them back
    CHECK(c.stats().own_bytes == c.fixed_bytes());
    c.put(b, 1);  // shard 1 allocates as much
    const cache_stats s = c.stats();
    CHECK(s.own_bytes == one_shard_full);
    CHECK(s.peak_bytes == one_shard_full);  // never more at once
  }
}

TEST_CASE("sharded: a loader that erased its own key may load it again (as basic_cache allows)",
          "[cache][sharded]") {
  sharded_lru_cache<int, int> c{"test.sharded.erase-self", {.max_entries = 4, .shards = 1}};
  const int v = c.get_or_load(1, [&](int k) {
    c.erase(k);  // supersedes this load: the inner one waits for nothing
    return c.get_or_load(k, [](int) { return 5; }) + 1;
  });
  CHECK(v == 6);
  CHECK(c.get(1) == 5);  // the superseded outer load does not store over the inner one's value
}
