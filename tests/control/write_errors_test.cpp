// Write errors are reported, never lost, and warnings quote bad values only
// in part (docs/cli.md, docs/report.md).
#include <catch2/catch.hpp>

#include "harness.hpp"

using namespace control_test;

TEST_CASE("an at-exit report that cannot be written to ARENASTAT_AT_EXIT_FILE is reported on stderr",
          "[control][write_errors][threads]") {
  temp_dir sockets;
  const exited r = run_target_to_exit({{"ARENASTAT_AT_EXIT", "1"}, {"ARENASTAT_AT_EXIT_FILE", "/dev/full"}}, 10s);
  CHECK(r.status == 0);
  CHECK(r.err.rfind("arenastat: cannot write the at-exit report to ARENASTAT_AT_EXIT_FILE '/dev/full': No space left "
                    "on device; printing it to stderr\narenastat report",
                    0) == 0);
}

TEST_CASE("a dump to a full device is an error of the process (exit 1)", "[control][write_errors][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  const cli_result r = run_cli({t.pid_text(), "dump", "/dev/full"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 1);
  CHECK(r.out.empty());
  CHECK(r.err == "arenastat: " + t.pid_text() + ": dump: cannot write '/dev/full': No space left on device\n");
}

TEST_CASE("a dump to a FIFO is refused at once, with or without a reader, and the server goes on answering",
          "[control][write_errors][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  const std::string fifo = sockets.path() + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  const std::string refusal = "arenastat: " + t.pid_text() + ": dump: refusing to write '" + fifo +
                              "': it is a FIFO or socket, and a dump never waits for a reader; give a regular file\n";
  const cli_result alone = run_cli({"--timeout=3000", t.pid_text(), "dump", fifo}, env);  // no reader: no wait
  CHECK(alone.status == 1);
  CHECK(alone.err == refusal);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // a reader that never reads
  REQUIRE(reader >= 0);
  const cli_result read = run_cli({"--timeout=3000", t.pid_text(), "dump", fifo}, env);
  CHECK(read.status == 1);
  CHECK(read.err == refusal);
  char byte;
  CHECK(::read(reader, &byte, 1) == 0);  // nothing was written
  ::close(reader);
  const cli_result info = run_cli({t.pid_text(), "info"}, env);
  CHECK(info.status == 0);
  CHECK(info.out.rfind("pid " + t.pid_text() + "\n", 0) == 0);
}

TEST_CASE("a dump to a terminal nobody reads fails within a second, and the server goes on answering",
          "[control][write_errors][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  t.command("entries 5000");  // a dump of about 5000 lines: more than a terminal buffers
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);  // never read
  REQUIRE(master >= 0);
  REQUIRE(::grantpt(master) == 0);
  REQUIRE(::unlockpt(master) == 0);
  const std::string terminal = ::ptsname(master);
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  const auto start = std::chrono::steady_clock::now();
  const cli_result r = run_cli({"--timeout=8000", t.pid_text(), "dump", terminal}, env);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(r.status == 1);
  CHECK(r.err == "arenastat: " + t.pid_text() + ": dump: cannot write '" + terminal +
                     "': it took nothing for 1000 ms (a device such as a terminal nobody reads; a dump does not wait "
                     "for a reader): Resource temporarily unavailable\n");
  CHECK(seconds < 5);  // 1 s of waiting, not the CLI's 8 s time-out
  for (int i = 0; i < 3; ++i) {  // again and again: nothing is left holding the server
    const cli_result again = run_cli({"--timeout=8000", t.pid_text(), "dump", terminal}, env);
    CHECK(again.status == 1);
  }
  const cli_result info = run_cli({"--timeout=3000", t.pid_text(), "info"}, env);
  CHECK(info.status == 0);
  CHECK(info.out.rfind("pid " + t.pid_text() + "\n", 0) == 0);
  ::close(master);
}

TEST_CASE("a dump to a slow terminal that keeps reading is written whole", "[control][write_errors][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  t.command("entries 5000");
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  REQUIRE(master >= 0);
  REQUIRE(::grantpt(master) == 0);
  REQUIRE(::unlockpt(master) == 0);
  const std::string terminal = ::ptsname(master);
  // A reader taking 4 KiB every 10 ms (about 400 KB/s): the dump takes over a
  // second to go through, never a second without progress.
  std::atomic<bool> done{false};
  std::size_t taken = 0;
  std::thread reader([&] {
    char buf[4096];
    while (!done.load()) {
      pollfd p{master, POLLIN, 0};
      if (::poll(&p, 1, 10) > 0) {
        const ssize_t n = ::read(master, buf, sizeof buf);
        if (n > 0) taken += static_cast<std::size_t>(n);
      }
      std::this_thread::sleep_for(10ms);
    }
  });
  const cli_result r = run_cli({"--timeout=40000", t.pid_text(), "dump", terminal}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  std::this_thread::sleep_for(200ms);  // the last bytes
  done = true;
  reader.join();
  ::close(master);
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  CHECK(taken > 5000 * 20);  // 5000 entries of more than 20 bytes each
}

TEST_CASE("an at-exit report to a FIFO with no reader goes to stderr at once", "[control][write_errors][threads]") {
  temp_dir sockets;
  const std::string fifo = sockets.path() + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const exited r = run_target_to_exit({{"ARENASTAT_AT_EXIT", "1"}, {"ARENASTAT_AT_EXIT_FILE", fifo}});
  CHECK(r.status == 0);
  CHECK(r.err.rfind("arenastat: cannot open ARENASTAT_AT_EXIT_FILE '" + fifo +
                      "': No such device or address (a FIFO with no reader: the report does not wait for one); "
                      "printing the report to stderr\narenastat report",
                  0) == 0);
}

namespace {

using full_run = exited;  // a status and stderr (harness.hpp)

// Runs the CLI with its stdout on /dev/full.
full_run run_cli_into_full(const std::vector<std::string>& args, const env_map& env) {
  const int full = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  REQUIRE(full >= 0);
  int err[2];
  REQUIRE(::pipe2(err, O_CLOEXEC) == 0);
  posix_spawn_file_actions_t fa;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawn_file_actions_adddup2(&fa, full, 1);
  ::posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  pid_t pid = -1;
  REQUIRE(spawn_with(pid, fa, cli_path, args, env) == 0);
  ::close(full);
  ::close(err[1]);
  full_run r;
  r.status = wait_exit(pid);
  r.err = read_all(err[0], 1s);
  ::close(err[0]);
  return r;
}

const std::string stdout_full = "arenastat: cannot write the answer to standard output: No space left on device\n";

}  // namespace

TEST_CASE("an answer the CLI cannot write to stdout is reported (exit 6)", "[control][write_errors][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  const full_run r = run_cli_into_full({t.pid_text(), "help"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 6);
  CHECK(r.err == stdout_full);
}

TEST_CASE("html and top --batch report a failed write to stdout (exit 6)", "[control][write_errors][html][top][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  const full_run html = run_cli_into_full({t.pid_text(), "html"}, env);
  CHECK(html.status == 6);
  CHECK(html.err == stdout_full);
  const full_run top = run_cli_into_full({t.pid_text(), "top", "--batch", "-n", "1"}, env);
  CHECK(top.status == 6);
  CHECK(top.err == stdout_full);
}

TEST_CASE("html -o FILE that cannot be written is exit 6 with the file's error, not a usage error",
          "[control][write_errors][html][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  const cli_result full = run_cli({t.pid_text(), "html", "-o", "/dev/full"}, env);
  CHECK(full.status == 6);
  CHECK(full.out.empty());
  CHECK(full.err == "arenastat: html: cannot write '/dev/full': No space left on device\n");
  const std::string nowhere = sockets.file("no/such/dir/page.html");
  const cli_result missing = run_cli({t.pid_text(), "html", "-o", nowhere}, env);
  CHECK(missing.status == 6);
  CHECK(missing.err == "arenastat: html: cannot write '" + nowhere + "': No such file or directory\n");
  // A FILE holding a terminal escape and a newline is written escaped, on one line.
  const cli_result odd = run_cli({t.pid_text(), "html", "-o", sockets.file("no\x1b[2J\nsuch/page.html")}, env);
  CHECK(odd.status == 6);
  CHECK(odd.err == "arenastat: html: cannot write '" + sockets.file("no\\x1b[2J\\x0asuch/page.html") +
                       "': No such file or directory\n");
}

TEST_CASE("a warning quotes at most the first 200 bytes of a bad value", "[control][write_errors][threads]") {
  temp_dir sockets;
  std::string value(1000, 'y');
  value.append("\x1b[2J");
  const exited r = run_target_to_exit({{"ARENASTAT_CONTROL", value}, {"ARENASTAT_SOCKET_DIR", sockets.path()}}, 10s);
  CHECK(r.status == 0);
  CHECK(r.err == "arenastat: ignoring ARENASTAT_CONTROL='" + std::string(200, 'y') +
                     "'... (1004 bytes): expected 1 (on) or 0 (off)\n");
}

TEST_CASE("a bad value's control bytes are escaped in the warning", "[control][write_errors][threads]") {
  temp_dir sockets;
  const exited r =
      run_target_to_exit({{"ARENASTAT_DUMP_SORT", "size\x1b[2J"}, {"ARENASTAT_SOCKET_DIR", sockets.path()}}, 10s);
  CHECK(r.status == 0);
  CHECK(r.err ==
        "arenastat: ignoring ARENASTAT_DUMP_SORT='size\\x1b[2J': expected size, count or blocks; dumps are sorted by "
        "size\n");
}

TEST_CASE("the process listing and --help the CLI cannot write to stdout are reported (exit 6)",
          "[control][write_errors][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  const full_run list = run_cli_into_full({}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(list.status == 6);
  CHECK(list.err == stdout_full);
  const full_run help = run_cli_into_full({"--help"}, {});
  CHECK(help.status == 6);
  CHECK(help.err == stdout_full);
}
