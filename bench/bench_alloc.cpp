// bench_alloc: allocator micro-benchmarks and the allocation core's performance
// goals, measured and checked in one run.
//
//   bench_alloc [google benchmark flags]
//
// Every resource is called through a std::pmr::memory_resource* the compiler
// cannot see through (an empty asm on the pointer), as a user's
// container would call it; the inline bump pointer is the floor. Bump-style
// resources allocate batches of `batch` requests and are then released, so
// memory stays bounded; the time per request includes that amortised release
// and the chunk refills. After the benchmarks, the goal ratios are printed on
// stderr (stdout carries Google Benchmark's report alone, in the format its
// --benchmark_format flag asks for):
//
//   ratio arena/std_monotonic 32B = 0.93 (goal <= 1.00) PASS
//
// glibc's mmap and trim thresholds are pinned at 64 MiB (mallopt) before the run: with
// the default, dynamic threshold an arena that cycles a 128 KiB chunk (the
// 6th chunk of the default growth policy) gets it from mmap and gives it back
// with munmap on every release(), and whether that happens depends on what
// ran before in the process (docs/benchmarks.md, Method, has the measured difference).
// --glibc_default_mmap=1 keeps glibc's defaults to see that effect.
//
// Own flags (before Google Benchmark's): --tsv=FILE writes one row per
// benchmark (name, ns per request, allocations per iteration and peak bytes
// from the memory manager); --pauses=FILE runs a pause_meter (1 ms) during
// the benchmarks and writes its percentile distribution in microseconds.
//
// Ratios compare CPU time per request (see collecting_reporter::per_item_ns);
// with --benchmark_repetitions the medians are compared. The jemalloc pair
// (jemalloc_resource vs mallocx/sdallocx) lives in bench_jemalloc: linking
// jemalloc here would replace malloc under every other contender.
#include <benchmark/benchmark.h>

#include <boost/container/pmr/monotonic_buffer_resource.hpp>
#include <boost/container/pmr/memory_resource.hpp>
#include <malloc.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <memory_resource>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "arenastat/arena_resource.hpp"
#include "arenastat/bench/memory_manager.hpp"
#include "arenastat/detail/short_mutex.hpp"
#include "arenastat/histogram.hpp"
#include "arenastat/pause_meter.hpp"
#include "arenastat/scope.hpp"
#include "arenastat/tracking_resource.hpp"
#include "host_rate.hpp"
#include "observing_reporter.hpp"

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

// Hides where `p` points from the optimiser (no devirtualisation). Not
// benchmark::DoNotOptimize(T&) (a "+m,r" constraint): with GCC 12 and
// -fsanitize=address,undefined the pointer used after it was garbage (UBSan:
// member call on a misaligned address); a register constraint is enough.
template <class T>
void opaque(T*& p) {
  asm volatile("" : "+r"(p));
}

// The loops every contender runs, one function each, out of line and opaque
// to interprocedural analysis (noipa: no clone specialised for one caller):
// the separate benchmarks and the alternating blocks below run the same
// machine code. Before, each caller inlined its own copy, and the inlined
// arena loop (its cursor stored and reloaded around DoNotOptimize) ran at
// 0.76-0.88 ns in one copy and 1.29-1.78 ns in another of the same build
// (AMD EPYC): where a loop lands decides whether the CPU forwards the
// cursor's store to its reload.
//
// A batch of allocations through `mr`, then release().
template <class Resource, class MR, class Sizes>
[[gnu::noipa]] void resource_batch(Resource& resource, MR* mr, const Sizes& sizes) {
  opaque(mr);  // no devirtualisation: a real virtual call per request
  for (std::size_t i = 0; i < batch; ++i) benchmark::DoNotOptimize(mr->allocate(sizes(i), 8));
  resource.release();
}

template <class Resource, class MR, class Sizes>
void run_batches(benchmark::State& state, Resource& resource, MR* mr, const Sizes& sizes) {
  for (auto _ : state) resource_batch(resource, mr, sizes);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(batch));
}

// Names of the benchmarks whose iteration is a batch of `batch` requests.
const std::set<std::string>& batched_names() {
  static const std::set<std::string> names = {
      "arena/32B",   "std_monotonic/32B",   "boost_monotonic/32B",   "bump/32B",
      "arena_direct/32B", "virtual_floor/32B",
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

// The arena called through its own final type: the compiler inlines the
// bump fast path (no virtual call): what the arena's own code costs, with
// its goal against the inline bump pointer; through memory_resource* the
// goal is against virtual_floor, the virtual call every resource pays.
template <class Sizes>
[[gnu::noipa]] void arena_direct_batch(arenastat::arena_resource& arena, const Sizes& sizes) {
  for (std::size_t i = 0; i < batch; ++i) benchmark::DoNotOptimize(arena.allocate(sizes(i), 8));
  arena.release();
}

template <class Sizes>
void BM_arena_direct(benchmark::State& state) {
  arenastat::arena_resource arena("bench", std::pmr::new_delete_resource());
  const Sizes sizes{};
  for (auto _ : state) arena_direct_batch(arena, sizes);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(batch));
}

// The floor of any memory_resource called through memory_resource*: a
// do_allocate that does nothing but return a pointer. No resource can be
// cheaper per request than this virtual call.
class virtual_call_floor final : public std::pmr::memory_resource {
 public:
  void release() noexcept {}

 private:
  void* do_allocate(std::size_t, std::size_t) override { return buffer_; }
  void do_deallocate(void*, std::size_t, std::size_t) override {}
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }
  alignas(std::max_align_t) char buffer_[512];
};

template <class Sizes>
void BM_virtual_floor(benchmark::State& state) {
  virtual_call_floor floor;
  run_batches(state, floor, static_cast<std::pmr::memory_resource*>(&floor), Sizes{});
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
[[gnu::noipa]] void bump_batch(bump_pointer& bump, const Sizes& sizes) {
  for (std::size_t i = 0; i < batch; ++i) benchmark::DoNotOptimize(bump.allocate(sizes(i), 8));
  bump.release();
}

template <class Sizes>
void BM_bump(benchmark::State& state) {
  bump_pointer bump(batch * 512 + 64);
  const Sizes sizes{};
  for (auto _ : state) bump_batch(bump, sizes);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(batch));
}

// `n` allocate + deallocate pairs of 32 bytes through `mr`.
[[gnu::noipa]] void pairs(std::pmr::memory_resource* mr, std::size_t n) {
  opaque(mr);
  for (std::size_t i = 0; i < n; ++i) {
    void* p = mr->allocate(32, 8);
    benchmark::DoNotOptimize(p);
    mr->deallocate(p, 32, 8);
  }
}

void run_pairs(benchmark::State& state, std::pmr::memory_resource* mr) {
  for (auto _ : state) pairs(mr, 1);
  state.SetItemsProcessed(state.iterations());
}

void BM_new_delete_pair(benchmark::State& state) { run_pairs(state, std::pmr::new_delete_resource()); }

// The floor of any wrapping resource: forwards to upstream and counts nothing.
class forwarding_resource final : public std::pmr::memory_resource {
 public:
  explicit forwarding_resource(std::pmr::memory_resource* upstream) : upstream_(upstream) {}

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    return upstream_->allocate(bytes, alignment);
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    upstream_->deallocate(p, bytes, alignment);
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }
  std::pmr::memory_resource* upstream_;
};

void BM_forwarding_pair(benchmark::State& state) {
  forwarding_resource forwarding(std::pmr::new_delete_resource());
  run_pairs(state, &forwarding);
}

// The floor of tracking_resource's own path to malloc over new_delete: the
// plain (unaligned) global operator new and sized delete, nothing counted.
class plain_new_resource final : public std::pmr::memory_resource {
  void* do_allocate(std::size_t bytes, std::size_t) override { return ::operator new(bytes); }
  void do_deallocate(void* p, std::size_t bytes, std::size_t) override { ::operator delete(p, bytes); }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }
};

void BM_plain_new_pair(benchmark::State& state) {
  plain_new_resource plain;
  run_pairs(state, &plain);
}

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

// ---- Alternating blocks: the goals' ratios --------------------------------
// A goal's contender (a) and its peer (b) measured in turns inside one
// benchmark: each iteration runs four blocks of the same requests in the order
// a b b a, each timed by the steady clock, so the host's speed at any moment
// weighs on both sides alike. Separately run benchmarks, seconds apart, are
// each measured in a different minute, and this project's host has minutes of
// two speeds: tracking/new_delete read 1.12 and 0.70 from separate runs of the
// same build, where these blocks read 0.97 and 1.00 (docs/concepts.md, Session 10). With two threads a barrier between
// blocks (outside the timed part) keeps both threads on the same side, so a
// contender shared by the threads meets itself on the other core, as in its
// own run. The clock reads (two per block of 8,192 to 16,384 requests) add
// under 0.5% to either side. Counters: a_ns and b_ns per request, ratio a/b
// (per thread, averaged over the threads).
arenastat::bench::memory_manager* the_memory_manager = nullptr;  // set by main

// Two threads meet here between blocks. It spins (std::barrier sleeps in a
// futex, and a vCPU that halted came back to colder caches: both sides of
// tracking/new_delete at two threads read about 40% slower than in their own
// runs with it).
class spin_barrier_of_two {
 public:
  void arrive_and_wait() noexcept {
    const unsigned generation = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) == 1) {
      arrived_.store(0, std::memory_order_relaxed);  // before the release below: no early re-arrival
      generation_.store(generation + 1, std::memory_order_release);
      return;
    }
    while (generation_.load(std::memory_order_acquire) == generation) {
#if defined(__x86_64__)
      _mm_pause();
#endif
    }
  }

 private:
  std::atomic<unsigned> arrived_{0};
  std::atomic<unsigned> generation_{0};
};

template <class A, class B>
void run_alternating(benchmark::State& state, std::int64_t requests_per_block, A&& a, B&& b) {
  static spin_barrier_of_two pair_of_threads;
  if (state.threads() > 2) {
    state.SkipWithError("run_alternating: at most 2 threads");
    return;
  }
  // Google Benchmark's memory run is one thread whatever threads() says.
  const bool sync = state.threads() == 2 && !(the_memory_manager && the_memory_manager->window_open());
  std::int64_t a_ns = 0, b_ns = 0, blocks = 0;
  auto timed = [&](auto& block) {
    if (sync) pair_of_threads.arrive_and_wait();
    const auto t0 = std::chrono::steady_clock::now();
    block();
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
  };
  for (auto _ : state) {
    a_ns += timed(a);
    b_ns += timed(b);
    b_ns += timed(b);
    a_ns += timed(a);
    blocks += 2;
  }
  if (blocks == 0 || b_ns <= 0) return;
  const double requests = static_cast<double>(blocks * requests_per_block);
  state.counters["a_ns"] = benchmark::Counter(static_cast<double>(a_ns) / requests, benchmark::Counter::kAvgThreads);
  state.counters["b_ns"] = benchmark::Counter(static_cast<double>(b_ns) / requests, benchmark::Counter::kAvgThreads);
  state.counters["ratio"] =
      benchmark::Counter(static_cast<double>(a_ns) / static_cast<double>(b_ns), benchmark::Counter::kAvgThreads);
  state.SetItemsProcessed(2 * blocks * requests_per_block);
}

constexpr std::size_t batches_per_block = 4;
constexpr std::size_t pairs_per_block = 8192;

// Blocks of `batches_per_block` batches of 32-byte requests, or of
// `pairs_per_block` pairs, through the loops the separate benchmarks run.
template <class Batch>
auto batches(Batch batch_once) {
  return [batch_once] {
    for (std::size_t k = 0; k < batches_per_block; ++k) batch_once();
  };
}

auto pair_block(std::pmr::memory_resource* mr) {
  return [mr] { pairs(mr, pairs_per_block); };
}

// The arena through memory_resource* against a peer resource, in turns.
template <class Peer, class... Args>
void alternate_arena_with(benchmark::State& state, Args... peer_args) {
  arenastat::arena_resource arena("bench", std::pmr::new_delete_resource());
  Peer peer(peer_args...);
  auto* arena_mr = static_cast<std::pmr::memory_resource*>(&arena);
  auto* peer_mr = static_cast<std::pmr::memory_resource*>(&peer);
  run_alternating(state, batches_per_block * batch, batches([&] { resource_batch(arena, arena_mr, size32{}); }),
                  batches([&] { resource_batch(peer, peer_mr, size32{}); }));
}

void BM_alt_arena_std_monotonic(benchmark::State& state) {
  alternate_arena_with<std::pmr::monotonic_buffer_resource>(state, std::pmr::new_delete_resource());
}

void BM_alt_arena_virtual_floor(benchmark::State& state) { alternate_arena_with<virtual_call_floor>(state); }

void BM_alt_arena_direct_bump(benchmark::State& state) {
  arenastat::arena_resource arena("bench", std::pmr::new_delete_resource());
  bump_pointer bump(batch * 512 + 64);
  run_alternating(state, batches_per_block * batch, batches([&] { arena_direct_batch(arena, size32{}); }),
                  batches([&] { bump_batch(bump, size32{}); }));
}

void BM_alt_tracking_new_delete(benchmark::State& state) {
  // As BM_tracking_pair: one resource (one account) shared by the threads.
  static arenastat::tracking_resource tracking("bench/tracking_alt", std::pmr::new_delete_resource());
  run_alternating(state, pairs_per_block, pair_block(&tracking), pair_block(std::pmr::new_delete_resource()));
}

// Scope enter + exit, including the fold into the global table.
void BM_scope_enter_exit(benchmark::State& state) {
  for (auto _ : state) {
    arenastat::scope s{"bench/scope"};
    benchmark::DoNotOptimize(&s);
  }
}

// What a timed scope folded into a locked table cannot avoid, measured here
// as its floor: two reads of the clock scopes use (the time-stamp counter on
// x86-64 once calibrated, scope.cpp; steady_clock elsewhere) and an
// uncontended lock and unlock of the table's lock type, nothing else.
void BM_scope_floor(benchmark::State& state) {
  static arenastat::detail::short_mutex mutex;  // the table's lock (table.cpp)
  for (auto _ : state) {
#if defined(__x86_64__)
    benchmark::DoNotOptimize(__rdtsc());
#else
    benchmark::DoNotOptimize(std::chrono::steady_clock::now());
#endif
    mutex.lock();
    benchmark::ClobberMemory();
    mutex.unlock();
#if defined(__x86_64__)
    benchmark::DoNotOptimize(__rdtsc());
#else
    benchmark::DoNotOptimize(std::chrono::steady_clock::now());
#endif
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
BENCHMARK_TEMPLATE(BM_arena_direct, size32)->Name("arena_direct/32B");
BENCHMARK_TEMPLATE(BM_virtual_floor, size32)->Name("virtual_floor/32B");
BENCHMARK_TEMPLATE(BM_arena, size_mixed)->Name("arena/mixed");
BENCHMARK_TEMPLATE(BM_std_monotonic, size_mixed)->Name("std_monotonic/mixed");
BENCHMARK_TEMPLATE(BM_boost_monotonic, size_mixed)->Name("boost_monotonic/mixed");
BENCHMARK_TEMPLATE(BM_bump, size_mixed)->Name("bump/mixed");
BENCHMARK(BM_new_delete_pair)->Name("new_delete/pair")->Threads(1)->Threads(2);
BENCHMARK(BM_tracking_pair)->Name("tracking/pair")->Threads(1)->Threads(2);
BENCHMARK(BM_forwarding_pair)->Name("forwarding/pair");
BENCHMARK(BM_plain_new_pair)->Name("plain_new/pair");
BENCHMARK(BM_pool_on_new_delete)->Name("pool_on_new_delete/pair");
BENCHMARK(BM_pool_on_tracking)->Name("pool_on_tracking/pair");
BENCHMARK(BM_alt_arena_std_monotonic)->Name("alt/arena~std_monotonic/32B");
BENCHMARK(BM_alt_arena_direct_bump)->Name("alt/arena_direct~bump/32B");
BENCHMARK(BM_alt_arena_virtual_floor)->Name("alt/arena~virtual_floor/32B");
BENCHMARK(BM_alt_tracking_new_delete)->Name("alt/tracking~new_delete/pair")->Threads(1)->Threads(2);
BENCHMARK(BM_scope_enter_exit)->Name("scope/enter_exit");
BENCHMARK(BM_scope_with_arena)->Name("scope/enter_arena_exit");
BENCHMARK(BM_scope_floor)->Name("scope/floor");
BENCHMARK(BM_histogram_record)->Name("histogram/record");

namespace {

// Google Benchmark's own display (console, JSON or CSV, as its flags say)
// plus: memory figures as counters beside the time, and the nanoseconds per
// request of every run kept for the ratios.
class collecting_reporter : public arenastat_bench::observing_reporter {
 public:
  void observe(std::vector<Run>& runs) override {
    for (Run& run : runs) {
      if (run.memory_result != nullptr && run.run_type == Run::RT_Iteration) {
        run.counters["allocs/it"] = benchmark::Counter(run.allocs_per_iter);
        run.counters["peak_B"] =
            benchmark::Counter(static_cast<double>(run.memory_result->max_bytes_used));
      }
      record(run);
    }
  }

  struct memory_row {
    double allocs_per_iter = 0;
    std::int64_t peak_bytes = 0;
  };
  const std::map<std::string, memory_row>& memory() const { return memory_; }
  // Every benchmark name seen, in report order.
  const std::vector<std::string>& names() const { return names_; }

  // A counter of an alternating benchmark (run_alternating): the median
  // aggregate's if repetitions ran, else the mean over the runs.
  std::optional<double> counter(const std::string& name, const std::string& counter) const {
    if (auto m = median_counters_.find(name); m != median_counters_.end()) {
      if (auto c = m->second.find(counter); c != m->second.end()) return c->second;
      return std::nullopt;
    }
    auto s = counter_sums_.find(name);
    if (s == counter_sums_.end()) return std::nullopt;
    auto c = s->second.find(counter);
    if (c == s->second.end()) return std::nullopt;
    return c->second.first / c->second.second;
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
    // With --benchmark_display_aggregates_only only the aggregates arrive here.
    if (std::find(names_.begin(), names_.end(), name) == names_.end()) names_.push_back(name);
    if (run.memory_result != nullptr)
      memory_[name] = {run.allocs_per_iter, run.memory_result->max_bytes_used};
    if (run.run_type == Run::RT_Aggregate) {
      if (run.aggregate_name == "median") {
        medians_[name] = ns;
        for (const auto& [key, c] : run.counters) median_counters_[name][key] = c.value;
      }
      return;
    }
    for (const auto& [key, c] : run.counters) {
      auto& [csum, cn] = counter_sums_[name][key];
      csum += c.value;
      cn += 1;
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
  std::map<std::string, std::map<std::string, double>> median_counters_;
  std::map<std::string, std::map<std::string, std::pair<double, int>>> counter_sums_;
  std::map<std::string, std::pair<double, int>> sums_;
  std::map<std::string, memory_row> memory_;
  std::vector<std::string> names_;
};

bool write_tsv(const collecting_reporter& r, const std::string& path) {
  std::ofstream out(path);
  out << "# name\tns_per_request\tallocs_per_iter\tpeak_bytes\n";
  for (const std::string& name : r.names()) {
    if (name.rfind("alt/", 0) == 0) continue;  // alternating pairs: their counters are the goal lines
    const auto ns = r.ns_per_item(name);
    if (!ns) continue;
    const auto m = r.memory().find(name);
    out << name << '\t' << *ns << '\t' << (m == r.memory().end() ? 0.0 : m->second.allocs_per_iter)
        << '\t' << (m == r.memory().end() ? 0 : m->second.peak_bytes) << '\n';
  }
  return static_cast<bool>(out);
}

// Removes --NAME=VALUE from argv; returns VALUE (empty if absent).
std::string take_flag(int& argc, char** argv, const char* name) {
  const std::size_t len = std::strlen(name);
  std::string value;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], name, len) == 0 && argv[i][len] == '=') value = argv[i] + len + 1;
    else argv[kept++] = argv[i];
  }
  argc = kept;
  return value;
}

// A goal read from an alternating benchmark (run_alternating).
int print_alternating_goal(const collecting_reporter& r, const char* label, const std::string& name, double goal) {
  const auto ratio = r.counter(name, "ratio");
  const auto a = r.counter(name, "a_ns");
  const auto b = r.counter(name, "b_ns");
  if (!ratio || !a || !b) {
    std::fprintf(stderr, "ratio %s = n/a (goal <= %.2f) NOT MEASURED (%s filtered out)\n", label, goal,
                 name.c_str());
    return 0;
  }
  std::fprintf(stderr, "ratio %s = %.2f (goal <= %.2f) %s   [%.2f ns / %.2f ns] alternating blocks\n", label,
               *ratio, goal, *ratio <= goal ? "PASS" : "FAIL", *a, *b);
  return *ratio <= goal ? 0 : 1;
}

void print_info(const collecting_reporter& r, const char* label, const std::string& numerator,
                const std::string& denominator) {
  const auto a = r.ns_per_item(numerator);
  const auto b = r.ns_per_item(denominator);
  if (a && b && *b > 0)
    std::fprintf(stderr, "ratio %s = %.2f (no goal)   [%.2f ns / %.2f ns]\n", label, *a / *b, *a, *b);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string tsv_path = take_flag(argc, argv, "--tsv");
  const std::string pauses_path = take_flag(argc, argv, "--pauses");
  const std::string default_mmap = take_flag(argc, argv, "--glibc_default_mmap");
  if (default_mmap.empty() || default_mmap == "0") {
    mallopt(M_MMAP_THRESHOLD, 64 << 20);  // this also freezes the trim threshold,
    mallopt(M_TRIM_THRESHOLD, 64 << 20);  // so raise it too (else brk shrinks each release)
  }
  arenastat::bench::memory_manager memory("bench_alloc/memory_run");
  the_memory_manager = &memory;
  benchmark::RegisterMemoryManager(&memory);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  collecting_reporter reporter;
  const arenastat::bench::issue_rate rate_before = arenastat::bench::measure_issue_rate();
  arenastat::pause_meter pauses;
  if (!pauses_path.empty()) pauses.start();
  benchmark::RunSpecifiedBenchmarks(&reporter);
  pauses.stop();
  benchmark::RegisterMemoryManager(nullptr);
  const arenastat::bench::issue_rate rate_after = arenastat::bench::measure_issue_rate();

  if (!tsv_path.empty() && !write_tsv(reporter, tsv_path)) {
    std::fprintf(stderr, "bench_alloc: cannot write --tsv file %s\n", tsv_path.c_str());
    return 1;
  }
  if (!pauses_path.empty()) {
    std::ofstream out(pauses_path);
    out << "# pause_meter during bench_alloc, values in microseconds\n"
        << pauses.snapshot().percentile_distribution(1000.0);
    if (!out) {
      std::fprintf(stderr, "bench_alloc: cannot write --pauses file %s\n", pauses_path.c_str());
      return 1;
    }
    std::fprintf(stderr, "%s\n", pauses.summary().c_str());
  }

  std::fprintf(stderr, "\n# goals, ns per request, measured in this run\n");
  std::fputs(arenastat::bench::issue_rate_line("before the benchmarks", rate_before).c_str(), stderr);
  std::fputs(arenastat::bench::issue_rate_line("after them", rate_after).c_str(), stderr);
  int failed = 0;
  // The goals of the second round (docs/benchmarks.md): each against a peer
  // of the same run. An arena through memory_resource* is compared with the
  // virtual call it cannot avoid (virtual_floor), the inlined arena with the
  // inline bump pointer.
  // The ratios are read from the alternating benchmarks (run_alternating);
  // the same ratios from the separate benchmarks follow, without a goal.
  failed += print_alternating_goal(reporter, "arena/std_monotonic 32B", "alt/arena~std_monotonic/32B", 1.0);
  failed += print_alternating_goal(reporter, "arena_direct/bump 32B (arena_resource&, inlined)",
                                   "alt/arena_direct~bump/32B", 1.5);
  failed += print_alternating_goal(reporter, "arena/virtual_floor 32B", "alt/arena~virtual_floor/32B", 1.25);
  failed += print_alternating_goal(reporter, "tracking/new_delete 1 thread", "alt/tracking~new_delete/pair/threads:1",
                                   1.05);
  failed += print_alternating_goal(reporter, "tracking/new_delete 2 threads",
                                   "alt/tracking~new_delete/pair/threads:2", 1.05);
  if (const auto s = reporter.ns_per_item("scope/enter_exit")) {
    const bool ok = *s <= 50.0;
    std::fprintf(stderr, "scope enter+exit = %.1f ns (goal <= 50 ns) %s\n", *s, ok ? "PASS" : "FAIL");
    failed += ok ? 0 : 1;
  } else {
    std::fprintf(stderr, "scope enter+exit = n/a (goal <= 50 ns) NOT MEASURED\n");
  }
  print_info(reporter, "scope enter+exit / its floor (two clock reads, a lock and unlock)", "scope/enter_exit",
             "scope/floor");
  print_info(reporter, "separate runs: arena/std_monotonic 32B", "arena/32B", "std_monotonic/32B");
  print_info(reporter, "separate runs: arena_direct/bump 32B", "arena_direct/32B", "bump/32B");
  print_info(reporter, "separate runs: arena/virtual_floor 32B", "arena/32B", "virtual_floor/32B");
  print_info(reporter, "separate runs: tracking/new_delete 1 thread", "tracking/pair/threads:1",
             "new_delete/pair/threads:1");
  print_info(reporter, "separate runs: tracking/new_delete 2 threads", "tracking/pair/threads:2",
             "new_delete/pair/threads:2");
  print_info(reporter, "arena/bump 32B (through memory_resource*)", "arena/32B", "bump/32B");
  print_info(reporter, "virtual_floor/bump 32B (any resource through memory_resource*)", "virtual_floor/32B",
             "bump/32B");
  print_info(reporter, "arena/std_monotonic mixed", "arena/mixed", "std_monotonic/mixed");
  print_info(reporter, "arena/bump mixed", "arena/mixed", "bump/mixed");
  print_info(reporter, "boost_monotonic/std_monotonic 32B", "boost_monotonic/32B", "std_monotonic/32B");
  print_info(reporter, "forwarding/new_delete (wrapping floor)", "forwarding/pair",
             "new_delete/pair/threads:1");
  print_info(reporter, "tracking/forwarding", "tracking/pair/threads:1", "forwarding/pair");
  print_info(reporter, "plain_new/new_delete (tracking's path to malloc)", "plain_new/pair",
             "new_delete/pair/threads:1");
  print_info(reporter, "tracking/plain_new (the counting's own cost)", "tracking/pair/threads:1",
             "plain_new/pair");
  print_info(reporter, "pool_on_tracking/pool_on_new_delete", "pool_on_tracking/pair",
             "pool_on_new_delete/pair");
  std::fprintf(stderr, "goals failed: %d (mixed-size requests average %.1f B)\n", failed,
               static_cast<double>(mixed_total()) / batch);
  return 0;
}
