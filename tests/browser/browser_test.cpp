// The HTML report in a real browser: Debian's headless Chromium opens pages
// written by the library and the tests read the DOM after the page's script ran
// (--dump-dom). Screenshots stay in <build>/tests/browser/artifacts/. Without
// chromium these tests FAIL (scripts/setup.sh installs it); they never pass
// silently. Label: browser.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "arenastat/diff.hpp"
#include "arenastat/html.hpp"
#include "arenastat/report.hpp"

namespace {

const std::string artifacts = ARENASTAT_BROWSER_ARTIFACTS;

std::string chromium() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/local/bin/chromium"})
    if (::access(p, X_OK) == 0) return p;
  return {};
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Output of a shell command (stderr dropped).
std::string run(const std::string& command) {
  std::string out;
  FILE* f = ::popen(("{ " + command + "; } 2>/dev/null").c_str(), "r");
  REQUIRE(f != nullptr);
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  ::pclose(f);
  return out;
}

std::string browser_command(const std::string& what) {
  const std::string exe = chromium();
  INFO("chromium is missing: install it with scripts/setup.sh (Debian package 'chromium')");
  REQUIRE(!exe.empty());
  ::mkdir(artifacts.c_str(), 0755);
  // A fresh profile per run: other chromium processes (parallel tests, other
  // users of the machine) would otherwise hold its lock and take the request.
  return "p=$(mktemp -d /tmp/arenastat-chromium-XXXXXX); timeout 120 " + exe +
         " --headless=new --no-sandbox --disable-gpu --no-first-run --user-data-dir=$p " + what +
         "; rm -rf $p";
}

// The DOM after the page's script ran. With a virtual-time budget, timers
// (the search box's debounce) run too; without, the dump comes after load.
std::string dump_dom(const std::string& page, const std::string& fragment, bool virtual_time = true) {
  return run(browser_command((virtual_time ? "--virtual-time-budget=5000 " : "") + std::string("--window-size=1280,900 --dump-dom 'file://") +
                             page + fragment + "'"));
}

void screenshot(const std::string& page, const std::string& fragment, const std::string& png) {
  ::unlink(png.c_str());
  run(browser_command("--window-size=1280,900 --screenshot=" + png + " 'file://" + page + fragment + "'"));
  const std::string bytes = read_file(png);
  INFO("screenshot " << png);
  REQUIRE(bytes.size() > 5000);
  CHECK(bytes.substr(1, 3) == "PNG");
}

// The opening tag of the first element carrying `attribute` ("" if none).
std::string tag_with(const std::string& dom, const std::string& attribute) {
  const auto at = dom.find(attribute);
  if (at == std::string::npos) return {};
  const auto begin = dom.rfind('<', at);
  const auto end = dom.find('>', at);
  return dom.substr(begin, end - begin + 1);
}

nlohmann::json page_data(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"arenastat-data\">";
  const auto b = page.find(open);
  REQUIRE(b != std::string::npos);
  const auto e = page.find("</script>", b);
  return nlohmann::json::parse(page.substr(b + open.size(), e - b - open.size())).at("report");
}

std::string attribute(const std::string& tag, const std::string& name) {
  const auto at = tag.find(" " + name + "=\"");
  if (at == std::string::npos) return {};
  const auto begin = at + name.size() + 3;
  return tag.substr(begin, tag.find('"', begin) - begin);
}

// A scope entry of one run that ended "ok", with peak `peak`.
arenastat::entry one_run(std::string name, std::uint64_t peak) {
  arenastat::entry e;
  e.name = std::move(name);
  e.peak_bytes = peak;
  e.count = 1;
  e.result = "ok";
  return e;
}

// Writes the HTML report of `entries` as artifacts/<file>; returns its path.
std::string html_page(const std::string& file, const std::vector<arenastat::entry>& entries) {
  ::mkdir(artifacts.c_str(), 0755);
  const std::string page = artifacts + "/" + file;
  write_file(page, arenastat::render_report(entries, arenastat::process_info{}, arenastat::parse_report_options("--html")));
  return page;
}

}  // namespace

TEST_CASE("page: chromium is installed", "[browser]") {
  INFO("chromium is missing: install it with scripts/setup.sh (Debian package 'chromium')");
  REQUIRE(!chromium().empty());
}

TEST_CASE("page: the demo's at-exit page draws its largest entries, exact peaks and search", "[browser]") {
  ::mkdir(artifacts.c_str(), 0755);
  const std::string page = artifacts + "/demo.html";
  ::unlink(page.c_str());
  const std::string cmd = "ARENASTAT_AT_EXIT=--html ARENASTAT_AT_EXIT_FILE=" + page + " " + ARENASTAT_TEST_DEMO +
                          " --methods=400 >/dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  const std::string html = read_file(page);
  const nlohmann::json data = page_data(html);
  REQUIRE(data.at("entries").size() == 49);  // 48 compiled method names and the symbol table

  const std::string known = "compile/java.util.HashMap/hashCode";  // the method that hits its limit
  std::uint64_t known_peak = 0;
  std::vector<std::pair<std::uint64_t, std::string>> by_peak;
  for (const auto& e : data.at("entries")) {
    const std::uint64_t peak = e.at("peak_bytes");
    if (e.at("name") == known) known_peak = peak;
    by_peak.emplace_back(peak, e.at("name"));
  }
  REQUIRE(known_peak > 0);
  std::sort(by_peak.rbegin(), by_peak.rend());

  const std::string dom = dump_dom(page, "#search=java.util.HashMap%2FhashCode");
  write_file(artifacts + "/demo.dom.html", dom);
  REQUIRE(dom.find("data-ready=\"1\"") != std::string::npos);

  // The largest entries are drawn: the five largest peaks, and the symbol table.
  for (std::size_t i = 0; i < 5; ++i) {
    INFO(by_peak[i].second);
    CHECK(!tag_with(dom, "data-path=\"" + by_peak[i].second + "\"").empty());
  }
  CHECK(!tag_with(dom, "data-path=\"symbol-table\"").empty());
  // The known entry's hover text carries its exact peak, its runs and its limit hit.
  const std::string box = tag_with(dom, "data-path=\"" + known + "\"");
  INFO(box);
  CHECK(box.find("peak: " + std::to_string(known_peak) + " B") != std::string::npos);
  CHECK(box.find("limit hits (oom): 1") != std::string::npos);
  CHECK(box.find("result (latest run): ") != std::string::npos);
  CHECK(box.find("class=\"cell match\"") != std::string::npos);
  // The search found it, and only it.
  CHECK(dom.find("1 entry matches") != std::string::npos);
  CHECK(dom.find("<li class=\"result\">" + known + "</li>") != std::string::npos);

  screenshot(page, "", artifacts + "/demo.png");
  screenshot(page, "#search=HashMap&color=tag", artifacts + "/demo-search.png");
}

TEST_CASE("page: a hostile name renders as text", "[browser]") {
  ::mkdir(artifacts.c_str(), 0755);
  const std::string hostile =
      "<script>document.body.setAttribute('data-pwned','script')</script>"
      "<img src=x onerror=\"document.body.setAttribute('data-pwned','img')\">";
  std::vector<arenastat::entry> entries(2);
  entries[0].name = hostile;
  entries[0].peak_bytes = 4096;
  entries[0].count = 1;
  entries[0].result = "ok";
  entries[1].name = "plain/entry";
  entries[1].peak_bytes = 1024;
  entries[1].count = 1;
  arenastat::process_info p;
  p.pid = 4242;
  const std::string page = artifacts + "/hostile.html";
  write_file(page, arenastat::render_report(entries, p, arenastat::parse_report_options("--html")));

  const std::string dom = dump_dom(page, "#search=%3Cscript%3E");
  write_file(artifacts + "/hostile.dom.html", dom);
  REQUIRE(dom.find("data-ready=\"1\"") != std::string::npos);
  const std::string body = tag_with(dom, "<body");
  INFO(body);
  CHECK(body.find("data-pwned") == std::string::npos);   // neither payload ran
  CHECK(dom.find("<img") == std::string::npos);          // no element was made from the name
  CHECK(dom.find("<script>document") == std::string::npos);
  // The name is text: escaped in the search result, whole.
  CHECK(dom.find("<li class=\"result\">&lt;script&gt;document.body.setAttribute('data-pwned','script')&lt;/script&gt;"
                 "&lt;img src=x onerror=\"document.body.setAttribute('data-pwned','img')\"&gt;</li>") !=
        std::string::npos);
  CHECK(dom.find("1 entry matches") != std::string::npos);
}

TEST_CASE("page: 10,000 entries render in under a second", "[browser]") {
  ::mkdir(artifacts.c_str(), 0755);
  std::vector<arenastat::entry> entries;
  for (int i = 0; i < 10000; ++i) {
    arenastat::entry e;
    e.name = "service" + std::to_string(i % 8) + "/module" + std::to_string(i % 97) + "/function" + std::to_string(i);
    e.kind = i % 10 == 0 ? arenastat::entry_kind::account : arenastat::entry_kind::scope;
    e.peak_bytes = 1000 + 400000000 / static_cast<std::uint64_t>(1 + (i * 7919) % 10000);  // Zipf-like: many boxes wide enough to draw
    e.at_peak = {{"node", static_cast<std::int64_t>(e.peak_bytes / 2)},
                 {"resource", static_cast<std::int64_t>(e.peak_bytes - e.peak_bytes / 2)}};
    e.count = 1 + static_cast<std::uint64_t>(i % 5);
    e.result = "ok";
    e.counters = {{"nodes", i}};
    e.live_bytes = static_cast<std::int64_t>(e.peak_bytes / 3);
    entries.push_back(std::move(e));
  }
  const std::string page = artifacts + "/entries-10000.html";
  write_file(page, arenastat::render_report(entries, arenastat::process_info{}, arenastat::parse_report_options("--html")));

  double best_total = 1e9, best_script = 0;
  std::string figures;
  for (int attempt = 0; attempt < 3; ++attempt) {  // the machine is shared: best of three
    const std::string dom = dump_dom(page, "", false);
    const std::string body = tag_with(dom, "<body");
    REQUIRE(body.find("data-ready=\"1\"") != std::string::npos);
    const double total = std::stod(attribute(body, "data-since-navigation-ms"));
    const double script = std::stod(attribute(body, "data-render-ms"));
    figures += "attempt " + std::to_string(attempt + 1) + ": since navigation " + attribute(body, "data-since-navigation-ms") +
               " ms, script " + attribute(body, "data-render-ms") + " ms, boxes " + attribute(body, "data-cells") + "\n";
    if (total < best_total) { best_total = total; best_script = script; }
    if (best_total < 1000) break;
  }
  write_file(artifacts + "/render-10000.txt", figures);
  WARN(figures);
  CHECK(best_total < 1000);
  screenshot(page, "", artifacts + "/entries-10000.png");
  (void)best_script;
}

TEST_CASE("page: a diff page draws growth and shrinkage in two colours", "[browser]") {
  ::mkdir(artifacts.c_str(), 0755);
  auto account = [](std::string name, std::int64_t live) {
    arenastat::entry e;
    e.name = std::move(name);
    e.kind = arenastat::entry_kind::account;
    e.live_bytes = live;
    e.peak_bytes = static_cast<std::uint64_t>(live);
    return e;
  };
  const std::vector<arenastat::entry> before{account("cache/grows", 1000), account("cache/shrinks", 9000),
                                             account("steady", 500)};
  const std::vector<arenastat::entry> after{account("cache/grows", 51000), account("cache/shrinks", 4000),
                                            account("steady", 500)};
  const std::string page = artifacts + "/diff.html";
  write_file(page, arenastat::render_diff(arenastat::diff_entries(before, after),
                                          arenastat::parse_report_options("--html"), {"2026-01-01 00:00:00 UTC", 2}));
  const std::string dom = dump_dom(page, "#size=live");
  write_file(artifacts + "/diff.dom.html", dom);
  REQUIRE(dom.find("data-ready=\"1\"") != std::string::npos);
  const std::string grows = tag_with(dom, "data-path=\"cache/grows\"");
  const std::string shrinks = tag_with(dom, "data-path=\"cache/shrinks\"");
  INFO(grows << "\n" << shrinks);
  CHECK(grows.find(" grew") != std::string::npos);
  CHECK(grows.find("live change: +50000 B") != std::string::npos);
  CHECK(shrinks.find(" shrank") != std::string::npos);
  CHECK(shrinks.find("live change: -5000 B") != std::string::npos);
  CHECK(tag_with(dom, "data-path=\"steady\"").empty());  // unchanged: counted, not drawn
  CHECK(dom.find("unchanged <b>1</b>") != std::string::npos);
  screenshot(page, "#size=live", artifacts + "/diff.png");
}

TEST_CASE("page: an overflow row is drawn as such", "[browser]") {
  ::mkdir(artifacts.c_str(), 0755);
  std::vector<arenastat::entry> entries(2);
  entries[0].name = "request/kept";
  entries[0].peak_bytes = 5000;
  entries[0].count = 1;
  entries[1].name = "(other)";  // what the table folds entries beyond its cap into
  entries[1].kind = arenastat::entry_kind::folded;
  entries[1].peak_bytes = 3000;
  entries[1].peak_sum_bytes = 9000;
  entries[1].folded_entries = 7;
  entries[1].count = 40;
  arenastat::table_status table;
  table.max = 1;
  table.folded_entries = 7;
  const std::string page = artifacts + "/overflow.html";
  write_file(page, arenastat::render_report(entries, arenastat::process_info{},
                                            arenastat::parse_report_options("--html"), table));
  const std::string dom = dump_dom(page, "");
  write_file(artifacts + "/overflow.dom.html", dom);
  REQUIRE(dom.find("data-ready=\"1\"") != std::string::npos);
  const std::string row = tag_with(dom, "data-path=\"(other)\"");
  INFO(row);
  CHECK(row.find(" overflow") != std::string::npos);
  CHECK(row.find("overflow: entries beyond the table cap") != std::string::npos);
  CHECK(row.find("entries folded: 7") != std::string::npos);
  CHECK(row.find("sum of peaks: 9000 B") != std::string::npos);
  CHECK(row.find("runs: 40") != std::string::npos);
  CHECK(dom.find("1 row(s) stand for 7 entries folded beyond the table cap of 1") != std::string::npos);
}

TEST_CASE("page: names nested 45 levels deep draw at most 3,000 boxes and 300 '+1' boxes below them", "[browser]") {
  // 300 chains n<i>/a/a/.../a of 45 levels, equal peaks: 300 x 45 = 13,500 boxes drawn one by one.
  std::vector<arenastat::entry> entries;
  for (int i = 0; i < 300; ++i) {
    std::string name = "n";  // by +=: GCC 12 warns (-Wstringop-overflow) about "literal" + std::to_string(i)
    name += std::to_string(i);
    for (int level = 1; level < 45; ++level) name += "/a";
    entries.push_back(one_run(std::move(name), 4096));
  }
  const std::string page = html_page("deep-names.html", entries);
  const std::string dom = dump_dom(page, "", false);
  const std::string body = tag_with(dom, "<body");
  REQUIRE(body.find("data-ready=\"1\"") != std::string::npos);
  const int cells = std::stoi(attribute(body, "data-cells"));
  // Breadth first: every box drawn one by one fits the budget (at most 3,000), and
  // each chain cut short ends in one '+1' box (at most one per chain: 300).
  CHECK(cells >= 3000 - 300);
  CHECK(cells <= 3000 + 300);
  CHECK(dom.find(">+1</div>") != std::string::npos);
  CHECK(dom.find("not drawn (the page draws 3000 boxes at most)") != std::string::npos);
}

TEST_CASE("page: tags named like JavaScript's object members are colours like any other", "[browser]") {
  std::vector<arenastat::entry> entries;
  const std::vector<std::string> tags{"__proto__", "cache", "constructor", "toString"};
  for (std::size_t i = 0; i < tags.size(); ++i) {
    entries.push_back(one_run("job/" + std::to_string(i), 1000 * (i + 1)));
    entries.back().at_peak = {{tags[i], static_cast<std::int64_t>(entries.back().peak_bytes)}};
  }
  const std::string page = html_page("member-tags.html", entries);
  const std::string dom = dump_dom(page, "#color=tag", false);
  REQUIRE(dom.find("data-ready=\"1\"") != std::string::npos);
  // The legend has the four tags in name order, each with its own hue (the palette's first four).
  const std::vector<std::string> hues{"212", "28", "130", "0"};
  std::size_t at = dom.find("id=\"legend\"");
  REQUIRE(at != std::string::npos);
  for (std::size_t i = 0; i < tags.size(); ++i) {
    INFO(tags[i]);
    CHECK(dom.find("<span style=\"--c: hsl(" + hues[i] + ",60%,58%);\">" + tags[i] + "</span>", at) != std::string::npos);
  }
  // No entry's box is the grey of "no tag" (hsl(0,0%,80%), rgb(204, 204, 204)).
  for (std::size_t i = 0; i < tags.size(); ++i) {
    const std::string box = tag_with(dom, "data-path=\"job/" + std::to_string(i) + "\"");
    INFO(box);
    REQUIRE(!box.empty());
    CHECK(box.find("rgb(204, 204, 204)") == std::string::npos);
  }
}

namespace {

// The title (the browser's tooltip: the box's figures) of the first box
// whose tag holds `text`, with the DOM's character references undone.
std::string title_with(const std::string& dom, const std::string& text) {
  std::string t = attribute(tag_with(dom, text), "title");
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"&quot;", "\""}, {"&lt;", "<"}, {"&gt;", ">"},
                                 {"&amp;", "&"}})
    for (std::size_t at = 0; (at = t.find(from, at)) != std::string::npos; at += to.size()) t.replace(at, from.size(), to);
  return t;
}
std::string title_of_box(const std::string& dom, const std::string& path) {
  return title_with(dom, "data-path=\"" + path + "\"");
}

// Pixels of the `width:` in a box's style attribute.
double box_width(const std::string& dom, const std::string& attribute_text) {
  const std::string tag = tag_with(dom, attribute_text);
  const auto at = tag.find("width: ");
  REQUIRE(at != std::string::npos);
  return std::stod(tag.substr(at + 7));
}

}  // namespace

TEST_CASE("page: one name 45 levels deep ends in a '+1' box below level 40, and zooming in draws it", "[browser]") {
  std::string name = "deep";
  for (int level = 1; level < 45; ++level) name += "/l" + std::to_string(level);
  const std::string page = html_page("one-deep-name.html", {one_run(name, 4096)});
  const std::string dom = dump_dom(page, "", false);
  REQUIRE(dom.find("data-ready=\"1\"") != std::string::npos);
  // all, scopes, deep, l1 .. l38 (levels 0 to 40), then one '+1' box for l39 and below.
  CHECK(attribute(tag_with(dom, "<body"), "data-cells") == "42");
  CHECK(dom.find(">+1</div>") != std::string::npos);
  CHECK(dom.find("1 names below, not drawn (the page draws 40 levels at most), together: 4096 B") != std::string::npos);
  CHECK(tag_with(dom, "data-path=\"" + name + "\"").empty());
  // Zoomed into the last box drawn, the rest of the chain is drawn down to the entry.
  std::string l38 = "deep";
  for (int level = 1; level <= 38; ++level) l38 += "/l" + std::to_string(level);
  const std::string zoomed = dump_dom(page, "#zoom=" + l38, false);
  REQUIRE(zoomed.find("data-ready=\"1\"") != std::string::npos);
  CHECK(zoomed.find(">+1</div>") == std::string::npos);
  CHECK(title_of_box(zoomed, name).find("\npeak: 4096 B") != std::string::npos);
}

TEST_CASE("page: entries whose names differ only in empty parts each show their figures on their one box",
          "[browser]") {
  const std::vector<std::pair<std::string, std::uint64_t>> names{
      {"dup/x/", 30064}, {"/dup/x", 20064}, {"dup//x", 5064}, {"dup/x", 4096}};
  std::vector<arenastat::entry> entries;
  for (const auto& [n, peak] : names) entries.push_back(one_run(n, peak));
  const std::string page = html_page("same-path.html", entries);
  const std::string dom = dump_dom(page, "#show=dup//x", false);
  REQUIRE(dom.find("data-ready=\"1\"") != std::string::npos);
  const std::string title = title_of_box(dom, "dup/x/");  // the box's path is its first entry's name
  INFO(title);
  // One box for the four, with the figures of each and their sum (30064 + 20064 + 5064 + 4096).
  CHECK(title.rfind("dup/x (4 entries)\n", 0) == 0);
  for (std::size_t k = 0; k < names.size(); ++k)
    CHECK(title.find("entry " + std::to_string(k + 1) + " of 4: " + names[k].first + "\nkind: scope\npeak: " +
                     std::to_string(names[k].second) + " B") != std::string::npos);
  CHECK(title.find("the 4 entries together: peak bytes: 59288 B") != std::string::npos);
  // #show with any of the four names pins that box's figures.
  CHECK(dom.find("<h2>dup/x (4 entries)</h2>") != std::string::npos);
  CHECK(dom.find("<td>entry 3 of 4</td><td>dup//x</td>") != std::string::npos);
}

TEST_CASE("page: an overflow row is as wide as the sum of the peaks it stands for", "[browser]") {
  ::mkdir(artifacts.c_str(), 0755);
  std::vector<arenastat::entry> entries{one_run("request/kept", 5000)};
  arenastat::entry row;
  row.name = "request/";
  row.kind = arenastat::entry_kind::folded;
  row.peak_bytes = 3000;      // the largest of the folded peaks
  row.peak_sum_bytes = 9000;  // all of them
  row.folded_entries = 7;
  row.count = 7;
  entries.push_back(row);
  arenastat::table_status table;
  table.max = 1;
  table.folded_entries = 7;
  const std::string page = artifacts + "/overflow-width.html";
  write_file(page, arenastat::render_report(entries, arenastat::process_info{},
                                            arenastat::parse_report_options("--html"), table));
  const std::string dom = dump_dom(page, "", false);
  REQUIRE(dom.find("data-ready=\"1\"") != std::string::npos);
  // Under "all": the scopes (5000) and the overflow branch (9000), side by side.
  const double scopes = box_width(dom, ">scopes</div>");
  const double overflow = box_width(dom, ">overflow</div>");
  CHECK(overflow / scopes == Approx(9000.0 / 5000.0).epsilon(0.01));
  const std::string title = attribute(tag_with(dom, ">overflow</div>"), "title");
  INFO(title);
  CHECK(title.find("entries: 0\noverflow rows: 1, standing for 7 folded entries\nsum of peak bytes: 9000 B") !=
        std::string::npos);
  const std::string root_title = attribute(tag_with(dom, ">all</div>"), "title");
  INFO(root_title);
  CHECK(root_title.find("entries: 1\noverflow rows: 1, standing for 7 folded entries\nsum of peak bytes: 14000 B") !=
        std::string::npos);
}

TEST_CASE("page: counters beyond 2^53 show every digit", "[browser]") {
  arenastat::entry e = one_run("job/counted", 4096);
  e.counters = {{"max", INT64_MAX, INT64_MAX, true},
                {"min", INT64_MIN, INT64_MIN, true},
                {"p53", (std::int64_t{1} << 53) + 1, (std::int64_t{1} << 53) + 3, true},
                {"small", 42, 42, true}};
  const std::string page = html_page("big-counters.html", {e});
  const std::string dom = dump_dom(page, "", false);
  REQUIRE(dom.find("data-ready=\"1\"") != std::string::npos);
  const std::string title = title_of_box(dom, "job/counted");
  INFO(title);
  CHECK(title.find("\ncounter max: 9223372036854775807\n") != std::string::npos);
  CHECK(title.find("\ncounter min: -9223372036854775808\n") != std::string::npos);
  CHECK(title.find("\ncounter p53: 9007199254740993 (last 9007199254740995)\n") != std::string::npos);
  CHECK(title.find("\ncounter small: 42\n") != std::string::npos);
}

TEST_CASE("page: controls and bidirectional marks in names show as the text reports write them", "[browser]") {
  const std::string forging = "ctl/a\nfake\rrow\xe2\x80\xae" "cba\\end";  // U+202E: right-to-left override
  const std::string page = html_page("control-names.html", {one_run(forging, 4096)});
  const std::string dom = dump_dom(page, "#search=fake", true);
  REQUIRE(dom.find("data-ready=\"1\"") != std::string::npos);
  const std::string shown = "ctl/a\\x0afake\\x0drow\\xe2\\x80\\xaecba\\\\end";
  const std::string label = ">a\\x0afake\\x0drow\\xe2\\x80\\xaecba\\\\end</div>";  // the box's text
  const std::string title = title_with(dom, label);
  INFO(title);
  CHECK(title.rfind(shown + "\nkind: scope\npeak: 4096 B", 0) == 0);  // no line of the name's own
  CHECK(dom.find("<li class=\"result\">" + shown + "</li>") != std::string::npos);
  // The search finds a name by what the page shows too.
  const std::string by_shown = dump_dom(page, "#search=%5Cx0afake", true);
  CHECK(by_shown.find("1 entry matches") != std::string::npos);
}

TEST_CASE("page: DEL, C1 controls, isolates, bytes outside UTF-8 and U+FFFD show as the text reports write them",
          "[browser]") {
  // DEL, U+0085 (C1), U+2066 (an isolate), the byte 0xff, then a literal U+FFFD,
  // which the text reports print as it is (it is well-formed UTF-8), then
  // U+200B, U+061C, U+FEFF, U+00AD and U+E0041 (print as nothing; the last a
  // surrogate pair in JavaScript) and U+200D (kept).
  const std::string name =
      "more/\x7f\xc2\x85\xe2\x81\xa6\xff\xef\xbf\xbd\xe2\x80\x8b\xd8\x9c\xef\xbb\xbf\xc2\xad\xf3\xa0\x81\x81\xe2\x80\x8d";
  const std::string page = html_page("more-control-names.html", {one_run(name, 4096)});
  const std::string dom = dump_dom(page, "", false);
  REQUIRE(dom.find("data-ready=\"1\"") != std::string::npos);
  CHECK(dom.find(">\\x7f\\xc2\\x85\\xe2\\x81\\xa6\\xff\xef\xbf\xbd\\xe2\\x80\\x8b\\xd8\\x9c\\xef\\xbb\\xbf"
                 "\\xc2\\xad\\xf3\\xa0\\x81\\x81\xe2\x80\x8d</div>") != std::string::npos);
}
