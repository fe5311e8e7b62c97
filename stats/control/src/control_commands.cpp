// What the control server answers (control::handle_request): one function per
// command, each rendering from a snapshot. The baseline lives here.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "arenastat/control.hpp"
#include "arenastat/diff.hpp"
#include "arenastat/dump.hpp"
#include "arenastat/metrics_http.hpp"
#include "arenastat/prometheus.hpp"
#include "arenastat/report.hpp"
#include "arenastat/size.hpp"
#include "arenastat/table.hpp"
#include "control_internal.hpp"
#include "control_request.hpp"
#include "options.hpp"
#include "report_internal.hpp"
#include "text_escape.hpp"

namespace arenastat::control {
namespace {

struct baseline_store {
  std::mutex mutex;
  bool taken = false;
  std::vector<entry> entries;
  std::time_t wall = 0;
  std::chrono::steady_clock::time_point steady;
};
baseline_store& baseline() {
  static baseline_store* b = new baseline_store;  // eternal
  return *b;
}

std::string ok(std::string body) { return "ok\n" + std::move(body); }

static_assert(wire::max_metrics_depth == max_metrics_depth, "metrics --depth and ARENASTAT_METRICS_DEPTH agree");

// Every command with its synopsis and, below, its options' help lines (all
// from the tables of control_request.cpp and options.cpp).
std::string help_body() {
  std::string out = "Commands (arenastat <pid> <command> [arguments]):\n";
  for (const wire::command_info& c : wire::commands())
    out += wire::help_entry(c.name, wire::arguments(c), c.description, c.options);
  return out;
}

std::string info_body() {
  const counters c = connection_counters();
  std::string out;
  out += "pid " + std::to_string(::getpid()) + "\n";
  // User data, escaped as in every text answer: a program name or socket
  // directory with a newline must not add a line of its own.
  out += "program " + detail::escape_text(detail::program_name()) + "\n";
  out += "socket " + detail::escape_text(socket_path()) + "\n";
  out += "served " + std::to_string(c.served) + "\n";
  out += "refused " + std::to_string(c.refused) + "\n";
  out += "timed_out " + std::to_string(c.timed_out) + "\n";
  out += "bad_requests " + std::to_string(c.bad_requests) + "\n";
  out += "busy " + std::to_string(c.busy) + "\n";
  out += "dropped " + std::to_string(c.dropped) + "\n";
  {
    baseline_store& b = baseline();
    std::lock_guard lock(b.mutex);
    out += "baseline " + (b.taken ? detail::utc_time_string(b.wall) : std::string("none")) + "\n";
  }
  out += "metrics_port " + std::to_string(metrics_http::port()) + "\n";  // 0: the /metrics endpoint is off
  return out;
}

std::string baseline_body() {
  std::vector<entry> now = snapshot();
  baseline_store& b = baseline();
  std::lock_guard lock(b.mutex);
  b.entries = std::move(now);
  b.taken = true;
  b.wall = std::time(nullptr);
  b.steady = std::chrono::steady_clock::now();
  return "baseline recorded: " + std::to_string(b.entries.size()) + " entries at " +
         detail::utc_time_string(b.wall) + "\n";
}

std::string diff_body(const std::string& arguments) {
  const report_options options = parse_report_options(arguments);
  check_diff_format(options);  // before the baseline is looked for
  std::vector<entry> before;
  diff_source source;
  {
    baseline_store& b = baseline();
    std::lock_guard lock(b.mutex);
    if (!b.taken) throw std::runtime_error("no baseline: run 'arenastat <pid> baseline' first");
    before = b.entries;
    source.baseline_time = detail::utc_time_string(b.wall);
    source.baseline_age_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - b.steady).count();
  }
  return render_diff(diff_entries(before, snapshot()), options, source);
}

std::string reset_body() {
  reset_peaks();
  return "peaks reset: " + detail::plural(scope_entry_count(), "scope entry", "scope entries") + " and " +
         detail::plural(account_entry_count(), "account", "accounts") + " now start from their current values\n";
}

std::string process_body(const std::string& arguments) {
  bool human = false, json = false;
  const opt::grammar& g = wire::process_grammar();
  for (const opt::value& v : opt::parse(g, arguments).values) {
    switch (opt::which<wire::process_spec>(g, v)) {
      case wire::process_spec::human: human = true; break;
      case wire::process_spec::json: json = true; break;
    }
  }
  const process_info p = read_process_info();
  if (json) {
    // The same object, field names and compact style as the report's "process".
    std::string out;
    detail::json_writer w(out);
    detail::write_process_json(w, p, /*with_pid=*/true);
    return out + "\n";
  }
  auto size = [human](std::uint64_t v) { return human ? human_size(v) : std::to_string(v); };
  std::string out = "pid " + std::to_string(p.pid) + "\n";
  out += "VmRSS    " + size(p.rss_bytes) + "\n";
  out += "VmHWM    " + size(p.hwm_bytes) + "\n";
  out += "RssAnon  " + size(p.rss_anon_bytes) + "\n";
  if (p.jemalloc) {
    out += "jemalloc allocated " + size(p.je_allocated) + "  active " + size(p.je_active) + "  resident " +
           size(p.je_resident) + "  mapped " + size(p.je_mapped) + "\n";
  } else {
    out += "jemalloc not in use\n";
  }
  return out;
}

// metrics [--openmetrics] [--depth=N] (prometheus.hpp); the depth defaults to ARENASTAT_METRICS_DEPTH.
std::string metrics_body(const std::string& arguments) {
  metrics_options o{.depth = metrics_depth_from_env()};
  const opt::grammar& g = wire::metrics_grammar();
  for (const opt::value& v : opt::parse(g, arguments).values) {
    switch (opt::which<wire::metrics_spec>(g, v)) {
      case wire::metrics_spec::openmetrics: o.format = metrics_format::openmetrics; break;
      case wire::metrics_spec::depth: o.depth = static_cast<unsigned>(v.number); break;
    }
  }
  return metrics(o);
}

std::string dispatch(const wire::request& r) {
  switch (r.cmd) {
    case wire::command::help: return help_body();
    case wire::command::info: return info_body();
    case wire::command::stats: return report(r.arguments);  // answer_request streams it instead
    case wire::command::baseline: return baseline_body();
    case wire::command::diff: return diff_body(r.arguments);
    case wire::command::reset: return reset_body();
    case wire::command::process: return process_body(r.arguments);
    case wire::command::dump: return dump_body(r.arguments);
    case wire::command::metrics: return metrics_body(r.arguments);
  }
  throw std::logic_error("unhandled command");
}

}  // namespace

answer answer_request(std::string_view line) {
  const wire::parse_result parsed = wire::parse_request(line);
  if (!parsed.value) return {"error " + wire::single_line(parsed.error) + "\n", std::nullopt};
  try {
    // stats: the report is streamed (its options are checked before "ok").
    if (parsed.value->cmd == wire::command::stats) return {"ok\n", stream_report(parsed.value->arguments)};
    return {ok(dispatch(*parsed.value)), std::nullopt};
  } catch (const std::exception& e) {
    // Messages may hold names and paths (user data): control bytes and bytes
    // outside UTF-8 escaped. A backslash is kept, not doubled: a path quoted
    // with detail::quoted (dump.cpp) is escaped already, its \xNN must stay one.
    return {"error " + wire::single_line(detail::escape_text(e.what(), {.backslash = false})) + "\n", std::nullopt};
  } catch (...) {
    return {"error internal error while answering\n", std::nullopt};
  }
}

std::string handle_request(std::string_view line) {
  answer a = answer_request(line);
  if (!a.rest) return std::move(a.head);
  std::string out = std::move(a.head);
  std::string_view chunk;
  try {
    while (a.rest->next(chunk)) out += chunk;
  } catch (const std::exception& e) {
    out += truncated_line(e.what());
  } catch (...) {
    out += truncated_line("internal error while answering");
  }
  return out;
}

std::string truncated_line(std::string_view why) {
  return "\narenastat: answer truncated: " + wire::single_line(detail::escape_text(why)) + "\n";
}

}  // namespace arenastat::control
