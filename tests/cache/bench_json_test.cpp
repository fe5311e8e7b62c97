// Runs `bench_cache --quick --json` and checks every field of its output.
#include <catch2/catch.hpp>

#ifdef ARENASTAT_BENCH_CACHE
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>
#include <algorithm>

namespace {

struct run_output {
  std::string out;
  int status = -1;
};

run_output run(const std::string& args) {
  run_output r;
  // Appended piece by piece: GCC 12's -Warray-bounds misreads the
  // concatenation of the path literal's temporary with the rest.
  std::string cmd = ARENASTAT_BENCH_CACHE;
  cmd += ' ';
  cmd += args;
  cmd += " 2>/dev/null";
  std::FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// Nine pairs of positive throughputs, and the median of the nine ratios
// num / den (computed here) as the row's median_ratio.
void check_nine_pairs(const nlohmann::json& num_json, const nlohmann::json& den_json, const nlohmann::json& median) {
  const auto num = num_json.get<std::vector<double>>();
  const auto den = den_json.get<std::vector<double>>();
  REQUIRE(num.size() == 9);
  REQUIRE(den.size() == 9);
  std::vector<double> ratios;
  for (std::size_t p = 0; p < 9; ++p) {
    CHECK(num[p] > 0);
    CHECK(den[p] > 0);
    ratios.push_back(num[p] / den[p]);
  }
  std::sort(ratios.begin(), ratios.end());
  // The figures are printed with 6 significant digits (%.6g): each ratio and
  // the median may be off by a few parts in 1e6.
  CHECK(median.get<double>() == Approx(ratios[4]).epsilon(1e-4));
}

}  // namespace

TEST_CASE("bench_cache --quick --json: every field of every row", "[cache][bench]") {
  const run_output r = run("--quick --json");
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j.at("version") == 1);
  const auto& cfg = j.at("config");
  CHECK(cfg.at("capacity") == 20000);
  CHECK(cfg.at("factor") == 10);
  CHECK(cfg.at("key_space") == 200000);
  CHECK(cfg.at("theta").get<double>() == Approx(0.99));
  CHECK(cfg.at("threads") == 2);
  CHECK(cfg.at("ops") == 400000);
  CHECK(cfg.at("fill_ops") == 60000);
  CHECK(cfg.at("fill_seed") == 1802);
  CHECK(cfg.at("warmup_ops") == 100000);  // --quick: 5 x capacity
  CHECK(cfg.at("penalty_ns") == 1000);
  CHECK(cfg.at("budget_bytes") == 0);
  CHECK(cfg.at("quick") == true);
  CHECK(cfg.at("pairs") == 9);

  const auto& rows = j.at("results");
  // 5 contenders x threads 1..2, then the 5 contenders with the penalty.
  REQUIRE(rows.size() == 15);
  std::set<std::pair<std::string, unsigned>> seen;
  const std::set<std::string> names{"std_lru", "lru", "tinylfu", "lru_sharded", "tinylfu_sharded"};
  for (const auto& row : rows) {
    CAPTURE(row.dump());
    const std::string cache = row.at("cache");
    CHECK(names.count(cache) == 1);
    const std::string policy = row.at("policy");
    CHECK(policy == (cache.rfind("tinylfu", 0) == 0 ? "tinylfu" : "lru"));
    const unsigned threads = row.at("threads");
    CHECK((threads == 1 || threads == 2));
    const unsigned penalty = row.at("penalty_ns");
    if (penalty == 0) seen.insert({cache, threads});
    CHECK(row.at("capacity") == 20000);
    CHECK(row.at("ops_per_s").get<double>() > 0);
    const double hit = row.at("hit_rate");
    CHECK(hit > 0.6);
    CHECK(hit < 0.9);
    const std::uint64_t peak = row.at("peak_bytes");
    const double bpe = row.at("bytes_per_entry");
    CHECK(peak >= static_cast<std::uint64_t>(bpe * 20000 * 0.99));
    // Ours at 20,000 entries: 24 bytes of entry, 5.33 of table slots, for
    // tinylfu 5.33 of sketch and 5.70 of window tuner (four ghosts of 20,000
    // / 16 = 1250 entries, 28,480 bytes each): 40.37; a sharded cache adds
    // its shard array (0.38). std_lru: a list node and a map node per entry
    // (72 with glibc's malloc).
    if (cache == "std_lru") {
      CHECK(bpe > 60);
      CHECK(row.at("alloc_bytes_per_op").get<double>() > 0);
      CHECK(row.at("heap_allocs_per_op").get<double>() > 0);  // a list node and a map node per miss
    } else {
      CHECK(bpe <= 41);
      CHECK(row.at("alloc_bytes_per_op").get<double>() == 0);  // nothing allocated once full
      // Nor from the global heap behind the account's back: not a read-through
      // miss of a sharded cache either (its single-flight record). With two
      // threads a load may get a waiter (both missed the same key at once),
      // whose condition variable allocates: seen 1 in 400,000 operations.
      if (threads == 1) CHECK(row.at("heap_allocs_per_op").get<double>() == 0);
      else CHECK(row.at("heap_allocs_per_op").get<double>() < 0.001);
    }
    CHECK(row.at("vm_hwm_bytes").get<std::uint64_t>() > peak);
    const auto& lat = row.at("latency_ns");
    const std::uint64_t p50 = lat.at("p50"), p99 = lat.at("p99"), p999 = lat.at("p999"), mx = lat.at("max");
    CHECK(p50 > 0);
    CHECK(p50 <= p99);
    CHECK(p99 <= p999);
    CHECK(p999 <= mx);
    CHECK(row.size() == 13);
  }
  CHECK(seen.size() == 10);

  // Each sharded cache's alternating pairs: 9 segments of 400,000 / 9
  // operations at each thread count, and the median of the 9 ratios.
  const auto& scaling = j.at("scaling");
  REQUIRE(scaling.size() == 2);
  CHECK(scaling[0].at("cache") == "lru_sharded");
  CHECK(scaling[1].at("cache") == "tinylfu_sharded");
  for (const auto& s : scaling) {
    CAPTURE(s.dump());
    CHECK(s.size() == 6);
    CHECK(s.at("pairs") == 9);
    CHECK(s.at("segment_ops") == 44444);
    check_nine_pairs(s.at("ops_per_s_2t"), s.at("ops_per_s_1t"), s.at("median_ratio"));
  }

  // tinylfu against std_lru at one thread: 9 alternating pairs of segments of
  // 400,000 / 9 operations, and the median of the 9 ratios tinylfu / std_lru.
  const auto& versus = j.at("versus");
  REQUIRE(versus.size() == 1);
  const auto& v = versus[0];
  CAPTURE(v.dump());
  CHECK(v.size() == 7);
  CHECK(v.at("cache") == "tinylfu");
  CHECK(v.at("peer") == "std_lru");
  CHECK(v.at("pairs") == 9);
  CHECK(v.at("segment_ops") == 44444);
  check_nine_pairs(v.at("ops_per_s"), v.at("peer_ops_per_s"), v.at("median_ratio"));
}

TEST_CASE("bench_cache --pairs=0: no pairs", "[cache][bench]") {
  const run_output r = run("--quick --json --pairs=0 --penalty=0 --threads=2 --ops=20000 --warmup=0");
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j.at("config").at("pairs") == 0);
  CHECK(j.at("scaling").empty());
  CHECK(j.at("versus").empty());
}

TEST_CASE("bench_cache --pairs with one thread: tinylfu against std_lru, no scaling pairs", "[cache][bench]") {
  const run_output r = run("--quick --json --pairs=3 --penalty=0 --threads=1 --ops=3000 --warmup=0");
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j.at("scaling").empty());
  REQUIRE(j.at("versus").size() == 1);
  CHECK(j.at("versus")[0].at("segment_ops") == 1000);
  CHECK(j.at("versus")[0].at("ops_per_s").size() == 3);
}

TEST_CASE("bench_cache --budget: no pairs, and --ops is not checked against them", "[cache][bench]") {
  const run_output r = run("--quick --json --budget=1m --penalty=0 --ops=10 --warmup=0");
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j.at("config").at("budget_bytes") == 1024 * 1024);
  CHECK(j.at("scaling").empty());
  CHECK(j.at("versus").empty());
}

TEST_CASE("bench_cache: bad options exit with status 2", "[cache][bench]") {
  CHECK(run("--capacity=abc").status == 2);
  CHECK(run("--threads=0").status == 2);
  CHECK(run("--nope").status == 2);
  CHECK(run("--budget=12q").status == 2);
  CHECK(run("--quick=1").status == 2);
  CHECK(run("--warmup=-5").status == 2);
  CHECK(run("--warmup").status == 2);
  CHECK(run("--pairs=51").status == 2);
  CHECK(run("--pairs=5 --ops=9").status == 2);  // each of the 2 threads needs an operation
  CHECK(run("--pairs=5 --ops=4 --threads=1").status == 2);  // each segment needs one
}
#endif
