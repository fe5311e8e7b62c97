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

#include "table_load.hpp"

extern char** environ;

namespace {

using namespace arenastat::bench;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
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
  return send_and_drain(fd, request);
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
