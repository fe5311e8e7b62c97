// Scopes: the per-thread stack of named extents, and the charging of tracked
// bytes to them (eager: every active scope is charged; depth is small).
#include "arenastat/scope.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <type_traits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <x86intrin.h>
#define ARENASTAT_HAVE_TSC 1
#else
#define ARENASTAT_HAVE_TSC 0
#endif

#include "arenastat/detail/short_mutex.hpp"
#include "leaks_internal.hpp"
#include "short_bytes.hpp"
#include "table_internal.hpp"
#include "table_records.hpp"
#include "sys.hpp"
#include "text_escape.hpp"
#include "thread_state.hpp"

namespace arenastat {

limit_exceeded::limit_exceeded(std::string_view scope_name, std::uint64_t limit, std::int64_t net,
                               std::uint64_t requested)
    : scope_(scope_name), limit_(limit), net_(net), requested_(requested) {
  message_ = "arenastat: scope '" + scope_ + "' exceeded its limit of " + std::to_string(limit) +
             " bytes: " + std::to_string(net) + " bytes in use + " + std::to_string(requested) +
             " requested";
}

// Everything that touches a scope's private state lives here.
struct scope_access {
  // live_by_tag_ and at_peak_ hold values below tags_high_ only; a new tag
  // zeroes the slots up to it first.
  static void reach(scope& s, tag_id tag) noexcept {
    if (tag < s.tags_high_) [[likely]] return;
    std::fill(s.live_by_tag_ + s.tags_high_, s.live_by_tag_ + tag + 1, 0);
    std::fill(s.at_peak_ + s.tags_high_, s.at_peak_ + tag + 1, 0);
    s.tags_high_ = tag + 1u;
  }
  // After a reset_peaks() the run's peak is what it has held since: its net
  // bytes at the reset (unchanged until now: every change comes through
  // here), then whatever it reaches. With net bytes of 0 or less the peak is
  // 0 and the breakdown at it empty.
  static void catch_up_with_reset(scope& s) noexcept {
    const std::uint32_t resets = detail::peak_resets.load(std::memory_order_relaxed);
    if (resets == s.reset_epoch_) [[likely]] return;
    s.reset_epoch_ = resets;
    // Counters take their values of that moment as their values at the
    // peak; with no bytes held there is no peak yet, as in a run that has
    // allocated nothing.
    const bool holds = s.net_ > 0;
    if (holds) {
      s.peak_ = s.net_;
      std::copy_n(s.live_by_tag_, s.tags_high_, s.at_peak_);
    } else {
      s.peak_ = 0;
      std::fill_n(s.at_peak_, s.tags_high_, 0);
    }
    for (std::uint32_t i = 0; i < s.counter_count_; ++i) {
      s.counters_[i].at_peak = holds ? s.counters_[i].value : 0;
      s.counters_[i].set_at_peak = holds;
    }
  }
  // Whether a reset_peaks() came since s last caught up with one.
  static bool reset_pending(const scope& s) noexcept {
    return detail::peak_resets.load(std::memory_order_relaxed) != s.reset_epoch_;
  }
  static void charge(scope& s, tag_id tag, std::int64_t n) noexcept {
    catch_up_with_reset(s);
    reach(s, tag);
    s.net_ += n;
    s.live_by_tag_[tag] += n;
    if (s.net_ > s.peak_) {
      s.peak_ = s.net_;
      std::copy_n(s.live_by_tag_, s.tags_high_, s.at_peak_);
      for (std::uint32_t i = 0; i < s.counter_count_; ++i) {
        s.counters_[i].at_peak = s.counters_[i].value;
        s.counters_[i].set_at_peak = true;
      }
    }
  }
  static void credit(scope& s, tag_id tag, std::int64_t n) noexcept {
    catch_up_with_reset(s);
    reach(s, tag);  // memory taken before the scope began may be freed inside it
    s.net_ -= n;
    s.live_by_tag_[tag] -= n;
  }
  // Whether net + bytes > limit, exactly: no signed overflow for a request
  // near PTRDIFF_MAX, and a limit above INT64_MAX is a limit, not -1.
  static bool over_limit(std::int64_t net, std::uint64_t bytes, std::uint64_t limit) noexcept {
    if (net >= 0) {
      const auto n = static_cast<std::uint64_t>(net);
      return n > limit || bytes > limit - n;
    }
    // net < 0: the room is limit + |net| (|net| computed without negating INT64_MIN).
    std::uint64_t room;
    if (__builtin_add_overflow(limit, static_cast<std::uint64_t>(-(net + 1)) + 1, &room)) return false;
    return bytes > room;
  }
  static void check_limit(scope& s, std::uint64_t bytes) {
    if (s.limit_ != 0 && over_limit(s.net_, bytes, s.limit_)) {
      s.limit_hit_ = true;
      throw limit_exceeded(s.name(), s.limit_, s.net_, bytes);
    }
  }
  static std::uint64_t id(const scope& s) noexcept { return s.id_; }

  // Folds a run of s in full: its breakdown, counters and name, whatever the
  // table holds.
  [[gnu::noinline]] static void fold(const scope& s, double seconds, detail::run_result result) noexcept {
    // Only the counters set are constructed (a scope that sets none writes nothing here).
    alignas(detail::run_counter) unsigned char counter_bytes[sizeof(detail::run_counter) * scope::max_counters];
    auto* const counters = reinterpret_cast<detail::run_counter*>(counter_bytes);
    for (std::uint32_t i = 0; i < s.counter_count_; ++i)
      std::construct_at(counters + i, detail::run_counter{{s.counters_[i].name, s.counters_[i].name_len},
                                                          s.counters_[i].at_peak,
                                                          s.counters_[i].value, s.counters_[i].set_at_peak});
    const detail::thread_scopes& t = detail::tls_scopes;
    detail::scope_run run;
    run.name = s.name();
    run.peak = static_cast<std::uint64_t>(s.peak_);
    run.at_peak = s.at_peak_;
    run.tags_high = s.tags_high_;
    run.counters = counters;
    run.counter_count = s.counter_count_;
    run.seconds = seconds;
    run.result = result;
    run.thread = t.state ? t.state->os_tid : detail::os_thread_id();
    run.cache = t.state ? &t.state->fold_memo : nullptr;
    detail::fold_scope(run);
  }
};

namespace detail {
namespace {

// ---- The scope clock --------------------------------------------------------
// Two steady_clock reads (clock_gettime through the vDSO) were half of a
// scope's cost (about 23 ns each on the KVM guest the goals are measured on;
// the time-stamp counter reads in about 10 ns). Where the CPU has an invariant
// TSC (CPUID 0x80000007 EDX bit 8: constant rate, runs in every C-state; the
// counter is synchronised across cores), scopes read it, and durations are
// converted with a rate calibrated against steady_clock: first over the 50 ms
// after the first scope ended (scopes read steady_clock until then), then
// again each time the window doubles, so the rate's error (about two clock
// reads' jitter over the window) keeps shrinking: below 1e-6 after 50 ms.
// Elsewhere every scope reads steady_clock.
struct scope_clock {
  std::atomic<double> ns_per_tick{0};       // 0: not calibrated: scopes read steady_clock
  std::atomic<std::uint64_t> next_tick{0};  // the TSC reading at which to refine the rate
  std::atomic<std::uint64_t> due_ns{0};     // steady ns at which the first rate is taken (0: not started)
  short_mutex mutex;                        // calibration only
  bool started = false;
  bool usable = false;
  std::uint64_t tsc0 = 0;
  std::uint64_t ns0 = 0;
};
// Constant-initialised and never destroyed (nothing to destroy): scopes may
// begin in static initialisers and end during exit, and reading it costs no
// guard check (a function-local static's was 8 instructions a scope).
static_assert(std::is_trivially_destructible_v<scope_clock>);
constinit scope_clock the_scope_clock;

constexpr std::uint64_t first_window_ns = 50'000'000;

std::uint64_t steady_ns() noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

#if ARENASTAT_HAVE_TSC
std::uint64_t tsc_ticks() noexcept { return __rdtsc(); }
bool tsc_invariant() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return false;
  if (!__get_cpuid(0x80000007u, &a, &b, &c, &d)) return false;
  return (d & (1u << 8)) != 0;
}
// A TSC reading and a steady_clock reading taken together (the TSC is read on
// both sides of the clock; the midpoint is paired with it).
void read_pair(std::uint64_t& tsc, std::uint64_t& ns) noexcept {
  const std::uint64_t before = tsc_ticks();
  ns = steady_ns();
  const std::uint64_t after = tsc_ticks();
  tsc = before + (after - before) / 2;
}
#else
std::uint64_t tsc_ticks() noexcept { return 0; }
bool tsc_invariant() noexcept { return false; }
void read_pair(std::uint64_t& tsc, std::uint64_t& ns) noexcept {
  tsc = 0;
  ns = steady_ns();
}
#endif

// (Re)computes the rate over [tsc0, now]. Lock held.
void calibrate_locked(scope_clock& c) noexcept {
  std::uint64_t tsc = 0, ns = 0;
  read_pair(tsc, ns);
  if (tsc <= c.tsc0 || ns <= c.ns0) return;
  const std::uint64_t ticks = tsc - c.tsc0;
  c.ns_per_tick.store(static_cast<double>(ns - c.ns0) / static_cast<double>(ticks), std::memory_order_relaxed);
  c.next_tick.store(tsc + ticks, std::memory_order_relaxed);  // the next window is twice as long
}

// A scope that read steady_clock ended at `now_ns`: starts the calibration,
// or takes the first rate once the first window has passed.
void clock_steady_run_ended(std::uint64_t now_ns) noexcept {
  scope_clock& c = the_scope_clock;
  const std::uint64_t due = c.due_ns.load(std::memory_order_relaxed);
  if (due != 0 && now_ns < due) return;
  std::lock_guard lock(c.mutex);
  if (!c.started) {
    c.started = true;
    c.usable = tsc_invariant();
    if (!c.usable) {
      c.due_ns.store(UINT64_MAX, std::memory_order_relaxed);  // steady_clock for good
      return;
    }
    read_pair(c.tsc0, c.ns0);
    c.due_ns.store(c.ns0 + first_window_ns, std::memory_order_relaxed);
    return;
  }
  if (c.usable && c.ns_per_tick.load(std::memory_order_relaxed) == 0) calibrate_locked(c);
}

// A scope that read the TSC ended at `tsc`: refines the rate when its window doubled.
void clock_tsc_run_ended(std::uint64_t tsc) noexcept {
  scope_clock& c = the_scope_clock;
  if (tsc < c.next_tick.load(std::memory_order_relaxed)) [[likely]] return;
  std::lock_guard lock(c.mutex);
  if (tsc >= c.next_tick.load(std::memory_order_relaxed)) calibrate_locked(c);
}

// Credits a stamped chunk: only the scopes it was charged to (ids in
// [first_id, last_id]: ids grow along the stack) that are still active.
void credit_stamped(std::uint64_t first_id, std::uint64_t last_id, tag_id tag, std::size_t bytes) noexcept {
  thread_scopes& t = tls_scopes;
  for (std::uint32_t i = 0; i < t.depth && scope_access::id(*t.frames[i]) <= last_id; ++i)
    if (scope_access::id(*t.frames[i]) >= first_id)
      scope_access::credit(*t.frames[i], tag, static_cast<std::int64_t>(bytes));
}

// A scope ending on a thread whose stack does not hold it: it began on
// another thread, whose stack would keep a pointer to it after it is gone
// (every later charge there would write freed memory). That thread may be
// charging it right now, so nothing can be undone safely from here: stop.
[[noreturn, gnu::noinline, gnu::cold]] void abort_foreign_end(std::string_view name) noexcept {
  try {
    warn("arenastat: scope '" + escape_text(name) +
         "' ended on a thread other than the one that began it (a scope belongs to its thread); aborting\n");
  } catch (...) {
  }
  std::fflush(nullptr);
  std::abort();
}

// A heap copy of a name longer than a scope keeps inline (not terminated).
[[gnu::noinline]] char* copy_long_name(std::string_view name) {
  char* p = new char[name.size()];
  std::memcpy(p, name.data(), name.size());
  return p;
}

[[noreturn, gnu::noinline, gnu::cold]] void throw_too_deep(std::string_view name) {
  throw std::length_error("arenastat::scope '" + escape_text(name.substr(0, 200)) + "': more than " +
                          std::to_string(max_scope_depth) + " nested scopes on one thread");
}

[[gnu::noinline]] void drain_pending_now(thread_state& st) noexcept {
  for (const pending_credit& c : take_pending(st)) credit_stamped(c.first_scope_id, c.scope_id, c.tag, c.bytes);
}

inline void drain_pending() noexcept {
  thread_state* st = tls_scopes.state;
  if (st && st->has_pending.load(std::memory_order_relaxed)) [[unlikely]] drain_pending_now(*st);
}

}  // namespace

}  // namespace detail

void check_scope_limits(std::size_t bytes) {
  detail::drain_pending();
  detail::thread_scopes& t = detail::tls_scopes;
  for (std::uint32_t i = t.depth; i-- > t.base;) scope_access::check_limit(*t.frames[i], bytes);  // innermost first
}

void charge_scopes(tag_id tag, std::size_t bytes) {
  check_scope_limits(bytes);
  detail::thread_scopes& t = detail::tls_scopes;
  for (std::uint32_t i = t.base; i < t.depth; ++i)
    scope_access::charge(*t.frames[i], tag, static_cast<std::int64_t>(bytes));
}

void credit_scopes(tag_id tag, std::size_t bytes) noexcept {
  detail::thread_scopes& t = detail::tls_scopes;
  for (std::uint32_t i = t.base; i < t.depth; ++i)
    scope_access::credit(*t.frames[i], tag, static_cast<std::int64_t>(bytes));
}

charge_stamp charge_chunk(tag_id tag, std::size_t bytes, account* acct) {
  charge_stamp stamp;
  stamp.tag = tag;
  stamp.acct = acct;
  detail::thread_scopes& t = detail::tls_scopes;
  if (t.visible != 0) {
    charge_scopes(tag, bytes);
    stamp.owner = t.state;
    stamp.first_scope_id = scope_access::id(*t.frames[t.base]);
    stamp.scope_id = scope_access::id(*t.frames[t.depth - 1]);
  }
  if (acct) {
    acct->use_tag(tag);
    acct->on_allocate(bytes, tag);
  }
  detail::ledger_chunk_taken(stamp, bytes);  // ARENASTAT_LEAKS: chunks held at exit
  return stamp;
}

void credit_chunk(const charge_stamp& stamp, std::size_t bytes) noexcept {
  detail::ledger_chunk_given_back(stamp, bytes);
  if (stamp.acct) stamp.acct->on_deallocate(bytes, stamp.tag);
  if (stamp.scope_id == 0) return;
  if (stamp.owner == detail::tls_scopes.state)
    detail::credit_stamped(stamp.first_scope_id, stamp.scope_id, stamp.tag, bytes);
  else
    detail::post_credit(*stamp.owner, {stamp.first_scope_id, stamp.scope_id, stamp.tag, bytes});
}

const char* scope_clock_name() noexcept {
  return detail::the_scope_clock.ns_per_tick.load(std::memory_order_relaxed) > 0 ? "tsc" : "steady_clock";
}

scope::scope(std::string_view name, scope_options options) : limit_(options.limit_bytes) {
  if (name.empty() || name.size() > max_name_bytes) [[unlikely]] detail::check_name(name, "arenastat::scope");
  detail::thread_scopes& t = detail::tls_scopes;
  if (t.depth >= detail::max_scope_depth) [[unlikely]] detail::throw_too_deep(name);
  detail::thread_state& st = detail::current_thread_state();  // may throw: before the name's copy
  if (name.size() <= short_name_max) [[likely]] {
    static_assert(short_name_max <= detail::short_bytes_max);
    detail::copy_short(short_name_, name.data(), name.size());
  } else {
    long_name_ = detail::copy_long_name(name);  // may throw; nothing after it does
  }
  name_len_ = static_cast<std::uint32_t>(name.size());
  detail::drain_pending();
  id_ = st.next_scope_id++;
  reset_epoch_ = detail::peak_resets.load(std::memory_order_relaxed);
  uncaught_at_entry_ = detail::uncaught_exceptions(&st);
  if (detail::the_scope_clock.ns_per_tick.load(std::memory_order_relaxed) > 0) [[likely]] {
    tsc_clock_ = true;
    start_ = detail::tsc_ticks();
  } else {
    tsc_clock_ = false;
    start_ = detail::steady_ns();
  }
  if (t.depth == 0) st.bottom_scope_id.store(id_, std::memory_order_relaxed);  // post_credit reads it
  t.frames[t.depth++] = this;
  t.visible = t.depth - t.base;
}

scope::~scope() {
  double seconds;
  if (tsc_clock_) [[likely]] {
    const std::uint64_t end = detail::tsc_ticks();
    const double rate = detail::the_scope_clock.ns_per_tick.load(std::memory_order_relaxed);
    seconds = end > start_ ? static_cast<double>(end - start_) * rate * 1e-9 : 0.0;
    detail::clock_tsc_run_ended(end);
  } else {
    const std::uint64_t end = detail::steady_ns();
    seconds = end > start_ ? static_cast<double>(end - start_) * 1e-9 : 0.0;
    detail::clock_steady_run_ended(end);
  }
  detail::drain_pending();
  detail::thread_scopes& t = detail::tls_scopes;
  // Scopes end in reverse order (this one on top); tolerate an out-of-order end by closing the gap.
  if (t.depth > t.base && t.frames[t.depth - 1] == this) [[likely]] {
    --t.depth;  // the top, visible
  } else {
    scope** top = t.frames + t.depth;
    scope** me = std::find(t.frames, top, this);
    if (me == top) [[unlikely]] detail::abort_foreign_end(name());
    if (static_cast<std::uint32_t>(me - t.frames) < t.base) --t.base;  // it was hidden
    std::copy(me + 1, top, me);
    --t.depth;
    if (me == t.frames && t.depth > 0 && t.state)
      t.state->bottom_scope_id.store(scope_access::id(*t.frames[0]), std::memory_order_relaxed);
  }
  if (t.depth == 0 && t.state) t.state->bottom_scope_id.store(detail::thread_state::no_scope, std::memory_order_relaxed);
  t.visible = t.depth - t.base;

  scope_access::catch_up_with_reset(*this);
  const detail::run_result result = limit_hit_ ? detail::run_result::oom
                                    : detail::uncaught_exceptions(t.state) > uncaught_at_entry_
                                        ? detail::run_result::err
                                        : detail::run_result::ok;
  // A scope in a loop folds into the record its thread folded last, with no
  // scope_run built (detail::fold_repeat); anything else folds in full.
  detail::thread_state* const st = t.state;
  if (st == nullptr ||
      !detail::fold_repeat(st->fold_memo, name(), static_cast<std::uint64_t>(peak_),
                           tags_high_ == 0 && counter_count_ == 0, seconds, result, st->os_tid)) [[unlikely]]
    scope_access::fold(*this, seconds, result);
  delete[] long_name_;
}

std::uint64_t scope::peak_bytes() const noexcept {
  if (scope_access::reset_pending(*this)) [[unlikely]] return net_ > 0 ? static_cast<std::uint64_t>(net_) : 0;
  return static_cast<std::uint64_t>(peak_);
}

std::int64_t scope::tag_bytes_at_peak(tag_id tag) const noexcept {
  if (tag >= tags_high_) return 0;
  if (scope_access::reset_pending(*this)) [[unlikely]] return net_ > 0 ? live_by_tag_[tag] : 0;
  return at_peak_[tag];
}

void scope::set_counter(std::string_view name, std::int64_t value) {
  // The values at a peak reached before a reset_peaks() are those of the
  // reset's moment: before this one changes.
  scope_access::catch_up_with_reset(*this);
  for (std::uint32_t i = 0; i < counter_count_; ++i) {
    if (name == std::string_view(counters_[i].name, counters_[i].name_len)) {
      counters_[i].value = value;
      return;
    }
  }
  if (name.empty() || name.size() > max_counter_name)
    throw std::invalid_argument("arenastat::scope::set_counter: counter name '" +
                                detail::escape_text(name.substr(0, 200)) + "' must have 1 to " +
                                std::to_string(max_counter_name) + " bytes, not " + std::to_string(name.size()));
  if (counter_count_ == max_counters)
    throw std::length_error("arenastat::scope::set_counter: scope '" + detail::escape_text(this->name().substr(0, 200)) +
                            "' already has " + std::to_string(max_counters) + " counters; cannot add '" +
                            detail::escape_text(name) + "'");
  counter& c = counters_[counter_count_++];
  std::memcpy(c.name, name.data(), name.size());
  c.name_len = static_cast<std::uint8_t>(name.size());
  c.value = value;
  c.at_peak = 0;  // no value at the peak until a peak is reached after this
  c.set_at_peak = false;
}

}  // namespace arenastat
