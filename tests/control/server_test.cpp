// The control server inside the test process: start/stop, directory checks,
// stale sockets, and handle_request() without sockets.
#include <catch2/catch.hpp>

#include <pwd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include <arenastat/arenastat.hpp>
#include <arenastat/control.hpp>

#include "harness.hpp"

using namespace control_test;
namespace control = arenastat::control;

namespace {

control::options in(const temp_dir& d) {
  control::options o;
  o.socket_dir = d.path();
  return o;
}

}  // namespace

TEST_CASE("start creates <dir>/<pid>.sock 0600 and stop removes it", "[control][server][threads]") {
  temp_dir d;
  const std::string path = control::start(in(d));
  CHECK(path == d.file(std::to_string(::getpid()) + ".sock"));
  CHECK(control::running());
  CHECK(control::socket_path() == path);
  CHECK(mode_of(path) == 0600);
  CHECK(control::start(in(d)) == path);  // already running: unchanged
  CHECK(raw_query(path, "help\n").rfind("ok\nCommands", 0) == 0);
  control::stop();
  CHECK_FALSE(control::running());
  CHECK(control::socket_path().empty());
  CHECK_FALSE(exists(path));
  control::stop();  // a second stop is a no-op
}

TEST_CASE("start creates a missing directory with mode 0700", "[control][server][threads]") {
  temp_dir d;
  control::options o;
  o.socket_dir = d.file("made");
  control::start(o);
  CHECK(mode_of(d.file("made")) == 0700);
  control::stop();
}

TEST_CASE("start refuses a directory open to group or others", "[control][server]") {
  temp_dir d;
  REQUIRE(::chmod(d.path().c_str(), 0750) == 0);
  CHECK_THROWS_WITH(control::start(in(d)),
                    "arenastat control: socket directory '" + d.path() +
                        "' has mode 0750, open to group or others; it must be 0700 (chmod 700 '" + d.path() + "')");
  CHECK_FALSE(control::running());
}

TEST_CASE("start refuses a directory owned by another user", "[control][server]") {
  if (::geteuid() != 0) {
    WARN("skipped: needs root to chown a directory to 'nobody'");
    return;
  }
  const passwd* nobody = ::getpwnam("nobody");
  REQUIRE(nobody != nullptr);
  temp_dir d;
  REQUIRE(::chown(d.path().c_str(), nobody->pw_uid, nobody->pw_gid) == 0);
  CHECK_THROWS_WITH(control::start(in(d)),
                    "arenastat control: socket directory '" + d.path() + "' is owned by uid " +
                        std::to_string(nobody->pw_uid) + ", not by this process's uid 0; refusing to start");
}

TEST_CASE("start refuses a symbolic link as the directory", "[control][server]") {
  temp_dir d;
  REQUIRE(::symlink(d.path().c_str(), d.file("link").c_str()) == 0);
  control::options o;
  o.socket_dir = d.file("link");
  CHECK_THROWS_WITH(control::start(o), "arenastat control: socket directory '" + d.file("link") +
                                           "' is a symbolic link; refusing to use it");
}

TEST_CASE("start refuses a socket path longer than sun_path", "[control][server]") {
  control::options o;
  o.socket_dir = "/tmp/";
  o.socket_dir += std::string(120, 'd');  // by +=: GCC 12 warns (-Warray-bounds) about "literal" + string(n, c)
  CHECK_THROWS_WITH(control::start(o), Catch::Matchers::Contains("set ARENASTAT_SOCKET_DIR to a shorter directory"));
}

TEST_CASE("start replaces a stale file at its path and removes dead processes' sockets",
          "[control][server][threads]") {
  temp_dir d;
  const std::string mine = d.file(std::to_string(::getpid()) + ".sock");
  const std::string dead = d.file(std::to_string(dead_pid()) + ".sock");
  const std::string alive = d.file("1.sock");  // init is alive: kept
  const std::string dead_file = d.file(std::to_string(dead_pid()) + ".sock");  // not a socket: kept
  for (const std::string& f : {mine, alive, dead_file}) std::ofstream(f) << "stale";
  REQUIRE(make_socket_file(dead));
  control::start(in(d));
  struct stat st {};
  REQUIRE(::lstat(mine.c_str(), &st) == 0);
  CHECK(S_ISSOCK(st.st_mode));
  CHECK_FALSE(exists(dead));
  CHECK(exists(alive));
  CHECK(exists(dead_file));
  control::stop();
}

TEST_CASE("handle_request answers help with every command", "[control][server]") {
  const std::string r = control::handle_request("help");
  CHECK(r.rfind("ok\nCommands (arenastat <pid> <command> [arguments]):\n", 0) == 0);
  CHECK(r.find("  dump [PATH]\n") != std::string::npos);
}

TEST_CASE("handle_request answers a bad request with one error line", "[control][server]") {
  CHECK(control::handle_request("nope") == "error unknown command 'nope' (try 'help')\n");
  CHECK(control::handle_request("process --bogus") ==
        "error process: unknown option '--bogus' (expected -H, --json)\n");
  CHECK(control::handle_request("stats --tree --top=x").rfind("error ", 0) == 0);
}

TEST_CASE("handle_request: baseline then diff reports this process's growth", "[control][server]") {
  static arenastat::tracking_resource r("server_test/grows");
  void* first = r.allocate(100);
  CHECK(control::handle_request("baseline").rfind("ok\nbaseline recorded: ", 0) == 0);
  void* second = r.allocate(4000);
  const std::string answer = control::handle_request("diff --json");
  r.deallocate(second, 4000);
  r.deallocate(first, 100);
  REQUIRE(answer.rfind("ok\n", 0) == 0);
  const auto j = nlohmann::json::parse(answer.substr(3));
  bool seen = false;
  for (const auto& e : j["entries"]) {
    if (e["name"] != "server_test/grows") continue;
    seen = true;
    CHECK(e["live"]["before"] == 100);
    CHECK(e["live"]["change"] == 4000);
    CHECK(e["count"]["change"] == 1);  // one allocation
    CHECK(e["blocks"]["change"] == 1);
  }
  CHECK(seen);
}

TEST_CASE("handle_request: diff --tree is an error", "[control][server]") {
  control::handle_request("baseline");
  CHECK(control::handle_request("diff --tree") == "error --tree: the diff has no tree view (use text, --json or --html)\n");
}

TEST_CASE("handle_request: process --json has the resident set", "[control][server]") {
  const std::string r = control::handle_request("process --json");
  REQUIRE(r.rfind("ok\n", 0) == 0);
  const auto j = nlohmann::json::parse(r.substr(3));
  CHECK(j["pid"] == ::getpid());
  CHECK(j["rss_bytes"].get<std::uint64_t>() > 0);
}

TEST_CASE("handle_request: process --json is compact with the report's field names", "[control][server]") {
  const std::string r = control::handle_request("process --json");
  REQUIRE(r.rfind("ok\n{\"pid\":" + std::to_string(::getpid()) + ",\"rss_bytes\":", 0) == 0);
  CHECK(r.find('\n', 3) == r.size() - 1);  // one line
  CHECK(r.find("\"hwm_bytes\":") != std::string::npos);
  CHECK(r.find("\"rss_anon_bytes\":") != std::string::npos);
}

TEST_CASE("handle_request: an error quoting a name escapes it", "[control][server][names]") {
  // Requests refuse C0 controls, but a C1 CSI (U+009B) and invalid UTF-8 pass:
  // the dump path's error message quotes them escaped.
  const std::string r = control::handle_request("dump /nonexistent-dir/\xc2\x9b" "2J\xff");
  CHECK(r.rfind("error ", 0) == 0);
  CHECK(r.find("\xc2\x9b") == std::string::npos);
  CHECK(r.find("/nonexistent-dir/\\xc2\\x9b2J\\xff") != std::string::npos);
}

TEST_CASE("control options are validated", "[control][server]") {
  temp_dir d;
  control::options o = in(d);
  o.max_clients = 0;
  CHECK_THROWS_WITH(control::start(o), "arenastat control: options.max_clients must be at least 1");
}

TEST_CASE("a client that never reads a large answer is dropped at the response deadline",
          "[control][server][threads]") {
  // Enough accounts for an answer far larger than the socket buffers.
  const arenastat::tag_id heap = arenastat::register_tag("heap");
  for (int i = 0; i < 3000; ++i) {
    arenastat::account& a = arenastat::account::get("server_test/many/" + std::to_string(i));
    a.use_tag(heap);
    a.on_allocate(8, heap);
  }
  temp_dir d;
  control::options o = in(d);
  o.response_timeout = std::chrono::milliseconds(300);
  // The stall time-out counts as dropped, not timed out: far off, so that only
  // the response deadline can end this client however late the server runs.
  o.stall_timeout = std::chrono::seconds(60);
  const std::string path = control::start(o);
  const std::uint64_t timed_out_before = control::connection_counters().timed_out;

  const int lazy = connect_to(path);
  REQUIRE(lazy >= 0);
  send_all(lazy, "stats --json\n");  // and never read
  // Rendering takes a while under sanitizers: wait for the deadline to strike.
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (control::connection_counters().timed_out == timed_out_before && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(10ms);
  }
  CHECK(control::connection_counters().timed_out == timed_out_before + 1);
  CHECK(raw_query(path, "help\n").rfind("ok\n", 0) == 0);
  ::close(lazy);
  control::stop();
}

TEST_CASE("a silent client is answered with a time-out at the request deadline", "[control][server][threads]") {
  temp_dir d;
  control::options o = in(d);
  o.request_timeout = std::chrono::milliseconds(200);
  const std::string path = control::start(o);
  const auto t0 = std::chrono::steady_clock::now();  // before the connection: the deadline starts at its accept
  const int silent = connect_to(path);
  REQUIRE(silent >= 0);
  CHECK(read_all(silent, 3s) == "error timed out after 200 ms waiting for a request line\n");
  CHECK(std::chrono::steady_clock::now() - t0 >= 200ms);
  ::close(silent);
  control::stop();
}

TEST_CASE("with max_clients connected, a new client closes the oldest idle one", "[control][server][threads]") {
  temp_dir d;
  control::options o = in(d);
  o.max_clients = 2;
  o.request_timeout = std::chrono::seconds(60);  // a and b stay until room is made, however slow the test
  const std::string path = control::start(o);
  // The server accepts in connection order: a is the oldest, and the query
  // below comes after both.
  const int a = connect_to(path);
  REQUIRE(a >= 0);
  const int b = connect_to(path);
  REQUIRE(b >= 0);
  send_all(a, "he");  // both held open, mid-request
  send_all(b, "he");
  CHECK(raw_query(path, "help\n").rfind("ok\nCommands", 0) == 0);
  CHECK(read_all(a) == "error server busy: this connection sent no request and was closed to serve a newer one; "
                       "retry\n");
  send_all(b, "lp\n");
  CHECK(read_all(b).rfind("ok\nCommands", 0) == 0);
  CHECK(control::connection_counters().dropped >= 1);
  ::close(a);
  ::close(b);
  control::stop();
}
