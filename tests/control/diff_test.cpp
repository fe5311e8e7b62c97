// Baseline/diff over plain entries (diff.hpp): no table, no sockets.
#include <catch2/catch.hpp>

#include "entries.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include <arenastat/control.hpp>
#include <arenastat/diff.hpp>

using namespace arenastat;

namespace {

using test_entries::account_entry;
using test_entries::scope_entry;

const diff_entry& find(const std::vector<diff_entry>& d, const std::string& name) {
  for (const diff_entry& e : d) {
    if (e.name == name) return e;
  }
  throw std::logic_error("no diff entry " + name);
}

// Lines of the text rendering after the two header lines and TOTAL.
std::vector<std::string> rows(const std::string& text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  int line = 0;
  while (pos < text.size()) {
    const std::size_t eol = text.find('\n', pos);
    if (line++ >= 3) out.push_back(text.substr(pos, eol - pos));
    pos = eol + 1;
  }
  return out;
}

}  // namespace

TEST_CASE("diff figures of an account: live, peak, allocations and live blocks", "[control][diff]") {
  const auto d = diff_entries({account_entry("cache", 1000, 1500, 10, 5)},
                              {account_entry("cache", 4000, 4500, 16, 6)});
  REQUIRE(d.size() == 1);
  CHECK(d[0].status == diff_status::changed);
  CHECK(d[0].live == diff_figure{1000, 4000});
  CHECK(d[0].peak == diff_figure{1500, 4500});
  CHECK(d[0].count == diff_figure{10, 16});  // allocations, as in the report
  CHECK(d[0].blocks == diff_figure{5, 10});  // allocations - frees
  CHECK(d[0].live.change() == 3000);
}

TEST_CASE("diff figures of a scope: peak and runs", "[control][diff]") {
  const auto d = diff_entries({scope_entry("compile/a", 2048, 3)}, {scope_entry("compile/a", 4096, 5)});
  REQUIRE(d.size() == 1);
  CHECK(d[0].live == diff_figure{0, 0});
  CHECK(d[0].peak == diff_figure{2048, 4096});
  CHECK(d[0].count == diff_figure{3, 5});
  CHECK(d[0].blocks == diff_figure{0, 0});
}

TEST_CASE("new, vanished and unchanged entries are marked", "[control][diff]") {
  const auto d = diff_entries({account_entry("same", 10, 10, 1, 0), account_entry("gone", 20, 20, 1, 0)},
                              {account_entry("same", 10, 10, 1, 0), account_entry("fresh", 30, 30, 1, 0)});
  REQUIRE(d.size() == 3);
  CHECK(find(d, "same").status == diff_status::unchanged);
  CHECK(find(d, "gone").status == diff_status::vanished);
  CHECK(find(d, "gone").live == diff_figure{20, 0});
  CHECK(find(d, "fresh").status == diff_status::added);
  CHECK(find(d, "fresh").live == diff_figure{0, 30});
}

TEST_CASE("a scope and an account of the same name are different entries", "[control][diff]") {
  const auto d = diff_entries({scope_entry("x", 100, 1)}, {account_entry("x", 5, 5, 1, 0)});
  REQUIRE(d.size() == 2);
  CHECK(d[0].status != diff_status::changed);
  CHECK(d[1].status != diff_status::changed);
}

TEST_CASE("the text diff lists the largest change first and hides unchanged entries", "[control][diff]") {
  const std::vector<entry> before{account_entry("small", 100, 100, 1, 0), account_entry("big", 1000, 1000, 1, 0),
                                  account_entry("idle", 7, 7, 1, 0)};
  const std::vector<entry> after{account_entry("small", 200, 200, 2, 0), account_entry("big", 9000, 9000, 3, 0),
                                 account_entry("idle", 7, 7, 1, 0), account_entry("fresh", 500, 500, 1, 0)};
  const std::string text = render_diff(diff_entries(before, after), parse_report_options(""),
                                       {"2026-11-22 02:30:00 UTC", 12.0});
  CHECK(text.rfind("Diff since the baseline of 2026-11-22 02:30:00 UTC (12.0 s ago): 2 changed, 1 new, "
                   "0 vanished, 1 unchanged\n",
                   0) == 0);
  const auto r = rows(text);
  REQUIRE(r.size() == 3);
  CHECK(r[0].find("+8000") != std::string::npos);
  CHECK(r[0].find("account  big") != std::string::npos);
  CHECK(r[1].find("account  fresh  (new)") != std::string::npos);
  CHECK(r[2].find("account  small") != std::string::npos);
  CHECK(text.find("idle") == std::string::npos);
}

TEST_CASE("the TOTAL line sums every entry", "[control][diff]") {
  const std::string text = render_diff(
      diff_entries({account_entry("a", 100, 100, 1, 0)}, {account_entry("a", 300, 300, 2, 0),
                                                          account_entry("b", 50, 60, 1, 0)}),
      parse_report_options(""));
  const std::string total_line = text.substr(text.find('\n', text.find('\n') + 1) + 1);
  // %14s %11s %14s %11s %9s %8s %12s %10s, two spaces, the empty kind in %-7s, two spaces, the name
  CHECK_THAT(total_line, Catch::Matchers::StartsWith(std::string(11, ' ') + "350" + std::string(8, ' ') + "+250" +
                                                     std::string(12, ' ') + "360" + std::string(8, ' ') + "+260" +
                                                     std::string(9, ' ') + "3" + std::string(7, ' ') + "+2" +
                                                     std::string(12, ' ') + "3" + std::string(9, ' ') + "+2" +
                                                     std::string(11, ' ') + "TOTAL\n"));
}

TEST_CASE("diff with -s hides small changes and counts them", "[control][diff]") {
  const std::string text = render_diff(
      diff_entries({account_entry("a", 0, 0, 0, 0), account_entry("b", 0, 0, 0, 0)},
                   {account_entry("a", 4096, 4096, 1, 0), account_entry("b", 100, 100, 1, 0)}),
      parse_report_options("-s=1k"));
  CHECK(rows(text).size() == 2);  // "a" and the omitted line
  CHECK(text.find("(1 changed entries below 1024 omitted)") != std::string::npos);
}

TEST_CASE("diff with --top keeps the N largest changes", "[control][diff]") {
  const std::string text =
      render_diff(diff_entries({}, {account_entry("a", 1, 1, 1, 0), account_entry("b", 2, 2, 1, 0),
                                    account_entry("c", 3, 3, 1, 0)}),
                  parse_report_options("--top=1"));
  const auto r = rows(text);
  REQUIRE(r.size() == 2);
  CHECK(r[0].find("account  c  (new)") != std::string::npos);
  CHECK(r[1] == "(2 more entries beyond --top omitted)");
}

TEST_CASE("diff with --sort=count orders by the change of the count", "[control][diff]") {
  const std::string text = render_diff(
      diff_entries({account_entry("bytes", 0, 0, 0, 0), account_entry("blocks", 0, 0, 0, 0)},
                   {account_entry("bytes", 9000, 9000, 1, 0), account_entry("blocks", 10, 10, 50, 0)}),
      parse_report_options("--sort=count"));
  const auto r = rows(text);
  REQUIRE(r.size() == 2);
  CHECK(r[0].find("blocks") != std::string::npos);
}

TEST_CASE("diff with -H prints sizes human-readably with signs", "[control][diff]") {
  const std::string text = render_diff(diff_entries({account_entry("a", 1048576, 1048576, 1, 0)},
                                                    {account_entry("a", 524288, 1048576, 1, 0)}),
                                       parse_report_options("-H"));
  CHECK(text.find("-512K") != std::string::npos);
}

TEST_CASE("the JSON diff carries before, after and change of every figure", "[control][diff]") {
  const std::string text = render_diff(
      diff_entries({account_entry("a", 100, 150, 4, 2), account_entry("gone", 5, 5, 1, 0)},
                   {account_entry("a", 300, 350, 7, 2)}),
      parse_report_options("--json"), {"t0", 1.5});
  const auto j = nlohmann::json::parse(text);
  CHECK(j["schema"] == "arenastat-diff");
  CHECK(j["version"] == 1);
  CHECK(j["baseline"]["time"] == "t0");
  CHECK(j["changed"] == 1);
  CHECK(j["vanished"] == 1);
  REQUIRE(j["entries"].size() == 2);
  const auto& a = j["entries"][0];
  CHECK(a["name"] == "a");
  CHECK(a["status"] == "changed");
  CHECK(a["live"]["before"] == 100);
  CHECK(a["live"]["after"] == 300);
  CHECK(a["live"]["change"] == 200);
  CHECK(a["count"]["change"] == 3);   // allocations 4 -> 7
  CHECK(a["blocks"]["change"] == 3);  // live blocks 2 -> 5
  CHECK(j["entries"][1]["status"] == "vanished");
  CHECK(j["total"]["live"]["change"] == 195);
}

TEST_CASE("diff with --tree or --prometheus is refused by the API as by the command", "[control][diff]") {
  CHECK_THROWS_WITH(render_diff({}, parse_report_options("--tree")),
                    "--tree: the diff has no tree view (use text, --json or --html)");
  CHECK_THROWS_WITH(render_diff({}, parse_report_options("--prometheus")),
                    "--prometheus: the diff has no exposition (use 'metrics' for the current values)");
  CHECK(control::handle_request("diff --prometheus") ==
        "error --prometheus: the diff has no exposition (use 'metrics' for the current values)\n");
}

TEST_CASE("the JSON diff is compact, in the report's style, with keys in a fixed order", "[control][diff]") {
  const std::string text = render_diff(diff_entries({}, {scope_entry("s", 8, 2)}), parse_report_options("--json"),
                                       {"t0", 1.5});
  CHECK(text ==
        "{\"schema\":\"arenastat-diff\",\"version\":1,\"baseline\":{\"time\":\"t0\",\"age_s\":1.5},"
        "\"changed\":0,\"new\":1,\"vanished\":0,\"unchanged\":0,\"omitted\":0,"
        "\"total\":{\"live\":{\"before\":0,\"after\":0,\"change\":0},\"peak\":{\"before\":0,\"after\":8,\"change\":8},"
        "\"count\":{\"before\":0,\"after\":2,\"change\":2},\"blocks\":{\"before\":0,\"after\":0,\"change\":0}},"
        "\"entries\":[{\"name\":\"s\",\"kind\":\"scope\",\"status\":\"new\","
        "\"live\":{\"before\":0,\"after\":0,\"change\":0},\"peak\":{\"before\":0,\"after\":8,\"change\":8},"
        "\"count\":{\"before\":0,\"after\":2,\"change\":2},\"blocks\":{\"before\":0,\"after\":0,\"change\":0}}]}\n");
}

TEST_CASE("the JSON diff stays valid for a name that is not UTF-8", "[control][diff][names]") {
  // Strict nlohmann dump() threw on this name; the one writer replaces the bad byte.
  const std::string text =
      render_diff(diff_entries({}, {scope_entry("bad\xff\"name", 8, 1)}), parse_report_options("--json"));
  const auto j = nlohmann::json::parse(text);
  CHECK(j["entries"][0]["name"] == "bad\xef\xbf\xbd" "ff\"name");
}

TEST_CASE("the text diff escapes names", "[control][diff][names]") {
  const std::string text =
      render_diff(diff_entries({}, {scope_entry("a\nfake row\x1b[31m", 8, 1)}), parse_report_options(""));
  CHECK(text.find("scope    a\\x0afake row\\x1b[31m  (new)\n") != std::string::npos);
  CHECK(text.find("\x1b") == std::string::npos);
}

TEST_CASE("diff and report order --sort=count the same way", "[control][diff]") {
  // An account with many allocations all freed (count 100, blocks 0) and one
  // with few kept (count 5, blocks 5): count means allocations in both.
  const std::vector<entry> now{account_entry("churn", 0, 10, 100, 100), account_entry("kept", 50, 50, 5, 0)};
  const auto d = rows(render_diff(diff_entries({}, now), parse_report_options("--sort=count")));
  REQUIRE(d.size() == 2);
  CHECK(d[0].find("churn") != std::string::npos);
  const std::string report = arenastat::render_report(now, {}, parse_report_options("--sort=count"));
  CHECK(report.find("churn") < report.find("kept"));
}
