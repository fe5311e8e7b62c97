// docs/jemalloc-and-boost.md, "Use": a tracking_resource over a
// jemalloc_resource, compiled and run by ctest (tests/examples). Prints the
// account's live bytes beside jemalloc's figures for the same blocks.
#include <arenastat/jemalloc_resource.hpp>
#include <arenastat/tracking_resource.hpp>

#include <cstdio>
#include <memory_resource>
#include <string>
#include <unordered_map>

int main() {
  arenastat::jemalloc_resource je;                   // arenas.create: an arena of its own
  arenastat::tracking_resource cache{"cache", &je};  // account "cache", upstream = je
  {
    std::pmr::unordered_map<int, std::pmr::string> m{&cache};
    for (int i = 0; i < 1000; ++i) m.emplace(i, std::pmr::string(100, 'x', &cache));

    je.flush_thread_cache();  // see "Exactness"
    const arenastat::jemalloc_arena_stats js = je.arena_stats();
    const arenastat::account_totals at = cache.tracked_account().totals();
    std::printf("account live %lld bytes, jemalloc allocated %llu bytes, active %llu bytes\n",
                static_cast<long long>(at.live_bytes), static_cast<unsigned long long>(js.allocated_bytes()),
                static_cast<unsigned long long>(js.active_bytes()));
    // Size classes round up: jemalloc holds at least what the component asked for.
    if (at.live_bytes <= 0 || js.allocated_bytes() < static_cast<std::uint64_t>(at.live_bytes)) return 1;
  }
  std::printf("after the map: account live %lld bytes\n",
              static_cast<long long>(cache.tracked_account().totals().live_bytes));
  return cache.tracked_account().totals().live_bytes == 0 ? 0 : 1;
}
