// The CLI's trust rules and messages (docs/cli.md, "Trust rules"), end to end:
// the real `arenastat` binary against control_target, an impostor server
// (programs/fake_server.cpp) and processes that serve nothing.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <termios.h>

#include <atomic>
#include <fstream>

#include "harness.hpp"

using namespace control_test;

namespace {

// A process that serves nothing, started with `env`.
class sleeper {
 public:
  // posix_spawn returns once the child has replaced its memory, but the kernel
  // sets the new environment's bounds a little later: until then
  // /proc/<pid>/environ reads empty. Waits until it shows the environment.
  explicit sleeper(const env_map& env) : p_(spawn("/bin/sleep", {"60"}, env)) {
    const std::string path = "/proc/" + std::to_string(p_.pid) + "/environ";
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < until) {
      std::ifstream in(path);
      const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (!all.empty()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ~sleeper() {
    ::kill(p_.pid, SIGKILL);
    ::waitpid(p_.pid, nullptr, 0);
    ::close(p_.in);
    ::close(p_.out);
    ::close(p_.err);
  }
  std::string pid_text() const { return std::to_string(p_.pid); }

 private:
  spawned p_;
};

// Runs the CLI with its stdout on a pseudo-terminal (raw mode); returns what
// the terminal received.
std::string run_cli_on_terminal(const std::vector<std::string>& args, const env_map& env) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  REQUIRE(master >= 0);
  REQUIRE(::grantpt(master) == 0);
  REQUIRE(::unlockpt(master) == 0);
  const std::string slave_name = ::ptsname(master);
  const int slave = ::open(slave_name.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
  REQUIRE(slave >= 0);
  termios t{};
  ::tcgetattr(slave, &t);
  ::cfmakeraw(&t);
  ::tcsetattr(slave, TCSANOW, &t);
  posix_spawn_file_actions_t fa;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawn_file_actions_adddup2(&fa, slave, 1);
  pid_t pid = -1;
  REQUIRE(spawn_with(pid, fa, cli_path, args, env) == 0);
  CHECK(wait_exit(pid) == 0);
  ::close(slave);
  std::string out;
  for (;;) {
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) break;
    char buf[4096];
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(master);
  return out;
}

}  // namespace

TEST_CASE("the CLI refuses a socket directory open to group or others (exit 4)", "[control][trust][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  REQUIRE(::chmod(sockets.path().c_str(), 0755) == 0);
  const cli_result r = run_cli({t.pid_text(), "stats"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 4);
  CHECK(r.out.empty());
  CHECK(r.err == "arenastat: refusing socket directory '" + sockets.path() +
                     "' (ARENASTAT_SOCKET_DIR): mode 0755 is open to group or others (expected 0700)\n");
}

TEST_CASE("the CLI refuses a socket directory that is a symbolic link (exit 4)", "[control][trust][threads]") {
  temp_dir sockets, links;
  target t(sockets.path());
  const std::string link = links.file("sockets");
  REQUIRE(::symlink(sockets.path().c_str(), link.c_str()) == 0);
  const cli_result r = run_cli({t.pid_text(), "stats"}, {{"ARENASTAT_SOCKET_DIR", link}});
  CHECK(r.status == 4);
  CHECK(r.out.empty());
  CHECK(r.err == "arenastat: refusing socket directory '" + link + "' (ARENASTAT_SOCKET_DIR): it is a symbolic link\n");
}

TEST_CASE("the CLI refuses a server whose SO_PEERCRED pid is not the target's (exit 4)",
          "[control][trust][threads]") {
  temp_dir sockets;
  target t(sockets.path(), {{"ARENASTAT_CONTROL", "0"}});  // alive, serving nothing
  const std::string sock = sockets.file(t.pid_text() + ".sock");
  const fake_server impostor({sock});
  const cli_result r = run_cli({t.pid_text(), "stats"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 4);
  CHECK(r.out.empty());
  CHECK(r.err == "arenastat: refusing the server at '" + sock + "': it is process " + impostor.pid() +
                     ", not process " + t.pid_text() + "\n");
}

TEST_CASE("an answer longer than 256 MiB is refused (exit 4)", "[control][trust][threads]") {
  temp_dir sockets;
  const fake_server flood({sockets.file("%p.sock"), "--flood=300000000"});
  const cli_result r = run_cli({flood.pid(), "stats"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 4);
  CHECK(r.out.empty());
  CHECK(r.err == "arenastat: process " + flood.pid() +
                     " sent an answer longer than 256 MiB; refusing the rest (narrow the query, e.g. --top=N or "
                     "-s=SIZE)\n");
}

TEST_CASE("control characters reach a terminal escaped, a pipe unchanged", "[control][trust][threads]") {
  temp_dir sockets;
  // An answer that would retitle the window and clear the screen.
  const fake_server forger({sockets.file("%p.sock"), "--answer=ok\\n\\e]0;owned\\e[2Jname\\n"});
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  CHECK(run_cli_on_terminal({forger.pid(), "stats"}, env) == "\\x1b]0;owned\\x1b[2Jname\n");
  const cli_result piped = run_cli({forger.pid(), "stats"}, env);
  CHECK(piped.status == 0);
  CHECK(piped.out == "\x1b]0;owned\x1b[2Jname\n");
}

TEST_CASE("html's page reaches a terminal escaped, a pipe unchanged", "[control][trust][html][threads]") {
  temp_dir sockets;
  const fake_server forger({sockets.file("%p.sock"), "--answer=ok\\n<p>\\e]0;owned\\e[2J</p>\\n"});
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  CHECK(run_cli_on_terminal({forger.pid(), "html"}, env) == "<p>\\x1b]0;owned\\x1b[2J</p>\n");
  const cli_result piped = run_cli({forger.pid(), "html"}, env);
  CHECK(piped.status == 0);
  CHECK(piped.out == "<p>\x1b]0;owned\x1b[2J</p>\n");
}

TEST_CASE("html -o prints its FILE escaped on a terminal, unchanged into a pipe", "[control][trust][html][threads]") {
  temp_dir sockets, out;
  const fake_server server({sockets.file("%p.sock"), "--answer=ok\\n<p>page</p>\\n"});
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  // A file name that would retitle the window and turn the terminal red.
  const std::string file = out.file("a\x1b]0;owned\x07\x1b[31mb.html");
  CHECK(run_cli_on_terminal({server.pid(), "html", "-o", file}, env) ==
        out.file("a\\x1b]0;owned\\x07\\x1b[31mb.html") + "\n");
  const cli_result piped = run_cli({server.pid(), "html", "-o", file}, env);
  CHECK(piped.status == 0);
  CHECK(piped.out == file + "\n");
}

TEST_CASE("an answer cut short by a dropped connection is an error (exit 3), never printed as whole",
          "[control][trust][threads]") {
  temp_dir sockets;
  const fake_server dropper({sockets.file("%p.sock"), "--answer=ok\\n{\"entries\":[", "--drop"});
  const cli_result r = run_cli({dropper.pid(), "stats", "--json"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 3);
  CHECK(r.out.empty());
  const std::size_t got = std::string("ok\n{\"entries\":[").size();  // the answer before the drop
  CHECK(r.err == "arenastat: process " + dropper.pid() + " dropped the connection after " + std::to_string(got) +
                     " bytes, before its answer was complete (Connection reset by peer; a server drops a "
                     "client that takes nothing of its answer for 2 s or is not done within 10 s, the slowest "
                     "reader when its unsent answers pass their bound or when another user needs a connection "
                     "slot, and every client when it stops); nothing was printed; retry\n");
}

TEST_CASE("a status line without its newline is refused (exit 4)", "[control][trust][threads]") {
  temp_dir sockets;
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  const fake_server bare_ok({sockets.file("%p.sock"), "--answer=ok"});
  const cli_result r = run_cli({bare_ok.pid(), "info"}, env);
  CHECK(r.status == 4);
  CHECK(r.out.empty());
  CHECK(r.err == "arenastat: process " + bare_ok.pid() +
                     " answered 'ok' without the newline that ends a status line; refusing it\n");
  const fake_server bare_error({sockets.file("%p.sock"), "--answer=error bad"});
  CHECK(run_cli({bare_error.pid(), "info"}, env).status == 4);
}

TEST_CASE("an error message from the process is printed escaped (exit 1)", "[control][trust][threads]") {
  temp_dir sockets;
  const fake_server forger({sockets.file("%p.sock"), "--answer=error bad \\e[31mthing\\n"});
  const cli_result r = run_cli({forger.pid(), "stats"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 1);
  CHECK(r.err == "arenastat: " + forger.pid() + ": bad \\x1b[31mthing\n");
}

TEST_CASE("a process started with ARENASTAT_CONTROL=1 whose socket is not up yet is told so (exit 3)",
          "[control][trust][threads]") {
  temp_dir sockets;
  const sleeper s({{"ARENASTAT_CONTROL", "1"}, {"ARENASTAT_SOCKET_DIR", sockets.path()}});
  const cli_result r =
      run_cli({"--timeout=300", s.pid_text(), "stats"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 3);
  CHECK(r.err == "arenastat: process " + s.pid_text() + " has no control socket at '" +
                     sockets.file(s.pid_text() + ".sock") +
                     "' yet: it was started with ARENASTAT_CONTROL=1 but its server is not up after 300 ms (still "
                     "starting, or it failed to start: see its stderr); retry\n");
}

TEST_CASE("a socket directory too long for a Unix socket's path is named at once, not waited for (exit 3)",
          "[control][trust][threads]") {
  temp_dir sockets;
  std::string dir = sockets.path();
  while (dir.size() < 110) {
    dir += "/deeper-directory";
    REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  }
  const sleeper s({{"ARENASTAT_CONTROL", "1"}, {"ARENASTAT_SOCKET_DIR", dir}});
  const auto before = std::chrono::steady_clock::now();
  const cli_result r = run_cli({s.pid_text(), "stats"}, {{"ARENASTAT_SOCKET_DIR", dir}});
  CHECK(std::chrono::steady_clock::now() - before < 1500ms);  // not the 2 s wait for a starting server
  CHECK(r.status == 3);
  CHECK(r.err == "arenastat: process " + s.pid_text() + " has no control socket: its path '" + dir + "/" +
                     s.pid_text() + ".sock' would be longer than 107 bytes (a Unix socket's limit), which its server "
                     "refuses; restart it with a shorter ARENASTAT_SOCKET_DIR\n");
}

TEST_CASE("a process started with another ARENASTAT_SOCKET_DIR is told which (exit 3)", "[control][trust][threads]") {
  temp_dir sockets, theirs;
  const sleeper s({{"ARENASTAT_CONTROL", "1"}, {"ARENASTAT_SOCKET_DIR", theirs.path()}});
  const cli_result r = run_cli({s.pid_text(), "stats"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 3);
  CHECK(r.err == "arenastat: process " + s.pid_text() + " has no control socket at '" +
                     sockets.file(s.pid_text() + ".sock") + "': it was started with ARENASTAT_SOCKET_DIR='" +
                     theirs.path() + "'; set the same in this shell\n");
}

TEST_CASE("a process started without ARENASTAT_SOCKET_DIR, asked from a shell that sets it, is told so (exit 3)",
          "[control][trust][threads]") {
  temp_dir sockets;
  const sleeper s(env_map{{"ARENASTAT_CONTROL", "1"}});  // its socket would be in /tmp/arenastat-<uid>
  const cli_result r = run_cli({s.pid_text(), "stats"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 3);
  CHECK(r.err == "arenastat: process " + s.pid_text() + " has no control socket at '" +
                     sockets.file(s.pid_text() + ".sock") +
                     "': it was started without ARENASTAT_SOCKET_DIR, so its socket is in '/tmp/arenastat-" +
                     std::to_string(::geteuid()) + "'; unset ARENASTAT_SOCKET_DIR in this shell\n");
}

TEST_CASE("the server's dump accepts only an absolute path", "[control][trust][threads]") {
  temp_dir sockets, work;
  target t(sockets.path(), {}, work.path());
  CHECK(raw_query(sockets.file(t.pid_text() + ".sock"), "dump mine.txt\n") ==
        "error dump: PATH must be absolute, got 'mine.txt' (the arenastat CLI makes a relative path absolute)\n");
  CHECK_FALSE(exists(work.file("mine.txt")));
}

TEST_CASE("dump with a relative path writes it relative to the caller", "[control][trust][threads]") {
  temp_dir sockets, work, caller;
  target t(sockets.path(), {}, work.path());
  const cli_result r = run_cli({t.pid_text(), "dump", "mine.txt"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}},
                               caller.path());
  CHECK(r.status == 0);
  CHECK(r.out == caller.file("mine.txt") + "\n");
  CHECK(exists(caller.file("mine.txt")));
  CHECK_FALSE(exists(work.file("mine.txt")));
}

TEST_CASE("listing never removes a file that is not a socket", "[control][trust]") {
  temp_dir sockets;
  const std::string file = sockets.file(std::to_string(dead_pid()) + ".sock");
  { std::ofstream(file) << "precious"; }
  const cli_result r = run_cli({}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 0);
  CHECK(exists(file));
  CHECK(r.err == "arenastat: ignoring '" + file + "': it is not a socket\n"
                 "arenastat: no queryable processes in '" + sockets.path() + "' (ARENASTAT_SOCKET_DIR); start a program with ARENASTAT_CONTROL=1\n");
}

TEST_CASE("listing refuses a socket directory that is a symbolic link and removes nothing", "[control][trust]") {
  temp_dir victim, links;
  const std::string stale = victim.file(std::to_string(dead_pid()) + ".sock");
  REQUIRE(make_socket_file(stale));
  const std::string link = links.file("sockets");
  REQUIRE(::symlink(victim.path().c_str(), link.c_str()) == 0);
  const cli_result r = run_cli({}, {{"ARENASTAT_SOCKET_DIR", link}});
  CHECK(r.status == 4);
  CHECK(r.out.empty());
  CHECK(r.err == "arenastat: refusing socket directory '" + link + "' (ARENASTAT_SOCKET_DIR): it is a symbolic link\n");
  CHECK(exists(stale));
}

TEST_CASE("a socket name swapped for a link after the check never connects the CLI elsewhere",
          "[control][trust][threads]") {
  // A thread keeps replacing the target's socket name by a symbolic link to
  // a decoy socket and back (renames over it: a hard link keeps the real
  // one). The CLI checks the name, then connects to the inode it opened
  // without following a link, so it either gets its answer (exit 0) or
  // refuses the link (exit 4: some runs must, or the swaps missed every
  // check), and the decoy never sees a connection. Connecting by name
  // instead, 10 runs of 60 reached the decoy.
  temp_dir sockets;
  target t(sockets.path());
  const std::string name = sockets.file(t.pid_text() + ".sock");
  const std::string decoy_path = sockets.file("decoy.sock");
  const int decoy = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  REQUIRE(decoy >= 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, decoy_path.c_str(), decoy_path.size() + 1);
  REQUIRE(::bind(decoy, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(decoy, 512) == 0);
  REQUIRE(::link(name.c_str(), sockets.file("keep").c_str()) == 0);
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    while (!stop.load()) {
      [[maybe_unused]] const int a1 = ::symlink(decoy_path.c_str(), sockets.file("to-decoy").c_str());
      [[maybe_unused]] const int a2 = ::rename(sockets.file("to-decoy").c_str(), name.c_str());
      [[maybe_unused]] const int a3 = ::link(sockets.file("keep").c_str(), sockets.file("back").c_str());
      [[maybe_unused]] const int a4 = ::rename(sockets.file("back").c_str(), name.c_str());
    }
  });
  int answered = 0, refused = 0, other = 0;
  for (int i = 0; i < 60; ++i) {
    const cli_result r = run_cli({"--timeout=2000", t.pid_text(), "info"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
    (r.status == 0 ? answered : r.status == 4 ? refused : other) += 1;
  }
  stop = true;
  swapper.join();
  int reached = 0;
  while (true) {
    const int c = ::accept4(decoy, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) break;
    ++reached;
    ::close(c);
  }
  ::close(decoy);
  CHECK(reached == 0);
  CHECK(other == 0);
  CHECK(refused > 0);
  CHECK(answered + refused == 60);
}

TEST_CASE("a thread id given as a pid is named as a thread of its process (exit 3)", "[control][trust][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  // The control server's thread: a task of the target other than its main one.
  std::string tid;
  for (int i = 0; i < 100 && tid.empty(); ++i) {
    if (DIR* d = ::opendir(("/proc/" + t.pid_text() + "/task").c_str())) {
      while (const dirent* e = ::readdir(d))
        if (e->d_name[0] != '.' && e->d_name != t.pid_text()) tid = e->d_name;
      ::closedir(d);
    }
    if (tid.empty()) std::this_thread::sleep_for(10ms);
  }
  REQUIRE_FALSE(tid.empty());
  const cli_result r = run_cli({tid, "info"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 3);
  CHECK(r.err == "arenastat: pid " + tid + " is a thread of process " + t.pid_text() + ", not a process: ask process " +
                     t.pid_text() + "\n");
}

TEST_CASE("a start environment larger than a megabyte is searched whole", "[control][trust][threads]") {
  // Ten variables of 120,000 bytes come before ARENASTAT_CONTROL and
  // ARENASTAT_SOCKET_DIR (1.2 MB, under Linux's 2 MiB for an 8 MiB stack):
  // the CLI, in a shell with another directory, still finds which one the
  // process was started with.
  // The environment must fit in a quarter of the stack limit the target
  // inherits: at least 8 MiB for the spawn (the soft limit raised within the hard one).
  rlimit stack{};
  REQUIRE(::getrlimit(RLIMIT_STACK, &stack) == 0);
  const rlimit saved = stack;
  if (stack.rlim_cur != RLIM_INFINITY && stack.rlim_cur < (rlim_t{8} << 20)) {
    REQUIRE((stack.rlim_max == RLIM_INFINITY || stack.rlim_max >= (rlim_t{8} << 20)));
    stack.rlim_cur = rlim_t{8} << 20;
    REQUIRE(::setrlimit(RLIMIT_STACK, &stack) == 0);
  }
  temp_dir sockets, other;
  env_map big;
  for (char c = '0'; c <= '9'; ++c) big.emplace(std::string("A") + c, std::string(120'000, 'x'));
  target t(sockets.path(), big);
  ::setrlimit(RLIMIT_STACK, &saved);
  const cli_result r = run_cli({t.pid_text(), "info"}, {{"ARENASTAT_SOCKET_DIR", other.path()}});
  CHECK(r.status == 3);
  CHECK(r.err == "arenastat: process " + t.pid_text() + " has no control socket at '" + other.path() + "/" +
                     t.pid_text() + ".sock': it was started with ARENASTAT_SOCKET_DIR='" + sockets.path() +
                     "'; set the same in this shell\n");
}
