// detail::short_mutex: the lock of the scope table and of cache shards.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "arenastat/detail/short_mutex.hpp"

using arenastat::detail::short_mutex;

TEST_CASE("short_mutex: try_lock fails while held and succeeds once unlocked", "[short_mutex]") {
  short_mutex m;
  REQUIRE(m.try_lock());
  CHECK_FALSE(m.try_lock());
  m.unlock();
  CHECK(m.try_lock());
  m.unlock();
}

TEST_CASE("short_mutex: no increment is lost under contention", "[short_mutex][threads]") {
  // Plain (non-atomic) increments under the lock: a broken lock loses some,
  // and ThreadSanitizer reports the race.
  short_mutex m;
  std::uint64_t counter = 0;
  constexpr int threads = 4;
  constexpr int per_thread = 50'000;
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i)
    pool.emplace_back([&] {
      for (int k = 0; k < per_thread; ++k) {
        std::lock_guard lock(m);
        counter = counter + 1;
      }
    });
  for (auto& t : pool) t.join();
  CHECK(counter == std::uint64_t{threads} * per_thread);
}

TEST_CASE("short_mutex: a waiter that went to sleep is woken by unlock", "[short_mutex][threads]") {
  // The holder keeps the lock far longer than the waiter's spinning (256
  // pauses), so the waiter sleeps on the lock word and only unlock() can
  // wake it.
  short_mutex m;
  m.lock();
  std::atomic<bool> started{false}, got{false};
  std::thread waiter([&] {
    started.store(true);
    m.lock();
    got.store(true);
    m.unlock();
  });
  while (!started.load()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(got.load());
  m.unlock();
  waiter.join();
  CHECK(got.load());
  CHECK(m.try_lock());  // left free
  m.unlock();
}
