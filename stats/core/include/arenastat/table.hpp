// The global statistics table: one eternal entry per name and kind.
//
// Scopes are folded in when they end; accounts are read live. The table is
// never destroyed, so it stays usable during and after static destruction.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "arenastat/account.hpp"

namespace arenastat {

enum class entry_kind { scope, account };

// A scope's user counter (scope::set_counter) in its largest run.
// `value` is its value when the run reached its peak; `last` the last value
// set in the run. A counter first set after the peak had no value at the
// peak (`at_peak` false): reports then show `last` (see shown()).
struct counter_value {
  std::string name;
  std::int64_t value = 0;  // at the peak
  std::int64_t last = 0;   // last value set in the run
  bool at_peak = true;     // the counter had a value when the peak was reached
  // What text reports show: the value at the peak when it had one, else the last value.
  std::int64_t shown() const noexcept { return at_peak ? value : last; }
  bool operator==(const counter_value&) const = default;
};

// Plain data; every field is filled for its kind, the others stay zero/empty.
struct entry {
  std::string name;
  entry_kind kind = entry_kind::scope;
  std::uint64_t peak_bytes = 0;            // scope: largest peak of any run since reset
  std::vector<tag_bytes> at_peak;          // breakdown at that peak (non-zero tags)

  // scopes
  std::uint64_t count = 0;                 // runs folded
  std::uint64_t last_peak_bytes = 0;       // peak of the latest run
  std::vector<counter_value> counters;     // user counters of the largest run (at its peak and last)
  double time_s = 0;                       // total duration of all runs
  double last_time_s = 0;                  // duration of the latest run
  std::string result;                      // latest run: "ok", "oom" or "err"
  std::uint64_t oom_count = 0;             // runs that hit their limit
  std::uint64_t err_count = 0;             // runs left by another exception
  std::uint64_t thread = 0;                // OS thread id of the latest run

  // accounts
  std::int64_t live_bytes = 0;
  std::uint64_t allocated_bytes = 0;
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::vector<tag_bytes> live_by_tag;
};

// Every entry, scopes first then accounts, each in name order.
std::vector<entry> snapshot();

// Resets every peak to its current value: accounts' peaks become their live
// bytes; scope entries forget their largest peak (the next run sets it).
void reset_peaks();

// Number of entries of each kind (cheap; for tests and diagnostics).
std::size_t scope_entry_count();
std::size_t account_entry_count();

}  // namespace arenastat
