// tinylfu_policy: W-TinyLFU (Einziger, Friedman, Manes), as in Caffeine but
// with the window sized by miniature simulation (AdaptiveWindow).
//
//   window     CLOCK, WindowPercent % of the capacity (at least 1 entry) at
//              the start; with AdaptiveWindow the window tuner
//              (detail/window_tuner.hpp) moves it between 1, 20, 50 and 99%:
//              every new entry enters here, so a burst of new keys is absorbed.
//   probation  LRU, main segment entries seen once in main.
//   protected  CLOCK, up to 80% of the main segment: entries hit in probation.
//
// A hit in probation promotes the entry to the front of protected. A hit in
// the window or in protected only sets the entry's reference bit (no list
// update: a hit touches no neighbour; the hottest keys live in the window and
// in protected). The back of a CLOCK list gives second chances: a back entry
// with the bit set has it cleared and moves to the front, until the back is an
// entry without it. That entry is the one that leaves the list: protected's,
// when protected is over its share, is demoted to the front of probation; the
// window's, when a new entry needs the window's room, moves to the front of
// probation, or is the candidate of a duel.
//
// Admission (the scan resistance): when the cache is full and the window holds
// its share, the window's back entry after its second chances (the candidate,
// the entry that would leave the window) duels the main segment: it is
// admitted only if its count exceeds the count of probation's back entry (the
// entry LRU order would evict next; the back of protected when probation is
// empty: AdmitAgainstBack) by more than admission_margin (1). The candidate's
// count is the sketch's estimate, which collisions raise, while the back's
// is the entry's own and exact: on loops, where every key is as frequent as
// the others, a candidate one count above the back won by noise and churned
// the main segment (docs/cache.md, "admission margin"). An admitted candidate
// enters probation and the victim evicted is the least frequent of the VictimSample
// (8) entries at the back of probation (the backmost on ties); a rejected
// candidate is evicted. (Comparing the candidate with the least of the sample,
// as before, admitted it whenever one of 8 counts lagged: on loops, where
// every key is as frequent as the others, that churned the main segment; the
// candidate's count, from the sketch, is also raised by collisions while the
// cached entries' counts are exact. docs/cache.md has the measurements.)
// When the window holds less than its share (after erasures, or after the
// window tuner grew it) the back of the
// main segment is evicted without a duel.
// Most candidates lose (docs/cache.md has the share, measured with the earlier
// duel against the sample's least), so the bar (the back's
// count) is remembered: while no entry has left probation (nor entered
// one no larger than the sample) and the sketch has not been halved, counts
// only rose, so a candidate not above that floor + admission_margin loses
// without a new sample.
// Same decisions, less work (a test compares against a cache without it).
//
// Frequency: every access (get, put, get_or_load; hit or miss; once per call)
// is counted, up to 15, once the cache holds its table (from its first
// insertion, and again after clear() from the next one: the sketch is
// allocated with the table). An access to a key the cache does not hold goes to a
// count-min sketch of 4-bit counters in an array beside the table
// (frequency_sketch.hpp: 64 counters per 8 table slots, about 10.7 per entry;
// conservative update by default). A cached entry keeps its own 4-bit
// count in its state byte: it starts at the sketch's estimate when the entry
// is inserted, a hit adds to it (so a hit writes nothing but its node: when
// every access went to counters in the table lines, writing the line was a
// measurable share of each operation; docs/cache.md), and an entry that leaves raises
// its key's sketch counters to it. Duels compare entries' counts, read from
// the nodes the lists already load. Every SampleFactor x capacity counted
// increments, all counters and counts are halved (a pass over the sketch and
// the nodes). Counting cached keys apart also keeps hot keys from inflating
// the sketch counters they share a block with, which raised the benchmark's
// hit rate (docs/cache.md). An entry whose count did not rise while cached
// hands nothing back: its key's counters are still at least its count (they
// were when it entered, and since then they only rose or were halved with
// it), so the hand-back would change nothing; most evicted entries (one-time
// keys) leave without touching the sketch.
// Defaults (window 1%, sample 20x, conservative, victim sample 8) come from
// the simulations in docs/cache.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "arenastat/cache/detail/hashed_key.hpp"
#include "arenastat/cache/detail/index_list.hpp"
#include "arenastat/cache/detail/read_stripes.hpp"
#include "arenastat/cache/detail/window_tuner.hpp"
#include "arenastat/cache/frequency_sketch.hpp"

namespace arenastat {

template <unsigned WindowPercent, unsigned SampleFactor, bool Conservative, unsigned VictimSample, bool SampleFloor,
          bool SkipStillHandBack, bool AdaptiveWindow, bool AdmitAgainstBack, bool SharedTuner>
struct basic_tinylfu;

namespace detail {
struct no_window_tuner {
  static constexpr std::size_t bytes_for(std::size_t) noexcept { return 0; }
};
}  // namespace detail

enum class tinylfu_segment : std::uint32_t { window = 0, probation = 1, protected_ = 2 };

template <class Links, unsigned WindowPercent = 1, unsigned SampleFactor = 20, bool Conservative = true,
          unsigned VictimSample = 8, bool SampleFloor = true, bool SkipStillHandBack = true, bool AdaptiveWindow = true,
          bool AdmitAgainstBack = true, bool SharedTuner = false>
class tinylfu_policy {
  static_assert(WindowPercent < 100 && VictimSample >= 1 && SampleFactor >= 1);

 public:
  // The window before the tuner's first change (the shared tuner publishes it
  // first, too).
  static constexpr unsigned initial_window_percent = WindowPercent;
  // A candidate is admitted only with a count above the bar by more than this
  // (see the top of this file).
  static constexpr std::uint32_t admission_margin = 1;
  // The duel's rule, for the sampled bar and for the remembered floor (a
  // lower bound of it; -1 when none is known).
  static constexpr bool admits(std::int64_t candidate_freq, std::int64_t bar) noexcept {
    return candidate_freq > bar + admission_margin;
  }
  // The policy the ghosts run: this one with a fixed window.
  using ghost_selector = basic_tinylfu<1, SampleFactor, Conservative, VictimSample, SampleFloor, SkipStillHandBack,
                                       false, AdmitAgainstBack, false>;
  using shared_tuner_type = detail::shared_window_tuner<ghost_selector>;

  explicit tinylfu_policy(Links& links) noexcept : links_(&links) {}

  tinylfu_policy(const tinylfu_policy&) = delete;
  tinylfu_policy& operator=(const tinylfu_policy&) = delete;

  void configure(std::size_t capacity) noexcept {
    capacity_ = capacity;
    set_window(capacity * WindowPercent / 100);
    sketch_.configure(capacity);
  }
  // The sketch's counters and the window tuner's ghosts, allocated by the
  // cache with its table (the ghosts only from window_tuner_min_capacity entries).
  static constexpr std::size_t memory_bytes(std::size_t capacity, std::uint32_t slot_count) noexcept {
    const std::size_t tuner = tuner_type::bytes_for(capacity);
    return tuner == 0 ? sketch_bytes(slot_count) : tuner_offset(slot_count) + tuner;
  }
  static constexpr std::size_t memory_align = frequency_sketch<SampleFactor, Conservative>::align;
  // `memory`: memory_bytes(capacity, slot_count) bytes, capacity as configured.
  void attach_memory(void* memory, std::uint32_t slot_count) noexcept {
    sketch_.attach(memory, slot_count);
    if constexpr (owns_tuner)
      if (tuner_type::bytes_for(capacity_) != 0)
        tuner_.attach(static_cast<unsigned char*>(memory) + tuner_offset(slot_count), capacity_, WindowPercent);
  }
  void detach_memory() noexcept {
    sketch_.detach();
    if constexpr (owns_tuner) tuner_.detach();
  }
  // Sets the window's share (the tuner does; ghost caches use it for their
  // fixed window). Entries move when they next leave.
  void set_window_entries(std::size_t w) noexcept { set_window(w); }

  // Accesses: a key not in the cache is counted in the sketch; a cached
  // entry in its own counter (in the node its lookup loaded), so a hit
  // touches nothing but the table slot and the node.
  void record(detail::hashed_key k) noexcept {
    if (sketch_.increment(k.h32())) [[unlikely]] halve_entries();
    if constexpr (AdaptiveWindow) tune(k);
  }

  // The entry's state byte is read once and written at most once (a second
  // read right after a byte store would wait for the store to complete).
  // k: the entry's hash (for the window tuner). Inlined into the caller's
  // hit path, and short: the rare probation hit is out of line (promote).
  // Consecutive lookups are independent, so the core overlaps one's cache
  // misses with the next one's as far as its reorder window reaches: fewer
  // instructions per hit, more lookups in flight (docs/cache.md, "Where the
  // time goes").
  [[gnu::always_inline]] void on_hit(std::uint32_t i, detail::hashed_key k, bool counted) noexcept {
    const std::uint32_t s = links_->state(i);
    const bool adds = counted && (s & count_mask) != count_mask;  // saturated at 15
    const std::uint32_t t = adds ? (s + count_one) | raised_bit : s;
    if ((s & segment_mask) == static_cast<std::uint32_t>(tinylfu_segment::probation)) [[unlikely]] {
      promote(i, t);
    } else {
      // Written only when it changes: a hot entry's node stays clean (and,
      // in a sharded cache, shared between the cores reading it).
      if ((t | reference_bit) != s) links_->set_state(i, t | reference_bit);
    }
    if (adds && sketch_.count_addition()) [[unlikely]] halve_entries();
    if constexpr (AdaptiveWindow)
      if (counted) tune(k);
    (void)k;
  }

  // Whether a counted hit on an entry of state s would change nothing, so
  // that sharded_cache may serve it without the shard's lock (a silent hit):
  // the count saturated, the reference bit set, the entry not in probation
  // (no promotion), and no tuner to tell (the key outside the shared tuner's
  // sample, its percent already applied; a tuner of the policy's own sees
  // every access). Then on_hit(i, k, true) writes nothing. Called while a
  // writer may be changing the policy: it only reads, and its answer is used
  // only if the shard's version says no writer ran.
  ARENASTAT_RACY_READER bool hit_is_silent(std::uint32_t s, detail::hashed_key k) const noexcept {
    constexpr std::uint32_t set = count_mask | reference_bit;
    if ((s & set) != set || (s & segment_mask) == static_cast<std::uint32_t>(tinylfu_segment::probation)) return false;
    if constexpr (SharedTuner) {
      const shared_tuner_type* t = shared_;
      if (t != nullptr && (t->sampled(k) || t->percent() != applied_percent_)) return false;
    } else if constexpr (AdaptiveWindow) {
      return false;
    }
    (void)k;
    return true;
  }

  // A probation hit: the entry moves to the front of protected (state t,
  // its count already raised), and protected's overflow is demoted: one
  // entry, or two while protected drains after the window grew (a bounded
  // step: the window tuner may shrink protected's share by most of the
  // capacity at once).
  [[gnu::noinline]] void promote(std::uint32_t i, std::uint32_t t) noexcept {
    leave_probation(i);
    push_front(protected_, i, t, tinylfu_segment::protected_);
    if (protected_.size > protected_max_) demote_from_protected();
    if (protected_.size > protected_max_) [[unlikely]] demote_from_protected();
  }

  // The new entry's counter starts at the sketch's estimate of its key.
  void on_insert(std::uint32_t i, std::uint32_t h) noexcept {
    // One entry leaves the full window; two while it drains after the
    // window tuner shrank it (bounded steps, as for protected above).
    if (window_.size >= window_max_ && window_.size != 0) enter_probation(leave_clock(window_));
    if (window_.size > window_max_) [[unlikely]] enter_probation(leave_clock(window_));
    links_->set_state(i, sketch_.frequency(h) << count_shift);
    put_front(window_, i, tinylfu_segment::window);
    // The back of the window is the next duel's likely candidate: start
    // loading its node now (about six operations ahead at 1M entries).
    if (window_.tail != detail::nil_index) links_->prefetch(window_.tail);
  }

  // The entry the next eviction most likely removes: the candidate (most
  // lose their duel), once the window is full; usually the window's back
  // (unless it was hit since), whose node was prefetched when it became the
  // back.
  std::uint32_t likely_victim() const noexcept {
    return window_.size >= window_max_ ? window_.tail : detail::nil_index;
  }
  // Starts loading what the policy keeps for hash h (its sketch counters).
  void prefetch(std::uint32_t h) const noexcept { sketch_.prefetch(h); }

  // The leaving entry hands its count back to the sketch (if it rose).
  void on_erase(std::uint32_t i, std::uint32_t h) noexcept {
    if (!SkipStillHandBack || (links_->state(i) & raised_bit)) sketch_.raise(h, entry_frequency(i));
    else ++hand_backs_skipped_;
    const tinylfu_segment s = segment(i);
    if (s == tinylfu_segment::probation) leave_probation(i);
    else detail::list_unlink(*links_, list_of(s), i);
  }

  // Every hash is computed before anything changes (the hash may throw).
  detail::victim choose_victim() {
    if (window_.size < window_max_ || window_.size == 0) {
      // The main segment holds more than its share (entries of the window
      // were erased): evict from it directly.
      const std::uint32_t back = main_back();
      const std::uint32_t v = back != detail::nil_index ? back : window_.tail;
      return {v, hash_of(v)};
    }
    // The candidate: the entry the window's second chances leave at its
    // back (found without changing anything; given after the hash).
    const std::uint32_t candidate = clock_back(window_);
    const std::uint32_t candidate_freq = entry_frequency(candidate);
    // The candidate leaves without a duel when there is no main segment (a
    // tiny capacity), or when it is not above the bar remembered from an
    // earlier duel (floor_, a floor of the present one) + admission_margin.
    const bool no_main = main_back() == detail::nil_index;
    if (no_main || (SampleFloor && !admits(candidate_freq, floor_))) {
      const std::uint32_t candidate_hash = hash_of(candidate);  // may throw: nothing changed yet
      settle_clock(window_);
      if (!no_main) ++floor_decisions_;
      return {candidate, candidate_hash};
    }
    std::uint32_t victim_freq = 0, back_freq = 0;
    const std::uint32_t v = sample_victim(victim_freq, back_freq);
    const std::uint32_t bar = AdmitAgainstBack ? back_freq : victim_freq;
    const bool admit = admits(candidate_freq, bar);
    const std::uint32_t leaving_hash = hash_of(admit ? v : candidate);  // may throw: nothing changed yet
    settle_clock(window_);
    if (probation_.tail != detail::nil_index) floor_ = static_cast<std::int32_t>(bar);  // sampled from probation
    if (admit) {
      detail::list_unlink(*links_, window_, candidate);
      enter_probation(candidate);
      return {v, leaving_hash};
    }
    return {candidate, leaving_hash};
  }

  void clear() noexcept {
    configure(capacity_);
    if constexpr (owns_tuner) tuner_.clear();
    window_adjustments_ = 0;
    applied_percent_ = WindowPercent;
    window_ = {};
    probation_ = {};
    protected_ = {};
    floor_ = -1;
    floor_decisions_ = 0;
    hand_backs_skipped_ = 0;
    sketch_.clear();
  }

  // Introspection (tests, diagnostics).
  tinylfu_segment segment(std::uint32_t i) const noexcept {
    return static_cast<tinylfu_segment>(links_->state(i) & segment_mask);
  }
  std::size_t window_max() const noexcept { return window_max_; }
  // SharedTuner: the cache's tuner, before any access (sharded_cache).
  void share_tuner(shared_tuner_type* t) noexcept
    requires SharedTuner
  {
    shared_ = t;
  }
  // Window resizes made by the window tuner.
  std::uint64_t window_adjustments() const noexcept { return window_adjustments_; }
  const auto& tuner() const noexcept { return tuner_; }
  // Duels decided by the remembered sample floor (no sample taken).
  std::uint64_t floor_decisions() const noexcept { return floor_decisions_; }
  // Leaving entries whose count had not risen (no hand-back needed).
  std::uint64_t hand_backs_skipped() const noexcept { return hand_backs_skipped_; }
  std::size_t protected_max() const noexcept { return protected_max_; }
  // The sketch's estimate for a key (the count of a key not in the cache).
  std::uint32_t frequency(std::uint32_t h) const noexcept { return sketch_.frequency(h); }
  // The count an entry keeps while cached.
  std::uint32_t entry_frequency(std::uint32_t i) const noexcept {
    return (links_->state(i) & count_mask) >> count_shift;
  }
  const frequency_sketch<SampleFactor, Conservative>& sketch() const noexcept { return sketch_; }
  template <class F>
  void for_each(tinylfu_segment s, F&& f) const {
    const detail::index_list& l = const_cast<tinylfu_policy*>(this)->list_of(s);
    for (std::uint32_t i = l.head; i != detail::nil_index; i = links_->next(i)) f(i);
  }

 private:
  // An entry's 8 bits of state: segment (2 bits), reference bit, count (4
  // bits), and whether the count rose since the entry was inserted.
  static constexpr std::uint32_t segment_mask = 3u;
  static constexpr std::uint32_t reference_bit = 4u;
  static constexpr std::uint32_t count_shift = 3;
  static constexpr std::uint32_t count_one = 1u << count_shift;
  static constexpr std::uint32_t count_mask = 15u << count_shift;
  static constexpr std::uint32_t raised_bit = 128u;

  // The window tuner (AdaptiveWindow): ghosts of this policy with fixed
  // windows, over a sample of the keys; an epoch's end may move the window.
  // Caches under detail::window_tuner_min_capacity entries keep the fixed
  // window. With SharedTuner (a sharded_cache's shards) the tuner is the
  // cache's, shared by every shard (share_tuner()), and this policy follows
  // its choice.
  static constexpr bool owns_tuner = AdaptiveWindow && !SharedTuner;
  using tuner_type = std::conditional_t<owns_tuner, detail::window_tuner<ghost_selector>, detail::no_window_tuner>;
  static constexpr std::size_t sketch_bytes(std::uint32_t slot_count) noexcept {
    return frequency_sketch<SampleFactor, Conservative>::bytes_for(slot_count);
  }
  // The ghosts follow the sketch at the next multiple of 64 bytes.
  static constexpr std::size_t tuner_offset(std::uint32_t slot_count) noexcept {
    return (sketch_bytes(slot_count) + 63) & ~std::size_t{63};
  }
  void tune(detail::hashed_key k) noexcept {
    if constexpr (SharedTuner) {
      if (shared_ == nullptr) return;
      if (shared_->sampled(k)) [[unlikely]] shared_->observe(k);
      const unsigned percent = shared_->percent();
      if (percent != applied_percent_) [[unlikely]] apply_percent(percent);
    } else {
      if (const unsigned percent = tuner_.observe(k)) [[unlikely]] apply_percent(percent);
    }
  }
  [[gnu::noinline]] void apply_percent(unsigned percent) noexcept {
    applied_percent_ = percent;
    set_window(capacity_ * percent / 100);
    ++window_adjustments_;
  }
  // The window's share (at least 1 entry, at most capacity - 1 when the
  // capacity allows a main segment) and protected's (80% of the rest).
  // Entries move when they next leave: the window's overflow at the next
  // insertion, protected's at the next promotion.
  void set_window(std::size_t w) noexcept {
    const std::size_t most = capacity_ > 1 ? capacity_ - 1 : 1;
    window_max_ = w < 1 ? 1 : w > most ? most : w;
    protected_max_ = (capacity_ - window_max_) * 80 / 100;
  }

  // The sketch has just halved its counters: the entries' counts follow, and
  // the remembered floor no longer holds.
  [[gnu::noinline]] void halve_entries() noexcept {
    floor_ = -1;
    links_->transform_states([](std::uint32_t s) { return (s & ~count_mask) | (((s & count_mask) >> 1) & count_mask); });
  }

  // CLOCK over a list (the window, protected): a back entry referenced since
  // it was last looked at gets a second chance at the front (bit cleared),
  // until the back is unreferenced; returns that back entry (the list is not
  // empty).
  std::uint32_t settle_clock(detail::index_list& l) noexcept {
    std::uint32_t d = l.tail;
    std::uint32_t s = links_->state(d);
    while (s & reference_bit) {
      // The next back's state is read before the move stores into its link
      // (a read right after that store would wait for it).
      const std::uint32_t p = links_->prev(d);
      const std::uint32_t ps = p != detail::nil_index ? links_->state(p) : 0;
      links_->set_state(d, s & ~reference_bit);
      detail::list_move_to_front(*links_, l, d);
      if (p == detail::nil_index) break;  // a one-entry list: d stays, unreferenced now
      d = p;
      s = ps;
    }
    return d;
  }
  // The entry settle_clock(l) would return, found without changing anything:
  // the backmost unreferenced entry, or the back when all are referenced
  // (a full turn clears every bit and leaves the order as it was).
  std::uint32_t clock_back(const detail::index_list& l) const noexcept {
    for (std::uint32_t d = l.tail; d != detail::nil_index; d = links_->prev(d))
      if (!(links_->state(d) & reference_bit)) return d;
    return l.tail;
  }
  // Unlinks and returns the entry that leaves a CLOCK list.
  std::uint32_t leave_clock(detail::index_list& l) noexcept {
    const std::uint32_t d = settle_clock(l);
    detail::list_unlink(*links_, l, d);
    return d;
  }
  // Protected over its share: its leaving entry goes to the front of probation.
  void demote_from_protected() noexcept { enter_probation(leave_clock(protected_)); }

  // The floor of the sample's frequencies holds while the sample keeps its
  // members: they change only when an entry leaves probation, or when one
  // enters while probation holds no more than the sample.
  void leave_probation(std::uint32_t i) noexcept {
    detail::list_unlink(*links_, probation_, i);
    floor_ = -1;
  }
  void enter_probation(std::uint32_t i) noexcept {
    put_front(probation_, i, tinylfu_segment::probation);
    if (probation_.size <= VictimSample) floor_ = -1;
  }

  std::uint32_t main_back() const noexcept {
    return probation_.tail != detail::nil_index ? probation_.tail : protected_.tail;
  }
  // The least frequent of the VictimSample entries at the back of probation
  // (the backmost on ties); the back of protected when probation is empty.
  // The counts are in the nodes the walk loads: no hash, no table access.
  std::uint32_t sample_victim(std::uint32_t& freq, std::uint32_t& back_freq) const noexcept {
    const std::uint32_t back = main_back();
    std::uint32_t best = back;
    freq = back_freq = entry_frequency(back);
    if (back != probation_.tail) return best;
    unsigned n = 1;
    for (std::uint32_t i = links_->prev(back); i != detail::nil_index && n < VictimSample; i = links_->prev(i), ++n) {
      const std::uint32_t f = entry_frequency(i);
      const bool lower = f < freq;
      best = lower ? i : best;
      freq = lower ? f : freq;
    }
    return best;
  }
  std::uint32_t hash_of(std::uint32_t i) const { return links_->hash(i); }
  detail::index_list& list_of(tinylfu_segment s) noexcept {
    switch (s) {
      case tinylfu_segment::window: return window_;
      case tinylfu_segment::probation: return probation_;
      default: return protected_;
    }
  }
  void put_front(detail::index_list& l, std::uint32_t i, tinylfu_segment s) noexcept {
    push_front(l, i, links_->state(i), s);
  }
  // The same, for an entry whose state is `state` (already read).
  void push_front(detail::index_list& l, std::uint32_t i, std::uint32_t state, tinylfu_segment s) noexcept {
    // The count stays; the reference bit is cleared.
    links_->set_state(i, (state & (count_mask | raised_bit)) | static_cast<std::uint32_t>(s));
    detail::list_push_front(*links_, l, i);
  }

  Links* links_;
  detail::index_list window_, probation_, protected_;
  std::size_t capacity_ = 0;
  std::size_t window_max_ = 1;
  std::size_t protected_max_ = 0;
  std::uint64_t window_adjustments_ = 0;
  unsigned applied_percent_ = WindowPercent;
  [[no_unique_address]] tuner_type tuner_;
  shared_tuner_type* shared_ = nullptr;
  // The bar of the last duel that sampled probation (the back's count, or
  // the least of the sample without AdmitAgainstBack; -1: none, or the
  // sample changed or counts were halved since). Counts only rise between
  // halvings, so while it holds the present bar is at least this: a
  // candidate not above it + admission_margin loses its duel without a new
  // sample. In the
  // benchmark most duels are lost and most of those are decided this way
  // (docs/cache.md has the shares).
  std::int32_t floor_ = -1;
  std::uint64_t floor_decisions_ = 0;
  std::uint64_t hand_backs_skipped_ = 0;
  frequency_sketch<SampleFactor, Conservative> sketch_;
};

// Policy selector for basic_cache; the parameters exist for simulations.
// SampleFloor and SkipStillHandBack only save work (a test compares them
// against a cache without them).
template <unsigned WindowPercent = 1, unsigned SampleFactor = 20, bool Conservative = true, unsigned VictimSample = 8,
          bool SampleFloor = true, bool SkipStillHandBack = true, bool AdaptiveWindow = true,
          bool AdmitAgainstBack = true, bool SharedTuner = false>
struct basic_tinylfu {
  static constexpr bool keeps_state = true;  // segment, reference bit, count, count-rose bit per entry
  // The policy of a sharded_cache's shards: one tuner for the whole cache,
  // which every shard follows (a tuner per shard would hold its ghosts once
  // per shard: 256 x 91 KiB at 1M entries on a 2-thread machine).
  using shard_selector = basic_tinylfu<WindowPercent, SampleFactor, Conservative, VictimSample, SampleFloor,
                                       SkipStillHandBack, AdaptiveWindow, AdmitAgainstBack, AdaptiveWindow>;
  template <class Links>
  using policy =
      tinylfu_policy<Links, WindowPercent, SampleFactor, Conservative, VictimSample, SampleFloor, SkipStillHandBack,
                     AdaptiveWindow, AdmitAgainstBack, SharedTuner>;
  static constexpr std::string_view name = "tinylfu";
};
using tinylfu = basic_tinylfu<>;
// W-TinyLFU with its window fixed at 1%: no window tuner, so no ghost memory
// (for small caches, where the ghosts cost more per entry: docs/cache.md).
using tinylfu_fixed_window = basic_tinylfu<1, 20, true, 8, true, true, false>;

}  // namespace arenastat
