// End to end: control_target started with ARENASTAT_CONTROL=1, queried by the
// real `arenastat` binary. Known state of the target (programs/control_target.cpp):
// account "cache/items" 10 blocks of 1000 bytes, scope "task/parse" 1 run with
// peak 3000, account "scratch" live 0 and peak 3000.
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <cstring>
#include <catch2/catch.hpp>

#include <dirent.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "harness.hpp"

using namespace control_test;
using nlohmann::json;

namespace {

const json& entry_named(const json& report, const std::string& name) {
  for (const json& e : report["entries"]) {
    if (e["name"] == name) return e;
  }
  FAIL("no entry " << name << " in " << report.dump());
  throw std::logic_error("unreachable");
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> files_in(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n.rfind(prefix, 0) == 0) out.push_back(dir + "/" + n);
    }
    ::closedir(d);
  }
  return out;
}

// Waits (10 s at most) for the target's stderr line "arenastat: dump written
// to <path>", which the dump thread prints once the file is written and
// closed, and returns <path> ("" when no such line came). Sends `ping` on
// every pass: under TSan the signal's handler runs only when the main thread
// returns from read() (control_target.cpp).
std::string wait_for_dump(target& t) {
  const std::string said = "arenastat: dump written to ";
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < until) {
    t.command("ping");
    while (const std::optional<std::string> line = t.stderr_line(100ms)) {
      if (line->rfind(said, 0) == 0) return line->substr(said.size());
    }
  }
  return {};
}

}  // namespace

TEST_CASE("arenastat with no arguments lists the target with its program name", "[control][cli][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  const cli_result r = run_cli({}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 0);
  CHECK(r.out.find("PID      PROGRAM\n") == 0);
  CHECK(r.out.find(t.pid_text() + std::string(8 - t.pid_text().size(), ' ') + " control_target\n") !=
        std::string::npos);
}

TEST_CASE("the listing removes sockets of processes that no longer exist", "[control][cli][threads]") {
  temp_dir sockets;
  const std::string dead = std::to_string(dead_pid());
  const std::string stale = sockets.file(dead + ".sock");
  REQUIRE(make_socket_file(stale));
  const cli_result r = run_cli({}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 0);
  CHECK_FALSE(exists(stale));
  CHECK(r.err == "arenastat: removed '" + stale + "' (process " + dead + " no longer exists)\n"
                 "arenastat: no queryable processes in '" + sockets.path() + "' (ARENASTAT_SOCKET_DIR); start a program with ARENASTAT_CONTROL=1\n");
}

namespace {

// A socket at `path` that something listens on: what a process of another
// pid namespace, whose pid is another one (or none) here, serves.
struct listening_socket {
  int fd = -1;
  explicit listening_socket(const std::string& path) {
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::chmod(path.c_str(), 0600) == 0);
    REQUIRE(::listen(fd, 4) == 0);
  }
  ~listening_socket() { ::close(fd); }
};

}  // namespace

TEST_CASE("a socket of a pid that does not exist here but is listened on is neither removed nor listed",
          "[control][cli][threads]") {
  temp_dir sockets;
  const std::string absent = std::to_string(dead_pid());
  const std::string served = sockets.file(absent + ".sock");
  const listening_socket other_namespace(served);
  const cli_result r = run_cli({}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 0);
  CHECK(exists(served));
  CHECK(r.err == "arenastat: not removing '" + served + "': process " + absent +
                     " does not exist here, but something listens on it (a process in another pid namespace?)\n"
                     "arenastat: no queryable processes in '" + sockets.path() +
                     "' (ARENASTAT_SOCKET_DIR); start a program with ARENASTAT_CONTROL=1\n");
  // A starting server's clean-up of stale sockets keeps it too.
  target t(sockets.path());
  CHECK(exists(served));
}

TEST_CASE("help lists every command", "[control][cli][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  const cli_result r = run_cli({t.pid_text(), "help"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 0);
  for (const char* c : {"help", "info", "stats", "baseline", "diff", "reset", "process", "dump", "metrics"}) {
    CHECK(r.out.find(std::string("\n  ") + c) != std::string::npos);
  }
  // The commands the CLI makes itself come last, in the target's form.
  const std::string html_and_top =
      "  html [-o FILE] [report options]\n"
      "      the --html report, made by the CLI, to FILE or stdout\n"
      "        -o FILE, --output  write the page to FILE and print its path (default: stdout)\n"
      "  top [-d SECONDS] [--sort=live|peak|growth] [--batch] [-n N] [--top=N] [-H]\n"
      "      a live view, made by the CLI from stats --json\n";
  const std::size_t at = r.out.find("\n  html ");
  REQUIRE(at != std::string::npos);
  CHECK(r.out.substr(at + 1, html_and_top.size()) == html_and_top);
  CHECK(r.out.ends_with("        -H                       batch: human-readable sizes\n"));
}

TEST_CASE("stats --json is the report of the target", "[control][cli][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  const cli_result r = run_cli({t.pid_text(), "stats", "--json"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  REQUIRE(r.status == 0);
  const json j = json::parse(r.out);
  CHECK(j["pid"] == t.pid());
  const json& items = entry_named(j, "cache/items");
  CHECK(items["kind"] == "account");
  CHECK(items["live_bytes"] == 10 * 1000);
  CHECK(items["allocations"] == 10);
  const json& parse = entry_named(j, "task/parse");
  CHECK(parse["kind"] == "scope");
  CHECK(parse["peak_bytes"] == 3000);
  CHECK(parse["count"] == 1);
}

TEST_CASE("stats with text options answers the text report", "[control][cli][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  const cli_result r = run_cli({t.pid_text(), "stats", "-H", "--top=1"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 0);
  CHECK(r.out.find("cache/items") != std::string::npos);
  CHECK(r.err.empty());
}

TEST_CASE("baseline then diff shows the growth since the baseline", "[control][cli][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  const cli_result b = run_cli({t.pid_text(), "baseline"}, env);
  CHECK(b.status == 0);
  CHECK(b.out.find("baseline recorded: ") == 0);
  REQUIRE(t.command("grow 5") == "done");
  REQUIRE(t.command("scope task/new 2500") == "done");

  const cli_result d = run_cli({t.pid_text(), "diff", "--json"}, env);
  REQUIRE(d.status == 0);
  const json j = json::parse(d.out);
  REQUIRE(j["entries"].size() >= 2);
  const json& first = j["entries"][0];  // largest change first
  CHECK(first["name"] == "cache/items");
  CHECK(first["live"]["before"] == 10000);
  CHECK(first["live"]["change"] == 5000);
  CHECK(first["peak"]["change"] == 5000);
  CHECK(first["count"]["change"] == 5);   // allocations
  CHECK(first["blocks"]["change"] == 5);  // none freed
  const json& added = j["entries"][1];
  CHECK(added["name"] == "task/new");
  CHECK(added["status"] == "new");
  CHECK(added["peak"]["after"] == 2500);

  const cli_result text = run_cli({t.pid_text(), "diff"}, env);
  CHECK(text.status == 0);
  CHECK(text.out.find("task/new  (new)") != std::string::npos);
}

TEST_CASE("diff before any baseline is an error of the target (exit 1)", "[control][cli][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  const cli_result r = run_cli({t.pid_text(), "diff"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 1);
  CHECK(r.err == "arenastat: " + t.pid_text() + ": no baseline: run 'arenastat <pid> baseline' first\n");
  CHECK(r.out.empty());
}

TEST_CASE("reset sets the peaks to the current values and says so", "[control][cli][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  // The target's starting state (programs/control_target.cpp): one scope
  // entry (task/parse) and two accounts (cache/items, scratch).
  const cli_result r = run_cli({t.pid_text(), "reset"}, env);
  CHECK(r.status == 0);
  CHECK(r.out == "peaks reset: 1 scope entry and 2 accounts now start from their current values\n");
  const json j = json::parse(run_cli({t.pid_text(), "stats", "--json"}, env).out);
  CHECK(entry_named(j, "scratch")["peak_bytes"] == 0);  // live 0: the 3000-byte peak is gone
  CHECK(entry_named(j, "cache/items")["peak_bytes"] == 10000);
}

TEST_CASE("process prints the resident set figures", "[control][cli][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  const cli_result r = run_cli({t.pid_text(), "process"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 0);
  CHECK(r.out.find("pid " + t.pid_text() + "\nVmRSS    ") == 0);
  CHECK(r.out.find("VmHWM") != std::string::npos);
  CHECK(r.out.find("RssAnon") != std::string::npos);
  CHECK(r.out.find("jemalloc") != std::string::npos);
}

TEST_CASE("dump writes the summary in the target's working directory", "[control][cli][threads]") {
  temp_dir sockets, work;
  target t(sockets.path(), {}, work.path());
  const cli_result r = run_cli({t.pid_text(), "dump"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  REQUIRE(r.status == 0);
  const std::string path = r.out.substr(0, r.out.size() - 1);
  CHECK_THAT(path, Catch::Matchers::StartsWith(work.path() + "/arenastat." + t.pid_text() + "."));
  const std::string text = slurp(path);
  CHECK(text.rfind("TOTAL size=13000 count=12 blocks=10 entries=3 pid=" + t.pid_text() +
                       " program=control_target time=",
                   0) == 0);
  // size order: cache/items 10000, task/parse 3000, scratch 0 (count: allocations or runs)
  CHECK(text.find("               10000               10               10                10000  account  cache/items\n"
                  "                3000                1                0                 3000  scope    task/parse\n"
                  "                   0                1                0                 3000  account  scratch\n") != std::string::npos);
}

TEST_CASE("dump PATH writes there, relative to the caller", "[control][cli][threads]") {
  temp_dir sockets, out;
  target t(sockets.path());
  const cli_result r = run_cli({t.pid_text(), "dump", out.file("mine.txt")}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 0);
  CHECK(r.out == out.file("mine.txt") + "\n");
  CHECK(slurp(out.file("mine.txt")).rfind("TOTAL size=13000 ", 0) == 0);
}

TEST_CASE("dump refuses an empty PATH or one with a blank at either end, and writes nothing", "[control][cli][threads]") {
  // The request is a line of words: "" would mean the default file and the
  // blanks would be trimmed, so the file written would not be the one named.
  temp_dir sockets, out;
  target t(sockets.path());
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  for (const std::string& bad : {std::string(), out.file("x "), " " + out.file("x")}) {
    INFO("'" << bad << "'");
    const cli_result r = run_cli({t.pid_text(), "dump", bad}, env);
    CHECK(r.status == 2);
    CHECK(r.err.find("dump: PATH '" + bad + "' is empty or starts or ends with a blank") != std::string::npos);
  }
  CHECK(files_in(out.path(), "").size() == 2);  // "." and "..": nothing written
}

TEST_CASE("exit codes: dead pid 3, bad command 2, bad pid 2, no socket 3, target error 1",
          "[control][cli][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};

  const cli_result dead = run_cli({std::to_string(dead_pid()), "stats"}, env);
  CHECK(dead.status == 3);
  CHECK(dead.err.find("no process with pid") != std::string::npos);

  const cli_result bad = run_cli({t.pid_text(), "frobnicate"}, env);
  CHECK(bad.status == 2);
  CHECK(bad.err.find("unknown command 'frobnicate'") != std::string::npos);

  const cli_result not_pid = run_cli({"12ab", "stats"}, env);
  CHECK(not_pid.status == 2);
  CHECK(not_pid.err.find("'12ab' is not a process id") != std::string::npos);

  const cli_result missing = run_cli({t.pid_text()}, env);
  CHECK(missing.status == 2);

  const cli_result no_socket = run_cli({std::to_string(::getpid()), "stats"}, env);
  CHECK(no_socket.status == 3);
  CHECK(no_socket.err.find("has no control socket at '" + sockets.path() + "/" + std::to_string(::getpid()) +
                           ".sock': start it with ARENASTAT_CONTROL=1") != std::string::npos);

  const cli_result bad_size = run_cli({t.pid_text(), "stats", "-s=lots"}, env);  // a size is the target's to convert
  CHECK(bad_size.status == 1);
  CHECK(bad_size.err.find("arenastat: " + t.pid_text() + ": ") == 0);
  CHECK(bad_size.err.find("-s=lots") != std::string::npos);
}

TEST_CASE("a command's bad options are usage errors found before connecting (exit 2)", "[control][cli]") {
  // Pid 1 serves nothing here: each error must come before any connection.
  const auto usage_error = [](const std::vector<std::string>& args, const std::string& message) {
    const cli_result r = run_cli(args, {});
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "arenastat: " + message + "\n(arenastat --help prints the usage)\n");
  };
  const std::string report_options = "-s=SIZE, -H, --sort=peak|count|name|live, --top=N";
  usage_error({"1", "stats", "--help"},
              "stats: unknown option '--help' (expected " + report_options + ", --json, --tree, --prometheus, --html)");
  usage_error({"1", "stats", "--sort=size"},
              "stats: bad option '--sort=size': expected --sort=peak, --sort=count, --sort=name or --sort=live");
  usage_error({"1", "stats", "--json", "--tree"}, "stats: bad option '--json' with '--tree': choose one output format");
  usage_error({"1", "metrics", "--depth=0"}, "metrics: bad option '--depth=0': expected --depth=N with N from 1 to 64");
  usage_error({"1", "process", "--bogus"}, "process: unknown option '--bogus' (expected -H, --json)");
  usage_error({"1", "diff", "--tree"},
              "diff: unknown option '--tree' (expected " + report_options + ", --json, --html)");
  // -o takes the next word whatever it is: here a file named --json; --tree is the clash.
  usage_error({"1", "html", "-o", "--json", "--tree"},
              "html: '--tree' chooses another output format; html writes the page (its report options: -s, --sort, "
              "--top, -H)");
  usage_error({"1", "html", "--html=1"},
              "html: unknown option '--html=1' (expected -o FILE, " + report_options + ")");
  usage_error({"1", "html", "-or9.html"},
              "html: unknown option '-or9.html' (expected -o FILE, " + report_options + ")");
}

TEST_CASE("a pid of more than 9 digits is named too large (exit 2)", "[control][cli]") {
  const cli_result r = run_cli({"2147483648", "info"}, {});
  CHECK(r.status == 2);
  CHECK(r.err == "arenastat: '2147483648' is not a process id (too large: pids are at most 4194304 on Linux; run "
                 "'arenastat' to list them)\n(arenastat --help prints the usage)\n");
}

TEST_CASE("an empty pid is no process id, with or without a command (exit 2)", "[control][cli]") {
  for (const std::vector<std::string>& args : {std::vector<std::string>{""}, std::vector<std::string>{"", "info"}}) {
    const cli_result r = run_cli(args, {});
    CHECK(r.status == 2);
    CHECK(r.err == "arenastat: '' is not a process id (expected a positive number; run 'arenastat' to list them)\n"
                   "(arenastat --help prints the usage)\n");
  }
}

TEST_CASE("a process that has exited but is not reaped yet (a zombie) is no process (exit 3)", "[control][cli]") {
  temp_dir sockets;
  const pid_t zombie = ::fork();
  if (zombie == 0) ::_exit(0);
  REQUIRE(zombie > 0);
  const std::string stat = "/proc/" + std::to_string(zombie) + "/stat";
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (slurp(stat).find(") Z ") == std::string::npos && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(1ms);
  }
  REQUIRE(slurp(stat).find(") Z ") != std::string::npos);
  const cli_result r = run_cli({std::to_string(zombie), "stats"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  ::waitpid(zombie, nullptr, 0);
  CHECK(r.status == 3);
  CHECK(r.err == "arenastat: no process with pid " + std::to_string(zombie) +
                     " (it has exited?); run 'arenastat' to list the processes you can query\n");
}

TEST_CASE("the client refuses a socket open to group or others", "[control][cli][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  const std::string sock = sockets.file(t.pid_text() + ".sock");
  REQUIRE(::chmod(sock.c_str(), 0666) == 0);
  const cli_result r = run_cli({t.pid_text(), "help"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 4);
  CHECK(r.err == "arenastat: refusing '" + sock + "': mode 0666 is open to group or others (expected 0600); it is not "
                 "secure\n");
}

TEST_CASE("socket 0600 in a 0700 directory, removed at exit", "[control][cli][threads]") {
  temp_dir parent;
  const std::string dir = parent.file("sockets");  // created by the target
  target t(dir);
  const std::string sock = dir + "/" + t.pid_text() + ".sock";
  struct stat st {};
  REQUIRE(::lstat(sock.c_str(), &st) == 0);
  CHECK(S_ISSOCK(st.st_mode));
  CHECK((st.st_mode & 07777) == 0600);
  CHECK(st.st_uid == ::geteuid());
  CHECK(mode_of(dir) == 0700);
  CHECK(t.finish() == 0);
  CHECK_FALSE(exists(sock));
}

TEST_CASE("exit called from another thread stops the server and removes the socket", "[control][cli][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  const std::string sock = sockets.file(t.pid_text() + ".sock");
  t.send_only("exit-from-thread");
  CHECK(t.reap(5s) == 0);
  CHECK_FALSE(exists(sock));
}

TEST_CASE("the signal dump is written by a running process", "[control][cli][threads]") {
  temp_dir sockets, dumps;
  target t(sockets.path(), {{"ARENASTAT_DUMP_SIGNAL", "USR1"}, {"ARENASTAT_DUMP_DIR", dumps.path()}});
  const std::string prefix = "arenastat." + t.pid_text() + ".";
  REQUIRE(files_in(dumps.path(), prefix).empty());
  REQUIRE(::kill(t.pid(), SIGUSR1) == 0);
  REQUIRE(t.command("ping") == "done");  // changes nothing; see control_target.cpp
  // The file is created before it is filled: read it once the target says it is written.
  const std::string written = wait_for_dump(t);
  REQUIRE_FALSE(written.empty());
  const std::vector<std::string> found = files_in(dumps.path(), prefix);
  REQUIRE(found.size() == 1);
  CHECK(found[0] == written);
  const std::string text = slurp(found[0]);
  CHECK(text.rfind("TOTAL size=13000 count=12 blocks=10 entries=3 ", 0) == 0);
  CHECK(text.find(" sort=size\n") != std::string::npos);
  CHECK(t.command("grow 1") == "done");  // still running
}

TEST_CASE("ARENASTAT_DUMP_SORT=count sorts the signal dump by count", "[control][cli][threads]") {
  temp_dir sockets, dumps;
  target t(sockets.path(), {{"ARENASTAT_DUMP_SIGNAL", "SIGUSR2"},
                            {"ARENASTAT_DUMP_DIR", dumps.path()},
                            {"ARENASTAT_DUMP_SORT", "count"}});
  REQUIRE(::kill(t.pid(), SIGUSR2) == 0);
  REQUIRE(t.command("ping") == "done");
  const std::string written = wait_for_dump(t);  // the file is complete once this is said
  REQUIRE_FALSE(written.empty());
  const std::vector<std::string> found = files_in(dumps.path(), "arenastat.");
  REQUIRE(found.size() == 1);
  CHECK(found[0] == written);
  const std::string text = slurp(found[0]);
  CHECK(text.find(" sort=count\n") != std::string::npos);
  // count order: cache/items 10 allocations, then scratch (1 allocation) and
  // task/parse (1 run) by name
  const auto items = text.find("cache/items"), parse = text.find("task/parse"), scratch = text.find("scratch");
  CHECK(items < scratch);
  CHECK(scratch < parse);
}

TEST_CASE("bad environment values warn once and leave the process running", "[control][cli][threads]") {
  temp_dir sockets;
  const spawned p = spawn(target_path, {},
                          {{"ARENASTAT_CONTROL", "yes"},
                           {"ARENASTAT_SOCKET_DIR", sockets.path()},
                           {"ARENASTAT_DUMP_SIGNAL", "HUP"},
                           {"ARENASTAT_DUMP_SORT", "peak"},
                           {"ARENASTAT_DUMP_FORMAT", "prometheu"}});
  CHECK(read_line(p.out).rfind("ready ", 0) == 0);
  ::close(p.in);
  CHECK(wait_exit(p.pid) == 0);
  const std::string err = read_all(p.err, 1s);
  CHECK(err.find("arenastat: ignoring ARENASTAT_CONTROL='yes': expected 1 (on) or 0 (off)\n") != std::string::npos);
  CHECK(err.find("arenastat: ignoring ARENASTAT_DUMP_SIGNAL='HUP': expected USR1 or USR2; no dump signal "
                 "installed\n") != std::string::npos);
  CHECK(err.find("arenastat: ignoring ARENASTAT_DUMP_SORT='peak': expected size, count or blocks; dumps are "
                 "sorted by size\n") != std::string::npos);
  CHECK(err.find("arenastat: ignoring ARENASTAT_DUMP_FORMAT='prometheu': expected text or prometheus; dumps are "
                 "text\n") != std::string::npos);
  CHECK(files_in(sockets.path(), "").size() == 2);  // "." and "..": no socket
  ::close(p.out);
  ::close(p.err);
}

TEST_CASE("a socket directory open to others keeps the server off with a reason", "[control][cli][threads]") {
  temp_dir sockets;
  REQUIRE(::chmod(sockets.path().c_str(), 0755) == 0);
  const spawned p = spawn(target_path, {}, {{"ARENASTAT_CONTROL", "1"}, {"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(read_line(p.out).rfind("ready ", 0) == 0);
  ::close(p.in);
  CHECK(wait_exit(p.pid) == 0);
  const std::string err = read_all(p.err, 1s);
  CHECK(err.find("arenastat control: socket directory '" + sockets.path() +
                 "' (ARENASTAT_SOCKET_DIR) has mode 0755, open to group or others; it must be 0700") != std::string::npos);
  CHECK(files_in(sockets.path(), "").size() == 2);
  ::close(p.out);
  ::close(p.err);
}

namespace {

// A Unix socket at `path` bound by this process; listening only if asked.
int bind_socket_at(const std::string& path, bool listening) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) return -1;
  ::chmod(path.c_str(), 0600);
  if (listening) ::listen(fd, 4);
  return fd;
}

}  // namespace

TEST_CASE("a socket nobody listens on is unreachable (exit 3) with what to do", "[control][cli]") {
  temp_dir sockets;
  const std::string me = std::to_string(::getpid());
  const int fd = bind_socket_at(sockets.file(me + ".sock"), false);
  REQUIRE(fd >= 0);
  const cli_result r = run_cli({me, "help"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  ::close(fd);
  CHECK(r.status == 3);
  CHECK(r.err.find("nobody listens at '" + sockets.file(me + ".sock") + "'") != std::string::npos);
  CHECK(r.err.find("restart it with ARENASTAT_CONTROL=1") != std::string::npos);
}

TEST_CASE("a process that never answers times out (exit 3)", "[control][cli]") {
  temp_dir sockets;
  const std::string me = std::to_string(::getpid());
  const int fd = bind_socket_at(sockets.file(me + ".sock"), true);  // accepted by the kernel, never served
  REQUIRE(fd >= 0);
  const cli_result r = run_cli({"--timeout=300", me, "help"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  ::close(fd);
  CHECK(r.status == 3);
  CHECK(r.err.find("process " + me + " did not answer within 300 ms") != std::string::npos);
}

namespace {

// Connects to `path` without blocking until the listen queue is full; returns
// the pending connections (none accepted), empty if the queue never filled.
std::vector<int> fill_listen_queue(const std::string& path) {
  std::vector<int> pending;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  for (int i = 0; i < 64; ++i) {
    const int c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (::connect(c, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) {
      pending.push_back(c);
      continue;
    }
    const int err = errno;
    ::close(c);
    if (err == EAGAIN) return pending;
    break;
  }
  for (const int c : pending) ::close(c);
  return {};
}

}  // namespace

TEST_CASE("a full connection queue is busy (exit 5) within the grace, not a hang", "[control][cli]") {
  temp_dir sockets;
  const std::string me = std::to_string(::getpid());
  const std::string path = sockets.file(me + ".sock");
  const int fd = bind_socket_at(path, false);
  REQUIRE(fd >= 0);
  REQUIRE(::listen(fd, 0) == 0);  // one pending connection at most, never accepted
  const std::vector<int> pending = fill_listen_queue(path);
  REQUIRE_FALSE(pending.empty());
  const auto start = std::chrono::steady_clock::now();
  const cli_result r = run_cli({"--timeout=8000", me, "help"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  const auto took = std::chrono::steady_clock::now() - start;
  for (const int c : pending) ::close(c);
  ::close(fd);
  CHECK(r.status == 5);
  CHECK(r.out.empty());
  CHECK(r.err == "arenastat: process " + me + " is busy: its connection queue is full; retry later\n");
  CHECK(took < 4s);  // the grace is 200 ms; a blocking connect() waited past --timeout
}

TEST_CASE("a bad --timeout is a usage error", "[control][cli]") {
  const cli_result r = run_cli({"--timeout=soon", "1", "help"}, {});
  CHECK(r.status == 2);
  CHECK(r.err.find("arenastat: bad option '--timeout=soon': expected --timeout=MS with MS from 1 to 3600000\n") !=
        std::string::npos);
}

TEST_CASE("arguments to a command that takes none are a usage error", "[control][cli]") {
  const cli_result r = run_cli({"1", "reset", "now"}, {});
  CHECK(r.status == 2);
  CHECK(r.err.find("command 'reset' takes no arguments") != std::string::npos);
}

TEST_CASE("listing a missing socket directory says how to get one", "[control][cli]") {
  temp_dir parent;
  const cli_result r = run_cli({}, {{"ARENASTAT_SOCKET_DIR", parent.file("none")}});
  CHECK(r.status == 0);
  CHECK(r.out.empty());
  CHECK(r.err.find("start a program with ARENASTAT_CONTROL=1") != std::string::npos);
}

TEST_CASE("arenastat --help prints the usage and every command", "[control][cli]") {
  const cli_result r = run_cli({"--help"}, {});
  CHECK(r.status == 0);
  CHECK(r.out.rfind("usage: arenastat ", 0) == 0);
  CHECK(r.out.find("  baseline") != std::string::npos);
  CHECK(r.out.find("Exit status: 0 done, 1 ") != std::string::npos);
}
