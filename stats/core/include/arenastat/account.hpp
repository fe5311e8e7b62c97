// Accounts: long-lived components (a cache, a parser) keyed by name.
//
// An account keeps live bytes, the exact peak, totals allocated, allocation
// and free counts, and live bytes per tag with the breakdown at the peak.
// Accounts are eternal: account::get(name) returns the same object for the
// whole life of the process, including static destruction.
//
// Hot path: each thread updates a slot of its own (no read-modify-write, no
// shared cache line written, nothing but the slot read); readers sum the
// slots. A thread publishes its net growth to the shared live counter only
// once it passes flush_threshold / 2, and publishes net shrinkage at once. An
// allocation is checked against the slot's limit, what the thread's
// unpublished bytes may reach before a new peak could be due (peak - shared
// live, looked up again by every slow-path allocation and after reset_peak),
// so the peak never exceeds the true peak and lags it by at most
// flush_threshold / 2 bytes per other thread holding unpublished growth: a
// thread that allocated and then went idle keeps up to that much unpublished
// until it next frees more than it holds back or passes its limit. Every read
// of the peak (peak_bytes, totals, the reports) first raises it to the live
// bytes of a moment during the read when those are higher (a lower bound
// computed from the slots' allocated and freed bytes, which only grow, so it
// never passes the true peak; exact at rest). So a read at rest never shows
// a peak below the live bytes: 8 threads allocating 30,000 bytes each, one
// after another, and holding them read a peak of 240,000 (the allocations
// themselves raised it to 30,000); what stays uncounted is a held-back
// high point that is gone again before any read. With one thread the peak
// is exact.
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
// counters the hot path touches share the first cache line (and the per-tag
// live bytes of tags 0 and 1 too; the others are on the next line). Live
// bytes are the sum of live_by_tag (derived on read, one store less per
// operation). The counters are plain
// integers that other threads read with std::atomic_ref (slot_load) and the
// owner changes with owner_add.
struct alignas(64) account_slot {
  std::uint64_t allocated = 0;
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  // Bytes freed on this thread. With `allocated` it gives readers a lower
  // bound of the live bytes (account.cpp, live_lower_bound): an owner adds an
  // allocation to `allocated` after its live bytes, and a free to `freed`
  // before it takes it from them, so allocated - freed never exceeds them.
  std::uint64_t freed = 0;
  std::int64_t unflushed = 0;            // owner only: net not yet in shared live
  // What unflushed may reach on the fast path: min(hold-back, peak - shared
  // live) when the owner last looked. Written by the owner (slow path) and by
  // reset_peak (-1: look again); see account::sync_limit.
  std::int64_t limit = -1;
  std::int64_t live_by_tag[max_tags] = {};
  account* owner = nullptr;
  account_slot* next = nullptr;          // account's list, guarded by its mutex
  bool in_use = false;                   // guarded by the account's mutex
};

// A counter of a slot read by another thread (or by its owner).
template <class T>
inline T slot_load(const T& counter) noexcept {
  return std::atomic_ref<const T>(counter).load(std::memory_order_relaxed);
}

// The owner's updates of a counter other threads read: the only writer, so no
// read-modify-write is needed, only a store other threads see whole. On
// x86-64 (GCC, Clang) that is one `add` to memory: a load and an aligned 8-byte
// store, which readers see before or after, never torn, like the relaxed
// load + store it replaces (which GCC compiles to three instructions, as it
// never merges atomic accesses). Elsewhere, and under ThreadSanitizer (which
// must see every access), the relaxed load + store through std::atomic_ref.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__SANITIZE_THREAD__)
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ARENASTAT_OWNER_ADD_ATOMIC_REF 1
#endif
#endif
#else
#define ARENASTAT_OWNER_ADD_ATOMIC_REF 1
#endif
// Order: std::memory_order_release when no earlier store of the owner's may
// be seen after this one (readers' acquire loads pair with it); on x86-64
// stores are seen in program order, so it is the same `add`.
template <std::memory_order Order = std::memory_order_relaxed, class T>
[[gnu::always_inline]] inline void owner_add(T& counter, T v) noexcept {
  static_assert(sizeof(T) == 8);
#if defined(ARENASTAT_OWNER_ADD_ATOMIC_REF)
  std::atomic_ref<T> a(counter);
  a.store(a.load(std::memory_order_relaxed) + v, Order);
#else
  asm volatile("addq %1, %0" : "+m"(counter) : "er"(v));
#endif
}
template <std::memory_order Order = std::memory_order_relaxed, class T>
[[gnu::always_inline]] inline void owner_sub(T& counter, T v) noexcept {
  static_assert(sizeof(T) == 8);
#if defined(ARENASTAT_OWNER_ADD_ATOMIC_REF)
  std::atomic_ref<T> a(counter);
  a.store(a.load(std::memory_order_relaxed) - v, Order);
#else
  asm volatile("subq %1, %0" : "+m"(counter) : "er"(v));
#endif
}

// Per-thread table: account -> this thread's slot. The first fast_slots
// accounts a process creates are looked up with one load (fast, indexed by
// account::fast_index_; fast[fast_slots] stays null, the index of every later
// account, whose fast paths therefore always decline); later ones are in
// `data`, indexed by id - fast_slots.
inline constexpr std::uint32_t fast_slots = 64;
struct thread_slots {
  account_slot* fast[fast_slots + 1] = {};
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
  std::vector<std::string> tags_used;  // every tag declared for it (use_tag: each resource over it), in id order
};

class account {
 public:
  // Twice the peak's lag bound per thread: each thread holds back at most half
  // of it from the shared counter (hold_back), and the peak lags the true peak
  // by at most that per other thread holding unpublished growth, idle or not
  // (see sync_limit).
  static constexpr std::int64_t flush_threshold = 64 * 1024;

  // The account named `name`, created on first use. Thread-safe; never destroyed.
  // Throws std::invalid_argument for an empty name or one longer than
  // max_name_bytes (table.hpp).
  static account& get(std::string_view name);
  // Throws as get() would for a bad name, creating nothing (for resources
  // that check every argument before they register anything).
  static void check_name(std::string_view name);

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
    detail::owner_add(s.allocations, std::uint64_t{1});
    detail::owner_add(s.live_by_tag[tag], n);
    detail::owner_add<std::memory_order_release>(s.allocated, std::uint64_t{bytes});  // after the live bytes (slot: `freed`)
    s.unflushed += n;
    if (s.unflushed > hold_back) [[unlikely]] flush(s);
    const std::int64_t estimate = shared_.live.load(std::memory_order_relaxed) + s.unflushed;
    if (estimate > shared_.peak.load(std::memory_order_relaxed)) [[unlikely]] raise_peak(estimate);
    sync_limit(s);
  }

  [[gnu::always_inline]] inline void on_deallocate(std::size_t bytes, tag_id tag) noexcept {
    detail::account_slot* slot = local_slot();
    if (!slot) [[unlikely]] return on_deallocate_shared(bytes, tag);
    detail::account_slot& s = *slot;
    const auto n = static_cast<std::int64_t>(bytes);
    detail::owner_add(s.frees, std::uint64_t{1});
    detail::owner_add(s.freed, std::uint64_t{bytes});
    detail::owner_sub<std::memory_order_release>(s.live_by_tag[tag], n);  // after `freed` (slot: `freed`)
    s.unflushed -= n;
    if (s.unflushed < 0) [[unlikely]] flush(s);
  }

  // Fast-path-only variants for wrappers that keep every call out of their hot
  // path (tracking_resource): they record and return true when this thread's
  // slot exists and neither a flush nor a new peak is due; otherwise they
  // change nothing and return false, and the caller takes on_allocate /
  // on_deallocate in its slow path. A new peak cannot be due while this
  // thread's unflushed net stays within the slot's limit (peak - shared live
  // as of the owner's last slow path, at most hold_back), so they read
  // nothing but the slot.
  //
  // A wrapper may find the slot before it calls its upstream and record after
  // (the lookup's loads then overlap the upstream's work): thread_share(index)
  // with the account's fast_index(), which the wrapper may keep. A thread's
  // slot stays the same until the thread exits; a null share (no slot on this
  // thread yet, or an account past the first detail::fast_slots) declines.
  class thread_share {
   public:
    explicit operator bool() const noexcept { return slot_ != nullptr; }

   private:
    friend class account;
    explicit thread_share(detail::account_slot* s) noexcept : slot_(s) {}
    detail::account_slot* slot_;
  };
  std::uint32_t fast_index() const noexcept { return fast_index_; }
  [[gnu::always_inline]] static thread_share share_of_this_thread(std::uint32_t fast_index) noexcept {
    return thread_share(detail::tls_slots.fast[fast_index]);
  }

  [[gnu::always_inline]] static bool try_on_allocate(thread_share share, std::size_t bytes, tag_id tag) noexcept {
    detail::account_slot* s = share.slot_;
    if (!s) [[unlikely]] return false;
    const auto n = static_cast<std::int64_t>(bytes);
    const std::int64_t unflushed = s->unflushed + n;
    if (unflushed > detail::slot_load(s->limit)) [[unlikely]] return false;
    detail::owner_add(s->allocations, std::uint64_t{1});
    detail::owner_add(s->live_by_tag[tag], n);
    detail::owner_add<std::memory_order_release>(s->allocated, std::uint64_t{bytes});  // after the live bytes
    s->unflushed = unflushed;
    return true;
  }
  [[gnu::always_inline]] static bool try_on_deallocate(thread_share share, std::size_t bytes, tag_id tag) noexcept {
    detail::account_slot* s = share.slot_;
    if (!s) [[unlikely]] return false;
    const auto n = static_cast<std::int64_t>(bytes);
    if (s->unflushed < n) [[unlikely]] return false;  // would go negative: publish now
    detail::owner_add(s->frees, std::uint64_t{1});
    detail::owner_add(s->freed, std::uint64_t{bytes});
    detail::owner_sub<std::memory_order_release>(s->live_by_tag[tag], n);  // after `freed`
    s->unflushed -= n;
    return true;
  }
  [[gnu::always_inline]] bool try_on_allocate(std::size_t bytes, tag_id tag) noexcept {
    return try_on_allocate(share_of_this_thread(fast_index_), bytes, tag);
  }
  [[gnu::always_inline]] bool try_on_deallocate(std::size_t bytes, tag_id tag) noexcept {
    return try_on_deallocate(share_of_this_thread(fast_index_), bytes, tag);
  }

  // Sums every thread's slot. Exact when the threads feeding it are at rest.
  account_totals totals() const;
  std::int64_t live_bytes() const noexcept;
  // The peak, first raised to the live bytes of a moment during the call
  // when those are higher (see the top of this file). Takes the account's
  // slow-path mutex and reads every slot, as totals() does.
  std::uint64_t peak_bytes() const noexcept;

  // Sets the peak (and its breakdown) to the current live values.
  void reset_peak() noexcept;

  // Resources feeding this account now (tracking_resource, test_resource, an
  // arena_resource with an account): each calls attach_resource() when built
  // and detach_resource() when destroyed. The detach that leaves none checks
  // for leaks as ARENASTAT_LEAKS says (leaks.hpp). Out of line (leaks.cpp).
  void attach_resource() noexcept;
  void detach_resource() noexcept;
  std::uint32_t resource_count() const noexcept {
    return static_cast<std::uint32_t>(resources_.load(std::memory_order_relaxed));
  }

  account(const account&) = delete;
  account& operator=(const account&) = delete;

 private:
  friend struct account_registry;
  account(std::string name, std::uint32_t id);

  // This thread's slot; null once the thread's teardown has run (or memory ran out).
  detail::account_slot* local_slot() noexcept {
    if (detail::account_slot* s = detail::tls_slots.fast[fast_index_]) [[likely]] return s;
    return acquire_slot();
  }
  detail::account_slot* acquire_slot() noexcept;
  // Exact fallbacks with atomic read-modify-writes on a shared slot.
  void on_allocate_shared(std::size_t bytes, tag_id tag) noexcept;
  void on_deallocate_shared(std::size_t bytes, tag_id tag) noexcept;
  friend struct slot_table_owner;
  void release_slot(detail::account_slot& s) noexcept;
  void declare_tag(tag_id tag) noexcept;
  void flush(detail::account_slot& s) noexcept;
  // Net bytes a thread holds back from the shared counter. Half the lag bound:
  // the fast path checks the slot's limit, not the shared counters, so a
  // thread may miss what others published since its last slow path, and the
  // peak then lags by at most what the other threads hold back: (k - 1) *
  // hold_back for k threads, and with one thread nothing (its limit counts
  // every byte of its own).
  static constexpr std::int64_t hold_back = flush_threshold / 2;
  // After a slow-path allocation: the slot's limit is made min(hold_back,
  // peak - shared live), unless it already is (the CAS loop is out of line).
  [[gnu::always_inline]] void sync_limit(detail::account_slot& s) noexcept {
    const std::int64_t seen = std::atomic_ref(s.limit).load(std::memory_order_acquire);
    const std::int64_t room =
        shared_.peak.load(std::memory_order_relaxed) - shared_.live.load(std::memory_order_relaxed);
    if (seen != (room < hold_back ? room : hold_back)) [[unlikely]] store_limit(s, seen);
  }
  void store_limit(detail::account_slot& s, std::int64_t seen) noexcept;
  void raise_peak(std::int64_t estimate) noexcept;
  // Takes the slow-path mutex and copies the per-tag sums as the breakdown of
  // `peak`, unless a higher peak has been raised meanwhile.
  void record_peak_breakdown(std::int64_t peak) noexcept;
  // Under the slow-path mutex: raises the peak to a lower bound of the live
  // bytes at a moment during the call (exact at rest), with the breakdown of
  // the bytes live now, when that is higher. Every read of the peak does it.
  bool raise_peak_to_live() const noexcept;  // true when it raised the peak (and took its breakdown)
  // Under the slow-path mutex: the tags' bytes now, fitted to add up to
  // `peak`, become the breakdown of `peak`.
  void take_peak_breakdown(std::int64_t peak) const noexcept;

  std::string name_;
  std::uint32_t id_;
  std::uint32_t fast_index_;  // id_ if below detail::fast_slots, else fast_slots (always null)
  // Read on every allocation, written rarely (a flush, a new peak): one line.
  struct alignas(64) shared_counters {
    std::atomic<std::int64_t> live{0};  // sum of flushed nets
    std::atomic<std::int64_t> peak{0};
  } mutable shared_;  // mutable: a read of the peak may raise it (raise_peak_to_live)
  std::atomic<std::uint64_t> tags_used_{0};  // bit per declared tag
  // Low 32 bits: resources attached now (attach_resource - detach_resource);
  // high 32 bits: attachments ever, so that the last detacher can tell that
  // another resource was attached while it read the totals (leaks.cpp).
  std::atomic<std::uint64_t> resources_{0};
  std::atomic<bool> leak_reported_{false};   // reported when its last resource went; not again at exit
  friend struct leak_access;
  struct slow;   // mutex, slot list, breakdown at peak: slow paths only
  slow* slow_;
};

}  // namespace arenastat
