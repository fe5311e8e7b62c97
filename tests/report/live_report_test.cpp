// report() and read_process_info() on the real table and the real process.
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <arenastat/arenastat.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

const json* find_entry(const json& j, const std::string& name) {
  for (const auto& e : j.at("entries"))
    if (e.at("name") == name) return &e;
  return nullptr;
}

// Whether a libjemalloc shared object is loaded, found without mallctl.
[[maybe_unused]] bool jemalloc_library_loaded() {
  bool found = false;
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        if (info->dlpi_name && std::strstr(info->dlpi_name, "libjemalloc"))
          *static_cast<bool*>(data) = true;
        return 0;
      },
      &found);
  return found;
}

}  // namespace

TEST_CASE("report: a finished scope appears in the JSON report with its numbers", "[live]") {
  const auto t0 = std::chrono::steady_clock::now();
  {
    arenastat::scope s{"report-test/live"};
    s.set_counter("items", 7);
    arenastat::arena_resource arena("node");  // first chunk: 4096 bytes, header included
    (void)arena.allocate(100);
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const json j = json::parse(arenastat::report("--json"));
  CHECK(j.at("version") == 1);
  CHECK(j.at("pid") == ::getpid());
  const json* e = find_entry(j, "report-test/live");
  REQUIRE(e != nullptr);
  CHECK(e->at("kind") == "scope");
  CHECK(e->at("peak_bytes") == 4096);
  CHECK(e->at("at_peak") == json{{"node", 4096}});
  CHECK(e->at("count") == 1);
  CHECK(e->at("last_peak_bytes") == 4096);
  CHECK(e->at("counters") == json{{"items", 7}});
  CHECK(e->at("result") == "ok");
  // One run, inside the interval measured around it.
  CHECK(e->at("time_s").get<double>() > 0.0);
  CHECK(e->at("time_s").get<double>() <= elapsed);
}

TEST_CASE("report: an account appears in the text report with its totals", "[live]") {
  arenastat::tracking_resource res("report-test/account");
  void* a = res.allocate(64);
  void* b = res.allocate(32);
  res.deallocate(a, 64);
  const std::string text = arenastat::report("--sort=name");
  res.deallocate(b, 32);
  // peak 96, live 32, allocated 96, 2 allocations, 1 free.
  CHECK_THAT(text, Contains("report-test/account\n"));
  const auto at = text.find("report-test/account\n");
  const auto line_start = text.rfind('\n', at) + 1;
  std::istringstream words(text.substr(line_start, at - line_start));
  std::vector<std::string> f;
  for (std::string w; words >> w;) f.push_back(w);
  REQUIRE(f.size() >= 5);
  CHECK(f[0] == "96");
  CHECK(f[1] == "32");
  CHECK(f[2] == "96");
  CHECK(f[3] == "2");
  CHECK(f[4] == "1");
}

TEST_CASE("report: a bad option string throws before anything is read", "[live]") {
  CHECK_THROWS_WITH(arenastat::report("--top=0"), Contains("'--top=0'"));
  CHECK_THROWS_AS(arenastat::report("--nope"), std::invalid_argument);
}

TEST_CASE("read_process_info reads this process's status", "[live]") {
  const arenastat::process_info p = arenastat::read_process_info();
  CHECK(p.pid == ::getpid());
  CHECK(p.rss_bytes > 0);
  CHECK(p.rss_bytes % 1024 == 0);
  CHECK(p.hwm_bytes >= p.rss_bytes);
  CHECK(p.rss_anon_bytes > 0);
  CHECK(p.rss_anon_bytes <= p.rss_bytes);
}

TEST_CASE("read_process_info finds jemalloc only when it is the allocator", "[live]") {
  const arenastat::process_info p = arenastat::read_process_info();
#if defined(__SANITIZE_ADDRESS__)
  CHECK_FALSE(p.jemalloc);
#else
  CHECK(p.jemalloc == jemalloc_library_loaded());
#endif
  if (p.jemalloc) {
    CHECK(p.je_allocated > 0);
    CHECK(p.je_active >= p.je_allocated);
  } else {
    CHECK(p.je_allocated == 0);
    CHECK(p.je_mapped == 0);
  }
}
