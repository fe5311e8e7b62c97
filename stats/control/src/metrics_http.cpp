// The in-process /metrics endpoint (metrics_http.hpp).
//
// prometheus-cpp's pull module starts and owns the HTTP server (civetweb) and
// its threads: prometheus::Exposer is constructed with civetweb options and a
// begin_request callback. The callback answers GET /metrics itself with
// render_metrics' text, so the bytes Prometheus scrapes are the same as those
// of `arenastat <pid> metrics` and of the `.prom` files, and the format follows
// the Accept header (OpenMetrics or text 0.0.4; prometheus-cpp 1.0.1's own
// serializer writes only the latter). No prometheus::Collectable is
// registered: one renderer, no copy of the table into MetricFamily objects.
#include "arenastat/metrics_http.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CivetServer.h>
#include <civetweb.h>
#include <prometheus/exposer.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "arenastat/prometheus.hpp"
#include "autostart.hpp"
#include "env.hpp"
#include "quoted.hpp"
#include "sys.hpp"

namespace arenastat::metrics_http {
namespace {

// civetweb's workers: each serves one connection at a time. A connection that
// sends no complete request within request_timeout_ms is closed, so clients
// that connect and stay silent hold a worker that long at most (civetweb's
// default, 30 s, let two idle connections hold a scrape for 30 s; a scraper
// sends its request at once).
constexpr int worker_threads = 2;
constexpr int request_timeout_ms = 2000;

// Where a connection wakes the server's listening thread (stop_waker): the
// listening address, the loopback one when it listens on every address.
struct wake_address {
  sockaddr_storage addr{};
  socklen_t len = 0;
};

// Eternal: scrapes may be answered while the program exits.
struct server_state {
  std::mutex mutex;
  std::unique_ptr<prometheus::Exposer> exposer;
  pid_t owner = 0;  // process that started it (a fork()ed child must not stop it)
  wake_address wake;  // where a connection wakes civetweb's listening thread (stop_waker)
  bool at_exit_registered = false;
  std::mutex log_mutex;      // guards start_error (civetweb logs from its own threads too)
  std::string start_error;  // civetweb's first message since the last start
};
server_state& state() {
  static server_state* s = new server_state;
  return *s;
}

std::atomic<int> served_port{0};
std::atomic<unsigned> served_depth{1};
std::atomic<std::uint64_t> scrape_count{0};

// `extra`: more header lines, each ending in CRLF.
void send_text(mg_connection* c, int status, std::string_view reason, std::string_view body,
               std::string_view extra = {}) {
  mg_printf(c,
            "HTTP/1.1 %d %.*s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n"
            "%.*sConnection: close\r\n\r\n",
            status, static_cast<int>(reason.size()), reason.data(), body.size(), static_cast<int>(extra.size()),
            extra.empty() ? "" : extra.data());  // never a null pointer for %.*s
  mg_write(c, body.data(), body.size());
}

int on_request(mg_connection* c) {
  const mg_request_info* ri = mg_get_request_info(c);
  // A request with a body, on any path: civetweb reads (and drops) the body
  // after a handled request, each read waiting up to request_timeout_ms, so a
  // body sent a byte at a time would hold a worker as long as its sender
  // likes. Nothing here takes a body: refused with civetweb's error reply,
  // which closes the connection without reading it (must_close).
  if ((ri != nullptr && ri->content_length > 0) || mg_get_header(c, "Transfer-Encoding") != nullptr) {
    // One at a time: civetweb 1.15 dates an error reply with gmtime(), whose
    // buffer is shared, so two workers refusing at once raced (TSan).
    static std::mutex error_reply;
    std::lock_guard lock(error_reply);
    mg_send_http_error(c, 413, "%s", "arenastat serves GET /metrics, which takes no request body\n");
    return 413;
  }
  const std::string_view uri = ri != nullptr && ri->local_uri != nullptr ? ri->local_uri : "";
  const std::string_view method = ri != nullptr && ri->request_method != nullptr ? ri->request_method : "";
  if (uri != "/metrics") {
    send_text(c, 404, "Not Found", "arenastat serves /metrics only\n");
    return 404;
  }
  const bool head = method == "HEAD";
  if (method != "GET" && !head) {
    send_text(c, 405, "Method Not Allowed", "GET /metrics\n", "Allow: GET, HEAD\r\n");  // RFC 9110: 405 says what is allowed
    return 405;
  }
  // Every Accept header, as one list (RFC 9110 5.3: a field sent twice is the
  // list of both); mg_get_header gives the first only.
  std::string accept;
  for (int i = 0; ri != nullptr && i < ri->num_headers && i < MG_MAX_HEADERS; ++i) {
    const char* name = ri->http_headers[i].name;
    const char* value = ri->http_headers[i].value;
    if (name == nullptr || value == nullptr || ::strcasecmp(name, "Accept") != 0) continue;
    if (!accept.empty()) accept += ',';
    accept += value;
  }
  const metrics_format format = metrics_format_for_accept(accept);
  std::string body;
  try {
    body = metrics({.depth = served_depth.load(std::memory_order_relaxed), .format = format});
  } catch (const std::exception& e) {
    send_text(c, 500, "Internal Server Error", std::string("arenastat: ") + e.what() + "\n");
    return 500;
  }
  const std::string type(metrics_content_type(format));
  mg_printf(c, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
            type.c_str(), body.size());
  if (!head) mg_write(c, body.data(), body.size());
  scrape_count.fetch_add(1, std::memory_order_relaxed);
  return 200;
}

// civetweb's own log lines: kept as the reason of a failed start, never printed.
int on_log(const mg_connection*, const char* message) {
  server_state& s = state();
  std::lock_guard lock(s.log_mutex);
  if (s.start_error.empty() && message != nullptr) s.start_error = message;
  return 1;
}

// civetweb's feature bit for IPv6 (civetweb.h, mg_check_feature: USE_IPV6).
constexpr unsigned civetweb_ipv6_feature = 8;

constexpr std::string_view address_example = "127.0.0.1:9464";

// Why `a` cannot be a listening address, or "" when it can (then `wake` is
// where to connect, its port still 0): "host:port" with a port of 1 to 5
// digits up to 65535 and a host civetweb reads as it is written (inet_pton:
// four numbers from 0 to 255; civetweb's own reading wraps 999.1.1.1 to
// 231.1.1.1), or "[IPv6]" when this build of civetweb has IPv6 (Debian's has
// not: that branch is unused there).
std::string address_problem(std::string_view a, wake_address& wake) {
  const std::string expected = "expected host:port with a numeric IPv4 host, e.g. " + std::string(address_example);
  const std::size_t colon = a.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return expected;
  const std::string_view port = a.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos ||
      std::stoul(std::string(port)) > 65535) {
    return "port " + detail::quoted(port) + " is not a number from 0 to 65535";
  }
  const std::string host(a.substr(0, colon));
  if (host.front() == '[') {
    if (mg_check_feature(civetweb_ipv6_feature) == 0) {
      return "IPv6 is not supported by this build's civetweb (mg_check_feature(8) is 0); use an IPv4 host, e.g. " +
             std::string(address_example);
    }
    sockaddr_in6 v6{};
    v6.sin6_family = AF_INET6;
    if (host.size() < 3 || host.back() != ']' ||
        ::inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &v6.sin6_addr) != 1)
      return detail::quoted(host) + " is not an IPv6 address in brackets, e.g. [::1]:9464";
    if (IN6_IS_ADDR_UNSPECIFIED(&v6.sin6_addr)) v6.sin6_addr = in6addr_loopback;
    std::memcpy(&wake.addr, &v6, sizeof v6);
    wake.len = sizeof v6;
    return {};
  }
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  if (::inet_pton(AF_INET, host.c_str(), &v4.sin_addr) != 1) {
    if (host.find_first_not_of("0123456789.") != std::string::npos) return expected;
    return detail::quoted(host) + " is not an IPv4 address (four numbers from 0 to 255, no leading zeros, separated by dots)";
  }
  if (v4.sin_addr.s_addr == htonl(INADDR_ANY)) v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::memcpy(&wake.addr, &v4, sizeof v4);
  wake.len = sizeof v4;
  return {};
}

// The port of a wake address (after start() learnt the one listened on).
void set_port(wake_address& w, int port) {
  const auto p = htons(static_cast<std::uint16_t>(port));
  if (w.addr.ss_family == AF_INET6) {
    sockaddr_in6 v6{};
    std::memcpy(&v6, &w.addr, sizeof v6);
    v6.sin6_port = p;
    std::memcpy(&w.addr, &v6, sizeof v6);
  } else {
    sockaddr_in v4{};
    std::memcpy(&v4, &w.addr, sizeof v4);
    v4.sin_port = p;
    std::memcpy(&w.addr, &v4, sizeof v4);
  }
}

// civetweb's listening thread waits in poll() up to 2 s (SOCKET_TIMEOUT_QUANTUM
// in civetweb.c) before it sees that the server is stopping, so stopping
// took up to 2 s, at every exit of a program with the endpoint on. A
// connection to the listening socket wakes it: while the server stops, this
// makes one every 10 ms and closes it, until a connection is refused (the
// listener is closed: the port may soon be someone else's). Without a thread
// (none could be made), the stop just takes its 2 s. Allocates nothing but
// the thread.
class stop_waker {
 public:
  explicit stop_waker(const wake_address& target) noexcept : target_(target) {
    if (target_.len == 0) return;
    try {
      thread_ = std::thread([this] { run(); });
    } catch (...) {
    }
  }
  ~stop_waker() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  stop_waker(const stop_waker&) = delete;
  stop_waker& operator=(const stop_waker&) = delete;

 private:
  // One connection, closed at once; false when it was refused.
  bool poke() const noexcept {
    const int fd = ::socket(target_.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return true;
    bool listening = true;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&target_.addr), target_.len) != 0) {
      if (errno == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, 10);  // the handshake done: the listener sees the connection
        int err = 0;
        socklen_t len = sizeof err;
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == ECONNREFUSED) listening = false;
      } else if (errno == ECONNREFUSED) {
        listening = false;
      }
    }
    ::close(fd);
    return listening;
  }
  void run() {
    std::unique_lock lock(mutex_);
    while (!done_) {
      lock.unlock();
      const bool listening = poke();
      lock.lock();
      if (!listening) break;
      wake_.wait_for(lock, std::chrono::milliseconds(10), [this] { return done_; });
    }
  }

  wake_address target_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

int start(const std::string& address, unsigned depth) {
  server_state& s = state();
  std::lock_guard lock(s.mutex);
  if (s.exposer) return served_port.load();
  wake_address wake;
  if (const std::string problem = address_problem(address, wake); !problem.empty()) {
    // The address and its parts quoted (escaped, each cut at 200 bytes), so
    // that a long value leaves the reason in a bounded warning.
    throw std::runtime_error("bad address " + detail::quoted(address) + ": " + problem);
  }
  served_depth.store(depth == 0 ? 1 : depth);
  static CivetCallbacks callbacks;  // eternal: civetweb keeps a copy, but keep ours alive too
  callbacks.begin_request = on_request;
  callbacks.log_message = on_log;
  {
    std::lock_guard log_lock(s.log_mutex);
    s.start_error.clear();
  }
  try {
    s.exposer = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", address, "num_threads", std::to_string(worker_threads),
                                 "request_timeout_ms", std::to_string(request_timeout_ms)},
        &callbacks);
  } catch (const std::exception& e) {
    std::string why;
    {
      std::lock_guard log_lock(s.log_mutex);
      why = s.start_error.empty() ? std::string(e.what()) : s.start_error;
    }
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    throw std::runtime_error("cannot listen on " + address + ": " + why);
  }
  const std::vector<int> ports = s.exposer->GetListeningPorts();
  served_port.store(ports.empty() ? 0 : ports.front());
  s.owner = ::getpid();
  s.wake = wake;
  set_port(s.wake, served_port.load());
  if (!s.at_exit_registered) {
    s.at_exit_registered = true;
    std::atexit([] { stop(); });
  }
  return served_port.load();
}

void stop() noexcept {
  server_state& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.exposer) return;
  if (::getpid() != s.owner) {
    (void)s.exposer.release();  // a fork()ed child: the threads are the parent's
  } else {
    const stop_waker waker(s.wake);
    s.exposer.reset();  // civetweb stops, waiting for a scrape in progress
  }
  served_port.store(0);
}

bool running() noexcept { return served_port.load() != 0; }
int port() noexcept { return served_port.load(); }
std::uint64_t scrapes() noexcept { return scrape_count.load(std::memory_order_relaxed); }

}  // namespace arenastat::metrics_http

namespace arenastat::detail {

void start_metrics_from_env() noexcept {
  try {
    const char* depth_env = detail::env_value("ARENASTAT_METRICS_DEPTH");
    const unsigned depth = metrics_depth_from_env();
    if (depth_env != nullptr && *depth_env != '\0' && !parse_metrics_depth(depth_env)) {
      warn("arenastat: ignoring ARENASTAT_METRICS_DEPTH=" + quoted(depth_env) +
           ": expected a whole number from 1 to " + std::to_string(max_metrics_depth) + "; using 1\n");
    }
    const char* value = detail::env_value("ARENASTAT_METRICS");
    if (value == nullptr || *value == '\0' || std::string_view(value) == "0") return;
    try {
      metrics_http::start(value, depth);
    } catch (const std::exception& e) {
      warn("arenastat: ARENASTAT_METRICS=" + quoted(value) + ": " + bounded(e.what()) +
           "; the metrics endpoint is off\n");
    }
  } catch (...) {
    warn("arenastat: the metrics start-up hook failed unexpectedly; the metrics endpoint is off\n");
  }
}

}  // namespace arenastat::detail
