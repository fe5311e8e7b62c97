// Hand-built entries with known numbers for the rendering tests.
#pragma once
#include <vector>

#include "arenastat/report.hpp"

namespace report_test {

inline arenastat::entry make_scope(std::string name, std::uint64_t peak,
                                   std::vector<arenastat::tag_bytes> at_peak, std::uint64_t count,
                                   double time_s, std::string result, std::uint64_t thread) {
  arenastat::entry e;
  e.name = std::move(name);
  e.kind = arenastat::entry_kind::scope;
  e.peak_bytes = peak;
  e.last_peak_bytes = peak / 2;
  e.at_peak = std::move(at_peak);
  e.count = count;
  e.time_s = time_s;
  e.last_time_s = time_s / 2;
  e.result = std::move(result);
  e.thread = thread;
  return e;
}

inline arenastat::entry make_account(std::string name, std::uint64_t peak, std::int64_t live,
                                     std::uint64_t allocated, std::uint64_t allocations,
                                     std::uint64_t frees, std::vector<arenastat::tag_bytes> at_peak) {
  arenastat::entry e;
  e.name = std::move(name);
  e.kind = arenastat::entry_kind::account;
  e.peak_bytes = peak;
  e.live_bytes = live;
  e.allocated_bytes = allocated;
  e.allocations = allocations;
  e.frees = frees;
  e.at_peak = std::move(at_peak);
  e.live_by_tag = {{"heap", live}};
  return e;
}

// Three scopes and two accounts, in the order snapshot() gives (scopes, then
// accounts, each by name). Peaks: lru 4096 > Foo::bar 3000 > Baz::qux 1000 >
// parse/main 500 > index 100.
inline std::vector<arenastat::entry> sample() {
  std::vector<arenastat::entry> v;
  v.push_back(make_scope("compile/Baz::qux", 1000, {{"node", 1000}}, 1, 0.25, "oom", 222));
  v.push_back(make_scope("compile/Foo::bar", 3000, {{"node", 1000}, {"resource", 2000}}, 2, 0.5,
                         "ok", 111));
  v.back().counters = {{"nodes", 42}};
  v.push_back(make_scope("parse/main", 500, {{"resource", 500}}, 5, 1.0, "ok", 333));
  v.push_back(make_account("cache/index", 100, 0, 100, 1, 1, {{"heap", 100}}));
  v.push_back(make_account("cache/lru", 4096, 2048, 10000, 10, 5, {{"heap", 4096}}));
  return v;
}

inline arenastat::process_info sample_process() {
  arenastat::process_info p;
  p.pid = 4242;
  p.rss_bytes = 1048576;
  p.hwm_bytes = 2097152;
  p.rss_anon_bytes = 524288;
  return p;
}

inline std::string render(const std::string& options) {
  return arenastat::render_report(sample(), sample_process(),
                                  arenastat::parse_report_options(options));
}

// The text from the first line starting with `marker` to the end.
inline std::string from(const std::string& text, const std::string& marker) {
  const auto at = text.find(marker);
  return at == std::string::npos ? std::string{} : text.substr(at);
}

}  // namespace report_test
