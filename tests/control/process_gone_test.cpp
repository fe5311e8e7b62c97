// naming::process_gone: a process has exited only when every thread has.
// A main thread that called pthread_exit is a zombie in /proc/<pid>/stat
// while the other threads run and serve: the CLI must still reach it, and
// neither the listing nor another server may remove its socket.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "harness.hpp"
#include "socket_naming.hpp"

using namespace control_test;
namespace naming = arenastat::naming;

namespace {

std::string stat_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Waits up to 10 s for /proc/<pid>/stat to say Z (its main thread has exited).
bool main_thread_exits(pid_t pid) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (stat_of(pid).find(") Z ") == std::string::npos) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// A row of the listing: the pid in 8 columns, the program.
std::string listed(pid_t pid) {
  std::string row = std::to_string(pid);
  row.resize(std::max<std::size_t>(row.size(), 8), ' ');
  return row + " control_target\n";
}

bool is_socket(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

}  // namespace

TEST_CASE("a process whose main thread called pthread_exit is not gone while another thread runs",
          "[control][naming][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  REQUIRE(t.command("main-thread-exit") == "done");
  REQUIRE(main_thread_exits(t.pid()));
  CHECK(naming::process_state(t.pid()) == 'Z');
  CHECK_FALSE(naming::process_gone(t.pid()));
}

TEST_CASE("an exited child that is not reaped yet (every thread Z) is gone", "[control][naming]") {
  const pid_t zombie = ::fork();
  if (zombie == 0) ::_exit(0);
  REQUIRE(zombie > 0);
  REQUIRE(main_thread_exits(zombie));
  const bool gone = naming::process_gone(zombie);
  ::waitpid(zombie, nullptr, 0);
  CHECK(gone);
  CHECK(naming::process_gone(zombie));  // reaped: kill() says ESRCH
}

TEST_CASE("the CLI queries, lists and keeps the socket of a process whose main thread has exited",
          "[control][naming][cli][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  const std::string sock = sockets.file(t.pid_text() + ".sock");
  REQUIRE(t.command("main-thread-exit") == "done");
  REQUIRE(main_thread_exits(t.pid()));
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};

  const cli_result info = run_cli({t.pid_text(), "info"}, env);
  CHECK(info.status == 0);
  CHECK(info.err.empty());
  CHECK(info.out.find("pid " + t.pid_text()) != std::string::npos);

  target other(sockets.path());  // a starting server removes the sockets of processes that have exited
  CHECK(is_socket(sock));

  const cli_result listing = run_cli({}, env);
  CHECK(listing.status == 0);
  CHECK(listing.err.empty());
  CHECK(listing.out == "PID      PROGRAM\n" + listed(std::min(t.pid(), other.pid())) +
                           listed(std::max(t.pid(), other.pid())));
  CHECK(is_socket(sock));
  CHECK(run_cli({t.pid_text(), "help"}, env).status == 0);
}
