// pause_meter: how long the process stalls, in the manner of jHiccup.
//
//   arenastat::pause_meter meter;           // 1 ms interval
//   meter.start();
//   ... run the workload ...
//   meter.stop();
//   std::puts(meter.summary().c_str());     // p50/p99/p99.9/max of the stalls
//
// A background thread repeatedly waits for `interval` and records how much
// later than that it woke up (in ns), whatever the cause: scheduling, page
// faults, a lock, the allocator. Each sample is recorded with
// histogram::record_corrected(delay, interval), so a stall of 50 intervals
// also counts the 49 wake-ups it swallowed: the histogram answers "what
// share of operations running at this rate would have seen at least this
// stall", not "how long were the stalls".
#pragma once
#include <chrono>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "arenastat/histogram.hpp"

namespace arenastat {

class pause_meter {
 public:
  // Throws std::invalid_argument for an interval below 1 us or above 1 hour.
  explicit pause_meter(std::chrono::nanoseconds interval = std::chrono::milliseconds(1));
  ~pause_meter();  // stops the thread
  pause_meter(const pause_meter&) = delete;
  pause_meter& operator=(const pause_meter&) = delete;

  // Starts the measuring thread. Throws std::logic_error if it already runs
  // (std::system_error if the thread cannot be created).
  void start();
  // Stops and joins the thread; a no-op when not running. The samples stay.
  void stop() noexcept;
  bool running() const noexcept;

  // A copy of the samples so far (thread-safe, callable while running).
  histogram snapshot() const;
  // Forgets the samples (thread-safe, callable while running).
  void reset() noexcept;

  // One line, e.g.
  // "pauses: 1000 samples (1 ms interval) p50=0.061 ms p99=0.210 ms p99.9=1.020 ms max=2.310 ms"
  std::string summary() const;

  std::chrono::nanoseconds interval() const noexcept { return interval_; }

 private:
  void run();

  const std::chrono::nanoseconds interval_;
  mutable std::mutex samples_mutex_;  // guards samples_
  histogram samples_;
  std::mutex control_mutex_;          // guards stop_requested_
  std::condition_variable wake_;
  bool stop_requested_ = false;
  std::atomic<bool> running_{false};
  std::mutex thread_mutex_;           // serialises start/stop
  std::thread thread_;                // guarded by thread_mutex_
};

// Formats a summary line for any histogram of nanoseconds (what summary() prints).
std::string pause_summary(const histogram& ns, std::chrono::nanoseconds interval);

}  // namespace arenastat
