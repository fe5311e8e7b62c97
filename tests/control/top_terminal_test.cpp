// `arenastat <pid> top` on a terminal, read byte for byte: the CLI runs on a
// pseudo-terminal (stdin and stdout) of a known size against an impostor
// server (programs/fake_server.cpp) whose stats --json answer is chosen by
// the test, and the test reads what the terminal received, escape sequences
// included. The same view in a real terminal emulator: tests/tmux.
#include <catch2/catch.hpp>

#include <sys/ioctl.h>
#include <termios.h>

#include "harness.hpp"

using namespace control_test;

namespace {

// The CLI on a pseudo-terminal of `columns` x `rows`.
class cli_on_terminal {
 public:
  cli_on_terminal(const std::vector<std::string>& args, const env_map& env, unsigned short columns,
                  unsigned short rows) {
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    REQUIRE(master_ >= 0);
    REQUIRE(::grantpt(master_) == 0);
    REQUIRE(::unlockpt(master_) == 0);
    const winsize size{rows, columns, 0, 0};
    REQUIRE(::ioctl(master_, TIOCSWINSZ, &size) == 0);
    const int slave = ::open(::ptsname(master_), O_RDWR | O_NOCTTY | O_CLOEXEC);
    REQUIRE(slave >= 0);
    posix_spawn_file_actions_t fa;
    ::posix_spawn_file_actions_init(&fa);
    for (const int fd : {0, 1, 2}) ::posix_spawn_file_actions_adddup2(&fa, slave, fd);
    REQUIRE(spawn_with(pid_, fa, cli_path, args, env) == 0);
    ::close(slave);
  }
  ~cli_on_terminal() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(master_);
  }
  cli_on_terminal(const cli_on_terminal&) = delete;
  cli_on_terminal& operator=(const cli_on_terminal&) = delete;

  // Reads what the terminal received until it holds `text` (true) or `limit`
  // passes (false).
  bool wait_for(const std::string& text, std::chrono::milliseconds limit = 10s) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (received_.find(text) == std::string::npos) {
      if (std::chrono::steady_clock::now() >= until) return false;
      read_some(50ms);
    }
    return true;
  }
  void type(const std::string& keys) { REQUIRE(::write(master_, keys.data(), keys.size()) == static_cast<ssize_t>(keys.size())); }
  // Waits for the CLI to exit, reading the terminal meanwhile; its status.
  int finish(std::chrono::milliseconds limit = 10s) {
    const auto until = std::chrono::steady_clock::now() + limit;
    for (;;) {
      read_some(10ms);
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        while (read_some(50ms)) {
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() >= until) return -1;
    }
  }
  const std::string& received() const { return received_; }

 private:
  bool read_some(std::chrono::milliseconds limit) {
    pollfd p{master_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(limit.count())) <= 0) return false;
    char buf[4096];
    const ssize_t n = ::read(master_, buf, sizeof buf);
    if (n <= 0) return false;
    received_.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  int master_ = -1;
  pid_t pid_ = -1;
  std::string received_;
};

// The lines of the last frame drawn: what follows the last "\x1b[H" (cursor
// home), split at the view's line ends ("\x1b[K" and CR LF; the terminal's
// output processing turns LF into CR LF, so the CRs are dropped first).
std::vector<std::string> last_frame(const std::string& received) {
  const std::size_t home = received.rfind("\x1b[H");
  std::vector<std::string> lines;
  if (home == std::string::npos) return lines;
  std::string frame = received.substr(home + 3);
  std::erase(frame, '\r');
  for (std::size_t at = 0;;) {  // each line ends with "\x1b[K", all but the last with a LF after it
    const std::size_t end = frame.find("\x1b[K", at);
    lines.push_back(frame.substr(at, end - at));
    if (end == std::string::npos || frame.compare(end + 3, 1, "\n") != 0) break;
    at = end + 4;
  }
  return lines;
}

std::string line_with(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& l : lines)
    if (l.find(text) != std::string::npos) return l;
  return {};
}

// A stats --json answer: an account with live bytes, one with negative live
// bytes (it freed memory allocated before it was tracked) and a scope that hit
// its memory limit.
const std::string answer =
    R"(--answer=ok\n{"pid":1,"process":{"rss_bytes":4096,"hwm_bytes":4096,"rss_anon_bytes":0},"entries":[)"
    R"({"name":"cache/held","kind":"account","live_bytes":5000,"peak_bytes":6000},)"
    R"({"name":"freed/before","kind":"account","live_bytes":-5000,"peak_bytes":0},)"
    R"({"name":"job!/limited","kind":"scope","peak_bytes":100,"count":2,"oom_count":1}]}\n)";

// The last frame `top` draws on a terminal of `columns` x `rows` against an
// impostor answering `answer`, once `shown` appeared; the view quits on `q`
// and must exit 0. `pid`: the impostor's pid, for the title.
struct top_view {
  std::vector<std::string> frame;
  std::string pid;
};
top_view top_frame(const std::string& answer_arg, unsigned short columns, unsigned short rows,
                   const std::string& shown) {
  temp_dir dir;
  const fake_server server({dir.file("%p.sock"), answer_arg});
  cli_on_terminal cli({server.pid(), "top", "-d", "5"}, {{"ARENASTAT_SOCKET_DIR", dir.path()}}, columns, rows);
  REQUIRE(cli.wait_for(shown));
  cli.type("q");
  CHECK(cli.finish() == 0);
  INFO(cli.received());
  return {last_frame(cli.received()), server.pid()};
}

}  // namespace

TEST_CASE("top on a terminal: negative live bytes draw no bar, the limit mark is red", "[cli][top]") {
  const std::vector<std::string> frame = top_frame(answer, 100, 12, "job!/limited").frame;
  // 100 columns: a bar of (100 - 48) / 3 = 17 cells before the name.
  CHECK(line_with(frame, "cache/held") ==
        "     4.9K      5.9K          -      -   account ################# cache/held");
  CHECK(line_with(frame, "freed/before") ==
        "    -4.9K        0B          -      -   account                   freed/before");
  // The L column, and only it, in red (the name's own '!' is left alone).
  CHECK(line_with(frame, "job!/limited") ==
        "        -      100B          -      2 \x1b[31;1m!\x1b[0m scope                     job!/limited");
}

TEST_CASE("top on a terminal: wide characters take two columns, and a row ends before the edge", "[cli][top]") {
  // 20 CJK ideographs (U+6F22, two columns each). At 71 columns there is no
  // bar (71 < 48 + 30): the row is the 48 fixed columns, then 11 ideographs
  // (22 columns); a 12th would reach column 72.
  std::string name;
  for (int i = 0; i < 20; ++i) name += "\xe6\xbc\xa2";
  const std::string wide_answer =
      R"(--answer=ok\n{"pid":1,"process":{"rss_bytes":4096,"hwm_bytes":4096,"rss_anon_bytes":0},"entries":[)"
      R"({"name":")" + name + R"(","kind":"account","live_bytes":5000,"peak_bytes":6000}]}\n)";
  const std::vector<std::string> frame = top_frame(wide_answer, 71, 12, "\xe6\xbc\xa2").frame;
  CHECK(line_with(frame, "\xe6\xbc\xa2") ==
        "     4.9K      5.9K          -      -   account " + name.substr(0, 11 * 3));
}

TEST_CASE("top on a terminal narrower than 64 columns keeps the sort's figure, the limit mark and the names",
          "[cli][top]") {
  // 40 columns: the 48 fixed columns would leave no name. The sort is live
  // (the default): LIVE right-aligned in 10 columns, the L mark, the name.
  const std::vector<std::string> frame = top_frame(answer, 40, 12, "job!/limited").frame;
  CHECK(line_with(frame, "NAME") == "\x1b[7m      LIVE L NAME" + std::string(40 - 17, ' ') + "\x1b[0m");
  CHECK(line_with(frame, "cache/held") == "      4.9K   cache/held");
  CHECK(line_with(frame, "freed/before") == "     -4.9K   freed/before");
  CHECK(line_with(frame, "job!/limited") == "         - \x1b[31;1m!\x1b[0m job!/limited");
  // At 63 too; at 64 the full columns come back.
  CHECK(line_with(top_frame(answer, 63, 12, "job!/limited").frame, "cache/held") == "      4.9K   cache/held");
  CHECK(line_with(top_frame(answer, 64, 12, "job!/limited").frame, "cache/held") ==
        "     4.9K      5.9K          -      -   account cache/held");
}

TEST_CASE("top on a terminal lower than its header keeps the title on the first line", "[cli][top]") {
  const top_view v = top_frame(answer, 100, 2, "arenastat top - pid");
  REQUIRE(v.frame.size() == 2);
  CHECK(v.frame[0].rfind("arenastat top - pid " + v.pid, 0) == 0);
}
