// sharded_cache's single-flight loads against writes made while they run.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>

#include "arenastat/cache/sharded_cache.hpp"

using namespace arenastat;
using u64 = std::uint64_t;

TEST_CASE("flight: a put, erase or clear during a key's load is not overwritten by the load's value",
          "[cache][sharded]") {
  // The loader writes the key itself: the same as another thread's write
  // during the load (the loader runs outside the shard lock), but
  // deterministic. The caller still gets the value it loaded.
  sharded_lru_cache<u64, u64> c{"test.flight.superseded", {.max_entries = 64, .shards = 2}};
  CHECK(c.get_or_load(5, [&](u64) -> u64 {
    c.put(5, 2);
    return 1;
  }) == 1);
  CHECK(c.get(5) == std::optional<u64>(2));  // the newer put stays
  CHECK(c.get_or_load(6, [&](u64) -> u64 {
    c.put(6, 2);
    c.erase(6);
    return 1;
  }) == 1);
  CHECK_FALSE(c.contains(6));  // the erase stays: no stale value comes back
  CHECK(c.get_or_load(7, [&](u64) -> u64 {
    c.clear();
    return 1;
  }) == 1);
  CHECK_FALSE(c.contains(7));
  // A write to another key does not keep the load from being stored.
  CHECK(c.get_or_load(8, [&](u64) -> u64 {
    c.put(9, 3);
    c.erase(10);
    return 1;
  }) == 1);
  CHECK(c.get(8) == std::optional<u64>(1));
  CHECK(c.get(9) == std::optional<u64>(3));
  // The next load of a superseded key loads and stores again.
  CHECK(c.get_or_load(6, [](u64) -> u64 { return 60; }) == 60);
  CHECK(c.get(6) == std::optional<u64>(60));
}

TEST_CASE("flight: an erase from another thread during a load keeps the key out", "[cache][sharded]") {
  sharded_tinylfu_cache<u64, u64> c{"test.flight.erase_thread", {.max_entries = 64, .shards = 2}};
  std::atomic<int> phase{0};  // 1: the load runs, 2: the other thread erased
  std::thread eraser([&] {
    while (phase.load() != 1) std::this_thread::yield();
    c.erase(5);
    phase.store(2);
  });
  const u64 v = c.get_or_load(5, [&](u64) -> u64 {
    phase.store(1);
    while (phase.load() != 2) std::this_thread::yield();
    return 1;
  });
  eraser.join();
  CHECK(v == 1);
  CHECK_FALSE(c.contains(5));
}

TEST_CASE("flight: a caller after a write loads afresh instead of joining the stale load", "[cache][sharded]") {
  // The load of key 5 starts; another thread erases 5 (an invalidation) and
  // asks for it while that load still runs. It must get a new load's value,
  // not wait for the old load's value (which read the store before the erase).
  sharded_lru_cache<u64, u64> c{"test.flight.fresh", {.max_entries = 64, .shards = 2}};
  std::atomic<int> phase{0};  // 1: the old load runs, 2: the other thread is done
  std::optional<u64> fresh;
  std::thread writer([&] {
    while (phase.load() != 1) std::this_thread::yield();
    c.erase(5);
    fresh = c.get_or_load(5, [](u64) -> u64 { return 2; });
    phase.store(2);
  });
  const u64 old = c.get_or_load(5, [&](u64) -> u64 {
    phase.store(1);
    // Waits for the writer; without the fix the writer waits for this load
    // instead, and it gives up after 5 s so that the test fails, not hangs.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (phase.load() != 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    return 1;
  });
  writer.join();
  CHECK(old == 1);                         // the old load's callers get its value
  CHECK(fresh == std::optional<u64>(2));   // the caller after the erase got a new load's
  CHECK(c.get(5) == std::optional<u64>(2));  // and that is what is stored
}
