// `arenastat <pid> top` when stdout is not a terminal: plain snapshots (like
// top -b), exact rows; and `arenastat <pid> html`. The terminal view: tests/tmux.
#include <catch2/catch.hpp>

#include "harness.hpp"

using namespace control_test;

namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> v;
  std::size_t at = 0;
  while (at < s.size()) {
    const std::size_t nl = s.find('\n', at);
    v.push_back(s.substr(at, nl - at));
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return v;
}

}  // namespace

TEST_CASE("top --batch: exact rows by live, then by peak, growth per second", "[cli][top]") {
  temp_dir dir;
  target app(dir.path());
  const env_map env{{"ARENASTAT_SOCKET_DIR", dir.path()}};

  const cli_result live = run_cli({app.pid_text(), "top", "--batch", "-n", "1"}, env);
  REQUIRE(live.status == 0);
  const auto l = lines_of(live.out);
  REQUIRE(l.size() >= 6);
  CHECK(l[0].starts_with("arenastat top: pid " + app.pid_text() + " control_target  "));
  CHECK(l[0].ends_with("  sort live"));
  CHECK(l[1].starts_with("VmRSS "));
  CHECK(l[1].ends_with("  entries 3"));
  CHECK(l[2] == "     LIVE      PEAK   GROWTH/s   RUNS L KIND    NAME");
  CHECK(l[3] == "    10000     10000          -      -   account cache/items");
  CHECK(l[4] == "        0      3000          -      -   account scratch");
  CHECK(l[5] == "        -      3000          -      1   scope   task/parse");

  // Not a terminal: batch without --batch; --sort=peak and --top.
  const cli_result peak = run_cli({app.pid_text(), "top", "--sort=peak", "--top=2", "-n", "1", "-H"}, env);
  REQUIRE(peak.status == 0);
  const auto p = lines_of(peak.out);
  REQUIRE(p.size() >= 6);
  CHECK(p[0].ends_with("  sort peak"));
  CHECK(p[3] == "     9.8K      9.8K          -      -   account cache/items");
  CHECK(p[4] == "       0B      2.9K          -      -   account scratch");
  CHECK(p[5].empty());  // two rows, then the blank line between snapshots

  // Two snapshots 1 s apart while the account grows by 5000 bytes: growth per second.
  spawned cli = spawn(cli_path, {app.pid_text(), "top", "-n", "2", "-d", "1", "--top=1"}, env);
  const std::string first = read_line(cli.out);
  CHECK(first.starts_with("arenastat top: pid"));
  for (int i = 0; i < 4; ++i) read_line(cli.out);  // process, header, row, blank
  REQUIRE(app.command("grow 5") == "done");
  const std::string rest = read_all(cli.out);
  CHECK(wait_exit(cli.pid) == 0);
  ::close(cli.in);
  ::close(cli.out);
  ::close(cli.err);
  const auto r = lines_of(rest);
  REQUIRE(r.size() >= 4);
  INFO(rest);
  CHECK(r[3].starts_with("    15000     15000 "));
  const std::string growth = r[3].substr(20, 10);  // about +5000 per second
  CHECK(growth.find_first_not_of(' ') == growth.find('+'));
  CHECK(r[3].ends_with(" -   account cache/items"));
  const cli_result bad = run_cli({app.pid_text(), "top", "--sort=sideways"}, env);
  CHECK(bad.status == 2);
  CHECK(bad.err.find("top: bad option '--sort=sideways': expected --sort=live, --sort=peak or --sort=growth") !=
        std::string::npos);
}

TEST_CASE("top --batch: the process line says how many overflow rows stand for folded entries", "[cli][top]") {
  temp_dir dir;
  // A cap of 8 scope entries: past it, the cheapest are folded until 7 remain.
  target app(dir.path(), {{"ARENASTAT_TABLE_MAX", "8"}});
  const env_map env{{"ARENASTAT_SOCKET_DIR", dir.path()}};
  // task/parse (peak 3000) and job/1..job/7 (peak 100 each) fill the table;
  // job/8 makes 9: the two cheapest, job/1 and job/2 (equal peaks and runs:
  // name order), are folded into the row "job/".
  for (int k = 1; k <= 8; ++k) REQUIRE(app.command("scope job/" + std::to_string(k) + " 100") == "done");
  const cli_result r = run_cli({app.pid_text(), "top", "--batch", "-n", "1"}, env);
  REQUIRE(r.status == 0);
  const auto l = lines_of(r.out);
  REQUIRE(l.size() >= 2);
  // 7 scope entries and 2 accounts (cache/items, scratch).
  CHECK(l[1].ends_with("  entries 9  overflow rows 1 (2 entries folded)"));
}

TEST_CASE("top: names are escaped as the reports escape them, in batch output", "[cli][top]") {
  temp_dir dir;
  target app(dir.path());
  const env_map env{{"ARENASTAT_SOCKET_DIR", dir.path()}};
  REQUIRE(app.command("hostile-scope") == "done");
  const cli_result out = run_cli({app.pid_text(), "top", "--batch", "-n", "1", "--sort=peak"}, env);
  REQUIRE(out.status == 0);
  const auto l = lines_of(out.out);
  REQUIRE(l.size() >= 8);  // title, process, header, 4 rows, blank: no row split in two
  CHECK(l[4] == "        -      5000          -      1   scope   evil\\x0arow\\x1b[2J\\xc2\\x85");
  CHECK(l[7].empty());
  CHECK(out.out.find('\x1b') == std::string::npos);
}

TEST_CASE("top: a name outside UTF-8 or holding U+FFFD reads as stats shows it", "[cli][top]") {
  temp_dir dir;
  target app(dir.path());
  const env_map env{{"ARENASTAT_SOCKET_DIR", dir.path()}};
  REQUIRE(app.command("scope bad\xff 6000") == "done");
  REQUIRE(app.command("scope real\xef\xbf\xbd 7000") == "done");
  const cli_result top = run_cli({app.pid_text(), "top", "--batch", "-n", "1", "--sort=peak"}, env);
  REQUIRE(top.status == 0);
  const auto l = lines_of(top.out);
  // The rows of the two scopes, whatever ties with the accounts' peaks do to the order.
  const auto row_ending = [&](const std::string& shown) {
    const auto it = std::find_if(l.begin(), l.end(), [&](const std::string& x) { return x.ends_with("scope   " + shown); });
    return it == l.end() ? std::string() : *it;
  };
  CHECK(row_ending("real\xef\xbf\xbd") == "        -      7000          -      1   scope   real\xef\xbf\xbd");  // U+FFFD once
  CHECK(row_ending("bad\\xff") == "        -      6000          -      1   scope   bad\\xff");
  CHECK(top.out.find("\xef\xbf\xbd\xef\xbf\xbd") == std::string::npos);  // not doubled
  CHECK(top.out.find("bad\xef\xbf\xbd") == std::string::npos);         // not the JSON's marking
  const cli_result stats = run_cli({app.pid_text(), "stats"}, env);
  REQUIRE(stats.status == 0);
  CHECK(stats.out.find("bad\\xff") != std::string::npos);
  CHECK(stats.out.find("real\xef\xbf\xbd\n") != std::string::npos);
}

TEST_CASE("html: the CLI writes the target's --html page to -o FILE or stdout", "[cli][html]") {
  temp_dir dir;
  target app(dir.path());
  const env_map env{{"ARENASTAT_SOCKET_DIR", dir.path()}};
  const std::string file = dir.file("report.html");
  const cli_result to_file = run_cli({app.pid_text(), "html", "-o", file, "-s=1k"}, env);
  REQUIRE(to_file.status == 0);
  CHECK(to_file.out == file + "\n");
  const cli_result to_stdout = run_cli({app.pid_text(), "html"}, env);
  REQUIRE(to_stdout.status == 0);
  CHECK(to_stdout.out.starts_with("<!DOCTYPE html>"));
  CHECK(to_stdout.out.find("\"name\":\"cache/items\"") != std::string::npos);
  // Another format is refused in the user's words, before asking the target.
  for (const char* format : {"--json", "--tree", "--prometheus"}) {
    INFO(format);
    const cli_result both = run_cli({app.pid_text(), "html", format}, env);
    CHECK(both.status == 2);
    CHECK(both.err.find("html: '" + std::string(format) + "' chooses another output format; html writes the page") !=
          std::string::npos);
  }
  CHECK(run_cli({app.pid_text(), "html", "--html"}, env).status == 0);  // the format it adds, said again
  // diff --html: growth since the baseline.
  REQUIRE(run_cli({app.pid_text(), "baseline"}, env).status == 0);
  REQUIRE(app.command("grow 3") == "done");
  const cli_result d = run_cli({app.pid_text(), "diff", "--html"}, env);
  REQUIRE(d.status == 0);
  CHECK(d.out.find("\"mode\":\"diff\"") != std::string::npos);
  CHECK(d.out.find("\"live\":{\"before\":10000,\"after\":13000,\"change\":3000}") != std::string::npos);
}

TEST_CASE("top names what is wrong with a JSON answer that is not a report (exit 3)", "[cli][top]") {
  temp_dir dir;
  const env_map env{{"ARENASTAT_SOCKET_DIR", dir.path()}};
  const std::string prefix = "arenastat: top: the target's stats --json answer is not a report: ";
  const std::string process = R"("process":{"rss_bytes":1})";
  const std::vector<std::pair<std::string, std::string>> cases{
      {"{}", "no 'process'"},
      {"[]", "expected an object holding 'pid'"},
      {"{" + process + "}", "no 'entries'"},
      {"{" + process + R"(,"entries":{}})", "'entries' is not an array"},
      {R"({"process":{"rss_bytes":-1},"entries":[]})", "'rss_bytes' is not a whole number of at least 0"},
      {"{" + process + R"(,"entries":[{"name":1,"kind":"scope"}]})", "an entry's 'name' is not a string"},
      {"{" + process + R"(,"entries":[{"name":"a","kind":"cache"}]})",
       "an entry's 'kind' is neither \"scope\" nor \"account\""},
      {"{" + process + R"(,"entries":[{"name":"a","kind":"scope","count":-1}]})",
       "'count' is not a whole number of at least 0"},
      {"{" + process + R"(,"entries":[{"name":"a","kind":"account","live_bytes":0.5}]})",
       "an account's 'live_bytes' is not a whole number"},
  };
  for (const auto& [answer, why] : cases) {
    const fake_server s({dir.file("%p.sock"), "--answer=ok\\n" + answer});
    const cli_result r = run_cli({s.pid(), "top", "--batch", "-n", "1"}, env);
    CHECK(r.status == 3);
    CHECK(r.out.empty());
    CHECK(r.err == prefix + why + "\n");
  }
}

TEST_CASE("top refuses a stats --json answer nested too deep or with too many values (exit 3)", "[cli][top]") {
  temp_dir dir;
  const env_map env{{"ARENASTAT_SOCKET_DIR", dir.path()}};
  {
    const fake_server deep({dir.file("%p.sock"), "--answer=ok\\n" + std::string(100'000, '[')});
    const cli_result r = run_cli({deep.pid(), "top", "--batch", "-n", "1"}, env);
    CHECK(r.status == 3);
    CHECK(r.out.empty());
    CHECK(r.err == "arenastat: top: refusing the target's stats --json answer for 20 entries: it nests arrays and "
                   "objects deeper than 8 levels\n");
  }
  std::string flat = "--answer=ok\\n[";
  for (int i = 0; i < 50'000; ++i) flat += "0,";
  flat += "0]";
  const fake_server wide({dir.file("%p.sock"), flat});
  const cli_result r = run_cli({wide.pid(), "top", "--batch", "-n", "1", "--top=5"}, env);
  CHECK(r.status == 3);
  CHECK(r.err == "arenastat: top: refusing the target's stats --json answer for 5 entries: it holds more than 5376 "
                 "values\n");
}
