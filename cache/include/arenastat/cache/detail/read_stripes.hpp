// What sharded_cache's lock-free readers (silent hits) need besides the
// shard's versioned lock:
//
//   read_stripes   where readers say they are inside a cache, and count the
//                  hits they served, each thread on a line of its own (up to
//                  `count` threads; more share lines, correctly), so that a
//                  reader writes no line another thread's reader writes. A
//                  reclaimer (clear(), which frees the shards' tables and
//                  pages) first shuts new readers out and waits for those
//                  inside to leave: nothing a reader may be reading is freed.
//   racy_copy, racy_load
//                  copy bytes, load a word, that a writer may be changing
//                  (the reader checks the shard's version before it trusts
//                  them).
//   ARENASTAT_RACY_READER
//                  marks the functions that read such memory: always inlined
//                  normally; under ThreadSanitizer out of line and not
//                  instrumented, since their reads race with writers by design
//                  (a sequence lock) and their results are used only when the
//                  version says no writer ran.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>

#if defined(__SANITIZE_THREAD__)
#define ARENASTAT_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ARENASTAT_UNDER_TSAN 1
#endif
#endif

#ifdef ARENASTAT_UNDER_TSAN
#define ARENASTAT_RACY_READER __attribute__((noinline, no_sanitize("thread")))
#else
#define ARENASTAT_RACY_READER __attribute__((always_inline))
#endif

namespace arenastat::detail {

// Copies n bytes that a writer may be changing meanwhile.
ARENASTAT_RACY_READER inline void racy_copy(void* to, const void* from, std::size_t n) noexcept {
#ifdef ARENASTAT_UNDER_TSAN
  // memcpy would be ThreadSanitizer's intercepted (and checked) memcpy.
  auto* d = static_cast<unsigned char*>(to);
  const auto* s = static_cast<const volatile unsigned char*>(from);
  for (std::size_t k = 0; k < n; ++k) d[k] = s[k];
#else
  __builtin_memcpy(to, from, n);
#endif
}

// Loads a word a writer may be storing meanwhile (relaxed; acquire: later
// reads see what was written before it was stored). The builtin, not
// std::atomic_ref: the writers store plainly, and under ThreadSanitizer
// atomic_ref's load would be an instrumented atomic racing with them.
template <class T>
ARENASTAT_RACY_READER inline T racy_load(const T& word) noexcept {
  return __atomic_load_n(&word, __ATOMIC_RELAXED);
}
template <class T>
ARENASTAT_RACY_READER inline T racy_load_acquire(const T& word) noexcept {
  return __atomic_load_n(&word, __ATOMIC_ACQUIRE);
}

// FoldHits: see fold() (a parameter so that a test can fold often).
template <std::uint64_t FoldHits = (std::uint64_t{1} << 46)>
class basic_read_stripes {
 public:
  static constexpr std::size_t count = 16;
  // A stripe's word: readers inside in the low 16 bits, hits served above.
  static constexpr unsigned reader_bits = 16;
  static constexpr std::uint64_t readers_mask = (std::uint64_t{1} << reader_bits) - 1;
  static constexpr std::uint64_t one_hit = std::uint64_t{1} << reader_bits;
  // A stripe's hit count is moved to folded_ when it reaches this (48 bits hold it).
  static constexpr std::uint64_t fold_hits = FoldHits;
  static_assert(FoldHits >= 1 && FoldHits <= (std::uint64_t{1} << 46));

  struct alignas(64) stripe {
    std::atomic<std::uint64_t> word{0};
  };

  // The calling thread's stripe, entered; nullptr when a reclaimer is at
  // work (take the lock instead).
  [[gnu::always_inline]] stripe* enter() noexcept {
    stripe& s = stripes_[thread_stripe()];
    s.word.fetch_add(1, std::memory_order_seq_cst);
    if (reclaimers_.value.load(std::memory_order_seq_cst) != 0) [[unlikely]] {
      s.word.fetch_sub(1, std::memory_order_release);
      return nullptr;
    }
    return &s;
  }
  // Leaves s; `hit`: the reader served a hit (counted in the same step).
  [[gnu::always_inline]] void leave(stripe& s, bool hit) noexcept {
    if (!hit) {
      s.word.fetch_sub(1, std::memory_order_release);
      return;
    }
    const std::uint64_t before = s.word.fetch_add(one_hit - 1, std::memory_order_release);
    if ((before >> reader_bits) + 1 == fold_hits) [[unlikely]] fold(s);
  }

  // From begin_reclaim() until end_reclaim() no reader enters; begin_reclaim
  // returns when every reader that had entered has left.
  void begin_reclaim() noexcept {
    reclaimers_.value.fetch_add(1, std::memory_order_seq_cst);
    for (stripe& s : stripes_)
      while ((s.word.load(std::memory_order_seq_cst) & readers_mask) != 0) std::this_thread::yield();
  }
  void end_reclaim() noexcept { reclaimers_.value.fetch_sub(1, std::memory_order_release); }

  // Hits served by readers so far (exact when no reader is inside). A fold
  // moves hits from a stripe to folded_ in two steps, between which the sum
  // would be off by fold_hits: the fold's own version (odd during a fold)
  // makes this read again until it saw none. Never less than an earlier
  // call's answer (the counts only grow).
  std::uint64_t hits() const noexcept {
    for (;;) {
      const std::uint64_t v = fold_version_.load(std::memory_order_acquire);
      // Acquire: a load that sees a fold's step sees its odd version below.
      std::uint64_t n = folded_.load(std::memory_order_acquire);
      for (const stripe& s : stripes_) n += s.word.load(std::memory_order_acquire) >> reader_bits;
      if ((v & 1) == 0 && fold_version_.load(std::memory_order_relaxed) == v) return n;
      std::this_thread::yield();
    }
  }

  // The stripe of the calling thread: threads take stripes in the order they
  // first read any cache (the first `count` threads one each).
  static std::size_t thread_stripe() noexcept {
    static std::atomic<std::size_t> next{0};
    thread_local const std::size_t mine = next.fetch_add(1, std::memory_order_relaxed) % count;
    return mine;
  }

 private:
  // Moves fold_hits hits of s to folded_ (once per 2^46 hits of a stripe;
  // one fold at a time).
  [[gnu::noinline]] void fold(stripe& s) noexcept {
    std::lock_guard lk(fold_mu_);
    fold_version_.fetch_add(1, std::memory_order_seq_cst);
    folded_.fetch_add(fold_hits, std::memory_order_seq_cst);
    s.word.fetch_sub(fold_hits << reader_bits, std::memory_order_seq_cst);
    fold_version_.fetch_add(1, std::memory_order_seq_cst);
  }

  stripe stripes_[count];
  struct alignas(64) {
    std::atomic<std::uint32_t> value{0};
  } reclaimers_;
  std::atomic<std::uint64_t> folded_{0};
  std::atomic<std::uint64_t> fold_version_{0};
  std::mutex fold_mu_;
};
using read_stripes = basic_read_stripes<>;

}  // namespace arenastat::detail
