// load_waits: which thread waits for which load, across every sharded_cache
// of the process, so that a wait that would close a cycle is refused instead
// of sleeping forever: A's loader waits for a load run by B while B's loader,
// directly or through more threads' loads, in this cache or another one,
// waits for A's.
//
// A waiting thread waits for one load at a time, so the waits form chains
// from a thread to the thread running the load it waits for; a new wait is
// recorded only when the chain from that load's thread does not lead back to
// the waiter, so the chains never hold a cycle and a walk along one ends.
// A load that ends is no longer waited for: its thread removes the waits for
// it (flight_done) before it hands its result over, so a waiter that has not
// woken up yet does not make the loading thread's next wait look like a cycle.
//
// Only waits take the lock (one mutex for the process): a load nobody waits
// for never touches it. The record of a wait allocates on the global heap
// (outside the cache's account) when the list grows.
#pragma once
#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

namespace arenastat::detail {

class load_waits {
 public:
  // Records that `waiter` waits for `load` (an identity: the flight's
  // address), run by the thread `loader`, unless the wait would close a cycle
  // (the chain of waits from `loader` leads to `waiter`): then records
  // nothing and returns false. May throw std::bad_alloc (nothing recorded).
  bool begin_wait(std::thread::id waiter, const void* load, std::thread::id loader) {
    std::lock_guard lock(mutex_);
    for (std::thread::id t = loader;;) {
      if (t == waiter) return false;
      const auto it = wait_of(t);
      if (it == waits_.end()) break;
      t = it->loader;
    }
    waits_.push_back({waiter, load, loader});
    return true;
  }
  // `waiter` stopped waiting (its wait may already be gone: flight_done).
  void end_wait(std::thread::id waiter) noexcept {
    std::lock_guard lock(mutex_);
    const auto it = wait_of(waiter);
    if (it == waits_.end()) return;
    *it = waits_.back();
    waits_.pop_back();
  }
  // `load` ended: nobody waits for it any more.
  void flight_done(const void* load) noexcept {
    std::lock_guard lock(mutex_);
    std::erase_if(waits_, [&](const wait& w) { return w.load == load; });
  }
  // The waits recorded now (tests).
  std::size_t size() {
    std::lock_guard lock(mutex_);
    return waits_.size();
  }

 private:
  struct wait {
    std::thread::id waiter;
    const void* load;
    std::thread::id loader;
  };
  std::vector<wait>::iterator wait_of(std::thread::id t) noexcept {
    return std::find_if(waits_.begin(), waits_.end(), [&](const wait& w) { return w.waiter == t; });
  }
  std::mutex mutex_;
  std::vector<wait> waits_;
};

// The process's one record (never destroyed: a cache in static storage may
// wait during exit).
inline load_waits& process_load_waits() {
  static load_waits* const w = new load_waits();
  return *w;
}

}  // namespace arenastat::detail
