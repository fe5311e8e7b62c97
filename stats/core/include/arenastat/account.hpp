// Accounts: long-lived components (a cache, a parser) keyed by name.
//
// An account keeps live bytes, the exact peak, totals allocated, allocation
// and free counts, and live bytes per tag with the breakdown at the peak.
// Accounts are eternal: account::get(name) returns the same object for the
// whole life of the process, including static destruction.
//
// Hot path: each thread updates a slot of its own (plain relaxed stores, no
// read-modify-write, no shared cache line written); readers sum the slots.
// A thread publishes its net growth to the shared live counter only once it
// passes flush_threshold, and publishes net shrinkage at once, so the peak
// never exceeds the true peak and lags it by at most flush_threshold bytes per
// other thread allocating at the same time; with one thread the peak is exact.
// (A thread that frees more than it allocates, e.g. a consumer of another
// thread's blocks, therefore pays one relaxed atomic add per free.)
// Totals are exact whenever the threads are at rest.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "arenastat/context.hpp"
#include "arenastat/tags.hpp"

namespace arenastat {

namespace detail {

// One thread's share of one account. Written only by its owning thread; the
// counters the hot path touches share the first cache line. Live bytes are
// the sum of live_by_tag (derived on read, one store less per operation).
struct alignas(64) account_slot {
  std::atomic<std::uint64_t> allocated{0};
  std::atomic<std::uint64_t> allocations{0};
  std::atomic<std::uint64_t> frees{0};
  std::int64_t unflushed = 0;            // owner only: net not yet in shared live
  std::atomic<std::int64_t> live_by_tag[max_tags] = {};
  account* owner = nullptr;
  account_slot* next = nullptr;          // account's list, guarded by its mutex
  bool in_use = false;                   // guarded by the account's mutex
};

// Per-thread table: account id -> this thread's slot.
struct thread_slots {
  account_slot** data = nullptr;
  std::uint32_t size = 0;
  bool dead = false;  // thread-local teardown ran: fall back to the shared slot
};
inline thread_local constinit thread_slots tls_slots{};

}  // namespace detail

struct tag_bytes {
  std::string tag;
  std::int64_t bytes = 0;
  bool operator==(const tag_bytes&) const = default;
};

// A consistent read of one account.
struct account_totals {
  std::int64_t live_bytes = 0;
  std::uint64_t peak_bytes = 0;
  std::uint64_t allocated_bytes = 0;
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::vector<tag_bytes> live_by_tag;  // tags with non-zero live bytes
  std::vector<tag_bytes> at_peak;      // breakdown at the moment of the peak
};

class account {
 public:
  // Net bytes a thread may hold back from the shared counter (the peak's lag bound).
  static constexpr std::int64_t flush_threshold = 64 * 1024;

  // The account named `name`, created on first use. Thread-safe; never destroyed.
  // Throws std::invalid_argument for an empty name or one longer than
  // max_name_bytes (table.hpp).
  static account& get(std::string_view name);

  std::string_view name() const noexcept { return name_; }
  std::uint32_t id() const noexcept { return id_; }

  // Declares that bytes of `tag` may be charged to this account. Must precede
  // on_allocate with that tag (tracking_resource and charge_chunk do it); keeps
  // the first-use bookkeeping off the hot path. Cheap when already declared.
  void use_tag(tag_id tag) noexcept {
    if (!(tags_used_.load(std::memory_order_relaxed) & (std::uint64_t{1} << tag))) [[unlikely]]
      declare_tag(tag);
  }

  // Hot path: record an allocation / free of `bytes` with `tag` on this thread.
  [[gnu::always_inline]] inline void on_allocate(std::size_t bytes, tag_id tag) noexcept {
    detail::account_slot* slot = local_slot();
    if (!slot) [[unlikely]] return on_allocate_shared(bytes, tag);
    detail::account_slot& s = *slot;
    const auto n = static_cast<std::int64_t>(bytes);
    add(s.allocated, std::uint64_t{bytes});
    add(s.allocations, std::uint64_t{1});
    add(s.live_by_tag[tag], n);
    s.unflushed += n;
    if (s.unflushed > flush_threshold) [[unlikely]] flush(s);
    const std::int64_t estimate = shared_.live.load(std::memory_order_relaxed) + s.unflushed;
    if (estimate > shared_.peak.load(std::memory_order_relaxed)) [[unlikely]] raise_peak(estimate);
  }

  [[gnu::always_inline]] inline void on_deallocate(std::size_t bytes, tag_id tag) noexcept {
    detail::account_slot* slot = local_slot();
    if (!slot) [[unlikely]] return on_deallocate_shared(bytes, tag);
    detail::account_slot& s = *slot;
    const auto n = static_cast<std::int64_t>(bytes);
    add(s.frees, std::uint64_t{1});
    add(s.live_by_tag[tag], -n);
    s.unflushed -= n;
    if (s.unflushed < 0) [[unlikely]] flush(s);
  }

  // Fast-path-only variants for wrappers that keep every call out of their hot
  // path (tracking_resource): they record and return true when this thread's
  // slot exists and neither a flush nor a new peak is due; otherwise they
  // change nothing and return false, and the caller takes on_allocate /
  // on_deallocate in its slow path.
  [[gnu::always_inline]] inline bool try_on_allocate(std::size_t bytes, tag_id tag) noexcept {
    detail::account_slot* s = existing_slot();
    if (!s) [[unlikely]] return false;
    const auto n = static_cast<std::int64_t>(bytes);
    const std::int64_t unflushed = s->unflushed + n;
    if (unflushed > flush_threshold) [[unlikely]] return false;
    if (shared_.live.load(std::memory_order_relaxed) + unflushed > shared_.peak.load(std::memory_order_relaxed))
        [[unlikely]]
      return false;
    add(s->allocated, std::uint64_t{bytes});
    add(s->allocations, std::uint64_t{1});
    add(s->live_by_tag[tag], n);
    s->unflushed = unflushed;
    return true;
  }
  [[gnu::always_inline]] inline bool try_on_deallocate(std::size_t bytes, tag_id tag) noexcept {
    detail::account_slot* s = existing_slot();
    if (!s) [[unlikely]] return false;
    const auto n = static_cast<std::int64_t>(bytes);
    if (s->unflushed < n) [[unlikely]] return false;  // would go negative: publish now
    add(s->frees, std::uint64_t{1});
    add(s->live_by_tag[tag], -n);
    s->unflushed -= n;
    return true;
  }

  // Sums every thread's slot. Exact when the threads feeding it are at rest.
  account_totals totals() const;
  std::int64_t live_bytes() const noexcept;
  std::uint64_t peak_bytes() const noexcept {
    return static_cast<std::uint64_t>(shared_.peak.load(std::memory_order_relaxed));
  }

  // Sets the peak (and its breakdown) to the current live values.
  void reset_peak() noexcept;

  // Resources feeding this account now (tracking_resource, test_resource, an
  // arena_resource with an account): each calls attach_resource() when built
  // and detach_resource() when destroyed. The detach that leaves none checks
  // for leaks as ARENASTAT_LEAKS says (leaks.hpp). Out of line (leaks.cpp).
  void attach_resource() noexcept;
  void detach_resource() noexcept;
  std::uint32_t resource_count() const noexcept { return resources_.load(std::memory_order_relaxed); }

  account(const account&) = delete;
  account& operator=(const account&) = delete;

 private:
  friend struct account_registry;
  account(std::string name, std::uint32_t id);

  // Owner-only update of a counter other threads read: no read-modify-write.
  template <class T>
  [[gnu::always_inline]] static void add(std::atomic<T>& a, T v) noexcept {
    a.store(a.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
  }

  // This thread's slot; null once the thread's teardown has run (or memory ran out).
  detail::account_slot* local_slot() noexcept {
    const detail::thread_slots& t = detail::tls_slots;
    if (id_ < t.size) [[likely]] {
      if (detail::account_slot* s = t.data[id_]) [[likely]] return s;
    }
    return acquire_slot();
  }
  // This thread's slot if it already exists (no slow path).
  detail::account_slot* existing_slot() const noexcept {
    const detail::thread_slots& t = detail::tls_slots;
    return id_ < t.size ? t.data[id_] : nullptr;
  }
  detail::account_slot* acquire_slot() noexcept;
  // Exact fallbacks with atomic read-modify-writes on a shared slot.
  void on_allocate_shared(std::size_t bytes, tag_id tag) noexcept;
  void on_deallocate_shared(std::size_t bytes, tag_id tag) noexcept;
  friend struct slot_table_owner;
  void release_slot(detail::account_slot& s) noexcept;
  void declare_tag(tag_id tag) noexcept;
  void flush(detail::account_slot& s) noexcept;
  void raise_peak(std::int64_t estimate) noexcept;
  // Takes the slow-path mutex and copies the per-tag sums as the breakdown of
  // `peak`, unless a higher peak has been raised meanwhile.
  void record_peak_breakdown(std::int64_t peak) noexcept;

  std::string name_;
  std::uint32_t id_;
  // Read on every allocation, written rarely (a flush, a new peak): one line.
  struct alignas(64) shared_counters {
    std::atomic<std::int64_t> live{0};  // sum of flushed nets
    std::atomic<std::int64_t> peak{0};
  } shared_;
  std::atomic<std::uint64_t> tags_used_{0};  // bit per declared tag
  std::atomic<std::uint32_t> resources_{0};  // attach_resource - detach_resource
  std::atomic<bool> leak_reported_{false};   // reported when its last resource went; not again at exit
  friend struct leak_access;
  struct slow;   // mutex, slot list, breakdown at peak: slow paths only
  slow* slow_;
};

}  // namespace arenastat
