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

#include "table_load.hpp"

namespace {

using namespace arenastat::bench;

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
  return send_and_drain(fd, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
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
