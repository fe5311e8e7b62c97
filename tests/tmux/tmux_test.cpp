// `arenastat <pid> top` in a real terminal: a private tmux server runs a shell,
// the test types the command (send-keys) and reads the screen (capture-pane).
// Without tmux these tests FAIL (scripts/setup.sh installs it). Label: tmux.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "harness.hpp"

using namespace control_test;

namespace {

std::string sh(const std::string& command) {
  std::string out;
  FILE* f = ::popen((command + " 2>&1").c_str(), "r");
  REQUIRE(f != nullptr);
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  ::pclose(f);
  return out;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// A tmux server of our own (-L) with one 120x24 window running a plain bash.
class tmux_session {
 public:
  tmux_session() : server_("arenastat-test-" + std::to_string(::getpid())) {
    INFO("tmux is missing: install it with scripts/setup.sh (Debian package 'tmux')");
    REQUIRE(::access("/usr/bin/tmux", X_OK) == 0);
    sh(tmux() + " new-session -d -s top -x 120 -y 24 'env PS1=\"ready$ \" TERM=xterm-256color bash --norc --noprofile'");
    REQUIRE(wait_for([](const std::string& s) { return s.find("ready$") != std::string::npos; }));
  }
  ~tmux_session() { sh(tmux() + " kill-server"); }

  std::string tmux() const { return "tmux -L " + server_; }
  void keys(const std::string& literal) { sh(tmux() + " send-keys -t top -l " + quote(literal)); }
  void key(const std::string& name) { sh(tmux() + " send-keys -t top " + name); }
  std::string screen() { return sh(tmux() + " capture-pane -p -t top"); }
  // The program in the pane's foreground ("bash" once top has ended).
  std::string foreground() {
    std::string c = sh(tmux() + " display-message -p -t top '#{pane_current_command}'");
    while (!c.empty() && c.back() == '\n') c.pop_back();
    return c;
  }

  // Polls the screen until `ok` holds (20 s at most: the machine may be busy).
  bool wait_for(const std::function<bool(const std::string&)>& ok) {
    for (int i = 0; i < 400; ++i) {
      last_ = screen();
      if (ok(last_)) return true;
      ::usleep(50000);
    }
    return false;
  }
  // The screen the last wait_for saw.
  const std::string& last() const { return last_; }

 private:
  std::string server_;
  std::string last_;
};

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

// The name column of the first entry row under the column header ("" if none).
std::string first_entry(const std::string& screen) {
  const auto lines = lines_of(screen);
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
    if (lines[i].find("GROWTH/s") == std::string::npos) continue;
    const std::string& row = lines[i + 1];
    const auto at = row.find_last_of(' ');
    return at == std::string::npos ? row : row.substr(at + 1);
  }
  return {};
}

// Types `command` (a top) and Enter, then waits for its first screen, whose
// first entry is the target's largest account (cache/items).
bool starts_top(tmux_session& t, const std::string& command) {
  t.keys(command);
  t.key("Enter");
  return t.wait_for([](const std::string& s) { return first_entry(s) == "cache/items"; });
}

// Waits for top to end (the shell is the pane's foreground program again:
// top leaves the alternate screen a moment before it exits), then asks the
// shell for top's exit status (`status`: 0 after q, 128 + the signal that
// ended the view) and its terminal modes. Typing before top has ended would
// hand the command to top, which reads up to 64 bytes at once and drops what
// follows a 'q'.
bool terminal_is_sane(tmux_session& t, const std::string& marker, int status = 0) {
  bool ended = false;
  for (int i = 0; i < 400 && !ended; ++i) {
    ended = t.foreground() == "bash";
    if (!ended) ::usleep(50000);
  }
  if (!ended) {
    UNSCOPED_INFO("top did not end (" << marker << "), the pane runs " << t.foreground() << ":\n" << t.screen());
    return false;
  }
  t.keys("s=$?; stty -a | tr ' ' '\\n' | grep -x -e icanon -e echo | tr '\\n' ' '; echo status-$s " + marker);
  t.key("Enter");
  const std::string expected = "icanon echo status-" + std::to_string(status) + " " + marker;
  if (t.wait_for([&](const std::string& s) { return s.find(expected) != std::string::npos; })) return true;
  UNSCOPED_INFO("no '" << expected << "' from the shell:\n" << t.last());
  return false;
}

}  // namespace

TEST_CASE("top: the live view shows the top entry, s changes the order, q and Ctrl-C restore the shell", "[tmux]") {
  temp_dir dir;
  target app(dir.path());
  REQUIRE(app.command("scope big/job 50000") == "done");  // largest peak; cache/items largest live
  tmux_session t;
  const std::string run = "ARENASTAT_SOCKET_DIR=" + dir.path() + " " + cli_path + " " + app.pid_text() + " top -d 0.3";
  t.keys(run);
  t.key("Enter");

  // Sorted by live bytes: the account cache/items (10000 live bytes) comes first.
  INFO(t.screen());
  REQUIRE(t.wait_for([](const std::string& s) {
    return s.find("sort live") != std::string::npos && first_entry(s) == "cache/items";
  }));
  const std::string live_screen = t.last();  // the screen that showed it
  CHECK(live_screen.find("arenastat top - pid " + app.pid_text()) != std::string::npos);
  CHECK(live_screen.find("VmRSS") != std::string::npos);
  CHECK(live_screen.find("big/job") != std::string::npos);

  // s: by peak, the scope big/job (peak 50000) comes first.
  t.keys("s");
  INFO(t.screen());
  CHECK(t.wait_for([](const std::string& s) {
    return s.find("sort peak") != std::string::npos && first_entry(s) == "big/job";
  }));
  // s again: growth; p pauses.
  t.keys("s");
  CHECK(t.wait_for([](const std::string& s) { return s.find("sort growth") != std::string::npos; }));
  t.keys("p");
  CHECK(t.wait_for([](const std::string& s) { return s.find("[paused]") != std::string::npos; }));

  // q: the shell is back, its terminal settings intact.
  t.keys("q");
  CHECK(t.wait_for([](const std::string& s) { return s.find("GROWTH/s") == std::string::npos; }));
  CHECK(terminal_is_sane(t, "after-q"));

  // Ctrl-C does the same.
  REQUIRE(starts_top(t, run));
  t.key("C-c");
  CHECK(t.wait_for([](const std::string& s) { return s.find("GROWTH/s") == std::string::npos; }));
  CHECK(terminal_is_sane(t, "after-ctrl-c", 128 + SIGINT));  // it ends by the signal, as without the view
}

TEST_CASE("top: SIGWINCH to a narrow short terminal re-lays it out with fewer rows and no bar", "[tmux]") {
  temp_dir dir;
  target app(dir.path());
  REQUIRE(app.command("entries 40") == "done");
  tmux_session t;
  REQUIRE(starts_top(t, "ARENASTAT_SOCKET_DIR=" + dir.path() + " " + cli_path + " " + app.pid_text() + " top -d 0.3"));
  CHECK(t.last().find("###") != std::string::npos);  // 120 columns: bars (on the screen that showed cache/items)
  sh(t.tmux() + " resize-window -t top -x 70 -y 12");
  const bool relaid = t.wait_for([](const std::string& s) {
    const auto lines = lines_of(s);
    std::size_t longest = 0, filled = 0;
    for (const auto& l : lines) {
      longest = std::max(longest, l.size());
      if (!l.empty()) ++filled;
    }
    return s.find("###") == std::string::npos && longest <= 70 && filled == 12 && first_entry(s) == "cache/items";
  });
  INFO(t.last());
  CHECK(relaid);
  t.keys("q");
  CHECK(terminal_is_sane(t, "after-resize"));
}

TEST_CASE("top: a line cut at the edge never ends in half an escape", "[tmux]") {
  temp_dir dir;
  target app(dir.path());
  REQUIRE(app.command("hostile-scope") == "done");  // shown as evil\x0arow\x1b[2J\xc2\x85
  tmux_session t;
  REQUIRE(starts_top(t, "ARENASTAT_SOCKET_DIR=" + dir.path() + " " + cli_path + " " + app.pid_text() + " top -d 0.3"));
  // Below 64 columns the name starts at column 13 (the sort's figure, "-"
  // for a scope's live bytes, in 10 columns, then the L mark): 19 columns
  // leave 6, room for "evil" and not for the whole "\x0a" after it (a cut
  // there showed "evil\x").
  sh(t.tmux() + " resize-window -t top -x 19 -y 24");
  const bool cut = t.wait_for([](const std::string& s) {
    for (const auto& l : lines_of(s))
      if (l.find("-   evil") != std::string::npos) return l == "         -   evil";
    return false;
  });
  INFO(t.last());
  CHECK(cut);
  sh(t.tmux() + " resize-window -t top -x 120 -y 24");  // the shell's answer below fits a line again
  t.keys("q");
  CHECK(terminal_is_sane(t, "after-cut"));
}

namespace {

// `top -d 0.2` typed into `t` against `app`, with a --timeout far longer than
// the tests below wait: the view must end at once, not when a request gives up.
std::string top_with_long_timeout(const temp_dir& dir, const target& app) {
  return "ARENASTAT_SOCKET_DIR=" + dir.path() + " " + cli_path + " --timeout=30000 " + app.pid_text() + " top -d 0.2";
}

}  // namespace

TEST_CASE("top: q ends the view while a refresh waits on a stopped target", "[tmux]") {
  temp_dir dir;
  target app(dir.path());
  tmux_session t;
  REQUIRE(starts_top(t, top_with_long_timeout(dir, app)));
  REQUIRE(::kill(app.pid(), SIGSTOP) == 0);  // its server answers nothing more
  std::this_thread::sleep_for(1s);            // a refresh is waiting on it
  const auto start = std::chrono::steady_clock::now();
  t.keys("q");
  // The shell runs the next command only once top has ended (top would take its keys).
  CHECK(terminal_is_sane(t, "after-q-stalled"));
  CHECK(std::chrono::steady_clock::now() - start < 8s);
  ::kill(app.pid(), SIGCONT);
}

namespace {

// top typed against a target stopped (SIGSTOP) before it: its first refresh
// waits. The target is continued when the test ends.
struct top_on_stopped_target {
  temp_dir dir;
  target app{dir.path()};
  tmux_session t;
  top_on_stopped_target() {
    REQUIRE(::kill(app.pid(), SIGSTOP) == 0);
    t.keys(top_with_long_timeout(dir, app));
    t.key("Enter");
  }
  ~top_on_stopped_target() { ::kill(app.pid(), SIGCONT); }
};

}  // namespace

TEST_CASE("top: Ctrl-C ends the view while its first refresh waits on a stopped target", "[tmux]") {
  top_on_stopped_target stopped;
  tmux_session& t = stopped.t;
  REQUIRE(t.wait_for([](const std::string& s) { return s.find("ready$") == std::string::npos; }));  // alternate screen
  std::this_thread::sleep_for(1s);
  const auto start = std::chrono::steady_clock::now();
  t.key("C-c");
  CHECK(terminal_is_sane(t, "after-ctrl-c-stalled", 128 + SIGINT));
  CHECK(std::chrono::steady_clock::now() - start < 8s);
}

TEST_CASE("top: -n 2 ends the view by itself after its second refresh and restores the shell", "[tmux]") {
  temp_dir dir;
  target app(dir.path());
  tmux_session t;
  t.keys("ARENASTAT_SOCKET_DIR=" + dir.path() + " " + cli_path + " " + app.pid_text() +
         " top -d 0.5 -n 2; echo top-ended-$?");
  t.key("Enter");
  INFO(t.screen());
  REQUIRE(t.wait_for([](const std::string& s) { return first_entry(s) == "cache/items"; }));
  // Two refreshes, each shown for 0.5 s: the view ends on its own, exit status 0.
  CHECK(t.wait_for([](const std::string& s) { return s.find("top-ended-0") != std::string::npos; }));
  CHECK(t.last().find("GROWTH/s") == std::string::npos);
  CHECK(terminal_is_sane(t, "after-n"));
}

namespace {

// Sends `sig` to the top the pane's shell runs (its only child).
void signal_top(tmux_session& t, int sig) {
  const std::string shell = sh(t.tmux() + " display-message -p -t top '#{pane_pid}'");
  std::string child = sh("pgrep -P " + shell);
  while (!child.empty() && child.back() == '\n') child.pop_back();
  INFO("the shell's children: '" << child << "'");
  REQUIRE(!child.empty());
  REQUIRE(child.find('\n') == std::string::npos);
  REQUIRE(::kill(static_cast<pid_t>(std::stol(child)), sig) == 0);
}

}  // namespace

// Starts top, sends it `sig` and checks the shell is back with status 128 + sig.
void check_ends_by(int sig, const std::string& marker) {
  temp_dir dir;
  target app(dir.path());
  tmux_session t;
  REQUIRE(starts_top(t, "ARENASTAT_SOCKET_DIR=" + dir.path() + " " + cli_path + " " + app.pid_text() + " top -d 0.3"));
  signal_top(t, sig);
  CHECK(terminal_is_sane(t, marker, 128 + sig));
}

TEST_CASE("top: SIGTERM restores the shell and ends top by that signal (status 143)", "[tmux]") {
  check_ends_by(SIGTERM, "after-sigterm");
}

TEST_CASE("top: SIGHUP restores the shell and ends top by that signal (status 129)", "[tmux]") {
  check_ends_by(SIGHUP, "after-sighup");
}

TEST_CASE("top: a SIGHUP it was started with ignored stays ignored (nohup), and q still ends it with 0", "[tmux]") {
  temp_dir dir;
  target app(dir.path());
  tmux_session t;
  // The subshell ignores SIGHUP and execs top, which inherits the ignoring.
  REQUIRE(starts_top(t, "(trap '' HUP; ARENASTAT_SOCKET_DIR=" + dir.path() + " exec " + cli_path + " " +
                            app.pid_text() + " top -d 0.3)"));
  signal_top(t, SIGHUP);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // two refreshes: it would have ended by now
  CHECK(t.foreground() != "bash");
  CHECK(first_entry(t.screen()) == "cache/items");
  t.keys("q");
  CHECK(terminal_is_sane(t, "after-ignored-hup", 0));
}

TEST_CASE("top: a refresh without an answer for a second says so on the title line, until the answer comes", "[tmux]") {
  temp_dir dir;
  target app(dir.path());
  tmux_session t;
  REQUIRE(starts_top(t, top_with_long_timeout(dir, app)));
  CHECK(t.last().find("[no answer") == std::string::npos);
  REQUIRE(::kill(app.pid(), SIGSTOP) == 0);  // its server answers nothing more
  // The last rows stay, under a title that counts the seconds waited.
  const bool marked = t.wait_for([](const std::string& s) {
    return s.rfind("[no answer for 2 s] arenastat top - pid ", 0) == 0 && first_entry(s) == "cache/items";
  });
  ::kill(app.pid(), SIGCONT);
  INFO(t.last());
  CHECK(marked);
  // Answered again: the mark goes with the next screen.
  CHECK(t.wait_for([](const std::string& s) {
    return s.rfind("arenastat top - pid ", 0) == 0 && first_entry(s) == "cache/items";
  }));
  t.keys("q");
  CHECK(terminal_is_sane(t, "after-stall-ended"));
}

TEST_CASE("top: a first refresh without an answer shows the title with the seconds waited", "[tmux]") {
  top_on_stopped_target stopped;
  tmux_session& t = stopped.t;
  const std::string title = "[no answer for 1 s] arenastat top - pid " + stopped.app.pid_text();
  const bool marked = t.wait_for([&](const std::string& s) { return s.rfind(title, 0) == 0; });
  INFO(t.last());
  CHECK(marked);
  CHECK(t.last().find("VmRSS") == std::string::npos);  // nothing under the title yet
  t.keys("q");
  CHECK(terminal_is_sane(t, "after-first-stall"));
}
