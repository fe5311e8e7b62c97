// bench_alloc: allocator micro-benchmarks and the core issue's performance
// goals, measured and checked in one run.
//
//   bench_alloc [google benchmark flags]
//
// Every resource is called through a std::pmr::memory_resource* the compiler
// cannot see through (benchmark::DoNotOptimize on the pointer), as a user's
// container would call it; the inline bump pointer is the floor. Bump-style
// resources allocate batches of `batch` requests and are then released, so
// memory stays bounded; the time per request includes that amortised release
// and the chunk refills. After the benchmarks, the goal ratios are printed:
//
//   ratio arena/std_monotonic 32B = 0.93 (goal <= 1.00) PASS
//
// Ratios compare CPU time per request (see collecting_reporter::per_item_ns);
// with --benchmark_repetitions the medians are compared. The jemalloc pair
// (jemalloc_resource vs mallocx/sdallocx) lives in bench_jemalloc: linking
// jemalloc here would replace malloc under every other contender.
#include <benchmark/benchmark.h>

#include <boost/container/pmr/monotonic_buffer_resource.hpp>
#include <boost/container/pmr/memory_resource.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory_resource>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "arenastat/arena_resource.hpp"
#include "arenastat/bench/memory_manager.hpp"
#include "arenastat/histogram.hpp"
#include "arenastat/scope.hpp"
#include "arenastat/tracking_resource.hpp"

namespace {

constexpr std::size_t batch = 4096;  // requests between releases of a bump resource

// Mixed request sizes: a fixed pseudo-random draw, the same for every contender.
const std::array<std::size_t, batch>& mixed_sizes() {
  static const auto sizes = [] {
    std::array<std::size_t, batch> s{};
    constexpr std::size_t choices[] = {8, 16, 24, 32, 48, 64, 96, 128, 256, 512};
    std::mt19937 gen(1802);
    std::uniform_int_distribution<std::size_t> pick(0, std::size(choices) - 1);
    for (auto& v : s) v = choices[pick(gen)];
    return s;
  }();
  return sizes;
}

std::size_t mixed_total() {
  std::size_t t = 0;
  for (auto v : mixed_sizes()) t += v;
  return t;
}

// The floor: a pointer bump over a buffer, inline, with the arena's alignment step.
class bump_pointer {
 public:
  explicit bump_pointer(std::size_t bytes) : buffer_(bytes), cur_(buffer_.data()) {}
  void* allocate(std::size_t bytes, std::size_t alignment) noexcept {
    const auto cur = reinterpret_cast<std::uintptr_t>(cur_);
    const std::uintptr_t p = (cur + alignment - 1) & ~(std::uintptr_t{alignment} - 1);
    cur_ = reinterpret_cast<char*>(p + bytes);
    return reinterpret_cast<void*>(p);
  }
  void release() noexcept { cur_ = buffer_.data(); }

 private:
  std::vector<char> buffer_;
  char* cur_;
};

// A batch of allocations through `mr`, then release().
template <class Resource, class MR, class Sizes>
void run_batches(benchmark::State& state, Resource& resource, MR* mr, const Sizes& sizes) {
  benchmark::DoNotOptimize(mr);  // no devirtualisation: a real virtual call per request
  for (auto _ : state) {
    for (std::size_t i = 0; i < batch; ++i) benchmark::DoNotOptimize(mr->allocate(sizes(i), 8));
    resource.release();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(batch));
}

// Names of the benchmarks whose iteration is a batch of `batch` requests.
const std::set<std::string>& batched_names() {
  static const std::set<std::string> names = {
      "arena/32B",   "std_monotonic/32B",   "boost_monotonic/32B",   "bump/32B",
      "arena/mixed", "std_monotonic/mixed", "boost_monotonic/mixed", "bump/mixed",
      "histogram/record"};
  return names;
}

struct size32 {
  std::size_t operator()(std::size_t) const noexcept { return 32; }
};
struct size_mixed {
  const std::array<std::size_t, batch>* s = &mixed_sizes();
  std::size_t operator()(std::size_t i) const noexcept { return (*s)[i]; }
};

template <class Sizes>
void BM_arena(benchmark::State& state) {
  arenastat::arena_resource arena("bench", std::pmr::new_delete_resource());
  run_batches(state, arena, static_cast<std::pmr::memory_resource*>(&arena), Sizes{});
}

template <class Sizes>
void BM_std_monotonic(benchmark::State& state) {
  std::pmr::monotonic_buffer_resource mono(std::pmr::new_delete_resource());
  run_batches(state, mono, static_cast<std::pmr::memory_resource*>(&mono), Sizes{});
}

template <class Sizes>
void BM_boost_monotonic(benchmark::State& state) {
  boost::container::pmr::monotonic_buffer_resource mono;
  run_batches(state, mono, static_cast<boost::container::pmr::memory_resource*>(&mono), Sizes{});
}

template <class Sizes>
void BM_bump(benchmark::State& state) {
  bump_pointer bump(batch * 512 + 64);
  const Sizes sizes{};
  for (auto _ : state) {
    for (std::size_t i = 0; i < batch; ++i) benchmark::DoNotOptimize(bump.allocate(sizes(i), 8));
    bump.release();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(batch));
}

// allocate + deallocate pairs of 32 bytes through `mr`.
void run_pairs(benchmark::State& state, std::pmr::memory_resource* mr) {
  benchmark::DoNotOptimize(mr);
  for (auto _ : state) {
    void* p = mr->allocate(32, 8);
    benchmark::DoNotOptimize(p);
    mr->deallocate(p, 32, 8);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_new_delete_pair(benchmark::State& state) { run_pairs(state, std::pmr::new_delete_resource()); }

void BM_tracking_pair(benchmark::State& state) {
  // One resource (one account) shared by every thread of the benchmark.
  static arenastat::tracking_resource tracking("bench/tracking", std::pmr::new_delete_resource());
  run_pairs(state, &tracking);
}

void BM_pool_on_new_delete(benchmark::State& state) {
  std::pmr::unsynchronized_pool_resource pool(std::pmr::new_delete_resource());
  run_pairs(state, &pool);
}

void BM_pool_on_tracking(benchmark::State& state) {
  arenastat::tracking_resource tracking("bench/pool_upstream", std::pmr::new_delete_resource());
  std::pmr::unsynchronized_pool_resource pool(&tracking);
  run_pairs(state, &pool);
}

// Scope enter + exit, including the fold into the global table.
void BM_scope_enter_exit(benchmark::State& state) {
  for (auto _ : state) {
    arenastat::scope s{"bench/scope"};
    benchmark::DoNotOptimize(&s);
  }
}

// The same with one arena chunk taken and given back inside the scope.
void BM_scope_with_arena(benchmark::State& state) {
  for (auto _ : state) {
    arenastat::scope s{"bench/scope_arena"};
    arenastat::arena_resource arena("bench");
    benchmark::DoNotOptimize(arena.allocate(32, 8));
  }
}

void BM_histogram_record(benchmark::State& state) {
  arenastat::histogram h;
  std::vector<std::uint64_t> values(batch);
  std::mt19937_64 gen(7);
  std::lognormal_distribution<double> latency(10.0, 1.5);  // ~ 22 us median, long tail
  for (auto& v : values) v = static_cast<std::uint64_t>(latency(gen));
  for (auto _ : state) {
    for (std::uint64_t v : values) h.record(v);
    benchmark::DoNotOptimize(h);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(batch));
}

}  // namespace

BENCHMARK_TEMPLATE(BM_arena, size32)->Name("arena/32B");
BENCHMARK_TEMPLATE(BM_std_monotonic, size32)->Name("std_monotonic/32B");
BENCHMARK_TEMPLATE(BM_boost_monotonic, size32)->Name("boost_monotonic/32B");
BENCHMARK_TEMPLATE(BM_bump, size32)->Name("bump/32B");
BENCHMARK_TEMPLATE(BM_arena, size_mixed)->Name("arena/mixed");
BENCHMARK_TEMPLATE(BM_std_monotonic, size_mixed)->Name("std_monotonic/mixed");
BENCHMARK_TEMPLATE(BM_boost_monotonic, size_mixed)->Name("boost_monotonic/mixed");
BENCHMARK_TEMPLATE(BM_bump, size_mixed)->Name("bump/mixed");
BENCHMARK(BM_new_delete_pair)->Name("new_delete/pair")->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_tracking_pair)->Name("tracking/pair")->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_pool_on_new_delete)->Name("pool_on_new_delete/pair");
BENCHMARK(BM_pool_on_tracking)->Name("pool_on_tracking/pair");
BENCHMARK(BM_scope_enter_exit)->Name("scope/enter_exit");
BENCHMARK(BM_scope_with_arena)->Name("scope/enter_arena_exit");
BENCHMARK(BM_histogram_record)->Name("histogram/record");

namespace {

// Console output plus: memory figures as counters beside the time, and the
// nanoseconds per request of every run kept for the ratios.
class collecting_reporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<Run> shown = runs;
    for (Run& run : shown) {
      if (run.memory_result != nullptr && run.run_type == Run::RT_Iteration) {
        run.counters["allocs/it"] = benchmark::Counter(run.allocs_per_iter);
        run.counters["peak_B"] =
            benchmark::Counter(static_cast<double>(run.memory_result->max_bytes_used));
      }
      record(run);
    }
    ConsoleReporter::ReportRuns(shown);
  }

  // ns per request: median aggregate if repetitions ran, else the mean of the runs.
  std::optional<double> ns_per_item(const std::string& name) const {
    if (auto m = medians_.find(name); m != medians_.end()) return m->second;
    auto s = sums_.find(name);
    if (s == sums_.end()) return std::nullopt;
    return s->second.first / s->second.second;
  }

 private:
  void record(const Run& run) {
    if (run.error_occurred) return;
    const std::string name = run.run_name.str();
    const double ns = per_item_ns(run);
    if (run.run_type == Run::RT_Aggregate) {
      if (run.aggregate_name == "median") medians_[name] = ns;
      return;
    }
    auto& [sum, n] = sums_[name];
    sum += ns;
    n += 1;
  }

  static double per_item_ns(const Run& run) {
    // CPU time per iteration (summed over threads, divided by the iterations
    // of all threads): the cost of one request, robust against other processes
    // taking the cores. A batched benchmark's iteration makes `batch` requests.
    double ns = run.GetAdjustedCPUTime() * 1e9 / benchmark::GetTimeUnitMultiplier(run.time_unit);
    if (batched_names().count(run.run_name.function_name) != 0) ns /= static_cast<double>(batch);
    return ns;
  }

  std::map<std::string, double> medians_;
  std::map<std::string, std::pair<double, int>> sums_;
};

int print_goal(const collecting_reporter& r, const char* label, const std::string& numerator,
               const std::string& denominator, double goal) {
  const auto a = r.ns_per_item(numerator);
  const auto b = r.ns_per_item(denominator);
  if (!a || !b || *b <= 0) {
    std::printf("ratio %s = n/a (goal <= %.2f) NOT MEASURED (%s or %s filtered out)\n", label, goal,
                numerator.c_str(), denominator.c_str());
    return 0;
  }
  const double ratio = *a / *b;
  std::printf("ratio %s = %.2f (goal <= %.2f) %s   [%.2f ns / %.2f ns]\n", label, ratio, goal,
              ratio <= goal ? "PASS" : "FAIL", *a, *b);
  return ratio <= goal ? 0 : 1;
}

void print_info(const collecting_reporter& r, const char* label, const std::string& numerator,
                const std::string& denominator) {
  const auto a = r.ns_per_item(numerator);
  const auto b = r.ns_per_item(denominator);
  if (a && b && *b > 0)
    std::printf("ratio %s = %.2f (no goal)   [%.2f ns / %.2f ns]\n", label, *a / *b, *a, *b);
}

}  // namespace

int main(int argc, char** argv) {
  arenastat::bench::memory_manager memory("bench_alloc/memory_run");
  benchmark::RegisterMemoryManager(&memory);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  collecting_reporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::RegisterMemoryManager(nullptr);

  std::printf("\n# goals (issue 2), ns per request, measured in this run\n");
  int failed = 0;
  failed += print_goal(reporter, "arena/std_monotonic 32B", "arena/32B", "std_monotonic/32B", 1.0);
  failed += print_goal(reporter, "arena/bump 32B", "arena/32B", "bump/32B", 2.0);
  failed += print_goal(reporter, "tracking/new_delete 1 thread", "tracking/pair/real_time/threads:1",
                       "new_delete/pair/real_time/threads:1", 1.15);
  failed += print_goal(reporter, "tracking/new_delete 2 threads", "tracking/pair/real_time/threads:2",
                       "new_delete/pair/real_time/threads:2", 1.3);
  if (const auto s = reporter.ns_per_item("scope/enter_exit")) {
    const bool ok = *s < 1000.0;
    std::printf("scope enter+exit = %.1f ns (goal < 1000 ns) %s\n", *s, ok ? "PASS" : "FAIL");
    failed += ok ? 0 : 1;
  } else {
    std::printf("scope enter+exit = n/a (goal < 1000 ns) NOT MEASURED\n");
  }
  print_info(reporter, "arena/std_monotonic mixed", "arena/mixed", "std_monotonic/mixed");
  print_info(reporter, "arena/bump mixed", "arena/mixed", "bump/mixed");
  print_info(reporter, "boost_monotonic/std_monotonic 32B", "boost_monotonic/32B", "std_monotonic/32B");
  print_info(reporter, "pool_on_tracking/pool_on_new_delete", "pool_on_tracking/pair",
             "pool_on_new_delete/pair");
  std::printf("goals failed: %d (mixed-size requests average %.1f B)\n", failed,
              static_cast<double>(mixed_total()) / batch);
  return 0;
}
