// At-exit printing, tested in child processes (child/at_exit_child.cpp) run
// with the environment set: text to stderr, JSON to a file, bad values, the
// API, static destruction and fork().
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <algorithm>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "arenastat/report.hpp"

extern char** environ;

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using nlohmann::json;

namespace {

struct run_result {
  int exit_code = -1;
  std::string out, err;
};

// Runs `program mode` with the current environment minus every ARENASTAT_*
// variable, plus `env` ("NAME=value" strings); captures stdout and stderr.
run_result run_child(const char* program, std::vector<std::string> env,
                     const char* mode = nullptr) {
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "ARENASTAT_", 10) != 0) env.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<char*> argv{const_cast<char*>(program)};
  if (mode) argv.push_back(const_cast<char*>(mode));
  argv.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  REQUIRE(::pipe2(out_pipe, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(err_pipe, O_CLOEXEC) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, program, &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  REQUIRE(rc == 0);

  run_result r;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_count = 2;
  while (open_count > 0) {
    if (::poll(fds, 2, -1) < 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[4096];
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

run_result run_child(std::vector<std::string> env, const char* mode = nullptr) {
  return run_child(ARENASTAT_AT_EXIT_CHILD, std::move(env), mode);
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Whitespace-separated fields of the first line that ends with `name`.
std::vector<std::string> row_fields(const std::string& text, const std::string& name) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() < name.size() || line.compare(line.size() - name.size(), name.size(), name))
      continue;
    std::istringstream words(line);
    std::vector<std::string> fields;
    for (std::string w; words >> w;) fields.push_back(w);
    return fields;
  }
  return {};
}

std::string temp_path(const char* suffix) {
  static int n = 0;
  return "/tmp/arenastat-report-test-" + std::to_string(::getpid()) + "-" + std::to_string(++n) +
         suffix;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const json& entry_named(const json& j, const std::string& name) {
  for (const auto& e : j.at("entries"))
    if (e.at("name") == name) return e;
  FAIL("no entry named " << name);
  throw;  // not reached
}

// The two entries every child run produces (see at_exit_child.cpp).
void check_child_entries(const json& j) {
  CHECK(j.at("version") == 1);
  CHECK(j.at("pid").get<int>() > 0);
  CHECK(j.at("process").at("rss_bytes").get<std::uint64_t>() > 0);
  const json& work = entry_named(j, "child/work");
  CHECK(work.at("kind") == "scope");
  CHECK(work.at("peak_bytes") == 4096);
  CHECK(work.at("at_peak") == json{{"node", 4096}});
  CHECK(work.at("count") == 1);
  CHECK(work.at("last_peak_bytes") == 4096);
  CHECK(work.at("counters") == json{{"nodes", 3}});
  CHECK(work.at("result") == "ok");
  const json& cache = entry_named(j, "child/cache");
  CHECK(cache.at("kind") == "account");
  CHECK(cache.at("peak_bytes") == 300);
  CHECK(cache.at("at_peak") == json{{"heap", 300}});
  CHECK(cache.at("live_bytes") == 200);
  CHECK(cache.at("allocated_bytes") == 300);
  CHECK(cache.at("allocations") == 3);
  CHECK(cache.at("frees") == 1);
}

}  // namespace

TEST_CASE("at exit: nothing is printed when ARENASTAT_AT_EXIT is unset, empty or 0",
          "[at_exit]") {
  for (const auto& env : {std::vector<std::string>{}, std::vector<std::string>{"ARENASTAT_AT_EXIT="},
                          std::vector<std::string>{"ARENASTAT_AT_EXIT=0"}}) {
    const run_result r = run_child(env);
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
    CHECK(r.out.empty());
  }
}

TEST_CASE("at exit: ARENASTAT_AT_EXIT=1 prints the default text report to stderr",
          "[at_exit]") {
  const run_result r = run_child({"ARENASTAT_AT_EXIT=1"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, StartsWith("arenastat report\nLegend:\n"));
  CHECK(occurrences(r.err, "arenastat report") == 1);
  CHECK_THAT(r.err, Contains("Scopes (1):\npeak  node  counters  count   time  result  thread  name\n"));
  const auto work = row_fields(r.err, "child/work");
  REQUIRE(work.size() == 8);
  CHECK(work[0] == "4096");     // peak
  CHECK(work[1] == "4096");     // node at peak
  CHECK(work[2] == "nodes=3");
  CHECK(work[3] == "1");        // count
  CHECK(work[5] == "ok");
  CHECK(work[6] != "0");        // thread id
  CHECK_THAT(r.err, Contains("Accounts (1):\npeak  live  allocated  allocations  frees  heap  name\n"
                             " 300   200        300            3      1   300  child/cache\n"));
  CHECK_THAT(r.err, Contains("Total: 2 entries shown; scope peaks sum to 4096; account peaks "
                             "sum to 300, live 200\n"));
}

TEST_CASE("at exit: an option string is applied", "[at_exit]") {
  const run_result r = run_child({"ARENASTAT_AT_EXIT=-H -s=1k"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Contains("4.0K  4.0K  nodes=3"));
  CHECK_THAT(r.err, Contains("Accounts: none shown of 1\n"));
  CHECK_THAT(r.err, Contains("(1 entry smaller than 1.0K omitted)\n"));
}

TEST_CASE("at exit: --json goes to ARENASTAT_AT_EXIT_FILE and parses", "[at_exit]") {
  const std::string path = temp_path(".json");
  const run_result r = run_child({"ARENASTAT_AT_EXIT=--json", "ARENASTAT_AT_EXIT_FILE=" + path});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  const std::string text = read_file(path);
  std::remove(path.c_str());
  REQUIRE_FALSE(text.empty());
  check_child_entries(json::parse(text));
}

TEST_CASE("at exit: --json without a file goes to stderr", "[at_exit]") {
  const run_result r = run_child({"ARENASTAT_AT_EXIT=--json --sort=name"});
  CHECK(r.exit_code == 0);
  const json j = json::parse(r.err);
  check_child_entries(j);
  CHECK(j.at("entries").at(0).at("name") == "child/cache");
}

TEST_CASE("at exit: a bad value gives one warning, then the default report", "[at_exit]") {
  const run_result r = run_child({"ARENASTAT_AT_EXIT=-s=10x"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, StartsWith(
      "arenastat: ignoring ARENASTAT_AT_EXIT='-s=10x' (bad option '-s=10x': invalid "
      "size '10x': expected a whole number of bytes with an optional suffix k, m or g (e.g. "
      "4096, 64k, 10m)); the default report will be printed at exit\narenastat report\n"));
  CHECK(occurrences(r.err, "arenastat: ignoring") == 1);
  CHECK(occurrences(r.err, "arenastat report") == 1);
  CHECK(row_fields(r.err, "child/work").at(0) == "4096");
}

TEST_CASE("at exit: a bad value leaves ARENASTAT_AT_EXIT_FILE alone and prints the default report to stderr",
          "[at_exit][prometheus]") {
  // A .prom file node_exporter reads, from an earlier run: a text report in
  // its place would break every series of it.
  const std::string path = temp_path(".prom");
  const std::string earlier = "arenastat_account_live_bytes{account=\"child/cache\"} 100\n";
  std::ofstream(path) << earlier;
  const run_result r = run_child({"ARENASTAT_AT_EXIT=--prometheus --depth=2", "ARENASTAT_AT_EXIT_FILE=" + path});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, StartsWith("arenastat: ignoring ARENASTAT_AT_EXIT='--prometheus --depth=2' (unknown "
                               "option '--depth=2'"));
  CHECK_THAT(r.err, Contains("); the default report will be printed at exit to stderr (ARENASTAT_AT_EXIT_FILE '" +
                             path + "' is left as it is: it was meant for the report asked for)\narenastat report\n"));
  CHECK(read_file(path) == earlier);
  std::remove(path.c_str());
}

TEST_CASE("at exit: --json with --tree is a bad value too", "[at_exit]") {
  const run_result r = run_child({"ARENASTAT_AT_EXIT=--json --tree"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, StartsWith("arenastat: ignoring ARENASTAT_AT_EXIT='--json --tree' "
                               "(bad option '--json' with '--tree': choose one output format); "
                               "the default report will be printed at exit\narenastat report\n"));
}

TEST_CASE("at exit: a file that cannot be opened is named, and stderr gets the report",
          "[at_exit]") {
  const run_result r = run_child(
      {"ARENASTAT_AT_EXIT=1", "ARENASTAT_AT_EXIT_FILE=/nonexistent-arenastat-dir/report.txt"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, StartsWith("arenastat: cannot open ARENASTAT_AT_EXIT_FILE "
                               "'/nonexistent-arenastat-dir/report.txt': No such file or "
                               "directory; printing the report to stderr\narenastat report\n"));
}

TEST_CASE("at exit: print_at_exit prints once, with the options of the last call",
          "[at_exit]") {
  const run_result r = run_child({}, "api");
  CHECK(r.exit_code == 0);
  CHECK(occurrences(r.err, "arenastat report") == 1);
  CHECK_THAT(r.err, !Contains("\"version\""));
  CHECK_THAT(r.err, Contains("4.0K  4.0K  nodes=3"));
}

TEST_CASE("at exit: print_at_exit replaces the environment's options", "[at_exit]") {
  const run_result r = run_child({"ARENASTAT_AT_EXIT=--tree"}, "api");
  CHECK(r.exit_code == 0);
  CHECK(occurrences(r.err, "arenastat report") == 1);
  CHECK_THAT(r.err, !Contains("tree"));
}

TEST_CASE("at exit: print_at_exit rejects bad options at once", "[at_exit]") {
  CHECK_THROWS_WITH(arenastat::print_at_exit("--bogus"), Contains("'--bogus'"));
  CHECK_THROWS_AS(arenastat::print_at_exit("-s=10x"), std::invalid_argument);
}

TEST_CASE("at exit: scopes that end during static destruction are in the report",
          "[at_exit]") {
  const run_result r = run_child({"ARENASTAT_AT_EXIT=--json"}, "late");
  CHECK(r.exit_code == 0);
  const json j = json::parse(r.err);
  check_child_entries(j);
  const json& late = entry_named(j, "child/late");
  CHECK(late.at("peak_bytes") == 8192);
  CHECK(late.at("at_peak") == json{{"node", 8192}});
}

TEST_CASE("at exit: a fork()ed copy that exits prints nothing", "[at_exit]") {
  const run_result r = run_child({"ARENASTAT_AT_EXIT=1"}, "fork");
  CHECK(r.exit_code == 0);
  CHECK(occurrences(r.err, "arenastat report") == 1);
}

TEST_CASE("at exit: jemalloc totals are reported when jemalloc is the allocator",
          "[at_exit]") {
  const run_result r = run_child(ARENASTAT_AT_EXIT_CHILD_JE, {"ARENASTAT_AT_EXIT=--json"});
  CHECK(r.exit_code == 0);
  const json j = json::parse(r.err);
  check_child_entries(j);
#if defined(__SANITIZE_ADDRESS__)
  // The sanitizer's malloc is the process allocator, not the jemalloc library.
  CHECK_FALSE(j.at("process").contains("jemalloc"));
#else
  const json& je = j.at("process").at("jemalloc");
  CHECK(je.at("allocated_bytes").get<std::uint64_t>() > 0);
  CHECK(je.at("active_bytes") >= je.at("allocated_bytes"));
  CHECK(je.at("resident_bytes") >= je.at("active_bytes"));
  CHECK(je.at("mapped_bytes") >= je.at("active_bytes"));
#endif
}

TEST_CASE("at exit: --prometheus writes the exposition to ARENASTAT_AT_EXIT_FILE through a rename",
          "[at_exit][prometheus]") {
  const std::string dir = temp_path("-prom");
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  const std::string path = dir + "/app.prom";
  const run_result r = run_child({"ARENASTAT_AT_EXIT=--prometheus", "ARENASTAT_AT_EXIT_FILE=" + path});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  const std::string text = read_file(path);
  // child/cache: peak 300, live 200 (at_exit_child.cpp).
  // Every sample labelled with the program (/proc/self/comm of at_exit_child).
  CHECK_THAT(text, Contains("\narenastat_account_live_bytes{program=\"at_exit_child\",account=\"child/cache\"} 200\n"));
  CHECK_THAT(text, Contains("\narenastat_account_peak_bytes{program=\"at_exit_child\",account=\"child/cache\"} 300\n"));
  CHECK_THAT(text, Contains("\narenastat_process_rss_bytes{program=\"at_exit_child\"} "));
  // Only the file itself is left: the temporary was renamed over it.
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
    }
    ::closedir(d);
  }
  CHECK(names == std::vector<std::string>{"app.prom"});
  std::remove(path.c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("at exit: the .prom files of two programs in one directory share no series", "[at_exit][prometheus]") {
  // node_exporter's textfile collector refuses a series two files give.
  const std::string dir = temp_path("-prom-two");
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  const std::string a = dir + "/a.prom", b = dir + "/b.prom";
  CHECK(run_child(ARENASTAT_AT_EXIT_CHILD, {"ARENASTAT_AT_EXIT=--prometheus", "ARENASTAT_AT_EXIT_FILE=" + a}).exit_code == 0);
  CHECK(run_child(ARENASTAT_AT_EXIT_CHILD_JE, {"ARENASTAT_AT_EXIT=--prometheus", "ARENASTAT_AT_EXIT_FILE=" + b}).exit_code == 0);
  // The series of each file: every sample line up to its value.
  const auto series = [](const std::string& text, const std::string& program) {
    std::set<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      const std::string name = line.substr(0, line.find('{'));
      CHECK(line.substr(name.size(), program.size() + 11) == "{program=\"" + program + "\"");
      out.insert(line.substr(0, line.rfind(' ')));
    }
    return out;
  };
  const std::set<std::string> sa = series(read_file(a), "at_exit_child");
  const std::set<std::string> sb = series(read_file(b), "at_exit_child_je");  // the executable's name, whole
  CHECK(sa.size() > 10);
  CHECK(sb.size() > 10);
  std::vector<std::string> both;
  std::set_intersection(sa.begin(), sa.end(), sb.begin(), sb.end(), std::back_inserter(both));
  CHECK(both.empty());
  std::remove(a.c_str());
  std::remove(b.c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("at exit: --prometheus to a symbolic link writes through it, as the text report does", "[at_exit][prometheus]") {
  // A rename would replace the link (or a device such as /dev/stderr) with a
  // regular file: anything but a regular file is written in place.
  const std::string dir = temp_path("-prom-link");
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  const std::string target = dir + "/target.prom", link = dir + "/link.prom";
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
  const run_result r = run_child({"ARENASTAT_AT_EXIT=--prometheus", "ARENASTAT_AT_EXIT_FILE=" + link});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  struct stat st {};
  REQUIRE(::lstat(link.c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  CHECK_THAT(read_file(target), Contains("\narenastat_account_live_bytes{account=\"child/cache\"} 200\n"));
  std::remove(link.c_str());
  std::remove(target.c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("at exit: --prometheus that cannot be written says why and prints the exposition to stderr",
          "[at_exit][prometheus]") {
  const run_result r = run_child(
      {"ARENASTAT_AT_EXIT=--prometheus", "ARENASTAT_AT_EXIT_FILE=/nonexistent-arenastat-dir/a\x1b[2J.prom"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, StartsWith("arenastat: cannot write the at-exit report to ARENASTAT_AT_EXIT_FILE "
                               "'/nonexistent-arenastat-dir/a\\x1b[2J.prom': No such file or directory; "
                               "printing it to stderr\n# HELP "));
  CHECK_THAT(r.err, Contains("\narenastat_account_live_bytes{program=\"at_exit_child\",account=\"child/cache\"} 200\n"));
}

TEST_CASE("at exit: the .prom file is made with mode 0666 minus the umask", "[at_exit][prometheus]") {
  const std::string dir = temp_path("-prom-mode");
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  const std::string path = dir + "/app.prom";
  const mode_t before = ::umask(0);
  const run_result r = run_child({"ARENASTAT_AT_EXIT=--prometheus", "ARENASTAT_AT_EXIT_FILE=" + path});
  ::umask(before);
  CHECK(r.exit_code == 0);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0666);
  std::remove(path.c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("at exit: a relative ARENASTAT_AT_EXIT_FILE is taken from the working directory at start-up",
          "[at_exit]") {
  char cwd[4096];
  REQUIRE(::getcwd(cwd, sizeof cwd) != nullptr);
  const std::string name = "arenastat-relative-" + std::to_string(::getpid()) + ".txt";
  const run_result r = run_child({"ARENASTAT_AT_EXIT=1", "ARENASTAT_AT_EXIT_FILE=" + name}, "chdir");
  CHECK(r.exit_code == 0);
  const std::string here = std::string(cwd) + "/" + name;
  CHECK_THAT(read_file(here), StartsWith("arenastat report\n"));
  std::remove(here.c_str());
}

TEST_CASE("at exit: the whole report reaches a non-blocking stderr", "[at_exit]") {
  // About 560 KB, against a pipe of 64 KiB read by this process meanwhile.
  const run_result r = run_child({"ARENASTAT_AT_EXIT=1"}, "nonblock");
  CHECK(r.exit_code == 0);
  CHECK(occurrences(r.err, "child/many/") == 8000);
  CHECK_THAT(r.err, Contains("\nTotal: "));
}

TEST_CASE("at exit: exit() from a signal handler that interrupted a scope's fold does not hang", "[at_exit]") {
  // The handler may run while its thread holds the table's lock: the report
  // is then skipped with a line saying so (the child's watchdog exits 99 on a hang).
  for (int i = 0; i < 5; ++i) {
    const run_result r = run_child({"ARENASTAT_AT_EXIT=1"}, "signal-exit");
    CHECK(r.exit_code == 0);
    const bool skipped = r.err.rfind("arenastat: the at-exit report and leak check are skipped", 0) == 0;
    CHECK((skipped || r.err.rfind("arenastat report\n", 0) == 0));
  }
}

TEST_CASE("at exit: ARENASTAT_TABLE_MAX takes the largest size_t", "[at_exit]") {
  const run_result r = run_child({"ARENASTAT_TABLE_MAX=18446744073709551615"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  const run_result over = run_child({"ARENASTAT_TABLE_MAX=18446744073709551616"});
  CHECK_THAT(over.err, StartsWith("arenastat: ignoring ARENASTAT_TABLE_MAX='18446744073709551616'"));
}
