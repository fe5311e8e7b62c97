// shard_mutex: the lock of one sharded_cache shard. Its critical sections are
// short (a lookup, an insert with an eviction: well under a microsecond), so a
// waiter first spins a little, then sleeps on the lock word (C++20 atomic
// wait, a futex on Linux). A plain std::mutex goes to sleep at once, and on a
// hot Zipfian shard every collision then cost a sleep and a wake-up of tens
// of microseconds: two threads ran slower than one (docs/cache.md).
//
// Three states (the classic futex mutex): 0 free, 1 locked, 2 locked and a
// thread may be asleep, so unlock() wakes one only when the word was 2.
#pragma once
#include <atomic>
#include <cstdint>

namespace arenastat::detail {

class shard_mutex {
 public:
  static constexpr int spin_limit = 256;  // pauses before sleeping (a few microseconds)

  void lock() noexcept {
    if (try_lock()) [[likely]] return;
    for (int i = 0; i < spin_limit; ++i) {
      pause();
      if (state_.load(std::memory_order_relaxed) == 0 && try_lock()) return;
    }
    // Mark the lock contended and sleep until it is handed back.
    while (state_.exchange(2, std::memory_order_acquire) != 0) state_.wait(2, std::memory_order_relaxed);
  }
  bool try_lock() noexcept {
    std::uint32_t expected = 0;
    return state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed);
  }
  void unlock() noexcept {
    if (state_.exchange(0, std::memory_order_release) == 2) state_.notify_one();
  }

 private:
  static void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  std::atomic<std::uint32_t> state_{0};
};

// The fences of the sequence lock below. ThreadSanitizer does not model
// fences (GCC warns, -Wtsan); the reads they order are not instrumented
// either (read_stripes.hpp, ARENASTAT_RACY_READER), so nothing it checks
// depends on them.
#if defined(__SANITIZE_THREAD__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
#endif
inline void seq_fence_release() noexcept { __atomic_thread_fence(__ATOMIC_RELEASE); }
inline void seq_fence_acquire() noexcept { __atomic_thread_fence(__ATOMIC_ACQUIRE); }
#if defined(__SANITIZE_THREAD__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// A shard_mutex with a version, the writer side of a sequence lock: lock()
// and unlock() each add one, so the version is odd while a thread holds the
// lock and even when none does. A reader that takes no lock (sharded_cache's
// silent hits) calls read_begin() before its reads and read_unchanged() after
// them: an even version, unchanged, means no holder ran in between, so what
// it read is one consistent state. The version lives beside the lock word
// and is written only by the holder: a reader never writes this line.
class versioned_shard_mutex {
 public:
  void lock() noexcept {
    mu_.lock();
    enter_writer();
  }
  bool try_lock() noexcept {
    if (!mu_.try_lock()) return false;
    enter_writer();
    return true;
  }
  void unlock() noexcept {
    version_.store(version_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    mu_.unlock();
  }

  // The version before a reader's reads (odd: a holder is at work).
  std::uint64_t read_begin() const noexcept { return version_.load(std::memory_order_acquire); }
  // After the reads: true when no holder ran since read_begin() gave v.
  bool read_unchanged(std::uint64_t v) const noexcept {
    seq_fence_acquire();  // the reads above before the load below
    return version_.load(std::memory_order_relaxed) == v;
  }

 private:
  void enter_writer() noexcept {
    version_.store(version_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    seq_fence_release();  // the odd version before the holder's writes
  }

  shard_mutex mu_;
  std::atomic<std::uint64_t> version_{0};
};

}  // namespace arenastat::detail
