// The in-process Prometheus endpoint: GET /metrics answers the exposition of
// the table (prometheus.hpp), in OpenMetrics when the scraper's Accept header
// asks for it, in the text format 0.0.4 otherwise.
//
// Off by default. ARENASTAT_METRICS=127.0.0.1:9464 starts it when the program
// starts (ARENASTAT_METRICS_DEPTH sets the scope grouping); a bad address or a
// port in use prints one warning and the program runs on. The HTTP server is
// civetweb, started and owned by prometheus-cpp's pull module
// (prometheus::Exposer); the body comes from the same renderer as
// `arenastat <pid> metrics` and the `.prom` files (docs/metrics.md).
#pragma once
#include <cstdint>
#include <string>

namespace arenastat::metrics_http {

// Serves /metrics on `address`, "host:port" with a numeric IPv4 host
// ("127.0.0.1:9464", "0.0.0.0:9464"; port 0 picks a free port). An IPv6 host
// ("[::1]:9464") only when civetweb was built with IPv6 (Debian's is not: the
// address is refused, saying so). Returns the port it listens on. When it
// already runs, returns its port and changes nothing. Throws
// std::runtime_error naming the address and the reason when it cannot listen
// (bad address, port in use).
int start(const std::string& address, unsigned depth = 1);

// Stops the server (waits for a scrape in progress). No-op when not running.
// Also run at exit.
void stop() noexcept;

bool running() noexcept;
int port() noexcept;                   // 0 when not running
std::uint64_t scrapes() noexcept;      // /metrics answers since the process started

}  // namespace arenastat::metrics_http
