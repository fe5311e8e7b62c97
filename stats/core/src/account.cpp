// Accounts: per-thread slots summed on read; the registry of all accounts.
#include "arenastat/account.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <array>
#include <bit>
#include <deque>
#include <mutex>
#include <new>
#include <stdexcept>

#include <boost/unordered/unordered_flat_map.hpp>

#include "table_internal.hpp"

namespace arenastat {

struct account::slow {
  std::mutex mutex;
  detail::account_slot* slots = nullptr;  // every slot ever made for this account
  detail::account_slot shared;            // for threads past their teardown (atomic RMW)
  std::int64_t at_peak[max_tags] = {};    // breakdown when the peak was at_peak_value
  std::int64_t at_peak_value = -1;
};

namespace {

struct transparent_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

using tag_sums = std::array<std::int64_t, max_tags>;

// The one per-tag sum: live bytes of each tag over every slot of an account
// (the caller holds its slow mutex); an account's live bytes are their total.
tag_sums sum_by_tag(const detail::account_slot* slots) noexcept {
  tag_sums sum{};
  for (const detail::account_slot* s = slots; s; s = s->next)
    for (std::size_t i = 0; i < max_tags; ++i) sum[i] += detail::slot_load(s->live_by_tag[i]);
  return sum;
}

std::int64_t total(const tag_sums& by_tag) noexcept {
  std::int64_t live = 0;
  for (const std::int64_t b : by_tag) live += b;
  return live;
}

// One only-growing counter of every slot (allocated or freed bytes), summed.
std::uint64_t sum_of(const detail::account_slot* slots, std::uint64_t detail::account_slot::*counter) noexcept {
  std::uint64_t sum = 0;
  for (const detail::account_slot* s = slots; s; s = s->next)
    sum += std::atomic_ref<const std::uint64_t>(s->*counter).load(std::memory_order_acquire);
  return sum;
}
std::uint64_t sum_allocated(const detail::account_slot* slots) noexcept {
  return sum_of(slots, &detail::account_slot::allocated);
}
std::uint64_t sum_freed(const detail::account_slot* slots) noexcept { return sum_of(slots, &detail::account_slot::freed); }

// A lower bound of an account's live bytes at one instant during the call,
// exactly its live bytes when the threads are at rest (the caller holds its
// slow mutex): every slot's allocated bytes are read first, then every slot's
// freed bytes. Both only grow, so the first sum is at most, and the second at
// least, what they were at the instant T between the two passes; and in every
// slot, at every instant, allocated - freed is at most its live bytes (an
// owner adds an allocation to `allocated` after its live bytes, and a free to
// `freed` before it takes it from them; release stores, or x86-64's program
// order, with acquire loads here). So the result is at most the live bytes
// at T, and a peak raised to it never exceeds the true peak.
std::int64_t live_lower_bound(const detail::account_slot* slots) noexcept {
  const std::uint64_t allocated = sum_allocated(slots);
  return static_cast<std::int64_t>(allocated - sum_freed(slots));
}

// An account's live bytes, and their breakdown by tag, read while its
// threads may be allocating and freeing (the caller holds its slow mutex).
// The per-slot sums are of values each written by its own thread: a slot
// read before a transfer of bytes between threads (allocated on one, freed on
// another) and another slot read after it count that transfer on one side
// only, so a reader delayed between two slots (preempted) once read 26 MB for
// a cache bounded at 4,000 bytes. So the slots are read between two readings
// of every slot's allocated and freed bytes (both only grow):
// * when neither changed, no allocation or free completed meanwhile, and the
//   sums are the live bytes of that moment (exact, as at rest, but for the
//   one operation each thread may be in the middle of);
// * else allocated minus freed, at every instant while the sums were read,
//   lies in [a1 - f2, a2 - f1] (first allocated a1 and freed f1, then a2 and
//   f2; see live_lower_bound), and the total is brought into that range (the
//   live bytes exceed allocated minus freed only by operations in progress);
//   the difference is taken from the tag whose sum is largest in magnitude,
//   the tag the bytes moving between threads belong to when one tag moves, so
//   that the breakdown adds up to the total.
// Up to live_read_attempts readings are made; the first quiet one is used,
// else the narrowest range: its width is what the threads allocated and freed
// while it was read (a preempted reading is wide, and not chosen over another).
struct live_read {
  tag_sums by_tag{};
  std::int64_t live = 0;
};

// Brings a breakdown summing to `sum` to sum to `target` instead: the
// difference goes to the tag whose bytes are largest in magnitude, or, when
// every tag reads 0, to the lowest tag declared for the account (`used`, its
// mask; tag 0 when none is), never to a tag the account does not have.
void fit_breakdown(tag_sums& by_tag, std::int64_t sum, std::int64_t target, std::uint64_t used) noexcept {
  if (sum == target) return;
  std::size_t largest = used != 0 ? static_cast<std::size_t>(std::countr_zero(used)) : 0;
  for (std::size_t i = 0; i < max_tags; ++i)
    if (std::abs(by_tag[i]) > std::abs(by_tag[largest])) largest = i;
  by_tag[largest] += target - sum;
}
constexpr int live_read_attempts = 8;

live_read read_live(const detail::account_slot* slots, std::uint64_t used) noexcept {
  live_read best;
  std::uint64_t best_width = UINT64_MAX;
  for (int attempt = 0; attempt < live_read_attempts; ++attempt) {
    const std::uint64_t a1 = sum_allocated(slots);
    const std::uint64_t f1 = sum_freed(slots);
    live_read r;
    r.by_tag = sum_by_tag(slots);
    r.live = total(r.by_tag);
    // The relaxed loads of the sums before the second reading (an acquire
    // load alone lets earlier loads pass it on a weakly ordered CPU).
    std::atomic_thread_fence(std::memory_order_acquire);
    const std::uint64_t a2 = sum_allocated(slots);
    const std::uint64_t f2 = sum_freed(slots);
    if (a1 == a2 && f1 == f2) return r;
    const auto low = static_cast<std::int64_t>(a1 - f2), high = static_cast<std::int64_t>(a2 - f1);
    const std::uint64_t width = (a2 - a1) + (f2 - f1);
    if (width < best_width) {
      best_width = width;
      const std::int64_t clamped = std::clamp(r.live, low, high);
      fit_breakdown(r.by_tag, r.live, clamped, used);
      r.live = clamped;
      best = r;
    }
  }
  return best;
}

}  // namespace

// The registry: name -> account. Never destroyed.
struct account_registry {
  std::mutex mutex;
  std::deque<account*> by_id;
  boost::unordered_flat_map<std::string_view, account*, transparent_hash, std::equal_to<>> by_name;

  static account_registry& get() {
    static account_registry* const r = new account_registry();
    return *r;
  }

  account& find_or_create(std::string_view name) {
    std::lock_guard lock(mutex);
    if (auto it = by_name.find(name); it != by_name.end()) return *it->second;
    auto* a = new account(std::string(name), static_cast<std::uint32_t>(by_id.size()));
    by_id.push_back(a);
    by_name.emplace(a->name(), a);
    return *a;
  }
};

// Gives this thread's slots back when it exits, after publishing their net.
struct slot_table_owner {
  bool registered = false;
  ~slot_table_owner() {
    detail::thread_slots& t = detail::tls_slots;
    for (detail::account_slot*& s : t.fast)
      if (s) {
        s->owner->release_slot(*s);
        s = nullptr;
      }
    for (std::uint32_t i = 0; i < t.size; ++i)
      if (detail::account_slot* s = t.data[i]) s->owner->release_slot(*s);
    delete[] t.data;
    t.data = nullptr;
    t.size = 0;
    t.dead = true;
  }
};

namespace {
thread_local slot_table_owner slot_owner;
}

account& account::get(std::string_view name) {
  check_name(name);
  return account_registry::get().find_or_create(name);
}

void account::check_name(std::string_view name) { detail::check_name(name, "arenastat::account"); }

account::account(std::string name, std::uint32_t id)
    : name_(std::move(name)),
      id_(id),
      fast_index_(id < detail::fast_slots ? id : detail::fast_slots),
      slow_(new slow()) {
  slow_->shared.owner = this;
  slow_->shared.in_use = true;
  slow_->shared.next = nullptr;
  slow_->slots = &slow_->shared;
}

detail::account_slot* account::acquire_slot() noexcept {
  detail::thread_slots& t = detail::tls_slots;
  if (t.dead) return nullptr;
  if (!slot_owner.registered) slot_owner.registered = true;  // odr-use: registers the teardown
  detail::account_slot** entry;
  if (id_ < detail::fast_slots) {
    entry = &t.fast[id_];
  } else {
    const std::uint32_t index = id_ - detail::fast_slots;
    if (index >= t.size) {
      const std::uint32_t size = std::max<std::uint32_t>({index + 1, t.size * 2, 8});
      auto* data = new (std::nothrow) detail::account_slot*[size]();
      if (!data) return nullptr;
      std::copy_n(t.data, t.size, data);
      delete[] t.data;
      t.data = data;
      t.size = size;
    }
    entry = &t.data[index];
    if (*entry) return *entry;  // accounts past the fast ones come here every time
  }
  std::lock_guard lock(slow_->mutex);
  detail::account_slot* s = slow_->slots;
  while (s && s->in_use) s = s->next;
  if (!s) {
    s = new (std::nothrow) detail::account_slot();
    if (!s) return nullptr;
    s->owner = this;
    s->next = slow_->slots;
    slow_->slots = s;
  }
  s->in_use = true;
  *entry = s;
  return s;
}

void account::release_slot(detail::account_slot& s) noexcept {
  flush(s);
  // Shared live never exceeds the peak (every published growth is checked),
  // which is what bounds the lag of the other threads' limits.
  const std::int64_t live = shared_.live.load(std::memory_order_relaxed);
  if (live > shared_.peak.load(std::memory_order_relaxed)) raise_peak(live);
  std::lock_guard lock(slow_->mutex);
  std::atomic_ref(s.limit).store(-1, std::memory_order_relaxed);  // the next owner looks first
  s.in_use = false;
}

// The limit protocol with reset_peak, which lowers the peak and then stores -1
// (release) into every slot's limit: a limit computed from a peak read before
// that store is either overwritten by it (the compare-exchange comes first)
// or its compare-exchange reads the -1 or later, synchronises with the reset
// and the peak read again below sees the lowered peak.
void account::store_limit(detail::account_slot& s, std::int64_t seen) noexcept {
  std::atomic_ref limit(s.limit);
  for (;;) {
    const std::int64_t peak = shared_.peak.load(std::memory_order_relaxed);
    const std::int64_t room = peak - shared_.live.load(std::memory_order_relaxed);
    const std::int64_t want = std::min(hold_back, room);
    if (limit.compare_exchange_strong(seen, want, std::memory_order_acq_rel, std::memory_order_acquire)) {
      if (shared_.peak.load(std::memory_order_relaxed) >= peak) return;  // not reset meanwhile
      seen = want;
    }
  }
}

void account::flush(detail::account_slot& s) noexcept {
  shared_.live.fetch_add(s.unflushed, std::memory_order_relaxed);
  s.unflushed = 0;
}

void account::on_allocate_shared(std::size_t bytes, tag_id tag) noexcept {
  detail::account_slot& s = slow_->shared;
  const auto n = static_cast<std::int64_t>(bytes);
  std::atomic_ref(s.allocations).fetch_add(1, std::memory_order_relaxed);
  std::atomic_ref(s.live_by_tag[tag]).fetch_add(n, std::memory_order_relaxed);
  std::atomic_ref(s.allocated).fetch_add(bytes, std::memory_order_release);  // after the live bytes
  const std::int64_t live = shared_.live.fetch_add(n, std::memory_order_relaxed) + n;
  if (live > shared_.peak.load(std::memory_order_relaxed)) raise_peak(live);
}

void account::on_deallocate_shared(std::size_t bytes, tag_id tag) noexcept {
  detail::account_slot& s = slow_->shared;
  const auto n = static_cast<std::int64_t>(bytes);
  std::atomic_ref(s.frees).fetch_add(1, std::memory_order_relaxed);
  std::atomic_ref(s.freed).fetch_add(bytes, std::memory_order_relaxed);
  std::atomic_ref(s.live_by_tag[tag]).fetch_sub(n, std::memory_order_release);  // after `freed`
  shared_.live.fetch_sub(n, std::memory_order_relaxed);
}

namespace {
// Bit tests on the tag mask. Not std::popcount: without -mpopcnt it is a call
// into libgcc (__popcountdi2), and raise_peak asks on every new peak.
inline bool one_tag(std::uint64_t used) noexcept { return used != 0 && (used & (used - 1)) == 0; }
inline bool several_tags(std::uint64_t used) noexcept { return (used & (used - 1)) != 0; }
}  // namespace

void account::declare_tag(tag_id tag) noexcept {
  const std::uint64_t bit = std::uint64_t{1} << tag;
  std::lock_guard lock(slow_->mutex);
  const std::uint64_t used = tags_used_.load(std::memory_order_relaxed);
  if (used & bit) return;
  if (!one_tag(used)) {
    tags_used_.store(used | bit, std::memory_order_relaxed);
    return;
  }
  // Until now one tag held every byte: pin the breakdown of the current peak
  // before a second tag makes it ambiguous.
  const auto pin = [&](std::int64_t peak) {
    if (slow_->at_peak_value == peak) return;
    std::fill(std::begin(slow_->at_peak), std::end(slow_->at_peak), 0);
    slow_->at_peak[std::countr_zero(used)] = peak;
    slow_->at_peak_value = peak;
  };
  pin(shared_.peak.load(std::memory_order_seq_cst));
  tags_used_.store(used | bit, std::memory_order_seq_cst);
  // A peak raised between the pin and the store by a thread that still saw
  // one tag took no breakdown (raise_peak): it too was that one tag's bytes.
  // Both sides store, then load the other's word (seq_cst), so one of them
  // sees the other: either raise_peak saw two tags and records its own
  // breakdown (under this lock, after it), or this load sees its peak.
  pin(shared_.peak.load(std::memory_order_seq_cst));
}

void account::raise_peak(std::int64_t estimate) noexcept {
  std::int64_t current = shared_.peak.load(std::memory_order_relaxed);
  while (estimate > current) {
    if (shared_.peak.compare_exchange_weak(current, estimate, std::memory_order_seq_cst,
                                           std::memory_order_relaxed)) {
      // With one tag the breakdown is implied; with several, copy it now.
      // (seq_cst: pairs with declare_tag's store then load; free on x86-64,
      // where the exchange is a locked instruction either way.)
      if (several_tags(tags_used_.load(std::memory_order_seq_cst))) record_peak_breakdown(estimate);
      return;
    }
  }
}

void account::record_peak_breakdown(std::int64_t peak) noexcept {
  std::lock_guard lock(slow_->mutex);
  if (shared_.peak.load(std::memory_order_relaxed) != peak) return;  // a higher peak takes its own snapshot
  // Bytes other threads hold but have not published yet (the peak's lag) are
  // in their slots: when the slots prove more live than the estimate, the
  // peak is raised to that and takes its breakdown there.
  if (raise_peak_to_live()) return;
  // Else the tags' bytes now, fitted to the peak (a transfer between threads
  // read on one side only makes their sum differ): a row's tags add up to it.
  take_peak_breakdown(peak);
}

void account::take_peak_breakdown(std::int64_t peak) const noexcept {
  tag_sums by_tag = sum_by_tag(slow_->slots);
  fit_breakdown(by_tag, total(by_tag), peak, tags_used_.load(std::memory_order_relaxed));
  std::copy(by_tag.begin(), by_tag.end(), slow_->at_peak);
  slow_->at_peak_value = peak;
}

bool account::raise_peak_to_live() const noexcept {
  const std::int64_t floor = live_lower_bound(slow_->slots);
  std::int64_t current = shared_.peak.load(std::memory_order_relaxed);
  while (floor > current) {
    if (shared_.peak.compare_exchange_weak(current, floor, std::memory_order_seq_cst, std::memory_order_relaxed)) {
      take_peak_breakdown(floor);  // the bytes live now (exact at rest, like the floor)
      return true;
    }
  }
  return false;
}

std::uint64_t account::peak_bytes() const noexcept {
  std::lock_guard lock(slow_->mutex);
  raise_peak_to_live();
  return static_cast<std::uint64_t>(shared_.peak.load(std::memory_order_relaxed));
}

std::int64_t account::live_bytes() const noexcept {
  std::lock_guard lock(slow_->mutex);
  return read_live(slow_->slots, tags_used_.load(std::memory_order_relaxed)).live;
}

account_totals account::totals() const {
  account_totals out;
  tag_sums by_tag;
  std::int64_t at_peak[max_tags] = {};
  std::uint64_t used = 0;
  {
    std::lock_guard lock(slow_->mutex);
    for (detail::account_slot* s = slow_->slots; s; s = s->next) {
      out.allocated_bytes += detail::slot_load(s->allocated);
      out.allocations += detail::slot_load(s->allocations);
      out.frees += detail::slot_load(s->frees);
    }
    raise_peak_to_live();
    const live_read now = read_live(slow_->slots, tags_used_.load(std::memory_order_relaxed));
    by_tag = now.by_tag;
    out.live_bytes = now.live;
    out.peak_bytes = static_cast<std::uint64_t>(shared_.peak.load(std::memory_order_relaxed));
    used = tags_used_.load(std::memory_order_relaxed);
    if (one_tag(used))
      at_peak[std::countr_zero(used)] = static_cast<std::int64_t>(out.peak_bytes);
    else if (used != 0)
      std::copy(std::begin(slow_->at_peak), std::end(slow_->at_peak), at_peak);
  }
  for (std::size_t i = 0; i < max_tags; ++i) {
    const auto tag = static_cast<tag_id>(i);
    if (by_tag[i] != 0) out.live_by_tag.push_back({std::string(tag_name(tag)), by_tag[i]});
    if (at_peak[i] != 0) out.at_peak.push_back({std::string(tag_name(tag)), at_peak[i]});
    if (used & (std::uint64_t{1} << i)) out.tags_used.emplace_back(tag_name(tag));
  }
  return out;
}

void account::reset_peak() noexcept {
  std::lock_guard lock(slow_->mutex);
  // The live bytes of a moment during the call (live_lower_bound): never
  // above the true peak from the reset on, whatever the threads are doing.
  const std::int64_t live = std::max<std::int64_t>(live_lower_bound(slow_->slots), 0);
  shared_.peak.store(live, std::memory_order_relaxed);
  take_peak_breakdown(live);
  // Every thread's fast path checked a limit below the old peak: look again.
  for (detail::account_slot* s = slow_->slots; s; s = s->next)
    std::atomic_ref(s->limit).store(-1, std::memory_order_release);
}

namespace detail {

std::vector<account*> all_accounts() {
  account_registry& r = account_registry::get();
  std::lock_guard lock(r.mutex);
  return {r.by_id.begin(), r.by_id.end()};
}

}  // namespace detail
}  // namespace arenastat
