// The locks of sharded_cache's shards: detail::short_mutex (its critical
// sections are a lookup, an insert with an eviction: well under a
// microsecond), and below it the same lock with a version for readers that
// take none. A plain std::mutex goes to sleep at once, and on a hot Zipfian
// shard every collision then cost a sleep and a wake-up of tens of
// microseconds: two threads ran slower than one (docs/cache.md).
#pragma once
#include <atomic>
#include <cstdint>

#include "arenastat/detail/short_mutex.hpp"

namespace arenastat::detail {

using shard_mutex = short_mutex;

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
