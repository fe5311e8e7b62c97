// Messages naming a path from ARENASTAT_SOCKET_DIR or ARENASTAT_DUMP_DIR
// quote it with detail::quoted (bytes outside printable ASCII as \xNN, at
// most 200 bytes) and name the variable it came from: the server's start-up
// warning, the CLI's refusals, the dump-on-signal failure.
#include <catch2/catch.hpp>

#include <fstream>

#include "harness.hpp"

using namespace control_test;

namespace {

// A file (not a directory) whose name holds an escape sequence and a line break.
struct hostile_file {
  temp_dir parent;
  std::string path = parent.file("bad\x1b[31m\nfake");
  std::string shown = "'" + parent.path() + "/bad\\x1b[31m\\x0afake'";
  hostile_file() { std::ofstream(path) << "not a directory"; }
};

// One line of `t`'s stderr starting with `start`, within 10 s ("" if none).
std::string stderr_line_starting(target& t, const std::string& start) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < until) {
    t.command("ping");
    while (const std::optional<std::string> line = t.stderr_line(100ms)) {
      if (line->rfind(start, 0) == 0) return *line;
    }
  }
  return {};
}

}  // namespace

TEST_CASE("the server's socket directory warning quotes ARENASTAT_SOCKET_DIR's path and names it",
          "[control][naming][threads]") {
  hostile_file f;
  const spawned p = spawn(target_path, {}, {{"ARENASTAT_CONTROL", "1"}, {"ARENASTAT_SOCKET_DIR", f.path}});
  CHECK(read_line(p.out).rfind("ready ", 0) == 0);
  ::close(p.in);
  CHECK(wait_exit(p.pid) == 0);
  CHECK(read_all(p.err, 1s) == "arenastat control: socket directory " + f.shown +
                                   " (ARENASTAT_SOCKET_DIR) exists and is not a directory; the control server is off\n");
  ::close(p.out);
  ::close(p.err);
}

TEST_CASE("the CLI quotes a long ARENASTAT_SOCKET_DIR in at most 200 bytes and names it", "[control][naming][cli]") {
  const std::string dir = "/tmp/" + std::string(120000, 'd');
  const cli_result r = run_cli({}, {{"ARENASTAT_SOCKET_DIR", dir}});
  CHECK(r.status == 3);
  CHECK(r.out.empty());
  CHECK(r.err == "arenastat: cannot open the socket directory '" + dir.substr(0, 200) +
                     "'... (120005 bytes) (ARENASTAT_SOCKET_DIR): File name too long\n");
}

TEST_CASE("the CLI quotes an ARENASTAT_SOCKET_DIR holding control bytes and names it", "[control][naming][cli]") {
  hostile_file f;
  const cli_result r = run_cli({}, {{"ARENASTAT_SOCKET_DIR", f.path}});
  CHECK(r.status == 4);
  CHECK(r.err == "arenastat: refusing socket directory " + f.shown +
                     " (ARENASTAT_SOCKET_DIR): it is not a directory\n");
}

TEST_CASE("a failed dump on a signal quotes ARENASTAT_DUMP_DIR's path and names it", "[control][dump][threads]") {
  temp_dir sockets;
  hostile_file f;
  target t(sockets.path(), {{"ARENASTAT_DUMP_SIGNAL", "USR1"}, {"ARENASTAT_DUMP_DIR", f.path + "/x"}});
  REQUIRE(::kill(t.pid(), SIGUSR1) == 0);
  const std::string line = stderr_line_starting(t, "arenastat: dump on signal failed: ");
  const std::string start = "arenastat: dump on signal failed: dump: cannot create " + f.shown.substr(0, f.shown.size() - 1) +
                            "/x/arenastat." + t.pid_text() + ".";
  const std::string end = ".txt' (in ARENASTAT_DUMP_DIR): Not a directory";
  CHECK(line.rfind(start, 0) == 0);
  REQUIRE(line.size() == start.size() + 14 + end.size());  // the UTC time, YYYYmmddHHMMSS
  CHECK(line.substr(start.size() + 14) == end);
}

TEST_CASE("info escapes the program name and the socket path: a newline in either adds no line",
          "[control][naming][threads]") {
  temp_dir root;
  const std::string dir = root.path() + "/s\n\x1b[1m";
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  const std::string program = root.path() + "/p\nserved 9";  // comm is the link's name: "p\nserved 9"
  REQUIRE(::symlink(target_path.c_str(), program.c_str()) == 0);
  target t(dir, {}, {}, program);
  const cli_result r = run_cli({t.pid_text(), "info"}, {{"ARENASTAT_SOCKET_DIR", dir}});
  REQUIRE(r.status == 0);
  CHECK(r.out.rfind("pid " + t.pid_text() + "\nprogram p\\x0aserved 9\nsocket " + root.path() + "/s\\x0a\\x1b[1m/" +
                        t.pid_text() + ".sock\nserved ",
                    0) == 0);
}

TEST_CASE("a relative ARENASTAT_SOCKET_DIR is refused by the server and by the CLI", "[control][naming][threads]") {
  temp_dir cwd;
  const spawned p =
      spawn(target_path, {}, {{"ARENASTAT_CONTROL", "1"}, {"ARENASTAT_SOCKET_DIR", "rel/dir"}}, cwd.path());
  CHECK(read_line(p.out).rfind("ready ", 0) == 0);
  ::close(p.in);
  CHECK(wait_exit(p.pid) == 0);
  const std::string reason =
      "it is a relative path; it must be absolute (the program and the arenastat CLI would each resolve it from "
      "their own working directory)";
  CHECK(read_all(p.err, 1s) == "arenastat control: socket directory 'rel/dir' (ARENASTAT_SOCKET_DIR): " + reason +
                                   "; the control server is off\n");
  ::close(p.out);
  ::close(p.err);
  struct stat st {};
  CHECK(::stat((cwd.path() + "/rel").c_str(), &st) != 0);  // nothing created in the program's directory
  const cli_result r = run_cli({}, {{"ARENASTAT_SOCKET_DIR", "rel/dir"}}, cwd.path());
  CHECK(r.status == 4);
  CHECK(r.err == "arenastat: refusing socket directory 'rel/dir' (ARENASTAT_SOCKET_DIR): " + reason + "\n");
}

TEST_CASE("an ARENASTAT_SOCKET_DIR with a '.' or '..' part is refused by the server and by the CLI",
          "[control][naming][threads]") {
  // "/x/link/." would pass the check that the directory is no symbolic link
  // (O_NOFOLLOW acts on the last part, here ".").
  temp_dir real, links;
  const std::string link = links.path() + "/link";
  REQUIRE(::symlink(real.path().c_str(), link.c_str()) == 0);
  for (const std::string& dir : {link + "/.", real.path() + "/../" + real.path().substr(real.path().rfind('/') + 1)}) {
    INFO(dir);
    const std::string part = dir.ends_with("/.") ? "." : "..";
    const spawned p = spawn(target_path, {}, {{"ARENASTAT_CONTROL", "1"}, {"ARENASTAT_SOCKET_DIR", dir}});
    CHECK(read_line(p.out).rfind("ready ", 0) == 0);
    ::close(p.in);
    CHECK(wait_exit(p.pid) == 0);
    CHECK(read_all(p.err, 1s) == "arenastat control: socket directory '" + dir + "' (ARENASTAT_SOCKET_DIR): it has a '" +
                                     part + "' part; give the directory's own path; the control server is off\n");
    ::close(p.out);
    ::close(p.err);
    const cli_result r = run_cli({}, {{"ARENASTAT_SOCKET_DIR", dir}});
    CHECK(r.status == 4);
    CHECK(r.err == "arenastat: refusing socket directory '" + dir + "' (ARENASTAT_SOCKET_DIR): it has a '" + part +
                       "' part; give the directory's own path\n");
  }
}

TEST_CASE("a failed Prometheus dump on a signal names the .prom file and ARENASTAT_DUMP_DIR, not its temporary",
          "[control][dump][threads]") {
  temp_dir sockets;
  hostile_file f;
  target t(sockets.path(), {{"ARENASTAT_DUMP_SIGNAL", "USR1"},
                            {"ARENASTAT_DUMP_FORMAT", "prometheus"},
                            {"ARENASTAT_DUMP_DIR", f.path + "/x"}});
  REQUIRE(::kill(t.pid(), SIGUSR1) == 0);
  const std::string line = stderr_line_starting(t, "arenastat: dump on signal failed: ");
  CHECK(line == "arenastat: dump on signal failed: metrics: cannot write " + f.shown.substr(0, f.shown.size() - 1) +
                    "/x/arenastat." + t.pid_text() + ".prom' (in ARENASTAT_DUMP_DIR): Not a directory");
}

TEST_CASE("the CLI says why a target started with a relative ARENASTAT_SOCKET_DIR has no socket",
          "[control][naming][threads]") {
  temp_dir cwd;
  const spawned p =
      spawn(target_path, {}, {{"ARENASTAT_CONTROL", "1"}, {"ARENASTAT_SOCKET_DIR", "rel/dir"}}, cwd.path());
  CHECK(read_line(p.out).rfind("ready ", 0) == 0);
  const std::string pid = std::to_string(p.pid);
  const cli_result r = run_cli({pid, "info"}, {}, cwd.path());
  CHECK(r.status == 3);
  CHECK(r.err == "arenastat: process " + pid +
                     " has no control socket: it was started with ARENASTAT_SOCKET_DIR='rel/dir', which its server "
                     "refuses (it is a relative path; it must be absolute (the program and the arenastat CLI would "
                     "each resolve it from their own working directory)); restart it with an absolute directory, or "
                     "without the variable\n");
  ::close(p.in);
  CHECK(wait_exit(p.pid) == 0);
  ::close(p.out);
  ::close(p.err);
}
