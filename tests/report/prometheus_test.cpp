// The Prometheus exposition (prometheus.hpp): exact lines derived from the
// sample entries, the scope grouping and its bound on series, escaping, the
// OpenMetrics variant, Accept negotiation, --prometheus and atomic files.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <memory_resource>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "arenastat/arena_resource.hpp"
#include "arenastat/prometheus.hpp"
#include "arenastat/scope.hpp"
#include "arenastat/tracking_resource.hpp"
#include "arenastat/table.hpp"
#include "sample_entries.hpp"
#include "text_escape.hpp"

using namespace report_test;
using namespace arenastat;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;

namespace {

table_figures sample_table() { return {.scope_entries = 3, .account_entries = 2}; }

std::string exposition(unsigned depth = 1, metrics_format format = metrics_format::text,
                       const std::vector<entry>& entries = sample()) {
  return render_metrics(entries, sample_process(), sample_table(), {.depth = depth, .format = format});
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Sample lines (not comments) whose metric name is `name` (exactly).
std::vector<std::string> samples_named(const std::string& text, const std::string& name) {
  std::vector<std::string> out;
  for (const std::string& l : lines_of(text)) {
    if (l.empty() || l[0] == '#') continue;
    const std::string metric = l.substr(0, l.find_first_of("{ "));
    if (metric == name) out.push_back(l);
  }
  return out;
}

std::size_t sample_count(const std::string& text) {
  std::size_t n = 0;
  for (const std::string& l : lines_of(text)) n += !l.empty() && l[0] != '#';
  return n;
}

}  // namespace

TEST_CASE("prometheus: accounts are labelled by name with live, peak, tags and counters",
          "[prometheus]") {
  const std::string text = exposition();
  // cache/lru: peak 4096, live 2048, allocated 10000 in 10 allocations, 5 frees, heap 2048 (sample_entries.hpp).
  const entry lru = sample()[4];
  const std::string l = "{account=\"" + lru.name + "\"}";
  CHECK_THAT(text, Contains("\narenastat_account_live_bytes" + l + " " + std::to_string(lru.live_bytes) + "\n"));
  CHECK_THAT(text, Contains("\narenastat_account_peak_bytes" + l + " " + std::to_string(lru.peak_bytes) + "\n"));
  CHECK_THAT(text, Contains("\narenastat_account_allocated_bytes_total" + l + " " +
                            std::to_string(lru.allocated_bytes) + "\n"));
  CHECK_THAT(text, Contains("\narenastat_account_allocations_total" + l + " " + std::to_string(lru.allocations) + "\n"));
  CHECK_THAT(text, Contains("\narenastat_account_frees_total" + l + " " + std::to_string(lru.frees) + "\n"));
  CHECK_THAT(text, Contains("\narenastat_account_tag_live_bytes{account=\"cache/lru\",tag=\"heap\"} 2048\n"));
}

TEST_CASE("prometheus: scopes are grouped by their first name part, peaks max and runs summed",
          "[prometheus]") {
  std::vector<entry> entries = sample();
  entries[0].oom_count = 1;  // compile/Baz::qux hit its limit once
  entries[1].err_count = 1;  // compile/Foo::bar left by an exception once
  const std::string text = exposition(1, metrics_format::text, entries);
  // compile = compile/Baz::qux (peak 1000, 1 run, 0.25 s) + compile/Foo::bar (peak 3000, 2 runs, 0.5 s).
  CHECK(samples_named(text, "arenastat_scope_peak_bytes") ==
        std::vector<std::string>{"arenastat_scope_peak_bytes{scope=\"compile\"} 3000",
                                 "arenastat_scope_peak_bytes{scope=\"parse\"} 500"});
  CHECK(samples_named(text, "arenastat_scope_runs_total") ==
        std::vector<std::string>{"arenastat_scope_runs_total{scope=\"compile\"} 3",
                                 "arenastat_scope_runs_total{scope=\"parse\"} 5"});
  CHECK(samples_named(text, "arenastat_scope_names") ==
        std::vector<std::string>{"arenastat_scope_names{scope=\"compile\"} 2", "arenastat_scope_names{scope=\"parse\"} 1"});
  CHECK_THAT(text, Contains("\narenastat_scope_limit_hits_total{scope=\"compile\"} 1\n"));
  CHECK_THAT(text, Contains("\narenastat_scope_errors_total{scope=\"compile\"} 1\n"));
  CHECK_THAT(text, Contains("\narenastat_scope_run_seconds_total{scope=\"compile\"} 0.75\n"));
}

TEST_CASE("prometheus: a group's tag breakdown is that of its largest peak", "[prometheus]") {
  // compile's largest peak is compile/Foo::bar's: node 1000 + resource 2000.
  CHECK(samples_named(exposition(), "arenastat_scope_peak_tag_bytes") ==
        std::vector<std::string>{"arenastat_scope_peak_tag_bytes{scope=\"compile\",tag=\"node\"} 1000",
                                 "arenastat_scope_peak_tag_bytes{scope=\"compile\",tag=\"resource\"} 2000",
                                 "arenastat_scope_peak_tag_bytes{scope=\"parse\",tag=\"resource\"} 500"});
}

TEST_CASE("prometheus: a deeper grouping keeps more of the name", "[prometheus]") {
  CHECK(samples_named(exposition(2), "arenastat_scope_peak_bytes") ==
        std::vector<std::string>{"arenastat_scope_peak_bytes{scope=\"compile/Baz::qux\"} 1000",
                                 "arenastat_scope_peak_bytes{scope=\"compile/Foo::bar\"} 3000",
                                 "arenastat_scope_peak_bytes{scope=\"parse/main\"} 500"});
}

TEST_CASE("prometheus: a metrics depth is a whole number from 1 to 64, leading zeros allowed", "[prometheus]") {
  CHECK(parse_metrics_depth("1") == 1u);
  CHECK(parse_metrics_depth("05") == 5u);  // the value used is the value the warning check accepts
  CHECK(parse_metrics_depth("64") == 64u);
  static_assert(max_metrics_depth == 64);
  for (const char* bad : {"", "0", "00", "65", "-1", "+3", " 3", "3 ", "3x", "0x3", "99999999999999999999"})
    CHECK_FALSE(parse_metrics_depth(bad).has_value());
}

TEST_CASE("prometheus: scope_group keeps the first non-empty parts", "[prometheus]") {
  CHECK(scope_group("compile/Foo.bar", 1) == "compile");
  CHECK(scope_group("compile/Foo.bar", 2) == "compile/Foo.bar");
  CHECK(scope_group("compile/Foo.bar", 5) == "compile/Foo.bar");
  CHECK(scope_group("a//b/c", 2) == "a/b");
  CHECK(scope_group("/a/b", 1) == "a");
  CHECK(scope_group("plain", 1) == "plain");
  CHECK(scope_group("", 1) == "");
}

TEST_CASE("prometheus: 100,000 distinct scope names give a fixed number of series", "[prometheus]") {
  const auto many = [](std::size_t n) {
    std::vector<entry> v;
    for (std::size_t i = 0; i < n; ++i) {
      // Four kinds, one name per request: "request<k>/<id>".
      v.push_back(make_scope("request" + std::to_string(i % 4) + "/" + std::to_string(i), 100 + i,
                             {{"node", static_cast<std::int64_t>(100 + i)}}, 1, 0.001, "ok", 1));
    }
    return v;
  };
  const std::string small = exposition(1, metrics_format::text, many(8));
  const std::string big = exposition(1, metrics_format::text, many(100000));
  // Per kind: names, peak, one tag, runs, limit hits, errors, seconds = 7 series; 4 kinds.
  // Plus 3 process, 3 table sizes (scope, account, folded), the cap, folded
  // entries and lost folds; no account.
  CHECK(sample_count(small) == 4 * 7 + 9);
  CHECK(sample_count(big) == 4 * 7 + 9);
  // The largest name of kind 3 is request3/99999: peak 100099.
  CHECK_THAT(big, Contains("\narenastat_scope_peak_bytes{scope=\"request3\"} 100099\n"));
  CHECK_THAT(big, Contains("\narenastat_scope_names{scope=\"request0\"} 25000\n"));
}

TEST_CASE("prometheus: label values are escaped and made valid UTF-8", "[prometheus]") {
  CHECK(escape_label_value("plain/name") == "plain/name");
  CHECK(escape_label_value("a\"b") == "a\\\"b");
  CHECK(escape_label_value("a\\b") == "a\\\\b");
  CHECK(escape_label_value("a\nb") == "a\\nb");
  CHECK(escape_label_value("caf\xc3\xa9") == "caf\xc3\xa9");
  // Each invalid byte is U+FFFD (EF BF BD) and its two lowercase hex digits.
  CHECK(escape_label_value("bad\xff") == "bad\xef\xbf\xbd" "ff");
  CHECK(escape_label_value("cut\xe2\x82") == "cut\xef\xbf\xbd" "e2\xef\xbf\xbd" "82");
  CHECK(escape_label_value("q\"\xc0") == "q\\\"\xef\xbf\xbd" "c0");
}

TEST_CASE("prometheus: a well-formed name without U+FFFD is copied unchanged", "[prometheus]") {
  for (const std::string name : {"compile/Foo::bar", "utf8-\xc3\xa9-\xe6\x97\xa5\xe6\x9c\xac", "emoji \xf0\x9f\x98\x80",
                                 "ff", "\xef\xbf\xbc x"}) {  // U+FFFC, the neighbour of the mark
    CHECK(escape_label_value(name) == name);
  }
}

TEST_CASE("prometheus: a literal U+FFFD in a name is written twice", "[prometheus]") {
  CHECK(escape_label_value("a\xef\xbf\xbd") == "a\xef\xbf\xbd\xef\xbf\xbd");
  // A literal U+FFFD followed by "ff" is not the invalid byte 0xff.
  CHECK(escape_label_value("bad\xef\xbf\xbd" "ff") == "bad\xef\xbf\xbd\xef\xbf\xbd" "ff");
  CHECK(escape_label_value("bad\xef\xbf\xbd" "ff") != escape_label_value("bad\xff"));
  // One invalid byte anywhere marks the whole value, literal U+FFFD included.
  CHECK(escape_label_value("\xef\xbf\xbd\xff") == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "ff");
}

namespace {

// The inverse of escape_label_value: the name a label value was written for.
std::string decode_label_value(const std::string& v) {
  const std::string mark = "\xef\xbf\xbd";
  const bool marked = v.find(mark) != std::string::npos;
  std::string out;
  for (std::size_t i = 0; i < v.size();) {
    if (v[i] == '\\') {
      const char c = v.at(i + 1);
      out += c == 'n' ? '\n' : c;
      i += 2;
    } else if (marked && v.compare(i, 3, mark) == 0) {
      if (v.compare(i + 3, 3, mark) == 0) {
        out += mark;
        i += 6;
      } else {
        out += static_cast<char>(std::stoi(v.substr(i + 3, 2), nullptr, 16));
        i += 5;
      }
    } else {
      out += v[i++];
    }
  }
  return out;
}

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = arenastat::detail::utf8_sequence(s.substr(i));
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace

TEST_CASE("prometheus: the label escape is injective and decodes back to the name", "[prometheus]") {
  const std::vector<std::string> names = {
      "bad\xff", "bad\xfe", "bad\xef\xbf\xbd", "bad\xef\xbf\xbd" "ff", "bad\xef\xbf\xbd\xef\xbf\xbd", "bad",
      "badff", "bad\xef\xbf\xbd\xff", "\xff\xfe", "\xe2\x82", "\xe2\x82\xac", "a\"\\\n\xff", "\xed\xa0\x80",
      "\xc0\xaf", std::string("nu\0l", 4), ""};
  std::set<std::string> written;
  for (const std::string& name : names) {
    const std::string v = escape_label_value(name);
    CHECK(valid_utf8(v));
    CHECK(decode_label_value(v) == name);
    written.insert(v);
  }
  CHECK(written.size() == names.size());
}
namespace {

// A sample line's series: its metric name and its labels, values unescaped.
struct series {
  std::string metric;
  std::map<std::string, std::string> labels;
  auto operator<=>(const series&) const = default;
};

// Parses "name{a="x",b="y"} value" (or "name value") as the exposition formats
// define it; fails the test on anything else.
series parse_series(const std::string& line) {
  series s;
  std::size_t i = line.find_first_of("{ ");
  REQUIRE(i != std::string::npos);
  s.metric = line.substr(0, i);
  if (line[i] == '{') {
    ++i;
    while (line.at(i) != '}') {
      const std::size_t eq = line.find("=\"", i);
      REQUIRE(eq != std::string::npos);
      const std::string name = line.substr(i, eq - i);
      std::string value;
      for (i = eq + 2; line.at(i) != '"'; ++i) {
        if (line[i] == '\\') {
          ++i;
          value += line.at(i) == 'n' ? '\n' : line[i];
        } else {
          value += line[i];
        }
      }
      REQUIRE(s.labels.emplace(name, value).second);  // a label name once per series
      ++i;
      if (line.at(i) == ',') ++i;
    }
    ++i;
  }
  REQUIRE(line.at(i) == ' ');
  return s;
}

// Names that differ only in invalid bytes, as scopes, accounts and tags.
std::vector<entry> names_differing_in_invalid_bytes() {
  std::vector<entry> v = sample();
  v.push_back(make_scope("bad\xff/1", 10, {{"t\xff", 4}, {"t\xfe", 6}}, 1, 0.5, "ok", 1));
  v.push_back(make_scope("bad\xfe/2", 20, {{"node", 20}}, 2, 0.5, "ok", 1));
  v.push_back(make_scope("bad\xef\xbf\xbd/3", 30, {{"node", 30}}, 3, 0.5, "ok", 1));
  v.push_back(make_account("acct\xff", 1, 1, 1, 1, 0, {}));
  v.push_back(make_account("acct\xfe", 2, 2, 2, 1, 0, {}));
  v.back().live_by_tag = {{"t\xff", 1}, {"t\xfe", 1}};
  return v;
}

}  // namespace

TEST_CASE("prometheus: scopes, accounts and tags differing only in invalid bytes are distinct series",
          "[prometheus]") {
  const std::string text = exposition(1, metrics_format::text, names_differing_in_invalid_bytes());
  const std::string mark = "\xef\xbf\xbd";
  CHECK(samples_named(text, "arenastat_scope_runs_total") ==
        // Groups in byte order of their names: bad\uFFFD (EF) < bad\xfe < bad\xff.
        std::vector<std::string>{"arenastat_scope_runs_total{scope=\"bad" + mark + mark + "\"} 3",
                                 "arenastat_scope_runs_total{scope=\"bad" + mark + "fe\"} 2",
                                 "arenastat_scope_runs_total{scope=\"bad" + mark + "ff\"} 1",
                                 "arenastat_scope_runs_total{scope=\"compile\"} 3",
                                 "arenastat_scope_runs_total{scope=\"parse\"} 5"});
  CHECK_THAT(text, Contains("\narenastat_scope_peak_tag_bytes{scope=\"bad" + mark + "ff\",tag=\"t" + mark +
                            "ff\"} 4\narenastat_scope_peak_tag_bytes{scope=\"bad" + mark + "ff\",tag=\"t" + mark +
                            "fe\"} 6\n"));
  CHECK_THAT(text, Contains("\narenastat_account_live_bytes{account=\"acct" + mark + "ff\"} 1\n"
                            "arenastat_account_live_bytes{account=\"acct" + mark + "fe\"} 2\n"));
  CHECK_THAT(text, Contains("\narenastat_account_tag_live_bytes{account=\"acct" + mark + "fe\",tag=\"t" + mark +
                            "ff\"} 1\narenastat_account_tag_live_bytes{account=\"acct" + mark + "fe\",tag=\"t" +
                            mark + "fe\"} 1\n"));
}

TEST_CASE("prometheus: no two samples of an exposition share a metric name and label set", "[prometheus]") {
  for (const metrics_format format : {metrics_format::text, metrics_format::openmetrics}) {
    for (const unsigned depth : {1u, 2u}) {
      const std::string text = exposition(depth, format, names_differing_in_invalid_bytes());
      std::set<series> seen;
      std::size_t samples = 0;
      for (const std::string& l : lines_of(text)) {
        if (l.empty() || l[0] == '#') continue;
        ++samples;
        CHECK(valid_utf8(l));
        const series s = parse_series(l);
        INFO(l);
        CHECK(seen.insert(s).second);
      }
      CHECK(samples == sample_count(text));
      // 3 process and 6 table series; 6 one-label series per scope group and
      // one per tag of its largest peak: at depth 1 the groups bad\xff (2 tags),
      // bad\xfe (1), bad\uFFFD (1), compile (Foo::bar's 2) and parse (1); at
      // depth 2 the same but compile splits into Baz::qux (1) and Foo::bar (2).
      // 4 accounts with 5 one-label series each; live tags: heap for three,
      // t\xff and t\xfe for acct\xfe.
      const std::size_t groups = depth == 1 ? 5 : 6;
      const std::size_t scope_tags = depth == 1 ? 2 + 1 + 1 + 2 + 1 : 2 + 1 + 1 + 1 + 2 + 1;
      CHECK(samples == 3 + 6 + groups * 6 + scope_tags + 4 * 5 + 3 + 2);
    }
  }
}

TEST_CASE("prometheus: a pid label goes first on every sample when asked for, never otherwise", "[prometheus]") {
  const std::string text =
      render_metrics(sample(), sample_process(), sample_table(), {.depth = 1, .pid_label = std::uint64_t{4242}});
  CHECK_THAT(text, Contains("\narenastat_process_rss_bytes{pid=\"4242\"} 1048576\n"));
  CHECK_THAT(text, Contains("\narenastat_table_entries{pid=\"4242\",kind=\"scope\"} 3\n"));
  CHECK_THAT(text, Contains("\narenastat_scope_runs_total{pid=\"4242\",scope=\"compile\"} 3\n"));
  CHECK_THAT(text, Contains("\narenastat_account_tag_live_bytes{pid=\"4242\",account=\"cache/lru\",tag=\"heap\"} 2048\n"));
  std::size_t samples = 0;
  for (const std::string& l : lines_of(text)) {
    if (l.empty() || l[0] == '#') continue;
    ++samples;
    CHECK(parse_series(l).labels.at("pid") == "4242");
  }
  CHECK(samples == sample_count(exposition()));
  CHECK(exposition().find("pid=") == std::string::npos);  // /metrics and `arenastat <pid> metrics`
  const std::string om = render_metrics(sample(), sample_process(), sample_table(),
                                        {.format = metrics_format::openmetrics, .pid_label = std::uint64_t{7}});
  CHECK_THAT(om, Contains("\narenastat_account_frees_total{pid=\"7\",account=\"cache/index\"} 1\n"));
}

TEST_CASE("prometheus: the files of two processes have disjoint label sets", "[prometheus]") {
  // Same table, two pids: what node_exporter's textfile collector reads from
  // arenastat.100.prom and arenastat.200.prom in one directory.
  std::set<series> first, second;
  for (const auto& [pid, set] : {std::pair{std::uint64_t{100}, &first}, std::pair{std::uint64_t{200}, &second}}) {
    const std::string text =
        render_metrics(sample(), sample_process(), sample_table(), {.depth = 1, .pid_label = pid});
    for (const std::string& l : lines_of(text)) {
      if (!l.empty() && l[0] != '#') CHECK(set->insert(parse_series(l)).second);
    }
  }
  CHECK(first.size() == sample_count(exposition()));
  CHECK(second.size() == first.size());
  std::vector<series> both;
  std::set_intersection(first.begin(), first.end(), second.begin(), second.end(), std::back_inserter(both));
  CHECK(both.empty());
}

TEST_CASE("prometheus: an account with quotes in its name gets one escaped series", "[prometheus]") {
  std::vector<entry> v{make_account("say \"hi\"\\now", 7, 7, 7, 1, 0, {})};
  CHECK(samples_named(exposition(1, metrics_format::text, v), "arenastat_account_live_bytes") ==
        std::vector<std::string>{"arenastat_account_live_bytes{account=\"say \\\"hi\\\"\\\\now\"} 7"});
}

TEST_CASE("prometheus: every family has HELP and TYPE lines, counters end in _total", "[prometheus]") {
  const std::vector<std::string> lines = lines_of(exposition());
  std::set<std::string> helped, typed;
  for (const std::string& l : lines) {
    std::istringstream in(l);
    std::string hash, kind, name, type;
    in >> hash >> kind >> name >> type;
    if (hash != "#") continue;
    if (kind == "HELP") helped.insert(name);
    if (kind == "TYPE") {
      typed.insert(name);
      CHECK((type == "gauge" || type == "counter"));
      if (type == "counter") CHECK_THAT(name, EndsWith("_total"));
      if (type == "gauge") CHECK_FALSE(name.ends_with("_total"));
    }
  }
  CHECK(helped == typed);
  for (const std::string& l : lines) {
    if (l.empty() || l[0] == '#') continue;
    CHECK(typed.count(l.substr(0, l.find_first_of("{ "))) == 1);
  }
  CHECK(typed.count("arenastat_process_rss_bytes") == 1);
  CHECK(typed.count("arenastat_account_allocations_total") == 1);
}

TEST_CASE("prometheus: the text format names a counter family after its _total samples", "[prometheus]") {
  CHECK_THAT(exposition(), Contains("# HELP arenastat_account_frees_total Frees made by an account.\n"
                                    "# TYPE arenastat_account_frees_total counter\n"
                                    "arenastat_account_frees_total{account=\"cache/index\"} 1\n"));
}

TEST_CASE("prometheus: OpenMetrics names counter families without _total, adds UNIT and # EOF",
          "[prometheus]") {
  const std::string om = exposition(1, metrics_format::openmetrics);
  CHECK_THAT(om, Contains("# HELP arenastat_account_frees Frees made by an account.\n"
                          "# TYPE arenastat_account_frees counter\n"
                          "arenastat_account_frees_total{account=\"cache/index\"} 1\n"));
  CHECK_THAT(om, Contains("# TYPE arenastat_account_allocated_bytes counter\n"
                          "# UNIT arenastat_account_allocated_bytes bytes\n"
                          "arenastat_account_allocated_bytes_total{account=\"cache/index\"} 100\n"));
  CHECK_THAT(om, EndsWith("\n# EOF\n"));
  CHECK_FALSE(exposition().find("# EOF") != std::string::npos);
}

TEST_CASE("prometheus: process figures are gauges in bytes", "[prometheus]") {
  const std::string text = exposition();
  const process_info p = sample_process();
  CHECK_THAT(text, Contains("\narenastat_process_rss_bytes " + std::to_string(p.rss_bytes) + "\n"));
  CHECK_THAT(text, Contains("\narenastat_process_rss_peak_bytes " + std::to_string(p.hwm_bytes) + "\n"));
  CHECK_THAT(text, Contains("\narenastat_process_rss_anon_bytes " + std::to_string(p.rss_anon_bytes) + "\n"));
  CHECK(samples_named(text, "arenastat_jemalloc_allocated_bytes").empty());
}

TEST_CASE("prometheus: the table's size by kind, its cap and the entries folded beyond it", "[prometheus]") {
  table_figures t = sample_table();
  t.folded_rows = 1;
  t.table_max = 10000;
  t.folded_entries = 12;
  const std::string text = render_metrics(sample(), sample_process(), t, {});
  CHECK_THAT(text, Contains("\narenastat_table_entries{kind=\"scope\"} 3\narenastat_table_entries{kind=\"account\"} 2\n"
                            "arenastat_table_entries{kind=\"folded\"} 1\n"));
  CHECK(samples_named(text, "arenastat_table_max_entries") == std::vector<std::string>{"arenastat_table_max_entries 10000"});
  CHECK(samples_named(text, "arenastat_table_folded_entries_total") ==
        std::vector<std::string>{"arenastat_table_folded_entries_total 12"});
  CHECK_THAT(text, Contains("\narenastat_table_lost_folds_total 0\n"));
}

// An overflow row counts folds, not names (a name folded, run again and folded
// again counts twice there): its runs join the group, its fold count does not
// add names.
TEST_CASE("prometheus: an overflow row joins its prefix's group with its runs and its largest peak", "[prometheus]") {
  arenastat::entry kept;
  kept.name = "request/42";
  kept.kind = arenastat::entry_kind::scope;
  kept.peak_bytes = 100;
  kept.count = 2;
  arenastat::entry folded;
  folded.name = "request/";
  folded.kind = arenastat::entry_kind::folded;
  folded.peak_bytes = 300;  // the largest folded peak
  folded.count = 7;         // their runs
  folded.folded_entries = 5;
  const std::string text = render_metrics({kept, folded}, sample_process(), sample_table(), {});
  CHECK(samples_named(text, "arenastat_scope_names") ==
        std::vector<std::string>{"arenastat_scope_names{scope=\"request\"} 1"});  // "request/42" alone
  CHECK(samples_named(text, "arenastat_scope_peak_bytes") ==
        std::vector<std::string>{"arenastat_scope_peak_bytes{scope=\"request\"} 300"});
  CHECK(samples_named(text, "arenastat_scope_runs_total") ==
        std::vector<std::string>{"arenastat_scope_runs_total{scope=\"request\"} 9"});
}

TEST_CASE("prometheus: Accept chooses OpenMetrics only when it is preferred", "[prometheus]") {
  // What Prometheus 2.42 sends.
  CHECK(metrics_format_for_accept("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                                  "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1") ==
        metrics_format::openmetrics);
  CHECK(metrics_format_for_accept("") == metrics_format::text);
  // Media types are case-insensitive.
  CHECK(metrics_format_for_accept("APPLICATION/OpenMetrics-Text; Q=0.9, Text/Plain;q=0.5") == metrics_format::openmetrics);
  CHECK(metrics_format_for_accept("application/openmetrics-text;q=0.5,TEXT/PLAIN") == metrics_format::text);
  CHECK(metrics_format_for_accept("*/*") == metrics_format::text);
  CHECK(metrics_format_for_accept("text/plain;version=0.0.4") == metrics_format::text);
  CHECK(metrics_format_for_accept("application/openmetrics-text;q=0") == metrics_format::text);
  CHECK(metrics_format_for_accept("text/plain;q=0.9, application/openmetrics-text;q=0.5") == metrics_format::text);
  CHECK(metrics_format_for_accept("text/plain;q=0, application/openmetrics-text") == metrics_format::openmetrics);
}

TEST_CASE("prometheus: Accept's most specific range decides, by RFC 9110's rules", "[prometheus]") {
  // text/plain has q=1 through text/*, above OpenMetrics' 0.5.
  CHECK(metrics_format_for_accept("text/*;q=1, application/openmetrics-text;q=0.5") == metrics_format::text);
  // OpenMetrics' own range (0.3) overrides */* (0.9), which text/plain takes.
  CHECK(metrics_format_for_accept("application/openmetrics-text;q=0.3,*/*;q=0.9") == metrics_format::text);
  CHECK(metrics_format_for_accept("application/openmetrics-text;q=0.9,*/*;q=0.3") == metrics_format::openmetrics);
  // A type's wildcard names it.
  CHECK(metrics_format_for_accept("application/*") == metrics_format::openmetrics);
  CHECK(metrics_format_for_accept("application/*;q=0.4, text/plain;q=0.5") == metrics_format::text);
  // Another version of OpenMetrics is not the one served.
  CHECK(metrics_format_for_accept("application/openmetrics-text;version=0.0.1") == metrics_format::text);
  CHECK(metrics_format_for_accept("application/openmetrics-text;version=2.0.0") == metrics_format::text);
  CHECK(metrics_format_for_accept("application/openmetrics-text;version=\"1.0.0\"") == metrics_format::openmetrics);
  // The versioned range is more specific than the bare type.
  CHECK(metrics_format_for_accept("application/openmetrics-text;version=1.0.0;q=0.2,application/openmetrics-text,"
                                  "text/plain;q=0.5") == metrics_format::text);
  // Malformed q-values leave their range out.
  CHECK(metrics_format_for_accept("application/openmetrics-text;q=abc") == metrics_format::text);
  CHECK(metrics_format_for_accept("application/openmetrics-text;q=1.5") == metrics_format::text);
  CHECK(metrics_format_for_accept("application/openmetrics-text;q=0.1234") == metrics_format::text);
  CHECK(metrics_format_for_accept("application/openmetrics-text;q=1.000") == metrics_format::openmetrics);
  CHECK(metrics_format_for_accept("application/openmetrics-text;q=0.001, text/plain;q=0.000") == metrics_format::openmetrics);
  // Not media ranges.
  CHECK(metrics_format_for_accept("openmetrics, */openmetrics-text, /") == metrics_format::text);
  // A quoted string may hold ',' and ';': they split nothing.
  CHECK(metrics_format_for_accept("text/plain;foo=\"a,b;q=1\";q=0.1, application/openmetrics-text;q=0.5") ==
        metrics_format::openmetrics);
  CHECK(metrics_format_for_accept("text/plain;foo=\"a\\\"b,\";q=0.1, application/openmetrics-text;q=0.5") ==
        metrics_format::openmetrics);
  // The weight is exactly q=qvalue: quoted, or with blanks around '=', the range is malformed.
  CHECK(metrics_format_for_accept("application/openmetrics-text;q=\"0.9\"") == metrics_format::text);
  CHECK(metrics_format_for_accept("application/openmetrics-text;q = 0.9") == metrics_format::text);
  CHECK(metrics_format_for_accept("application/openmetrics-text ; q=0.9, text/plain;q=0.5") == metrics_format::openmetrics);
  // A malformed element leaves the rest of the list alone.
  CHECK(metrics_format_for_accept("text/plain;foo=\"unterminated, application/openmetrics-text") == metrics_format::text);
  CHECK(metrics_format_for_accept("text/plain;=x;q=1, application/openmetrics-text") == metrics_format::openmetrics);
  // charset=utf-8 is what is served: a range naming it is more specific; another charset does not match.
  CHECK(metrics_format_for_accept("text/plain;charset=utf-8;q=0.1, text/plain;q=0.9, application/openmetrics-text;q=0.5") ==
        metrics_format::openmetrics);
  CHECK(metrics_format_for_accept("application/openmetrics-text;charset=iso-8859-1, text/plain;q=0.5") ==
        metrics_format::text);
  // Other parameters (Prometheus 3's escaping) neither match nor differ; what Prometheus 3 sends by default.
  CHECK(metrics_format_for_accept("application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,"
                                  "application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;"
                                  "escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2") ==
        metrics_format::openmetrics);
  CHECK(metrics_content_type(metrics_format::text) == "text/plain; version=0.0.4; charset=utf-8");
  CHECK(metrics_content_type(metrics_format::openmetrics) ==
        "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

TEST_CASE("prometheus: --prometheus is a report format of its own", "[prometheus][options]") {
  CHECK(parse_report_options("--prometheus").format == report_format::prometheus);
  CHECK_THROWS_WITH(parse_report_options("--prometheus --json"),
                    "arenastat: bad option '--prometheus' with '--json': choose one output format");
  // Every entry is exposed: -s and --top do not hide series.
  CHECK(render(" --prometheus -s=1m --top=1") ==
        render_metrics(sample(), sample_process(), read_table_figures(sample()), {}));
}

TEST_CASE("prometheus: write_file_atomically replaces the file and leaves no temporary", "[prometheus]") {
  char dir_template[] = "/tmp/arenastat-prom-XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  const std::string dir = dir_template, path = dir + "/m.prom";
  write_file_atomically(path, "first\n");
  write_file_atomically(path, "second\n");
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  CHECK(s.str() == "second\n");
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.' || (std::string(e->d_name) != "." && std::string(e->d_name) != "..")) {
      names.emplace_back(e->d_name);
    }
  }
  ::closedir(d);
  CHECK(names == std::vector<std::string>{"m.prom"});
  std::remove(path.c_str());
  ::rmdir(dir.c_str());
}

namespace {

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::string contents_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("prometheus: a temporary left by a killed run with the same pid does not block the write",
          "[prometheus]") {
  // A run killed mid-write leaves .m.prom.tmp.<pid>.<n>; a later run with the
  // same pid (PID 1 in a container) must still write. Plant the names the
  // first 1,000 writes of this pid would have used with a per-process serial.
  char dir_template[] = "/tmp/arenastat-prom-XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  const std::string dir = dir_template, path = dir + "/m.prom";
  std::vector<std::string> planted;
  for (int n = 0; n < 1000; ++n) {
    planted.push_back(".m.prom.tmp." + std::to_string(::getpid()) + "." + std::to_string(n));
    std::ofstream(dir + "/" + planted.back()) << "stale";
  }
  REQUIRE_NOTHROW(write_file_atomically(path, "fresh\n"));
  CHECK(contents_of(path) == "fresh\n");
  std::vector<std::string> expected = planted;  // left alone: only the target is new
  expected.push_back("m.prom");
  std::sort(expected.begin(), expected.end());
  CHECK(files_in(dir) == expected);
  for (const std::string& n : files_in(dir)) std::remove((dir + "/" + n).c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("prometheus: a write removes its file's temporaries left over 10 minutes ago, and nothing else",
          "[prometheus]") {
  char dir_template[] = "/tmp/arenastat-prom-XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  const std::string dir = dir_template, path = dir + "/m.prom";
  const auto plant = [&](const std::string& name, long age_s) {
    std::ofstream(dir + "/" + name) << "stale";
    const timespec t[2] = {{::time(nullptr) - age_s, 0}, {::time(nullptr) - age_s, 0}};
    REQUIRE(::utimensat(AT_FDCWD, (dir + "/" + name).c_str(), t, 0) == 0);
  };
  const std::string hex = "0123456789abcdef";
  plant(".m.prom.tmp.123." + hex, 11 * 60);          // a killed writer's, 11 minutes old: removed
  plant(".m.prom.tmp.4." + hex, 60 * 60);            // removed
  plant(".m.prom.tmp.124." + hex, 9 * 60);           // 9 minutes: a writer may still be at it
  plant(".m.prom.tmp.125.0123456789abcdeF", 3600);   // not a name this writer makes
  plant(".m.prom.tmp.x." + hex, 3600);               // nor this
  plant(".m.prom.tmp.126." + hex + "0", 3600);       // nor this (17 hex digits)
  plant(".n.prom.tmp.127." + hex, 3600);             // another file's
  plant("m.prom.tmp.128." + hex, 3600);              // no leading dot
  const std::string target = dir + "/target";
  std::ofstream(target) << "keep";
  const std::string link = ".m.prom.tmp.129." + hex;  // a symbolic link is never removed
  REQUIRE(::symlink(target.c_str(), (dir + "/" + link).c_str()) == 0);
  write_file_atomically(path, "fresh\n");
  CHECK(contents_of(path) == "fresh\n");
  std::vector<std::string> expected{".m.prom.tmp.124." + hex, ".m.prom.tmp.125.0123456789abcdeF",
                                    ".m.prom.tmp.x." + hex,   ".m.prom.tmp.126." + hex + "0",
                                    ".n.prom.tmp.127." + hex, "m.prom.tmp.128." + hex,
                                    link,                     "target",
                                    "m.prom"};
  std::sort(expected.begin(), expected.end());
  CHECK(files_in(dir) == expected);
  CHECK(contents_of(target) == "keep");
  for (const std::string& n : files_in(dir)) std::remove((dir + "/" + n).c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("prometheus: write_file_atomically never follows a symlink at the temporary's name", "[prometheus]") {
  // O_EXCL: a new name each time, and an existing name (file or link) is never opened.
  char dir_template[] = "/tmp/arenastat-prom-XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  const std::string dir = dir_template, path = dir + "/m.prom", victim = dir + "/victim";
  std::ofstream(victim) << "keep";
  for (int n = 0; n < 100; ++n) {
    const std::string link = dir + "/.m.prom.tmp." + std::to_string(::getpid()) + "." + std::to_string(n);
    REQUIRE(::symlink(victim.c_str(), link.c_str()) == 0);
  }
  write_file_atomically(path, "fresh\n");
  CHECK(contents_of(victim) == "keep");
  CHECK(contents_of(path) == "fresh\n");
  for (const std::string& n : files_in(dir)) std::remove((dir + "/" + n).c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("prometheus: write_file_atomically refuses a path with a NUL instead of writing a shorter name",
          "[prometheus]") {
  char dir_template[] = "/tmp/arenastat-prom-XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  const std::string dir = dir_template;
  const std::string path = dir + "/m" + std::string(1, '\0') + "x.prom";
  CHECK_THROWS_WITH(write_file_atomically(path, "x"), Catch::Matchers::EndsWith(": Invalid argument"));
  CHECK(files_in(dir).empty());  // neither "m" nor a temporary
  ::rmdir(dir.c_str());
}

TEST_CASE("prometheus: write_file_atomically names a directory that does not exist", "[prometheus]") {
  // The file asked for, not the temporary it is written through.
  CHECK_THROWS_WITH(write_file_atomically("/nonexistent-arenastat-dir/m.prom", "x"),
                    "metrics: cannot write '/nonexistent-arenastat-dir/m.prom': No such file or directory");
}

namespace {

// The value of the sample "<series> <value>" in `text`, -1 when there is none.
double value_of(const std::string& text, const std::string& series) {
  for (const std::string& l : lines_of(text)) {
    if (l.starts_with(series + " ")) return std::stod(l.substr(series.size() + 1));
  }
  return -1;
}

// The sum of every sample of `metric`.
double sum_of(const std::string& text, const std::string& metric) {
  double sum = 0;
  for (const std::string& l : samples_named(text, metric)) sum += std::stod(l.substr(l.rfind(' ') + 1));
  return sum;
}

// The cap that makes the table fold exactly `n` of its `size` scope entries
// (it keeps max - max/8, docs/report.md).
std::size_t cap_folding(std::size_t size, std::size_t n) {
  std::size_t max = size;
  while (max - max / 8 > size - n) --max;
  REQUIRE(max - max / 8 == size - n);
  return max;
}

}  // namespace

TEST_CASE("prometheus: folding moves a name's runs to its overflow row's group (docs/metrics.md)",
          "[prometheus][live]") {
  // What docs/metrics.md, "Counters when the table folds", says: a folded
  // entry's runs leave its own group for the group of its overflow row
  // ("p/" -> "p", a name without '/' -> "(other)"). At depth 1 a group of
  // names with '/' keeps its counters; at depth 2 "!fold/a" drops and "!fold"
  // rises; a name without '/' drops to nothing; the sum over groups and
  // arenastat_table_folded_entries_total only grow.
  const std::size_t old_max = table_max();
  set_table_max(0);
  { scope s{"!a"}; }  // peak 0, one run, "!a" first in name order: the cheapest
  for (int i = 0; i < 10; ++i) {
    const std::string name = "!fold/a/" + std::to_string(i);
    scope s{name};
  }
  const std::string d1 = metrics({.depth = 1}), d2 = metrics({.depth = 2});
  CHECK(value_of(d1, "arenastat_scope_runs_total{scope=\"!a\"}") == 1);
  CHECK(value_of(d1, "arenastat_scope_runs_total{scope=\"!fold\"}") == 10);
  CHECK(value_of(d2, "arenastat_scope_runs_total{scope=\"!fold/a\"}") == 10);
  CHECK(value_of(d2, "arenastat_scope_runs_total{scope=\"!fold\"}") == -1);
  const double other_before = std::max(0.0, value_of(d1, "arenastat_scope_runs_total{scope=\"(other)\"}"));

  // Fold the 5 cheapest: "!a", "!fold/a/0" ... "!fold/a/3" (peak 0, one run, name order).
  set_table_max(cap_folding(scope_entry_count(), 5));
  const std::string f1 = metrics({.depth = 1}), f2 = metrics({.depth = 2});
  set_table_max(old_max);
  CHECK(value_of(f1, "arenastat_scope_runs_total{scope=\"!a\"}") == -1);  // gone: its run is in "(other)"
  CHECK(value_of(f1, "arenastat_scope_runs_total{scope=\"(other)\"}") == other_before + 1);
  CHECK(value_of(f1, "arenastat_scope_runs_total{scope=\"!fold\"}") == 10);  // 6 kept + 4 in row "!fold/"
  CHECK(value_of(f2, "arenastat_scope_runs_total{scope=\"!fold/a\"}") == 6);  // decreased: reads as a reset
  CHECK(value_of(f2, "arenastat_scope_runs_total{scope=\"!fold\"}") == 4);
  CHECK(value_of(f2, "arenastat_scope_names{scope=\"!fold\"}") == 0);  // only its overflow row: no name held
  CHECK(value_of(f2, "arenastat_scope_names{scope=\"!fold/a\"}") == 6);
  CHECK(sum_of(f1, "arenastat_scope_runs_total") == sum_of(d1, "arenastat_scope_runs_total"));
  CHECK(sum_of(f2, "arenastat_scope_runs_total") == sum_of(d2, "arenastat_scope_runs_total"));
  CHECK(value_of(f1, "arenastat_table_folded_entries_total") ==
        value_of(d1, "arenastat_table_folded_entries_total") + 5);
}

TEST_CASE("prometheus: an arena's tag has its account series from the arena's creation, at 0", "[prometheus]") {
  arenastat::arena_resource arena("prom_arena_tag", arenastat::arena_options{.initial_chunk = 4096, .account = "test/prom/arena-tag"});
  const std::string created = metrics(metrics_options{});
  CHECK_THAT(created, Contains("\narenastat_account_tag_live_bytes{account=\"test/prom/arena-tag\",tag=\"prom_arena_tag\"} 0\n"));
  (void)arena.allocate(10, 8);  // the first chunk: 4096 bytes
  CHECK_THAT(metrics(metrics_options{}),
             Contains("\narenastat_account_tag_live_bytes{account=\"test/prom/arena-tag\",tag=\"prom_arena_tag\"} 4096\n"));
  arena.release();
  CHECK_THAT(metrics(metrics_options{}),
             Contains("\narenastat_account_tag_live_bytes{account=\"test/prom/arena-tag\",tag=\"prom_arena_tag\"} 0\n"));
}

TEST_CASE("prometheus: an account's tag keeps its series, at 0, once its bytes are freed", "[prometheus]") {
  // A series that vanished at 0 and came back with the next allocation would
  // be marked stale in between, and read as absent by alerts and graphs.
  tracking_resource freed("test/prom/zero-tag", "prom_zero_tag", std::pmr::new_delete_resource());
  tracking_resource held("test/prom/held-tag", "prom_held_tag", std::pmr::new_delete_resource());
  void* p = freed.allocate(100, 8);
  void* q = held.allocate(40, 8);
  freed.deallocate(p, 100, 8);
  const std::string text = metrics(metrics_options{});
  CHECK_THAT(text, Contains("\narenastat_account_tag_live_bytes{account=\"test/prom/zero-tag\",tag=\"prom_zero_tag\"} 0\n"));
  CHECK_THAT(text, Contains("\narenastat_account_tag_live_bytes{account=\"test/prom/held-tag\",tag=\"prom_held_tag\"} 40\n"));
  CHECK_THAT(text, Contains("\narenastat_account_live_bytes{account=\"test/prom/zero-tag\"} 0\n"));
  held.deallocate(q, 40, 8);
}
