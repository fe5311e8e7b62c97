// bench_control: the two performance figures of the control socket.
//
//   bench_control [SECONDS]   (default 5 per phase)
//
// 1. Answer time of `stats --json` with 10,000 entries (5,000 scope entries,
//    5,000 accounts): over a raw socket from this process, and as a run of the
//    real `arenastat <pid> stats --json` binary (fork, exec, connect, print).
//    Goal: at most 50 ms (round two).
// 2. Stalls of an application thread that runs scopes allocating through a
//    tracking_resource, each iteration timed, first alone, then while a
//    client queries `stats --json` in a loop. Goal: p99.9 under 1 ms.
#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
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
#include <arenastat/control.hpp>
#include <arenastat/histogram.hpp>

extern char** environ;

namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

// CPU time of the calling thread: unlike wall time, barely affected by other
// processes competing for the cores.
double thread_cpu_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Connects, sends `request`, reads until the server closes; returns the bytes read.
std::size_t query(const std::string& socket, const char* request) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, socket.c_str(), sizeof a.sun_path - 1);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return 0;
  }
  [[maybe_unused]] const ssize_t sent = ::send(fd, request, std::strlen(request), MSG_NOSIGNAL);
  std::size_t total = 0;
  char buf[1 << 16];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) total += static_cast<std::size_t>(n);
  ::close(fd);
  return total;
}

// Runs the real CLI with its output sent to /dev/null; returns its exit status.
int run_cli(const std::string& pid, const std::string& socket_dir) {
  posix_spawn_file_actions_t fa;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  std::string dir_env = "ARENASTAT_SOCKET_DIR=" + socket_dir;
  char* envp[] = {dir_env.data(), nullptr};
  std::string prog = ARENASTAT_BENCH_CLI, a1 = pid, a2 = "stats", a3 = "--json";
  char* argv[] = {prog.data(), a1.data(), a2.data(), a3.data(), nullptr};
  pid_t child = -1;
  const int rc = ::posix_spawn(&child, prog.c_str(), &fa, nullptr, argv, envp);
  ::posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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
  std::uint64_t over_1ms = 0;
};

// One iteration: a scope (folded into the table at its end) with 8 tracked
// allocations and frees. Timed with two clock reads.
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
    const auto ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - t0).count());
    f.ns.record(ns);
    f.over_1ms += ns > 1'000'000;
    ++i;
  }
  f.iterations = i;
  return f;
}

void print_stalls(const char* label, const stall_figures& f) {
  std::printf("%-26s %9llu iterations  p50=%.4f ms  p99=%.4f ms  p99.9=%.4f ms  max=%.3f ms  over 1 ms: %llu\n",
              label, static_cast<unsigned long long>(f.iterations), f.ns.value_at_percentile(50) / 1e6,
              f.ns.value_at_percentile(99) / 1e6, f.ns.value_at_percentile(99.9) / 1e6, f.ns.max() / 1e6,
              static_cast<unsigned long long>(f.over_1ms));
}

}  // namespace

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? std::atoi(argv[1]) : 5;
  if (seconds <= 0) {
    std::fprintf(stderr, "usage: bench_control [SECONDS > 0]\n");
    return 2;
  }
  char dir_template[] = "/tmp/arenastat-bench-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string dir = dir_template;
  arenastat::control::options opts;
  opts.socket_dir = dir;
  const std::string socket = arenastat::control::start(opts);

  make_entries(5000, 5000);
  const std::size_t entries = arenastat::scope_entry_count() + arenastat::account_entry_count();
  std::printf("entries in the table: %zu\n", entries);

  // 1. Answer time.
  std::vector<double> raw, cli;
  std::size_t bytes = 0;
  for (int i = 0; i < 20; ++i) {
    const auto t0 = clock_type::now();
    bytes = query(socket, "stats --json\n");
    raw.push_back(ms_since(t0));
  }
  const std::string pid = std::to_string(::getpid());
  for (int i = 0; i < 10; ++i) {
    const auto t0 = clock_type::now();
    if (run_cli(pid, dir) != 0) {
      std::fprintf(stderr, "bench_control: the arenastat CLI failed\n");
      return 1;
    }
    cli.push_back(ms_since(t0));
  }
  std::sort(raw.begin(), raw.end());
  std::sort(cli.begin(), cli.end());
  std::printf("stats --json, %zu bytes:   socket median %.1f ms max %.1f ms;  arenastat CLI median %.1f ms max %.1f ms "
              "(goal <= 50 ms)\n",
              bytes, raw[raw.size() / 2], raw.back(), cli[cli.size() / 2], cli.back());

  // CPU cost of one answer, split into the snapshot and the rendering.
  std::vector<double> snap_cpu, render_cpu, answer_cpu;
  for (int i = 0; i < 10; ++i) {
    double t0 = thread_cpu_ms();
    const std::vector<arenastat::entry> entries_now = arenastat::snapshot();
    snap_cpu.push_back(thread_cpu_ms() - t0);
    t0 = thread_cpu_ms();
    const std::string text = arenastat::render_report(entries_now, arenastat::read_process_info(),
                                                      arenastat::parse_report_options("--json"));
    render_cpu.push_back(thread_cpu_ms() - t0);
    t0 = thread_cpu_ms();
    const std::string answer = arenastat::control::handle_request("stats --json");
    answer_cpu.push_back(thread_cpu_ms() - t0);
  }
  std::printf("CPU time per answer (median of 10): snapshot %.1f ms + JSON rendering %.1f ms; whole "
              "handle_request %.1f ms\n",
              median(snap_cpu), median(render_cpu), median(answer_cpu));

  // 2. Stalls of an allocating thread, alone and under queries.
  const auto length = std::chrono::seconds(seconds);
  print_stalls("application alone:", run_application(length));
  std::atomic<bool> querying{true};
  std::atomic<std::uint64_t> queries{0};
  std::thread client([&] {
    while (querying.load(std::memory_order_relaxed)) {
      if (query(socket, "stats --json\n") > 0) queries.fetch_add(1, std::memory_order_relaxed);
    }
  });
  const stall_figures under = run_application(length);
  querying = false;
  client.join();
  print_stalls("application under queries:", under);
  std::printf("queries answered meanwhile: %llu (goal: p99.9 < 1 ms)\n",
              static_cast<unsigned long long>(queries.load()));

  arenastat::control::stop();
  ::rmdir(dir.c_str());
  return 0;
}
