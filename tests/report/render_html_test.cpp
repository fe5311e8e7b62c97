// render_report --html and render_diff --html: the page's data block parsed back
// with nlohmann; names escaped so that no name can end the script element.
// The page in a real browser: tests/browser/.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "arenastat/diff.hpp"
#include "arenastat/html.hpp"
#include "sample_entries.hpp"

using namespace report_test;
using nlohmann::json;

namespace {

constexpr std::string_view open_tag = "<script type=\"application/json\" id=\"arenastat-data\">";

// The JSON text between the data element's tags.
std::string data_text(const std::string& page) {
  const auto at = page.find(open_tag);
  REQUIRE(at != std::string::npos);
  const auto begin = at + open_tag.size();
  const auto end = page.find("</script>", begin);
  REQUIRE(end != std::string::npos);
  return page.substr(begin, end - begin);
}

}  // namespace

TEST_CASE("html: --html is an output format that excludes --json and --tree", "[html]") {
  CHECK(arenastat::parse_report_options("--html").format == arenastat::report_format::html);
  CHECK_THROWS_WITH(arenastat::parse_report_options("--html --json"),
                    "arenastat: bad option '--html' with '--json': choose one output format");
  CHECK_THROWS_WITH(arenastat::parse_report_options("--tree --html"),
                    "arenastat: bad option '--tree' with '--html': choose one output format");
}

TEST_CASE("html: one self-contained page whose data block holds every entry", "[html]") {
  const std::string page = render("--html");
  CHECK(page.starts_with("<!DOCTYPE html>"));
  CHECK(page.find("http://") == std::string::npos);
  CHECK(page.find("https://") == std::string::npos);
  CHECK(page.find("<script src") == std::string::npos);
  CHECK(page.find("<link") == std::string::npos);
  const json page_data = json::parse(data_text(page));
  CHECK(page_data.at("mode") == "report");
  CHECK(page_data.at("pid") == 4242);
  CHECK(page_data.at("process").at("rss_bytes") == 1048576);
  // The report inside is the --json report, byte for byte.
  CHECK(page_data.at("report") == json::parse(render("--json")));
  const json& j = page_data.at("report");
  REQUIRE(j.at("entries").size() == 5);
  const json& bar = j.at("entries").at(1);
  CHECK(bar.at("name") == "compile/Foo::bar");
  CHECK(bar.at("peak_bytes") == 3000);
  CHECK(bar.at("at_peak") == json{{"node", 1000}, {"resource", 2000}});
  CHECK(bar.at("counters") == json{{"nodes", 42}});
  CHECK(bar.at("count") == 2);
  CHECK(j.at("entries").at(0).at("live_bytes") == 2048);  // cache/lru, the largest peak
}

TEST_CASE("html: -s and --top choose the entries as for the text report", "[html]") {
  const json j = json::parse(data_text(render("--html -s=1000 --top=2"))).at("report");
  REQUIRE(j.at("entries").size() == 2);
  CHECK(j.at("omitted_smaller") == 2);
  CHECK(j.at("omitted_beyond_top") == 1);
  std::vector<std::string> names;
  for (const auto& e : j.at("entries")) names.push_back(e.at("name"));
  CHECK(names == std::vector<std::string>{"cache/lru", "compile/Foo::bar"});
}

TEST_CASE("html: a hostile name cannot close the data element", "[html]") {
  auto entries = sample();
  const std::string hostile = "x</script><script>alert(1)</script>&amp;\xE2\x80\xA8<!--";
  entries.push_back(make_account(hostile, 10, 10, 10, 1, 0, {}));
  const std::string page = arenastat::render_report(entries, sample_process(),
                                                    arenastat::parse_report_options("--html"));
  CHECK(page.find("alert(1)</script>") == std::string::npos);
  CHECK(page.find("<!--") == std::string::npos);
  CHECK(page.find("\xE2\x80\xA8") == std::string::npos);
  const std::string text = data_text(page);
  CHECK(text.find('<') == std::string::npos);
  CHECK(text.find('>') == std::string::npos);
  CHECK(text.find('&') == std::string::npos);
  const json j = json::parse(text).at("report");
  CHECK(j.at("entries").back().at("name") == hostile);
}

TEST_CASE("html: json_for_script escapes exactly <, >, &, U+2028, U+2029", "[html]") {
  CHECK(arenastat::json_for_script(R"({"a":"<b>&c"})") == R"({"a":"\u003cb\u003e\u0026c"})");
  CHECK(arenastat::json_for_script("\"\xE2\x80\xA8\xE2\x80\xA9\xE2\x80\xA7\"") ==
        "\"\\u2028\\u2029\xE2\x80\xA7\"");
}

TEST_CASE("html: a diff page carries before, after and change of each changed entry", "[html]") {
  auto before = sample();
  auto after = sample();
  after[4].live_bytes = 4000;    // cache/lru grows
  after[3].peak_bytes = 50;      // cache/index shrinks
  after.erase(after.begin());    // compile/Baz::qux vanishes
  const auto d = arenastat::diff_entries(before, after);
  const std::string page =
      arenastat::render_diff(d, arenastat::parse_report_options("--html"), {"2026-01-01 00:00:00 UTC", 1.5});
  const json page_data = json::parse(data_text(page));
  CHECK(page_data.at("mode") == "diff");
  const json& j = page_data.at("report");
  CHECK(j.at("changed") == 2);
  CHECK(j.at("vanished") == 1);
  CHECK(j.at("unchanged") == 2);
  CHECK(j.at("baseline").at("time") == "2026-01-01 00:00:00 UTC");
  bool saw_lru = false;
  for (const auto& e : j.at("entries")) {
    if (e.at("name") != "cache/lru") continue;
    saw_lru = true;
    CHECK(e.at("live") == json{{"before", 2048}, {"after", 4000}, {"change", 1952}});
  }
  CHECK(saw_lru);
}
