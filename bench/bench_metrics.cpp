// bench_metrics: what a Prometheus scrape of /metrics costs the target.
//
//   bench_metrics [SECONDS]   (default 5 per phase)
//
// With a 10,000-entry table (5,000 scope entries in one group, 5,000 accounts:
// the accounts make the series, about 6 each):
// 1. One scrape over HTTP (the in-process endpoint, metrics_http.hpp): wall
//    time, the CPU time of rendering it (snapshot + exposition, the work the
//    server thread does), its size, and the bytes it adds to VmHWM (the first
//    scrape, then 20 more).
// 2. Stalls of an application thread that runs scopes allocating through a
//    tracking_resource, alone, then while a client scrapes every 100 ms (as a
//    Prometheus server with scrape_interval: 100ms would).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <arenastat/arenastat.hpp>
#include <arenastat/histogram.hpp>
#include <arenastat/metrics_http.hpp>
#include <arenastat/prometheus.hpp>

namespace {

using clock_type = std::chrono::steady_clock;

double thread_cpu_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// GET /metrics from 127.0.0.1:port; returns the bytes received (0 on failure).
std::size_t scrape(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return 0;
  }
  static const char request[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  [[maybe_unused]] const ssize_t sent = ::send(fd, request, sizeof request - 1, MSG_NOSIGNAL);
  std::size_t total = 0;
  char buf[1 << 16];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) total += static_cast<std::size_t>(n);
  ::close(fd);
  return total;
}

void make_entries(std::size_t scopes, std::size_t accounts) {
  arenastat::tracking_resource scratch("bench/scratch");
  for (std::size_t i = 0; i < scopes; ++i) {
    arenastat::scope s("bench/scope/" + std::to_string(i));
    void* p = scratch.allocate(64 + i % 512);
    scratch.deallocate(p, 64 + i % 512);
  }
  const arenastat::tag_id heap = arenastat::register_tag("heap");
  for (std::size_t i = 0; i < accounts; ++i) {
    arenastat::account& a = arenastat::account::get("bench/account/" + std::to_string(i));
    a.use_tag(heap);
    a.on_allocate(128, heap);
  }
}

struct stall_figures {
  arenastat::histogram ns{1, 10'000'000'000ull, 3};
  std::uint64_t iterations = 0;
};

// One iteration: a scope with 8 tracked allocations and frees, timed.
stall_figures run_application(std::chrono::seconds length) {
  static arenastat::tracking_resource cache("bench/app");
  stall_figures f;
  void* blocks[8];
  const auto until = clock_type::now() + length;
  std::uint64_t i = 0;
  while (clock_type::now() < until) {
    const auto t0 = clock_type::now();
    {
      arenastat::scope s(i % 2 == 0 ? "bench/app/even" : "bench/app/odd");
      for (void*& b : blocks) b = cache.allocate(256);
      for (void* b : blocks) cache.deallocate(b, 256);
    }
    f.ns.record(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - t0).count()));
    ++i;
  }
  f.iterations = i;
  return f;
}

void print_stalls(const char* label, const stall_figures& f) {
  std::printf("%-28s %9llu iterations  p50=%.4f ms  p99=%.4f ms  p99.9=%.4f ms  max=%.3f ms\n", label,
              static_cast<unsigned long long>(f.iterations), f.ns.value_at_percentile(50) / 1e6,
              f.ns.value_at_percentile(99) / 1e6, f.ns.value_at_percentile(99.9) / 1e6, f.ns.max() / 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? std::atoi(argv[1]) : 5;
  if (seconds <= 0) {
    std::fprintf(stderr, "usage: bench_metrics [SECONDS > 0]\n");
    return 2;
  }
  const int port = arenastat::metrics_http::start("127.0.0.1:0");
  make_entries(5000, 5000);
  std::printf("entries in the table: %zu (5,000 scope entries in one group, 5,000 accounts)\n",
              arenastat::scope_entry_count() + arenastat::account_entry_count());

  // 1. One scrape.
  const std::uint64_t hwm0 = arenastat::read_process_info().hwm_bytes;
  std::size_t bytes = scrape(port);
  const std::uint64_t hwm1 = arenastat::read_process_info().hwm_bytes;
  std::vector<double> wall;
  for (int i = 0; i < 20; ++i) {
    const auto t0 = clock_type::now();
    bytes = scrape(port);
    wall.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
  }
  const std::uint64_t hwm2 = arenastat::read_process_info().hwm_bytes;
  std::vector<double> cpu;
  std::size_t series = 0;
  for (int i = 0; i < 10; ++i) {
    const double t0 = thread_cpu_ms();
    const std::string text = arenastat::metrics({});
    cpu.push_back(thread_cpu_ms() - t0);
    series = 0;
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t eol = text.find('\n', at);
      series += text[at] != '#';
      at = eol + 1;
    }
  }
  std::printf("scrape: %zu bytes, %zu series; wall median %.1f ms; CPU of the exposition (snapshot + render, "
              "median of 10) %.1f ms\n",
              bytes, series, median(wall), median(cpu));
  std::printf("VmHWM: +%llu KiB by the first scrape, +%llu KiB by 20 more\n",
              static_cast<unsigned long long>((hwm1 - hwm0) / 1024),
              static_cast<unsigned long long>((hwm2 - hwm1) / 1024));

  // 2. Stalls, alone and while scraped every 100 ms.
  const auto length = std::chrono::seconds(seconds);
  print_stalls("application alone:", run_application(length));
  std::atomic<bool> scraping{true};
  std::atomic<std::uint64_t> scrapes{0};
  std::thread client([&] {
    auto next = clock_type::now();
    while (scraping.load(std::memory_order_relaxed)) {
      if (scrape(port) > 0) scrapes.fetch_add(1, std::memory_order_relaxed);
      next += std::chrono::milliseconds(100);
      std::this_thread::sleep_until(next);
    }
  });
  const stall_figures under = run_application(length);
  scraping = false;
  client.join();
  print_stalls("application scraped /100 ms:", under);
  std::printf("scrapes meanwhile: %llu\n", static_cast<unsigned long long>(scrapes.load()));
  arenastat::metrics_http::stop();
  return 0;
}
