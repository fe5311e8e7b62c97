// Helper program for the at-exit tests (tests/report/at_exit_test.cpp): does a
// little tracked work, then exits normally. The report, if any, comes from the
// library's at-exit hook, driven by the environment or by print_at_exit.
//
//   at_exit_child           scope "child/work" and account "child/cache"
//   at_exit_child api       the same, then print_at_exit("--json") and
//                           print_at_exit("-H --sort=name") (the last wins)
//   at_exit_child late      the same, plus scope "child/late" run by the
//                           destructor of a static object
//   at_exit_child fork      the same, then a fork()ed child that calls exit(0)
//   at_exit_child chdir     the same, then chdir("/") before exiting
//   at_exit_child nonblock  the same plus 8,000 scopes "child/many/N", with
//                           stderr made non-blocking (a report of about 560 KB)
//   at_exit_child signal-exit  scopes of 50,000 names (made first) in a loop until a timer
//                           signal's handler calls exit(0) (20 ms in); a
//                           watchdog thread ends the process with status 99
//                           if it has not exited 10 s later
#include <fcntl.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arenastat/arenastat.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace {

// Live blocks of child/cache at exit, reachable so that LeakSanitizer does not
// count them (volatile: the stores must not be optimised away).
void* volatile kept[2];

// child/cache: three 100-byte blocks, one freed: peak 300, live 200.
// child/work: one arena chunk of 4096 bytes (tag node), nodes=3.
void work() {
  static arenastat::tracking_resource cache("child/cache");
  void* first = cache.allocate(100);
  kept[0] = cache.allocate(100);
  kept[1] = cache.allocate(100);
  cache.deallocate(first, 100);

  arenastat::scope s{"child/work"};
  s.set_counter("nodes", 3);
  arenastat::arena_resource arena("node");
  (void)arena.allocate(1000);
}

// Constructed in main, so destroyed before the at-exit report runs.
struct late_work {
  ~late_work() {
    arenastat::scope s{"child/late"};
    arenastat::arena_options options;
    options.initial_chunk = 8192;
    arenastat::arena_resource arena("node", options);
    (void)arena.allocate(10);
  }
};

void exit_from_handler(int) { std::exit(0); }

[[noreturn]] void signal_exit() {
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(10));
    ::_exit(99);  // the exit handler hung
  }).detach();
  // The names and their table entries are made first, so that the timed loop
  // allocates nothing: the signal may land in a fold (the table lock held,
  // the case under test), never inside malloc, whose own lock exit() would
  // then wait for (exit() from a handler is not async-signal-safe; a handler
  // that interrupts malloc hangs in any program, with or without arenastat).
  std::vector<std::string> names;
  for (unsigned i = 0; i < 50000; ++i) names.push_back("child/loop/" + std::to_string(i));
  for (const std::string& n : names) arenastat::scope s{n};
  ::signal(SIGALRM, exit_from_handler);
  const itimerval in_20ms{{0, 0}, {0, 20000}};
  ::setitimer(ITIMER_REAL, &in_20ms, nullptr);
  for (unsigned i = 0;; ++i) arenastat::scope s{names[i % names.size()]};
}

}  // namespace

int main(int argc, char** argv) try {
  const char* mode = argc > 1 ? argv[1] : "";
  work();
  if (std::strcmp(mode, "api") == 0) {
    arenastat::print_at_exit("--json");
    arenastat::print_at_exit("-H --sort=name");
  } else if (std::strcmp(mode, "late") == 0) {
    static late_work late;
  } else if (std::strcmp(mode, "fork") == 0) {
    const pid_t pid = ::fork();
    if (pid < 0) return 3;
    if (pid == 0) std::exit(0);  // runs the exit handlers in the forked copy
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 4;
  } else if (std::strcmp(mode, "chdir") == 0) {
    if (::chdir("/") != 0) return 5;
  } else if (std::strcmp(mode, "nonblock") == 0) {
    for (int i = 0; i < 8000; ++i) arenastat::scope s{"child/many/" + std::to_string(i)};
    ::fcntl(2, F_SETFL, ::fcntl(2, F_GETFL) | O_NONBLOCK);
  } else if (std::strcmp(mode, "signal-exit") == 0) {
    signal_exit();
  } else if (*mode) {
    std::fprintf(stderr, "at_exit_child: unknown mode '%s'\n", mode);
    return 2;
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "at_exit_child: %s\n", e.what());
  return 1;
}
