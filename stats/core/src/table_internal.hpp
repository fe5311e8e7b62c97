// Internal: what the table keeps and how scopes and accounts reach it.
#pragma once
#include <atomic>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "arenastat/account.hpp"
#include "arenastat/table.hpp"

namespace arenastat::detail {

// Incremented by each reset_peaks() (under the table lock): an active scope
// that sees it changed starts its peak again from its net bytes (scope.cpp).
inline std::atomic<std::uint32_t> peak_resets{0};

enum class run_result : std::uint8_t { ok, oom, err };

// A user counter of a finished run, as the fold reads it (views into the scope).
// No default member initialisers: a scope's exit keeps an array of them
// on its stack and fills only the counters it has.
struct run_counter {
  std::string_view name;
  std::int64_t value;  // at the peak
  std::int64_t last;   // last value set
  bool at_peak;        // the counter had a value when the peak was reached
};

// Per-thread memo of the record the thread folded last, so that a loop
// folding one name again skips hashing and the set probe. Valid while the
// table's generation (bumped whenever a record is freed or replaced) is the one
// seen; compared by name under the table's lock.
struct fold_cache {
  const void* record = nullptr;
  std::uint64_t generation = 0;
};

// One finished scope run, as the fold needs it (views into the scope object).
struct scope_run {
  std::string_view name;
  std::uint64_t peak = 0;
  const std::int64_t* at_peak = nullptr;  // per tag
  std::uint32_t tags_high = 0;
  const run_counter* counters = nullptr;  // at the peak
  std::uint32_t counter_count = 0;
  double seconds = 0;
  run_result result = run_result::ok;
  std::uint64_t thread = 0;
  fold_cache* cache = nullptr;            // the folding thread's memo (may be null)
};

// Folds a run into the table under its name. Never throws: a run that cannot
// be stored (out of memory) is counted and reported as lost.
void fold_scope(const scope_run& run) noexcept;


// Every account ever created, in creation order (the registry lives in account.cpp).
std::vector<account*> all_accounts();

std::uint64_t lost_folds() noexcept;

// True when the calling thread holds the table's lock: the exit handler then
// runs in a signal handler that interrupted a fold (exit() called there), and
// taking the lock would wait forever.
bool table_locked_by_this_thread() noexcept;

// Throws std::invalid_argument when `name` is empty or longer than
// max_name_bytes; `who` starts the message ("arenastat::scope").
void check_name(std::string_view name, std::string_view who);

}  // namespace arenastat::detail
