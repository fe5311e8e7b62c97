// pause_meter: the measuring thread and the summary line.
#include "arenastat/pause_meter.hpp"

#include <cstdio>
#include <stdexcept>
#include <string>

namespace arenastat {

namespace {

std::string interval_text(std::chrono::nanoseconds interval) {
  const auto ns = interval.count();
  char buf[48];
  if (ns % 1'000'000 == 0)
    std::snprintf(buf, sizeof buf, "%lld ms", static_cast<long long>(ns / 1'000'000));
  else if (ns % 1'000 == 0)
    std::snprintf(buf, sizeof buf, "%lld us", static_cast<long long>(ns / 1'000));
  else
    std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  return buf;
}

}  // namespace

pause_meter::pause_meter(std::chrono::nanoseconds interval) : interval_(interval) {
  if (interval < std::chrono::microseconds(1) || interval > std::chrono::hours(1))
    throw std::invalid_argument("pause_meter: interval must be in 1 us .. 1 h, got " +
                                std::to_string(interval.count()) + " ns");
}

pause_meter::~pause_meter() { stop(); }

void pause_meter::start() {
  std::lock_guard guard(thread_mutex_);
  if (thread_.joinable()) throw std::logic_error("pause_meter::start: already running");
  {
    std::lock_guard lock(control_mutex_);
    stop_requested_ = false;
  }
  thread_ = std::thread([this] { run(); });
  running_.store(true, std::memory_order_release);
}

void pause_meter::stop() noexcept {
  std::lock_guard guard(thread_mutex_);
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(control_mutex_);
    stop_requested_ = true;
  }
  wake_.notify_all();
  thread_.join();
  running_.store(false, std::memory_order_release);
}

bool pause_meter::running() const noexcept { return running_.load(std::memory_order_acquire); }

void pause_meter::run() {
  using clock = std::chrono::steady_clock;
  std::unique_lock lock(control_mutex_);
  while (!stop_requested_) {
    const clock::time_point before = clock::now();
    if (wake_.wait_until(lock, before + interval_, [this] { return stop_requested_; })) break;
    const clock::duration slept = clock::now() - before;
    const auto late = std::chrono::duration_cast<std::chrono::nanoseconds>(slept - interval_);
    const std::uint64_t delay = late.count() > 0 ? static_cast<std::uint64_t>(late.count()) : 0;
    lock.unlock();
    {
      std::lock_guard samples(samples_mutex_);
      samples_.record_corrected(delay, static_cast<std::uint64_t>(interval_.count()));
    }
    lock.lock();
  }
}

histogram pause_meter::snapshot() const {
  std::lock_guard samples(samples_mutex_);
  return samples_;
}

void pause_meter::reset() noexcept {
  std::lock_guard samples(samples_mutex_);
  samples_.reset();
}

std::string pause_meter::summary() const { return pause_summary(snapshot(), interval_); }

std::string pause_summary(const histogram& ns, std::chrono::nanoseconds interval) {
  const auto ms = [](std::uint64_t v) { return static_cast<double>(v) / 1e6; };
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "pauses: %llu samples (%s interval) p50=%.3f ms p99=%.3f ms p99.9=%.3f ms max=%.3f ms",
                static_cast<unsigned long long>(ns.count()), interval_text(interval).c_str(),
                ms(ns.value_at_percentile(50)), ms(ns.value_at_percentile(99)),
                ms(ns.value_at_percentile(99.9)), ms(ns.max()));
  return buf;
}

}  // namespace arenastat
