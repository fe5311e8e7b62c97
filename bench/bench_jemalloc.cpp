// bench_jemalloc: jemalloc_resource (arena of its own + one explicit thread
// cache per (thread, resource)) against plain mallocx/sdallocx with the
// default thread cache, and against MALLOCX_TCACHE_NONE. 32-byte blocks.
//
// The arenas of the resources are otherwise empty: without the cache, freeing
// the only block of a slab gives the slab back and the next allocation takes
// a new one (docs/jemalloc-and-boost.md has the cost). Real components keep
// live blocks, so every case keeps one 32-byte "ballast" block alive in its
// arena while it runs.
//
// Every case runs `repetitions` times (or as --benchmark_repetitions says);
// the ratios printed at the end, on stderr, compare the fastest repetition
// (CPU time, robust on a shared machine) of each case, all measured in this
// run. Stdout carries Google Benchmark's report alone, in the format its
// --benchmark_format flag asks for.
//   build-*/bench/bench_jemalloc            (add --benchmark_filter=... etc.)
#include <jemalloc/jemalloc.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory_resource>
#include <string>
#include <string_view>
#include <vector>

#include "arenastat/jemalloc_resource.hpp"
#include "arenastat/tracking_resource.hpp"
#include "observing_reporter.hpp"

namespace {

constexpr std::size_t block = 32;
constexpr int default_repetitions = 7;
constexpr std::size_t batch = 64;

// The resources live for the whole run (their caches stay warm between runs).
arenastat::jemalloc_resource& cached() {
  static arenastat::jemalloc_resource r;
  return r;
}
arenastat::jemalloc_resource& uncached() {
  static arenastat::jemalloc_resource r{{.thread_cache = false}};
  return r;
}
arenastat::tracking_resource& tracked() {
  static arenastat::tracking_resource r{"bench/jemalloc_tracked", &cached()};
  return r;
}

// ---- allocate+free pairs --------------------------------------------------

void pair_mallocx(benchmark::State& state) {
  for (auto _ : state) {
    void* p = mallocx(block, 0);
    benchmark::DoNotOptimize(p);
    sdallocx(p, block, 0);
  }
}

void pair_mallocx_tcache_none(benchmark::State& state) {
  const int flags = MALLOCX_ARENA(uncached().arena_index()) | MALLOCX_TCACHE_NONE;
  void* ballast = mallocx(block, flags);
  for (auto _ : state) {
    void* p = mallocx(block, flags);
    benchmark::DoNotOptimize(p);
    sdallocx(p, block, flags);
  }
  sdallocx(ballast, block, flags);
}

// What jemalloc itself costs with the resource's flags, minus the resource:
// an explicit cache and arena passed straight to mallocx.
void pair_mallocx_explicit_tcache(benchmark::State& state) {
  unsigned tc = 0;
  std::size_t size = sizeof tc;
  if (mallctl("tcache.create", &tc, &size, nullptr, 0) != 0) {
    state.SkipWithError("mallctl(\"tcache.create\") failed");
    return;
  }
  const int flags = MALLOCX_ARENA(cached().arena_index()) | MALLOCX_TCACHE(tc);
  for (auto _ : state) {
    void* p = mallocx(block, flags);
    benchmark::DoNotOptimize(p);
    sdallocx(p, block, flags);
  }
  mallctl("tcache.destroy", nullptr, nullptr, &tc, sizeof tc);
}

void pair_resource(benchmark::State& state, std::pmr::memory_resource* r) {
  void* ballast = r->allocate(block);
  for (auto _ : state) {
    void* p = r->allocate(block);
    benchmark::DoNotOptimize(p);
    r->deallocate(p, block);
  }
  r->deallocate(ballast, block);
}

// ---- batches: 64 allocations, then 64 frees --------------------------------

void batch_mallocx(benchmark::State& state) {
  std::array<void*, batch> ps{};
  for (auto _ : state) {
    for (auto& p : ps) p = mallocx(block, 0);
    benchmark::DoNotOptimize(ps.data());
    for (void* p : ps) sdallocx(p, block, 0);
  }
  state.SetItemsProcessed(state.iterations() * batch);
}

void batch_resource(benchmark::State& state, std::pmr::memory_resource* r) {
  void* ballast = r->allocate(block);
  std::array<void*, batch> ps{};
  for (auto _ : state) {
    for (auto& p : ps) p = r->allocate(block);
    benchmark::DoNotOptimize(ps.data());
    for (void* p : ps) r->deallocate(p, block);
  }
  r->deallocate(ballast, block);
  state.SetItemsProcessed(state.iterations() * batch);
}

// Keeps the fastest non-aggregate repetition of every case.
class min_reporter : public arenastat_bench::observing_reporter {
 public:
  void observe(std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.error_occurred) continue;
      std::string name = r.run_name.function_name;
      double& best = best_.try_emplace(name, std::numeric_limits<double>::infinity()).first->second;
      best = std::min(best, r.GetAdjustedCPUTime());
    }
  }
  double best(const std::string& name) const {
    auto it = best_.find(name);
    return it == best_.end() ? 0.0 : it->second;
  }

 private:
  std::map<std::string, double> best_;
};

void print_ratio(const min_reporter& rep, const char* label, const std::string& a, const std::string& b) {
  const double ta = rep.best(a);
  const double tb = rep.best(b);
  if (ta <= 0.0 || tb <= 0.0) {
    std::fprintf(stderr, "%-62s  (not run: filtered out)\n", label);
    return;
  }
  std::fprintf(stderr, "%-62s %6.2fx  (%.2f ns vs %.2f ns)\n", label, ta / tb, ta, tb);
}

// The value of --benchmark_repetitions=N if given (it then decides), else 0.
int repetitions_flag(int argc, char** argv) {
  constexpr std::string_view flag = "--benchmark_repetitions=";
  int n = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.substr(0, flag.size()) == flag) n = std::atoi(arg.data() + flag.size());
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  const int repetitions_given = repetitions_flag(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const int repetitions = repetitions_given > 0 ? repetitions_given : default_repetitions;

  benchmark::RegisterBenchmark("pair/mallocx", pair_mallocx)->Repetitions(repetitions);
  benchmark::RegisterBenchmark("pair/jemalloc_resource", pair_resource, &cached())->Repetitions(repetitions);
  benchmark::RegisterBenchmark("pair/mallocx_arena_explicit_tcache", pair_mallocx_explicit_tcache)
      ->Repetitions(repetitions);
  benchmark::RegisterBenchmark("pair/mallocx_arena_tcache_none", pair_mallocx_tcache_none)
      ->Repetitions(repetitions);
  benchmark::RegisterBenchmark("pair/jemalloc_resource_no_cache", pair_resource, &uncached())
      ->Repetitions(repetitions);
  benchmark::RegisterBenchmark("pair/tracking_over_jemalloc_resource", pair_resource, &tracked())
      ->Repetitions(repetitions);
  benchmark::RegisterBenchmark("batch64/mallocx", batch_mallocx)->Repetitions(repetitions);
  benchmark::RegisterBenchmark("batch64/jemalloc_resource", batch_resource, &cached())->Repetitions(repetitions);
  benchmark::RegisterBenchmark("batch64/jemalloc_resource_no_cache", batch_resource, &uncached())
      ->Repetitions(repetitions);

  min_reporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  std::fprintf(stderr, "\nRatios (CPU time, fastest of %d repetitions each, same run, 32-byte blocks):\n", repetitions);
  print_ratio(reporter, "pair: jemalloc_resource / mallocx", "pair/jemalloc_resource", "pair/mallocx");
  print_ratio(reporter, "pair: mallocx(ARENA|TCACHE(explicit)) / mallocx", "pair/mallocx_arena_explicit_tcache",
              "pair/mallocx");
  print_ratio(reporter, "pair: jemalloc_resource / mallocx(ARENA|TCACHE(explicit))", "pair/jemalloc_resource",
              "pair/mallocx_arena_explicit_tcache");
  print_ratio(reporter, "pair: mallocx(ARENA|TCACHE_NONE) / mallocx", "pair/mallocx_arena_tcache_none",
              "pair/mallocx");
  print_ratio(reporter, "pair: jemalloc_resource(no cache) / mallocx", "pair/jemalloc_resource_no_cache",
              "pair/mallocx");
  print_ratio(reporter, "pair: tracking_resource over jemalloc_resource / mallocx",
              "pair/tracking_over_jemalloc_resource", "pair/mallocx");
  print_ratio(reporter, "batch64: jemalloc_resource / mallocx", "batch64/jemalloc_resource", "batch64/mallocx");
  print_ratio(reporter, "batch64: jemalloc_resource(no cache) / mallocx", "batch64/jemalloc_resource_no_cache",
              "batch64/mallocx");
  return 0;
}
