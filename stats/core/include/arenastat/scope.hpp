// Scopes: named extents of work on one thread (a compilation, a request).
//
//   arenastat::scope s{"compile/Foo::bar", {.limit_bytes = 64 << 20}};
//   ... allocate through tracked resources ...
//   s.set_counter("nodes", graph.size());
//
// While a scope is active, every tracked byte on its thread is charged to it
// (and to every enclosing scope). It keeps its net bytes since entry, the
// exact peak, the per-tag breakdown and the user counters at that peak, and
// its duration; when it ends it is folded into the global table under its name.
// A scope ends on the thread that began it (it is on that thread's stack of
// scopes): destroying it on another thread aborts with a message naming it.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "arenastat/context.hpp"
#include "arenastat/tags.hpp"

namespace arenastat {

// The clock a scope entered now reads for its duration: "tsc" (the CPU's
// invariant time-stamp counter, read in about half the time of
// steady_clock::now(), its rate calibrated against steady_clock over the
// first 50 ms after the first scope ended and refined as the window doubles)
// or "steady_clock" (before that calibration, and on CPUs without an
// invariant TSC). docs/concepts.md, "Scope cost".
const char* scope_clock_name() noexcept;

struct scope_options {
  std::uint64_t limit_bytes = 0;  // 0: no limit
};

class scope {
 public:
  static constexpr std::size_t max_counters = 8;
  static constexpr std::size_t max_counter_name = 23;

  // Throws std::invalid_argument for an empty name or one longer than
  // max_name_bytes (table.hpp, 1024), and std::length_error
  // when detail::max_scope_depth scopes are already active on this thread.
  explicit scope(std::string_view name, scope_options options = {});
  ~scope();
  scope(const scope&) = delete;
  scope& operator=(const scope&) = delete;

  // Sets a user counter (e.g. node count). The table keeps its value when the
  // peak was reached and the last value set; reports show the value at the
  // peak when the counter had one then, else the last value (so a counter set
  // once at the end of the work shows that value).
  // Throws std::invalid_argument for a bad name, std::length_error past max_counters.
  void set_counter(std::string_view name, std::int64_t value);

  std::string_view name() const noexcept { return {long_name_ ? long_name_ : short_name_, name_len_}; }
  std::uint64_t id() const noexcept { return id_; }
  std::int64_t net_bytes() const noexcept { return net_; }
  // The peak of this run, counted from the latest reset_peaks() when one
  // came while it ran (its net bytes then, or what it reached since).
  std::uint64_t peak_bytes() const noexcept;
  std::uint64_t limit_bytes() const noexcept { return limit_; }
  // Net bytes of one tag now / at the peak.
  std::int64_t tag_bytes(tag_id tag) const noexcept { return tag < tags_high_ ? live_by_tag_[tag] : 0; }
  std::int64_t tag_bytes_at_peak(tag_id tag) const noexcept;
  bool limit_hit() const noexcept { return limit_hit_; }

 private:
  friend struct scope_access;

  // Filled by set_counter (counters_[0, counter_count_) only: a scope that
  // sets none never writes them).
  struct counter {
    char name[max_counter_name];  // name_len bytes, any byte values (NUL too)
    std::uint8_t name_len;
    std::int64_t value;    // last value set
    std::int64_t at_peak;  // value when the latest peak was reached
    bool set_at_peak;      // the counter existed when the latest peak was reached
  };

  // The name: inline up to short_name_max bytes (no allocation), else in
  // long_name_ (a heap copy the scope owns; null for a short name). A plain
  // pointer, not a std::string: entry and exit then construct and destroy
  // nothing for a short name.
  static constexpr std::size_t short_name_max = 63;
  char short_name_[short_name_max + 1];
  std::uint32_t name_len_;  // set by the constructor, as id_, uncaught_at_entry_, tsc_clock_ and start_
  char* long_name_ = nullptr;
  std::uint64_t id_;
  std::uint64_t limit_ = 0;
  std::int64_t net_ = 0;
  std::int64_t peak_ = 0;
  // 1 + highest tag id charged or credited: live_by_tag_ and at_peak_ are
  // written (zeroed first) only below it, so entering a scope clears nothing.
  std::uint32_t tags_high_ = 0;
  std::uint32_t counter_count_ = 0;
  // reset_peaks()'s count when the peak was last brought up to date: a
  // reset since then makes the run's peak its net bytes of that moment.
  std::uint32_t reset_epoch_;
  int uncaught_at_entry_;
  bool limit_hit_ = false;
  bool tsc_clock_;  // start_ is in time-stamp-counter ticks, else steady_clock ns
  std::uint64_t start_;
  std::int64_t live_by_tag_[max_tags];
  std::int64_t at_peak_[max_tags];
  counter counters_[max_counters];
};

}  // namespace arenastat
