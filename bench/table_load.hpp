// What bench_control and bench_metrics share: a large table to query, an
// application thread whose stalls are measured while the table is read from
// outside, and the small figures both print.
//
//   make_entries(5000, 5000);                  // 5,000 scope entries, 5,000 accounts
//   print_stalls("alone:", run_application(std::chrono::seconds(5)));
#pragma once
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <arenastat/arenastat.hpp>
#include <arenastat/histogram.hpp>

namespace arenastat::bench {

using clock_type = std::chrono::steady_clock;

// CPU time of the calling thread: unlike wall time, barely affected by other
// processes competing for the cores.
inline double thread_cpu_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Sends `request` on the connected socket fd, reads until the peer closes,
// closes fd; returns the bytes read (the answer's size).
inline std::size_t send_and_drain(int fd, const char* request) {
  [[maybe_unused]] const ssize_t sent = ::send(fd, request, std::strlen(request), MSG_NOSIGNAL);
  std::size_t total = 0;
  char buf[1 << 16];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) total += static_cast<std::size_t>(n);
  ::close(fd);
  return total;
}

// `scopes` scope entries (one group, "bench/scope/N", each with a peak of
// 64 + N % 512 bytes) and `accounts` accounts ("bench/account/N", 128 bytes
// live under tag "heap").
inline void make_entries(std::size_t scopes, std::size_t accounts) {
  tracking_resource scratch("bench/scratch");
  for (std::size_t i = 0; i < scopes; ++i) {
    scope s("bench/scope/" + std::to_string(i));
    void* p = scratch.allocate(64 + i % 512);
    scratch.deallocate(p, 64 + i % 512);
  }
  const tag_id heap = register_tag("heap");
  for (std::size_t i = 0; i < accounts; ++i) {
    account& a = account::get("bench/account/" + std::to_string(i));
    a.use_tag(heap);
    a.on_allocate(128, heap);
  }
}

struct stall_figures {
  histogram ns{1, 10'000'000'000ull, 3};
  std::uint64_t iterations = 0;
  std::uint64_t over_1ms = 0;
};

// Runs iterations for `length`, each timed by two clock reads: a scope (folded
// into the table at its end) with 8 allocations and frees of 256 bytes through
// a tracking_resource.
inline stall_figures run_application(std::chrono::seconds length) {
  static tracking_resource cache("bench/app");
  stall_figures f;
  void* blocks[8];
  const auto until = clock_type::now() + length;
  std::uint64_t i = 0;
  while (clock_type::now() < until) {
    const auto t0 = clock_type::now();
    {
      scope s(i % 2 == 0 ? "bench/app/even" : "bench/app/odd");
      for (void*& b : blocks) b = cache.allocate(256);
      for (void* b : blocks) cache.deallocate(b, 256);
    }
    const auto ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - t0).count());
    f.ns.record(ns);
    f.over_1ms += ns > 1'000'000;
    ++i;
  }
  f.iterations = i;
  return f;
}

inline void print_stalls(const char* label, const stall_figures& f) {
  std::printf("%-28s %9llu iterations  p50=%.4f ms  p99=%.4f ms  p99.9=%.4f ms  max=%.3f ms  over 1 ms: %llu\n",
              label, static_cast<unsigned long long>(f.iterations), f.ns.value_at_percentile(50) / 1e6,
              f.ns.value_at_percentile(99) / 1e6, f.ns.value_at_percentile(99.9) / 1e6, f.ns.max() / 1e6,
              static_cast<unsigned long long>(f.over_1ms));
}

}  // namespace arenastat::bench
