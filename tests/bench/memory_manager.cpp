// arenastat::bench::memory_manager: exact figures for windows whose tracked
// allocations are known, driven through Start/Stop directly and through a
// real Google Benchmark run.
#include <catch2/catch.hpp>

#include <benchmark/benchmark.h>

#include <memory_resource>
#include <stdexcept>
#include <thread>
#include <vector>

#include "arenastat/arena_resource.hpp"
#include "arenastat/bench/memory_manager.hpp"
#include "arenastat/table.hpp"
#include "arenastat/tracking_resource.hpp"

using arenastat::bench::memory_manager;
using Result = benchmark::MemoryManager::Result;

TEST_CASE("tracked allocations give exact figures", "[memory_manager]") {
  arenastat::tracking_resource r("test/mm/tracking", std::pmr::new_delete_resource());
  memory_manager mm("test/mm/window");
  Result result;
  mm.Start();
  void* a = r.allocate(100, 8);
  void* b = r.allocate(28, 4);
  r.deallocate(a, 100, 8);
  mm.Stop(result);
  CHECK(result.num_allocs == 2);
  CHECK(result.total_allocated_bytes == 128);
  CHECK(result.max_bytes_used == 128);
  CHECK(result.net_heap_growth == 28);
  CHECK(mm.last().frees == 1);
  r.deallocate(b, 28, 4);
}

TEST_CASE("arena chunks charged to an account count as allocations", "[memory_manager]") {
  memory_manager mm;
  Result result;
  mm.Start();
  {
    arenastat::arena_options opts;
    opts.initial_chunk = 4096;
    opts.account = "test/mm/arena";
    arenastat::arena_resource arena("mmtag", opts, std::pmr::new_delete_resource());
    (void)arena.allocate(32, 8);
    // 4096 - 48 (chunk header) - 32 leaves 4016 bytes: 4020 takes a second chunk of 8192.
    (void)arena.allocate(4020, 8);
  }
  mm.Stop(result);
  CHECK(result.num_allocs == 2);
  CHECK(result.total_allocated_bytes == 4096 + 8192);
  CHECK(result.max_bytes_used == 4096 + 8192);
  CHECK(result.net_heap_growth == 0);
  CHECK(mm.last().frees == 2);
}

TEST_CASE("an arena without account shows in the peak only", "[memory_manager]") {
  memory_manager mm;
  Result result;
  mm.Start();
  {
    arenastat::arena_resource arena("mmtag", std::pmr::new_delete_resource());
    (void)arena.allocate(32, 8);
  }
  mm.Stop(result);
  CHECK(result.num_allocs == 0);
  CHECK(result.total_allocated_bytes == 0);
  CHECK(result.max_bytes_used == static_cast<std::int64_t>(arenastat::arena_options{}.initial_chunk));
  CHECK(result.net_heap_growth == 0);
}

TEST_CASE("another thread's traffic counts in totals, not in the peak", "[memory_manager][threads]") {
  arenastat::tracking_resource r("test/mm/thread", std::pmr::new_delete_resource());
  memory_manager mm;
  Result result;
  mm.Start();
  std::thread t([&] { r.deallocate(r.allocate(64, 8), 64, 8); });
  t.join();
  mm.Stop(result);
  CHECK(result.num_allocs == 1);
  CHECK(result.total_allocated_bytes == 64);
  CHECK(result.max_bytes_used == 0);
  CHECK(result.net_heap_growth == 0);
}

TEST_CASE("each window is folded into the table under the manager's name", "[memory_manager]") {
  memory_manager mm("test/mm/folded");
  Result result;
  mm.Start();
  mm.Stop(result);
  mm.Start();
  mm.Stop(&result);
  std::uint64_t count = 0;
  for (const auto& e : arenastat::snapshot())
    if (e.kind == arenastat::entry_kind::scope && e.name == "test/mm/folded") count = e.count;
  CHECK(count == 2);
}

TEST_CASE("window_open is true from Start to Stop only", "[memory_manager]") {
  memory_manager mm;
  Result result;
  CHECK_FALSE(mm.window_open());
  mm.Start();
  CHECK(mm.window_open());
  mm.Stop(result);
  CHECK_FALSE(mm.window_open());
}

TEST_CASE("misuse throws a clear error", "[memory_manager]") {
  CHECK_THROWS_WITH(memory_manager(""), Catch::Contains("scope name"));
  memory_manager mm;
  Result result;
  CHECK_THROWS_WITH(mm.Stop(result), Catch::Contains("no matching Start"));
  mm.Start();
  CHECK_THROWS_WITH(mm.Start(), Catch::Contains("already open"));
  CHECK_THROWS_AS(mm.Stop(static_cast<Result*>(nullptr)), std::invalid_argument);
  std::thread t([&] { CHECK_THROWS_WITH(mm.Stop(result), Catch::Contains("another thread")); });
  t.join();
  mm.Stop(result);
}

namespace {

// Keeps the memory run's figures as Google Benchmark reports them.
class capture_reporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs)
      if (run.memory_result != nullptr) {
        memory = *run.memory_result;
        allocs_per_iter = run.allocs_per_iter;
        seen = true;
      }
  }
  Result memory;
  double allocs_per_iter = 0;
  bool seen = false;
};

std::vector<void*> kept;  // the body's second block of each iteration

}  // namespace

TEST_CASE("a Google Benchmark run reports the body's known allocations", "[memory_manager]") {
  static arenastat::tracking_resource r("test/mm/gbench", std::pmr::new_delete_resource());
  // Per iteration: allocate 64 twice, free the first: +64 net, 128 allocated.
  benchmark::RegisterBenchmark("mm_known_body", [](benchmark::State& state) {
    for (auto _ : state) {
      void* a = r.allocate(64, 8);
      kept.push_back(r.allocate(64, 8));
      r.deallocate(a, 64, 8);
    }
  })->Iterations(16);
  memory_manager mm;
  benchmark::RegisterMemoryManager(&mm);
  capture_reporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter, "mm_known_body");
  benchmark::RegisterMemoryManager(nullptr);
  for (void* p : kept) r.deallocate(p, 64, 8);
  kept.clear();
  REQUIRE(reporter.seen);
  // The memory run makes min(16, iterations) = 16 iterations.
  CHECK(reporter.memory.num_allocs == 32);
  CHECK(reporter.allocs_per_iter == 2.0);
  CHECK(reporter.memory.total_allocated_bytes == 32 * 64);
  CHECK(reporter.memory.net_heap_growth == 16 * 64);
  CHECK(reporter.memory.max_bytes_used == 15 * 64 + 128);  // before the last free
}
