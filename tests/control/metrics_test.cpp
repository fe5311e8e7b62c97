// The Prometheus exposition of a live process: `arenastat <pid> metrics`, the
// in-process /metrics endpoint (ARENASTAT_METRICS) and .prom dumps on the
// signal (ARENASTAT_DUMP_FORMAT=prometheus).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <civetweb.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "arenastat/metrics_http.hpp"
#include "harness.hpp"

using namespace control_test;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

namespace {

// control_target's starting state (programs/control_target.cpp).
const std::string items_live = "arenastat_account_live_bytes{account=\"cache/items\"} 10000\n";

int metrics_port_of(target& t, const temp_dir& sockets) {
  const cli_result r = run_cli({t.pid_text(), "info"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  const auto at = r.out.find("metrics_port ");
  return at == std::string::npos ? -1 : std::stoi(r.out.substr(at + 13));
}

// A TCP connection to 127.0.0.1:port, or -1.
int connect_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One HTTP/1.1 request to 127.0.0.1:port; the whole answer (the server closes).
std::string http(int port, const std::string& request) {
  const int fd = connect_loopback(port);
  if (fd < 0) return "<connect failed>";
  send_all(fd, request);
  std::string answer = read_all(fd, 10s);
  ::close(fd);
  return answer;
}

std::string get(int port, const std::string& path, const std::string& accept = {}) {
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  if (!accept.empty()) req += "Accept: " + accept + "\r\n";
  return http(port, req + "\r\n");
}

// A listening loopback socket on a port the kernel chose.
struct busy_port {
  int fd = -1, port = 0;
  busy_port() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd, 1) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~busy_port() { ::close(fd); }
};

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST_CASE("metrics: arenastat <pid> metrics prints the target's exposition", "[control][metrics][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  const cli_result r = run_cli({t.pid_text(), "metrics"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 0);
  CHECK_THAT(r.out, StartsWith("# HELP arenastat_process_rss_bytes "));
  CHECK_THAT(r.out, Contains("\n" + items_live));
  CHECK_THAT(r.out, Contains("\narenastat_scope_peak_bytes{scope=\"task\"} 3000\n"));
}

TEST_CASE("metrics: --openmetrics and --depth=N are the command's options", "[control][metrics][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  CHECK_THAT(run_cli({t.pid_text(), "metrics", "--openmetrics"}, env).out, EndsWith("\n# EOF\n"));
  CHECK_THAT(run_cli({t.pid_text(), "metrics", "--depth=2"}, env).out,
             Contains("\narenastat_scope_peak_bytes{scope=\"task/parse\"} 3000\n"));
  const cli_result bad = run_cli({t.pid_text(), "metrics", "--depth=0"}, env);
  CHECK(bad.status == 2);  // found by the CLI before it connects, with the target's table
  CHECK_THAT(bad.err, Contains("metrics: bad option '--depth=0': expected --depth=N with N from 1 to 64"));
}

TEST_CASE("metrics: ARENASTAT_METRICS serves /metrics over HTTP", "[control][metrics][threads]") {
  temp_dir sockets;
  target t(sockets.path(), {{"ARENASTAT_METRICS", "127.0.0.1:0"}});
  const int port = metrics_port_of(t, sockets);
  REQUIRE(port > 0);
  const std::string answer = get(port, "/metrics");
  CHECK_THAT(answer, StartsWith("HTTP/1.1 200 OK\r\n"));
  CHECK_THAT(answer, Contains("\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
  CHECK_THAT(answer, Contains("\n" + items_live));
  CHECK(t.stderr_text().empty());
}

TEST_CASE("metrics: the endpoint answers OpenMetrics when Accept prefers it", "[control][metrics][threads]") {
  temp_dir sockets;
  target t(sockets.path(), {{"ARENASTAT_METRICS", "127.0.0.1:0"}});
  const int port = metrics_port_of(t, sockets);
  REQUIRE(port > 0);
  const std::string answer = get(port, "/metrics", "application/openmetrics-text;version=1.0.0,text/plain;q=0.5");
  CHECK_THAT(answer, Contains("\r\nContent-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"));
  CHECK_THAT(answer, EndsWith("\n# EOF\n"));
}

TEST_CASE("metrics: several Accept header lines count as one list", "[control][metrics][threads]") {
  temp_dir sockets;
  target t(sockets.path(), {{"ARENASTAT_METRICS", "127.0.0.1:0"}});
  const int port = metrics_port_of(t, sockets);
  REQUIRE(port > 0);
  const std::string answer = http(port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/plain;q=0.1\r\n"
                                        "Accept: application/openmetrics-text\r\n\r\n");
  CHECK_THAT(answer, Contains("\r\nContent-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"));
}

TEST_CASE("metrics: stop() ends the server at once, not after civetweb's 2 s poll", "[control][metrics][threads]") {
  // civetweb's listening thread sees a stop when its poll() returns: after up
  // to 2 s with no client, unless something wakes it. Started 100 ms before,
  // the stop used to take about 1.9 s; it now takes a few milliseconds (the
  // bound leaves room for a loaded machine and the sanitizers).
  for (const char* address : {"127.0.0.1:0", "0.0.0.0:0"}) {
    INFO(address);
    REQUIRE(arenastat::metrics_http::start(address) > 0);
    std::this_thread::sleep_for(100ms);
    const auto before = std::chrono::steady_clock::now();
    arenastat::metrics_http::stop();
    const auto took = std::chrono::steady_clock::now() - before;
    CHECK(!arenastat::metrics_http::running());
    CHECK(took < 1000ms);
  }
}

TEST_CASE("metrics: silent connections do not hold a scrape past the request timeout",
          "[control][metrics][threads]") {
  // Two connections that send nothing and one that sends half a request line
  // occupy civetweb's two workers until the request timeout (2 s) closes
  // them; the scrape behind them is answered then, well inside read_all's
  // 10 s (with civetweb's default of 30 s it was not).
  temp_dir sockets;
  target t(sockets.path(), {{"ARENASTAT_METRICS", "127.0.0.1:0"}});
  const int port = metrics_port_of(t, sockets);
  REQUIRE(port > 0);
  std::vector<int> idle;
  for (int i = 0; i < 3; ++i) {
    const int fd = connect_loopback(port);
    REQUIRE(fd >= 0);
    if (i == 2) send_all(fd, "GET /metr");
    idle.push_back(fd);
  }
  const std::string answer = get(port, "/metrics");
  for (const int fd : idle) ::close(fd);
  CHECK_THAT(answer, StartsWith("HTTP/1.1 200 OK\r\n"));
  CHECK_THAT(answer, Contains("\n" + items_live));
}

TEST_CASE("metrics: a request with a body is refused at once, so a body sent slowly holds no worker",
          "[control][metrics][threads]") {
  temp_dir sockets;
  target t(sockets.path(), {{"ARENASTAT_METRICS", "127.0.0.1:0"}});
  const int port = metrics_port_of(t, sockets);
  REQUIRE(port > 0);
  // Two requests announcing a large body, sent at once, none of it sent yet:
  // each is answered 413 and closed without its body being waited for.
  // (Body bytes sent and left unread make the close a reset, which may lose
  // the answer before the client reads it.)
  std::vector<int> senders;
  for (const char* request : {"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n",
                              "POST /other HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"}) {
    const int fd = connect_loopback(port);
    REQUIRE(fd >= 0);
    send_all(fd, request);
    senders.push_back(fd);
  }
  for (const int fd : senders) {
    const auto start = std::chrono::steady_clock::now();
    const std::string answer = read_all(fd, 10s);  // to the server's close
    CHECK(std::chrono::steady_clock::now() - start < 1500ms);  // not the 2 s time-out of a read, nor more
    CHECK_THAT(answer, StartsWith("HTTP/1.1 413 "));
    CHECK_THAT(answer, Contains("arenastat serves GET /metrics, which takes no request body\n"));
    ::close(fd);
  }
  // The workers are free: a scrape is answered.
  const auto start = std::chrono::steady_clock::now();
  CHECK_THAT(get(port, "/metrics"), StartsWith("HTTP/1.1 200 OK\r\n"));
  CHECK(std::chrono::steady_clock::now() - start < 1500ms);
}

TEST_CASE("metrics: the endpoint serves /metrics only", "[control][metrics][threads]") {
  temp_dir sockets;
  target t(sockets.path(), {{"ARENASTAT_METRICS", "127.0.0.1:0"}});
  const int port = metrics_port_of(t, sockets);
  REQUIRE(port > 0);
  CHECK_THAT(get(port, "/"), StartsWith("HTTP/1.1 404 Not Found\r\n"));
  // Another method: 405, saying which ones are allowed (RFC 9110).
  const std::string post = http(port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  CHECK_THAT(post, StartsWith("HTTP/1.1 405 Method Not Allowed\r\n"));
  CHECK_THAT(post, Contains("\r\nAllow: GET, HEAD\r\n"));
  // The Accept header's media type is matched without regard to case.
  CHECK_THAT(get(port, "/metrics", "APPLICATION/OPENMETRICS-TEXT"), EndsWith("\n# EOF\n"));
}

TEST_CASE("metrics: a port in use gives one warning and the program runs on", "[control][metrics][threads]") {
  temp_dir sockets;
  busy_port busy;
  const std::string address = "127.0.0.1:" + std::to_string(busy.port);
  target t(sockets.path(), {{"ARENASTAT_METRICS", address}});
  CHECK(t.command("ping") == "done");
  CHECK(metrics_port_of(t, sockets) == 0);
  const std::string err = t.stderr_text();
  CHECK(lines(err) == 1);
  CHECK_THAT(err, StartsWith("arenastat: ARENASTAT_METRICS='" + address + "': cannot listen on " + address + ": "));
  CHECK_THAT(err, EndsWith("; the metrics endpoint is off\n"));
}

TEST_CASE("metrics: a bad address gives one warning and the program runs on", "[control][metrics][threads]") {
  temp_dir sockets;
  target t(sockets.path(), {{"ARENASTAT_METRICS", "localhost:http"}});
  CHECK(t.command("ping") == "done");
  CHECK(t.stderr_text() ==
        "arenastat: ARENASTAT_METRICS='localhost:http': bad address 'localhost:http': port 'http' is not a number "
        "from 0 to 65535; the metrics endpoint is off\n");
}

TEST_CASE("metrics: an IPv4 host out of range gives one warning instead of listening elsewhere",
          "[control][metrics][threads]") {
  // civetweb's own reading wrapped 999 to 231 and listened on 231.1.1.1.
  temp_dir sockets;
  target t(sockets.path(), {{"ARENASTAT_METRICS", "999.1.1.1:0"}});
  CHECK(t.command("ping") == "done");
  CHECK(metrics_port_of(t, sockets) == 0);
  CHECK(t.stderr_text() ==
        "arenastat: ARENASTAT_METRICS='999.1.1.1:0': bad address '999.1.1.1:0': '999.1.1.1' is not an IPv4 address "
        "(four numbers from 0 to 255, no leading zeros, separated by dots); the metrics endpoint is off\n");
}

TEST_CASE("metrics: a long bad address keeps the reason in its one-line warning", "[control][metrics][threads]") {
  // 310 bytes: the address and its port are each quoted cut at 200 bytes,
  // so the reason after them is not cut away.
  const std::string address = "127.0.0.1:" + std::string(300, '9');
  const std::string shown_address = "'127.0.0.1:" + std::string(190, '9') + "'... (310 bytes)";
  const std::string shown_port = "'" + std::string(200, '9') + "'... (300 bytes)";
  const std::string problem = "bad address " + shown_address + ": port " + shown_port + " is not a number from 0 to 65535";
  CHECK_THROWS_WITH(arenastat::metrics_http::start(address), problem);
  temp_dir sockets;
  target t(sockets.path(), {{"ARENASTAT_METRICS", address}});
  CHECK(t.command("ping") == "done");
  CHECK(t.stderr_text() == "arenastat: ARENASTAT_METRICS=" + shown_address + ": " + problem +
                               "; the metrics endpoint is off\n");
}

TEST_CASE("metrics: start() reads an IPv4 host as inet_pton does, never wrapped", "[control][metrics]") {
  const std::string four_numbers = "is not an IPv4 address (four numbers from 0 to 255, no leading zeros, separated by dots)";
  CHECK_THROWS_WITH(arenastat::metrics_http::start("383.0.0.1:0"),
                    "bad address '383.0.0.1:0': '383.0.0.1' " + four_numbers);  // wrapped to 127.0.0.1
  CHECK_THROWS_WITH(arenastat::metrics_http::start("256.0.0.1:0"), "bad address '256.0.0.1:0': '256.0.0.1' " + four_numbers);
  CHECK_THROWS_WITH(arenastat::metrics_http::start("1.2.3:0"), "bad address '1.2.3:0': '1.2.3' " + four_numbers);
  CHECK_THROWS_WITH(arenastat::metrics_http::start("1.2.3.4.5:0"), "bad address '1.2.3.4.5:0': '1.2.3.4.5' " + four_numbers);
  CHECK_THROWS_WITH(arenastat::metrics_http::start("01.2.3.4:0"), "bad address '01.2.3.4:0': '01.2.3.4' " + four_numbers);
  CHECK_THROWS_WITH(arenastat::metrics_http::start("127.0.0.1:65536"),
                    "bad address '127.0.0.1:65536': port '65536' is not a number from 0 to 65535");
  CHECK_THROWS_WITH(arenastat::metrics_http::start("127.0.0.1:"),
                    "bad address '127.0.0.1:': port '' is not a number from 0 to 65535");
  CHECK_THROWS_WITH(arenastat::metrics_http::start("localhost:9464"),
                    "bad address 'localhost:9464': expected host:port with a numeric IPv4 host, e.g. 127.0.0.1:9464");
  CHECK_THROWS_WITH(arenastat::metrics_http::start(":9464"),
                    "bad address ':9464': expected host:port with a numeric IPv4 host, e.g. 127.0.0.1:9464");
  CHECK_FALSE(arenastat::metrics_http::running());
}

TEST_CASE("metrics: an IPv6 address says whether this build's civetweb has IPv6", "[control][metrics]") {
  // Debian's civetweb is built without USE_IPV6: [::1]:9464 can never listen.
  if (mg_check_feature(8) == 0) {
    CHECK_THROWS_WITH(arenastat::metrics_http::start("[::1]:0"),
                      "bad address '[::1]:0': IPv6 is not supported by this build's civetweb (mg_check_feature(8) "
                      "is 0); use an IPv4 host, e.g. 127.0.0.1:9464");
  } else {
    CHECK_THROWS_WITH(arenastat::metrics_http::start("[1.2.3.4]:0"),
                      "bad address '[1.2.3.4]:0': '[1.2.3.4]' is not an IPv6 address in brackets, e.g. [::1]:9464");
  }
  CHECK_FALSE(arenastat::metrics_http::running());
}

namespace {

// Sends SIGUSR1 to `t` and waits (10 s at most) for arenastat.<pid>.prom in `dumps`.
std::string dump_prom(target& t, const temp_dir& dumps) {
  const std::string path = dumps.file("arenastat." + t.pid_text() + ".prom");
  ::kill(t.pid(), SIGUSR1);
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!exists(path) && std::chrono::steady_clock::now() < until) {
    t.command("ping");  // lets the main thread leave read() (TSan runs deferred handlers then)
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(exists(path));
  return path;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The sample lines' "name{labels}" parts (everything before the value).
std::set<std::string> series_of(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') out.insert(line.substr(0, line.rfind(' ')));
  }
  return out;
}

env_map prometheus_dumps(const temp_dir& dumps) {
  return {{"ARENASTAT_DUMP_SIGNAL", "USR1"}, {"ARENASTAT_DUMP_FORMAT", "prometheus"}, {"ARENASTAT_DUMP_DIR", dumps.path()}};
}

}  // namespace

TEST_CASE("metrics: the dump signal writes arenastat.<pid>.prom with ARENASTAT_DUMP_FORMAT=prometheus",
          "[control][metrics][threads]") {
  temp_dir sockets, dumps;
  target t(sockets.path(), prometheus_dumps(dumps));
  const std::string path = dump_prom(t, dumps);
  const std::string pid = "pid=\"" + t.pid_text() + "\"";
  CHECK_THAT(file_text(path), Contains("\narenastat_account_live_bytes{" + pid + ",account=\"cache/items\"} 10000\n"));
  CHECK_THAT(file_text(path), Contains("\narenastat_process_rss_bytes{" + pid + "} "));
  CHECK(mode_of(path) == 0644);
}

TEST_CASE("metrics: two processes' .prom dumps in one directory have disjoint series", "[control][metrics][threads]") {
  // node_exporter's textfile collector refuses a directory where two files
  // give one series ("collected before with the same name and label values").
  temp_dir sockets, dumps;
  target a(sockets.path(), prometheus_dumps(dumps));
  target b(sockets.path(), prometheus_dumps(dumps));
  const std::set<std::string> of_a = series_of(file_text(dump_prom(a, dumps)));
  const std::set<std::string> of_b = series_of(file_text(dump_prom(b, dumps)));
  REQUIRE_FALSE(of_a.empty());
  CHECK(of_a.size() == of_b.size());
  std::vector<std::string> both;
  std::set_intersection(of_a.begin(), of_a.end(), of_b.begin(), of_b.end(), std::back_inserter(both));
  CHECK(both.empty());
  for (const std::string& s : of_a) CHECK_THAT(s, Contains("{pid=\"" + a.pid_text() + "\""));
}
