// window_tuner: chooses W-TinyLFU's window size by miniature simulation.
//
// Four ghost caches (ghost_cache.hpp) replay the same policy with the window
// at 1%, 20%, 50% and 99% of their capacity, over a spatial sample of the
// keys: a key is in the sample when the low half of its 64-bit hash (not the
// table's half, which the ghosts key their entries by), XORed with a salt and
// multiplied by an odd constant, falls below a threshold, so the ghosts see
// every access of rate R of the keys and nothing of the others, and a ghost
// of R x capacity entries behaves like the whole cache at that window
// (Waldspurger et al., USENIX ATC 2017).
// R = ghost_entries / capacity. Caches up to 1024 entries simulate every
// key; above, ghost_entries = capacity / 16, at least 1024 and at most 4096
// (ghost_entries()). A larger sample decides more alike whichever keys the
// hash puts in it: over ten salts, a cache of 100,000 entries on
// scarab-recs ranged over 72.1-75.6% with 1024-entry ghosts and 74.4-75.6%
// with 4096 (docs/cache.md). The divisor bounds what the ghosts cost per
// cache entry from 16,384 entries on: at most 5.72 bytes (about what
// 1024-entry ghosts cost at 16,384 entries; below, the 1024-entry floor
// costs more: 9.3 bytes at 10,000 entries, 91 at 1000).
//
// Each ghost is compared with the ghost of the present choice, access by
// access: it won an access it hit and the choice missed, lost the reverse.
// Every epoch (4 x ghost_entries sampled accesses) the epoch's wins and
// losses are added to sums scaled by 1/sqrt(2) first (an epoch's counts weigh
// half two epochs later); the ghost of the largest lead (wins - losses)
// becomes the choice if that lead is beyond noise: more than 3 x the square
// root of wins + losses, three standard deviations of the difference when the
// windows are equal (a paired test, McNemar's: only the accesses on which
// they disagree count), and worth 1.5 points of hit rate (min_gain) over the
// sampled accesses made once the ghosts were full (before, every window
// admits every key, and they tell nothing apart). On a
// Zipfian workload the windows differ by less than that, and flapping between
// them cost hits and moved entries for nothing.
// After a change the sums start over. The cache starts at its own window
// (1% by default), compared first with the ghost of the nearest window.
//
// Why these four: on the workloads of docs/cache.md the best fixed window
// was 1% on loops and frequency-biased traces, 99% (about LRU) on
// recency-biased ones, and 20 to 80% on a few mixed ones; docs/cache.md has
// the table and the measurements behind the sample size, the epoch and the
// decay (the choice of this design over Caffeine's hill climbing too).
//
// Cost: a sampled access costs one access per ghost; memory is
// 4 x bytes_for(ghost_entries) (23,296 bytes per ghost at 1024 entries,
// 92,928 at 4096), allocated by the cache with its table.
#pragma once
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "arenastat/cache/detail/ghost_cache.hpp"
#include "arenastat/cache/detail/hashed_key.hpp"
#include "arenastat/cache/detail/shard_mutex.hpp"

namespace arenastat::detail {

// Caches under this many entries keep their window fixed (no ghosts).
inline constexpr std::size_t window_tuner_min_capacity = 64;

template <class GhostSelector>
class window_tuner {
 public:
  static constexpr std::size_t ghost_count = 4;
  static constexpr std::array<unsigned, ghost_count> window_percents() noexcept { return {1, 20, 50, 99}; }
  // Ghost size: the whole capacity up to min_ghost_entries, then
  // capacity / ghost_divisor within [min_ghost_entries, max_ghost_entries].
  static constexpr std::size_t min_ghost_entries = 1024, max_ghost_entries = 4096, ghost_divisor = 16;
  static constexpr std::size_t epoch_factor = 4;  // sampled accesses per epoch, per ghost entry
  // At each epoch's end the sums keep keep_num / keep_den of their weight,
  // 1/sqrt(2): an epoch's counts weigh half two epochs later.
  static constexpr std::uint64_t keep_num = 181, keep_den = 256;
  // A change needs a lead of more than this many standard deviations of the
  // paired difference under equal windows.
  static constexpr double significance = 3;
  // The smallest lead worth a change, as a share of the accesses weighed
  // (those made while the ghosts were full): 1.5 points of hit rate (a change
  // moves entries, and a smaller gain is within what the ghosts' small size
  // gets wrong; docs/cache.md has the values measured).
  static constexpr double min_gain = 0.015;
  using ghost = ghost_cache<GhostSelector>;
  static constexpr std::size_t align = ghost::align;

  static constexpr std::uint32_t ghost_entries(std::size_t capacity) noexcept {
    if (capacity <= min_ghost_entries) return static_cast<std::uint32_t>(capacity);
    return static_cast<std::uint32_t>(std::clamp(capacity / ghost_divisor, min_ghost_entries, max_ghost_entries));
  }
  // 0 under window_tuner_min_capacity: no tuner.
  static constexpr std::size_t bytes_for(std::size_t capacity) noexcept {
    return capacity < window_tuner_min_capacity ? 0 : ghost_count * ghost::bytes_for(ghost_entries(capacity));
  }
  static constexpr std::uint32_t sample_multiplier = 0x9E3779B1u;  // odd: a bijection of the hashes
  // XORed in first: mix_hash() is multiplicative, so key 0 hashes to 0, and 0
  // times any multiplier stays 0, below every threshold. Without the salt the
  // sample always held key 0, the most popular key of an unscrambled Zipfian
  // workload: on bench_cache it made 5.6% of all accesses sampled instead of
  // 0.1% (each one four ghost accesses, and in a sharded cache a try of the
  // tuner's lock that both threads kept taking from each other). With it,
  // 0.29% there (4096-entry ghosts, 0.41% of the keys).
  static constexpr std::uint32_t sample_salt = 0x2545F491u;
  // The sample's bound for a capacity: ((h ^ sample_salt) * sample_multiplier) < it.
  static constexpr std::uint64_t threshold_for(std::size_t capacity) noexcept {
    const std::uint32_t m = ghost_entries(capacity);
    return m == capacity ? (std::uint64_t{1} << 32) : (std::uint64_t{m} << 32) / capacity;
  }

  // Starts over bytes_for(capacity) bytes at `memory` (64-byte aligned).
  // start_percent: the cache's window until the first change; the ghost it
  // is compared with first is the one of the nearest window.
  void attach(void* memory, std::size_t capacity, unsigned start_percent = 1) noexcept {
    start_ = nearest(start_percent);
    const std::uint32_t m = ghost_entries(capacity);
    auto* base = static_cast<unsigned char*>(memory);
    for (std::size_t g = 0; g < ghost_count; ++g) {
      const std::size_t w = std::size_t{m} * window_percents()[g] / 100;
      ghosts_[g].attach(base + g * ghost::bytes_for(m), m, w);
    }
    // Sampled: ((h ^ salt) * odd) < threshold_, a share m / capacity of the hashes.
    threshold_ = threshold_for(capacity);
    epoch_ = epoch_factor * m;
    reset_scores();
  }
  void detach() noexcept {
    for (auto& g : ghosts_) g.detach();
    threshold_ = 0;
  }
  void clear() noexcept {
    for (auto& g : ghosts_) g.clear();
    reset_scores();
  }

  // A counted access to the key of hash h. Returns the window percent the
  // cache should now use when an epoch ended and chose a different one, else 0.
  unsigned observe(hashed_key k) noexcept {
    if (!sampled(k)) [[likely]] return 0;
    return observe_sampled(k.h32());
  }
  // The same for a key known to be sampled (out of line: the ghosts' work).
  [[gnu::noinline]] unsigned observe_sampled(std::uint32_t h) noexcept {
    // Until the ghosts are full every window admits every key, so these
    // accesses say nothing of the windows: the gain floor does not count them.
    // (The ghosts fill together: each inserts every key it misses.)
    if (ghosts_[0].size() == ghosts_[0].entries()) ++warm_;
    std::array<bool, ghost_count> hit;
    for (std::size_t g = 0; g < ghost_count; ++g) hit[g] = ghosts_[g].access(h);
    for (std::size_t g = 0; g < ghost_count; ++g) {
      wins_[g] += hit[g] && !hit[chosen_] ? 1 : 0;
      losses_[g] += !hit[g] && hit[chosen_] ? 1 : 0;
    }
    if (++sampled_ < epoch_) return 0;
    return end_epoch();
  }

  // The window percent chosen last (before any change: the window nearest
  // the start percent, whose ghost the others are compared with).
  unsigned chosen_percent() const noexcept { return window_percents()[chosen_]; }
  std::uint64_t epochs() const noexcept { return epochs_; }
  // The decayed count of sampled accesses the gain floor weighs (tests).
  std::uint64_t weighed() const noexcept { return weight_; }
  const ghost& ghost_at(std::size_t g) const noexcept { return ghosts_[g]; }
  // The decision rule, on the decayed sums of one ghost against the choice:
  // accesses it won and lost, of `weight` sampled accesses weighed. Only the
  // accesses on which the two disagree tell them apart (a paired comparison,
  // McNemar's): a change needs a lead of more than `significance` standard
  // deviations of that difference under equal windows, and worth a change:
  // more than min_gain of the accesses weighed.
  static bool worth_change(std::uint64_t won, std::uint64_t lost, std::uint64_t weight) noexcept {
    if (won <= lost) return false;
    const double lead = static_cast<double>(won - lost);
    return lead > significance * std::sqrt(static_cast<double>(won + lost)) &&
           lead > min_gain * static_cast<double>(weight);
  }
  // A sum carried into the next epoch.
  static constexpr std::uint64_t decay(std::uint64_t sum) noexcept { return sum * keep_num / keep_den; }

  // Whether key k is in the sample of bound `threshold` (threshold_for()).
  static bool in_sample(hashed_key k, std::uint64_t threshold) noexcept {
    return std::uint64_t{(k.low() ^ sample_salt) * sample_multiplier} < threshold;
  }
  // Whether key k is in this tuner's sample (none before attach()).
  bool sampled(hashed_key k) const noexcept { return in_sample(k, threshold_); }

 private:
  unsigned end_epoch() noexcept {
    weight_ = decay(weight_) + warm_;
    sampled_ = warm_ = 0;
    ++epochs_;
    std::size_t best = chosen_;
    std::int64_t best_lead = 0;
    for (std::size_t g = 0; g < ghost_count; ++g) {
      won_[g] = decay(won_[g]) + wins_[g];
      lost_[g] = decay(lost_[g]) + losses_[g];
      wins_[g] = losses_[g] = 0;
      const std::int64_t lead = static_cast<std::int64_t>(won_[g]) - static_cast<std::int64_t>(lost_[g]);
      if (lead > best_lead) {
        best = g;
        best_lead = lead;
      }
    }
    if (best == chosen_ || !worth_change(won_[best], lost_[best], weight_)) return 0;
    chosen_ = best;
    won_ = lost_ = {};  // the counts were against the previous choice
    weight_ = 0;
    return window_percents()[best];
  }
  static std::size_t nearest(unsigned percent) noexcept {
    const auto distance = [percent](std::size_t i) {
      const unsigned w = window_percents()[i];
      return w > percent ? w - percent : percent - w;
    };
    std::size_t best = 0;
    for (std::size_t g = 1; g < ghost_count; ++g)
      if (distance(g) < distance(best)) best = g;
    return best;
  }
  void reset_scores() noexcept {
    won_ = lost_ = wins_ = losses_ = {};
    weight_ = 0;
    sampled_ = warm_ = 0;
    chosen_ = start_;
    epochs_ = 0;
  }

  std::array<ghost, ghost_count> ghosts_;
  // Per ghost, against the present choice: accesses it hit and the choice
  // missed (wins_) and the reverse (losses_) in this epoch; won_/lost_ the
  // same summed over epochs, decayed at each epoch's end.
  std::array<std::uint64_t, ghost_count> wins_{}, losses_{}, won_{}, lost_{};
  std::uint64_t threshold_ = 0, epoch_ = 0, sampled_ = 0, epochs_ = 0;
  // The sampled accesses the sums weigh, made while the ghosts were full
  // (decayed with the sums at each epoch's end; warm_: this epoch's).
  std::uint64_t weight_ = 0, warm_ = 0;
  std::size_t chosen_ = 0, start_ = 0;
};

}  // namespace arenastat::detail

namespace arenastat::detail {

// One window tuner for every shard of a sharded_cache. Shards under their own
// locks report accesses to sampled keys here (sampled() needs no lock: its
// bound is set before the shards run and kept on a line of its own, beside the
// published percent); the ghosts are updated under this tuner's own lock, for
// sampled keys only (a share ghost_entries / capacity of them), and the chosen
// percent is published for every shard to follow (percent(), a relaxed load
// of a line written once per change). The lock is only tried: an access that
// finds it held is not simulated (the ghosts then miss a few accesses under
// contention, and no thread ever waits for the tuner). A shard's lock may be
// held while this one is tried, never the other way.
template <class GhostSelector>
class shared_window_tuner {
 public:
  using tuner_type = window_tuner<GhostSelector>;
  static constexpr std::size_t align = tuner_type::align;
  static constexpr std::size_t bytes_for(std::size_t capacity) noexcept { return tuner_type::bytes_for(capacity); }

  // Before any shard runs; `capacity`: the whole cache's.
  // start_percent: the shards' window until the first change.
  void attach(void* memory, std::size_t capacity, unsigned start_percent) noexcept {
    tuner_.attach(memory, capacity, start_percent);
    start_percent_ = start_percent;
    published_.threshold = tuner_type::threshold_for(capacity);
    published_.percent.store(start_percent, std::memory_order_relaxed);
  }
  void detach() noexcept {
    tuner_.detach();
    published_.threshold = 0;
  }

  bool sampled(hashed_key k) const noexcept { return tuner_type::in_sample(k, published_.threshold); }
  // A counted access to a sampled key (skipped when another thread holds the lock).
  void observe(hashed_key k) noexcept {
    if (!mu_.try_lock()) return;
    std::lock_guard lk(mu_, std::adopt_lock);
    if (const unsigned p = tuner_.observe_sampled(k.h32())) published_.percent.store(p, std::memory_order_relaxed);
  }
  unsigned percent() const noexcept { return published_.percent.load(std::memory_order_relaxed); }
  void clear() noexcept {
    std::lock_guard lk(mu_);
    tuner_.clear();
    published_.percent.store(start_percent_, std::memory_order_relaxed);
  }
  std::uint64_t epochs() const noexcept {
    std::lock_guard lk(mu_);
    return tuner_.epochs();
  }

 private:
  mutable shard_mutex mu_;
  tuner_type tuner_;
  unsigned start_percent_ = 1;
  // Read by every shard on every access, written once per change: apart from
  // the ghosts' counters, which sampled accesses write.
  struct alignas(64) read_mostly {
    std::atomic<unsigned> percent{0};
    std::uint64_t threshold = 0;
  } published_;
};

}  // namespace arenastat::detail
