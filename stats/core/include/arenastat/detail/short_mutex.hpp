// short_mutex: a lock for critical sections far shorter than a sleep and a
// wake-up (a table fold, a cache shard's lookup or insert: well under a
// microsecond). A waiter first spins a little, then sleeps on the lock word
// (C++20 atomic wait, a futex on Linux). Against std::mutex it also saves
// the calls into the C library: its uncontended lock and unlock are one
// compare-and-swap and one exchange, inline (a scope's fold, scope.cpp, ran
// 55 instructions in pthread_mutex_lock/unlock).
//
// Three states (the classic futex mutex): 0 free, 1 locked, 2 locked and a
// thread may be asleep, so unlock() wakes one only when the word was 2.
// Not recursive; no owner is recorded.
#pragma once
#include <atomic>
#include <cstdint>

namespace arenastat::detail {

class short_mutex {
 public:
  static constexpr int spin_limit = 256;  // pauses before sleeping (a few microseconds)

  void lock() noexcept {
    if (!try_lock()) [[unlikely]] wait_for_lock();
  }
  bool try_lock() noexcept {
    std::uint32_t expected = 0;
    return state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed);
  }
  void unlock() noexcept {
    if (state_.exchange(0, std::memory_order_release) == 2) state_.notify_one();
  }

 private:
  // The contended path, out of line.
  [[gnu::noinline]] void wait_for_lock() noexcept {
    for (int i = 0; i < spin_limit; ++i) {
      pause();
      if (state_.load(std::memory_order_relaxed) == 0 && try_lock()) return;
    }
    // Mark the lock contended and sleep until it is handed back.
    while (state_.exchange(2, std::memory_order_acquire) != 0) state_.wait(2, std::memory_order_relaxed);
  }
  static void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  std::atomic<std::uint32_t> state_{0};
};

}  // namespace arenastat::detail
