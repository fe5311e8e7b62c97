// Internal: the scope table's records, the table and its lock: what table.cpp
// keeps, and what a scope's exit (scope.cpp) needs to fold a run in place, with
// no call (fold_repeat).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <boost/unordered/unordered_flat_set.hpp>

#include "arenastat/context.hpp"
#include "arenastat/detail/short_mutex.hpp"
#include "arenastat/table.hpp"

#include "short_bytes.hpp"
#include "table_internal.hpp"

namespace arenastat::detail {

// One scope entry in one allocation (an entry costs its 56-byte header, its
// name, 9 bytes per tag and 17 plus the name per counter, and malloc's
// rounding; docs/report.md gives the measured figure). After the header,
// unaligned (read and written with memcpy):
//   name bytes, int64 tag bytes[n_tags], int64 counter (value at peak, last)[n_counters],
//   uint8 tag ids[n_tags], counter names (uint8 length | 0x80 when the counter had
//   a value at the peak, then the bytes, each).
struct scope_record {
  std::uint64_t max_peak = 0;
  std::uint64_t last_peak = 0;
  std::uint64_t count = 0;
  double total_s = 0;
  double last_s = 0;
  std::uint32_t oom_count = 0;  // saturate at 2^32-1
  std::uint32_t err_count = 0;
  std::uint32_t thread = 0;
  std::uint16_t name_len = 0;
  std::uint8_t n_tags = 0;
  std::uint8_t n_counters : 4 = 0;
  std::uint8_t result : 2 = 0;

  std::string_view name() const noexcept {
    return {reinterpret_cast<const char*>(this + 1), name_len};
  }
  static std::size_t values_offset(std::size_t name_len) noexcept { return name_len; }
  char* values() noexcept { return reinterpret_cast<char*>(this + 1) + name_len; }
  const char* values() const noexcept { return const_cast<scope_record*>(this)->values(); }
  std::int64_t value(std::size_t i) const noexcept {
    std::int64_t v;
    std::memcpy(&v, values() + 8 * i, 8);
    return v;
  }
  void set_value(std::size_t i, std::int64_t v) noexcept { std::memcpy(values() + 8 * i, &v, 8); }
  std::uint8_t* tag_ids() noexcept {
    return reinterpret_cast<std::uint8_t*>(values() + 8 * (n_tags + 2 * std::size_t{n_counters}));
  }
  const std::uint8_t* tag_ids() const noexcept { return const_cast<scope_record*>(this)->tag_ids(); }
  const std::uint8_t* counter_names() const noexcept { return tag_ids() + n_tags; }
};
static_assert(sizeof(scope_record) == 56);

// Set element: the pointer may be replaced (a new breakdown of another size)
// without changing the key, the name.
struct record_ref {
  mutable scope_record* r;
};

struct record_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  std::size_t operator()(const record_ref& x) const noexcept { return (*this)(x.r->name()); }
};

struct record_eq {
  using is_transparent = void;
  static std::string_view key(std::string_view s) noexcept { return s; }
  static std::string_view key(const record_ref& x) noexcept { return x.r->name(); }
  template <class A, class B>
  bool operator()(const A& a, const B& b) const noexcept { return key(a) == key(b); }
};

// An overflow row: the scope entries of one prefix folded out of the table.
struct folded_row {
  std::string name;  // "request/" or "(other)"
  std::uint64_t entries = 0, runs = 0, peak_sum = 0, peak_max = 0, oom = 0, err = 0;
  double time_s = 0;
};

// The table's cap when ARENASTAT_TABLE_MAX does not say otherwise (table.cpp).
std::size_t table_max_from_env() noexcept;

struct scope_table {
  short_mutex mutex;  // every scope's exit folds under it: no calls into the C library when free
  boost::unordered_flat_set<record_ref, record_hash, record_eq> records;
  std::vector<folded_row> folded;  // at most max_folded_rows prefixes + "(other)"
  std::uint64_t folded_entries = 0;
  std::atomic<std::size_t> max{table_max_from_env()};
  std::atomic<std::uint64_t> lost{0};
  std::uint64_t generation = 1;  // bumped when a record is freed or replaced (fold_cache)

  [[gnu::always_inline]] static scope_table& get() {
    static scope_table* const t = new scope_table();  // never destroyed
    return *t;
  }
};

// Set by this thread from before it asks for the table's lock until after it
// has given it back, for the exit handler: exit() from a signal handler that
// interrupted this thread anywhere in that span must not wait for the lock.
// (A mark stored after lock() and cleared before unlock() left a window at
// each end in which the handler waited for its own thread: a test hung.)
inline thread_local constinit bool tls_in_table_lock = false;

// The table's lock, with this thread's mark (tls_in_table_lock) around it.
class table_lock {
 public:
  explicit table_lock(scope_table& t) noexcept : t_(t) {
    tls_in_table_lock = true;
    std::atomic_signal_fence(std::memory_order_seq_cst);  // seen by a signal handler on this thread
    t_.mutex.lock();
  }
  ~table_lock() {
    t_.mutex.unlock();
    std::atomic_signal_fence(std::memory_order_seq_cst);
    tls_in_table_lock = false;
  }
  table_lock(const table_lock&) = delete;
  table_lock& operator=(const table_lock&) = delete;

 private:
  scope_table& t_;
};

// What every run adds, whichever path folds it. Lock held.
[[gnu::always_inline]] inline void add_run(scope_record& r, std::uint64_t peak, double seconds, run_result result,
                                           std::uint64_t thread) noexcept {
  r.count += 1;
  r.last_peak = peak;
  r.total_s += seconds;
  r.last_s = seconds;
  r.thread = static_cast<std::uint32_t>(thread);
  r.result = static_cast<std::uint8_t>(result) & 3u;
  if (result != run_result::ok) [[unlikely]] {
    if (result == run_result::oom && r.oom_count != UINT32_MAX) ++r.oom_count;
    if (result == run_result::err && r.err_count != UINT32_MAX) ++r.err_count;
  }
}
[[gnu::always_inline]] inline void add_run(scope_record& r, const scope_run& run) noexcept {
  add_run(r, run.peak, run.seconds, run.result, run.thread);
}

// The record the thread folded last, when it is still the table's and is
// named `name` (a scope in a loop). Lock held.
[[gnu::always_inline]] inline scope_record* memo_hit(const scope_table& t, const fold_cache* cache,
                                                     std::string_view name) noexcept {
  if (!cache || cache->generation != t.generation || !cache->record) return nullptr;
  auto* r = static_cast<scope_record*>(const_cast<void*>(cache->record));
  return same_name(r->name(), name) ? r : nullptr;
}

// The common fold, a scope in a loop, with no scope_run built: the run named
// `name` folds into the record the thread folded last (`memo`, still the
// table's and of that name) without replacing its breakdown (its peak is below
// the record's largest, or neither has tags or counters: `plain` says the run
// has none). Returns false, folding nothing, in every other case (then
// fold_scope does it all).
[[gnu::always_inline]] inline bool fold_repeat(fold_cache& memo, std::string_view name, std::uint64_t peak,
                                               bool plain, double seconds, run_result result,
                                               std::uint64_t thread) noexcept {
  scope_table& t = scope_table::get();
  table_lock lock(t);
  scope_record* const r = memo_hit(t, &memo, name);
  if (r == nullptr || !(peak < r->max_peak || (plain && r->n_tags == 0 && r->n_counters == 0))) [[unlikely]]
    return false;
  r->max_peak = std::max(r->max_peak, peak);
  add_run(*r, peak, seconds, result, thread);
  return true;
}

}  // namespace arenastat::detail
