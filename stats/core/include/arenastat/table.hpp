// The global statistics table: one entry per name and kind.
//
// Scopes are folded in when they end; accounts are read live. The table is
// never destroyed, so it stays usable during and after static destruction.
//
// The scope part is bounded (docs/report.md, "A bounded table"): past
// table_max() scope entries, the cheapest by peak are folded into overflow
// rows (entry_kind::folded), one per name prefix up to the first '/' or one
// "(other)" row. Accounts are objects the program holds and are never folded.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "arenastat/account.hpp"

namespace arenastat {

enum class entry_kind { scope, account, folded };

// "scope", "account", "folded": the one spelling every report uses.
const char* kind_name(entry_kind kind) noexcept;

// Longest scope or account name accepted, in bytes; longer names are rejected
// with std::invalid_argument naming this limit.
inline constexpr std::size_t max_name_bytes = 1024;

// Scope entries kept before the cheapest are folded (ARENASTAT_TABLE_MAX).
inline constexpr std::size_t default_table_max = 10000;

// At most this many per-prefix overflow rows; further prefixes go to "(other)".
inline constexpr std::size_t max_folded_rows = 64;

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
  std::uint64_t peak_bytes = 0;            // scope: largest peak of any run since reset; folded: largest folded peak
  std::vector<tag_bytes> at_peak;          // breakdown at that peak (non-zero tags)

  // scopes (and folded rows: count, time_s, oom_count, err_count summed)
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

  // folded rows: name is the prefix ("request/") or "(other)"
  std::uint64_t folded_entries = 0;        // scope entries folded into this row
  std::uint64_t peak_sum_bytes = 0;        // sum of their largest peaks

  // accounts, last so that code naming the fields above in order is unchanged
  std::vector<std::string> tags_used;      // every tag declared for it (the metrics give each a sample, 0 included)
};

// What the reports say about the table itself.
struct table_status {
  std::size_t max = 0;                 // table_max()
  std::size_t scope_entries = 0;       // kept scope entries
  std::size_t folded_rows = 0;         // overflow rows
  std::uint64_t folded_entries = 0;    // scope entries folded since start
  std::uint64_t lost_folds = 0;        // runs that could not be stored (out of memory)
  bool operator==(const table_status&) const = default;
};

// A consistent copy of the table in its own compact form: the scope records
// are copied byte for byte under the table's lock (one buffer, about what the
// table itself costs per entry, no std::string or vector per entry), with the
// accounts' totals and the folded rows. Entries are read from it one at a
// time, so a report of N entries holds one `entry`, not N. Streamed reports,
// --top and snapshot() read the table through it.
// What a bounded copy needs of a scope entry to choose it, read from the
// table's record without copying it (the name is valid during the choice only).
struct scope_key {
  std::uint64_t peak = 0;  // largest peak of any run
  std::uint64_t runs = 0;
  std::string_view name;
};

// Which scope entries a copy takes: those whose peak is at least min_peak,
// and of them at most `top` (0: all), the first in `before` order (a strict
// weak order; required when top != 0). Accounts and folded rows are always
// taken whole.
struct copy_bound {
  std::uint64_t min_peak = 0;
  std::size_t top = 0;
  bool (*before)(const scope_key&, const scope_key&, const void* context) = nullptr;
  const void* context = nullptr;  // passed to `before`
};

class table_copy {
 public:
  // Takes the copy now (the table's lock is held for the byte copy only).
  static table_copy take();
  // Takes only the scope entries `bound` lets through: under the lock, one
  // pass keeps the best `top` in a heap of that size, and only they are
  // copied, so `--top=N` copies N records whatever the table's size.
  static table_copy take(const copy_bound& bound);
  // A copy holding exactly `entries`, in their order (render_report over
  // entries taken earlier, tests).
  static table_copy of(std::vector<entry> entries);

  // Entries in snapshot()'s order.
  std::size_t size() const noexcept { return scopes_.size() + others_.size(); }
  // Entry i into `out`, reusing out's storage (every field is set).
  void read(std::size_t i, entry& out) const;
  entry operator[](std::size_t i) const {
    entry e;
    read(i, e);
    return e;
  }
  // Kind and name of entry i without reading the rest (the name is a view
  // into this copy).
  entry_kind kind(std::size_t i) const noexcept;
  std::string_view name(std::size_t i) const noexcept;
  // The table's figures when the copy was taken (of(): all zero).
  const table_status& status() const noexcept { return status_; }
  // Bytes this copy holds (its buffers' capacities).
  std::size_t bytes_held() const noexcept;
  // Scope entries the bound left out: peak below min_peak, and beyond top.
  std::size_t scopes_below_min() const noexcept { return below_min_; }
  std::size_t scopes_beyond_top() const noexcept { return beyond_top_; }

 private:
  std::vector<std::uint64_t> records_;  // scope records, each 8-byte aligned
  std::vector<std::size_t> scopes_;     // their offsets (in words), in name order
  std::vector<entry> others_;           // accounts in name order, then folded rows
  table_status status_;
  std::size_t below_min_ = 0, beyond_top_ = 0;
};

// Every entry: scopes, then accounts, each in name order, then folded rows in
// name order ("(other)" last).
std::vector<entry> snapshot();

// Resets every peak to its current value: accounts' peaks become their live
// bytes; scope entries forget their largest peak (the next run sets it), and
// a run active now counts its peak from its net bytes now.
// Folded rows forget their largest folded peak (0; the next entry folded sets
// it); their entries, runs, peak sum, time and oom and err runs stay.
void reset_peaks();

// Number of entries of each kind (cheap; for tests and diagnostics).
std::size_t scope_entry_count();
std::size_t account_entry_count();

// The scope-entry cap: 0 means none. The first use of the table reads
// ARENASTAT_TABLE_MAX (a whole number; a bad value is warned about and the
// default kept). Setting a cap below the current size folds at once.
void set_table_max(std::size_t max);
std::size_t table_max() noexcept;

table_status table_status_now();

}  // namespace arenastat
