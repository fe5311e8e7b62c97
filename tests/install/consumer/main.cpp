// Uses every public target the way a user would, and checks one derivable
// figure of each: arenastat::arenastat (umbrella header), ::jemalloc, ::cache,
// ::measure, and ::bench where it was built.
#include <arenastat/arenastat.hpp>
#include <arenastat/cache/cache.hpp>
#include <arenastat/histogram.hpp>
#include <arenastat/jemalloc_resource.hpp>
#ifdef CONSUMER_HAS_BENCH
#include <arenastat/bench/memory_manager.hpp>
#endif

#include <cstdint>
#include <cstdio>
#include <memory_resource>
#include <vector>

namespace {

bool check(bool ok, const char* what) {
  if (!ok) std::printf("consumer: %s wrong\n", what);
  return ok;
}

std::uint64_t peak_of(const char* name) {
  for (const arenastat::entry& e : arenastat::snapshot())
    if (e.name == name) return e.peak_bytes;
  return 0;
}

}  // namespace

int main() {
  bool ok = true;
  {  // arenastat::arenastat: one 4096-byte chunk charged to the scope.
    arenastat::scope s{"consumer/task"};
    arenastat::arena_resource a{"node", {.initial_chunk = 4096}};
    (void)a.allocate(100, 8);
  }
  ok &= check(peak_of("consumer/task") == 4096, "arena scope peak");

  {  // arenastat::test_resource: a safe push_back passes exception_test (one run per allocation).
    arenastat::test_resource mem{"consumer/test_resource"};
    const auto runs = arenastat::exception_test(mem, [&] {
      std::pmr::vector<int> v{&mem};
      v.push_back(1);
    });
    ok &= check(runs == 1 && mem.blocks_in_use() == 0 && mem.total_blocks() == 1, "test_resource");
  }

  {  // arenastat::jemalloc: a tracked block of 1000 bytes on a jemalloc arena.
    arenastat::jemalloc_resource j;
    arenastat::tracking_resource t{"consumer/jemalloc", &j};
    void* p = t.allocate(1000, 8);
    ok &= check(t.tracked_account().live_bytes() == 1000, "jemalloc live bytes");
    t.deallocate(p, 1000, 8);
  }

  {  // arenastat::cache: a value put is found again.
    arenastat::tinylfu_cache<std::uint64_t, std::uint64_t> c{"consumer/cache", {.max_entries = 16}};
    c.put(1, 2);
    ok &= check(c.get(1) == std::uint64_t{2}, "cache get");
  }

  {  // arenastat::measure: the median of 1..100 is 50.
    arenastat::histogram h;
    for (std::uint64_t v = 1; v <= 100; ++v) h.record(v);
    ok &= check(h.value_at_percentile(50) == 50, "histogram median");
  }

#ifdef CONSUMER_HAS_BENCH
  {  // arenastat::bench: the memory manager constructs under its scope name.
    arenastat::bench::memory_manager m{"consumer/bench"};
    ok &= check(m.scope_name() == "consumer/bench", "memory manager name");
  }
#endif
  if (ok) std::puts("consumer: ok");
  return ok ? 0 : 1;
}
