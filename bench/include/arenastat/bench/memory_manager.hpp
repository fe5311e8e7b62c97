// arenastat::bench::memory_manager: Google Benchmark's MemoryManager fed by
// arenastat's own bookkeeping, so every benchmark in a binary reports the
// tracked memory it used beside its time.
//
//   int main(int argc, char** argv) {
//     arenastat::bench::memory_manager mm;
//     benchmark::RegisterMemoryManager(&mm);
//     benchmark::Initialize(&argc, argv);
//     benchmark::RunSpecifiedBenchmarks();
//     benchmark::RegisterMemoryManager(nullptr);
//   }
//
// Google Benchmark 1.7 calls Start() before and Stop() after one extra run
// of each benchmark (at most 16 iterations, one thread, on the thread that
// runs the benchmarks); the JSON output then carries allocs_per_iter and
// max_bytes_used. Sources of truth, per field of MemoryManager::Result:
//
//   num_allocs             sum over every account of allocations (Stop - Start):
//                          each tracking_resource::allocate and each arena chunk
//                          charged to an account; all threads.
//   total_allocated_bytes  sum over every account of allocated bytes (Stop - Start);
//                          same events, all threads.
//   max_bytes_used         the exact peak of a scope opened by Start() and closed
//                          by Stop(): the highest net tracked bytes on the running
//                          thread above its level at Start, including arena chunks
//                          of arenas with no account.
//   net_heap_growth        that scope's net bytes at Stop (same thread and events).
//
// Only tracked memory counts: allocations through arenastat's resources (and
// whatever a custom grow hook charges). Plain new/malloc is invisible. The
// scope is folded into the global table under the name given to the
// constructor ("benchmark" by default) like any other scope.
//
// Note: Debian's libbenchmark 1.7.1 does not export
// MemoryManager::TombstoneValue, which Result's inline constructor names, so
// code that constructs a Result itself fails to link against it; this class
// only fills the Result Google Benchmark passes in.
#pragma once
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "arenastat/scope.hpp"

namespace arenastat::bench {

// The figures of one Start/Stop window (what Stop() writes into Result).
struct memory_figures {
  std::int64_t allocations = 0;      // account allocations, all threads
  std::int64_t frees = 0;            // account frees, all threads
  std::int64_t allocated_bytes = 0;  // account bytes allocated, all threads
  std::int64_t peak_bytes = 0;       // scope peak on the running thread
  std::int64_t net_bytes = 0;        // scope net bytes on the running thread at Stop
};

// Sums over every account of the global table (a consistent read of each).
struct account_sums {
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::uint64_t allocated_bytes = 0;
};
account_sums sum_accounts();

class memory_manager final : public benchmark::MemoryManager {
 public:
  // Throws std::invalid_argument for an empty scope name.
  explicit memory_manager(std::string scope_name = "benchmark");
  // Closes a window still open when called on its thread; from another thread
  // the open scope is abandoned (leaked) rather than popped off a foreign stack.
  ~memory_manager() override;

  // Throws std::logic_error when a window is already open.
  void Start() override;
  // Throws std::logic_error without a matching Start() or from another thread.
  void Stop(Result& result) override;
  // Google Benchmark 1.7's deprecated overload; forwards to Stop(Result&).
  void Stop(Result* result) override;

  // Whether a window is open: Google Benchmark 1.7 makes its memory run on
  // one thread even for a benchmark registered with Threads(n), so a
  // benchmark that synchronises its threads must not wait for the others
  // while this is true. Safe to read from any thread.
  bool window_open() const noexcept { return window_open_.load(std::memory_order_acquire); }

  // Figures of the latest completed window.
  const memory_figures& last() const noexcept { return last_; }
  const std::string& scope_name() const noexcept { return scope_name_; }

 private:
  std::string scope_name_;
  std::unique_ptr<arenastat::scope> scope_;  // open window, owned by owner_'s thread
  std::thread::id owner_;
  std::atomic<bool> window_open_{false};
  account_sums at_start_;
  memory_figures last_;
};

}  // namespace arenastat::bench
