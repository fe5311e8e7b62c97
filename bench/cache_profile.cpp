// cache_profile: one cache on the Zipfian workload, in one process, for
// profiling and A/B comparisons of the cache's code (docs/cache.md, "Where the
// time goes"). Not the benchmark of record (that is bench_cache): no fork, no
// threads, no latency sampling, and the timed keys are generated before the
// clock starts, so perf sees the cache's code and little else.
//
//   cache_profile [--cache=tinylfu|lru|tinylfu_sharded|lru_sharded|std_lru]
//                 [--capacity=N] [--factor=N] [--warmup=N] [--ops=N] [--windows=N]
//                 [--breakdown=1]
//
// The sharded caches run on this one thread too (their locks taken and
// released, never contended): the cost of the thread-safe path.
//
// Fill 3 x capacity get_or_load calls from seed 1802, --warmup more from the
// same generator, then --ops timed calls with keys drawn from seed 1803.
// Prints ns per timed operation and the hit rate (for a sharded W-TinyLFU
// cache also the share of the timed hits served without the shard lock:
// silent hits, docs/cache.md); --windows=N also prints the
// hit rate of each of N equal windows of the timed operations.
//
// --breakdown=1 (plain caches only) then splits the cost: --ops more keys
// from the timed generator, sorted by contains() into keys the cache holds
// and keys it does not (contains changes nothing), are timed through
// contains() (the lookup alone) and get() (the lookup and the policy's work
// for a hit, or for a miss the key counted, nothing inserted), and the time
// of a miss with its insertion and eviction is derived from the get_or_load
// figure: (t - hit rate x t_hit) / (1 - hit rate). Each pass changes the
// policy's state a little (a get counts), which the figures ignore.
#include <algorithm>
#include <chrono>
#include <iterator>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "arenastat/cache/cache.hpp"
#include "arenastat/cache/sharded_cache.hpp"
#include "arenastat/cache/hash.hpp"
#include "args.hpp"
#include "zipf.hpp"

namespace {

using u64 = std::uint64_t;

struct options {
  std::string cache = "tinylfu";
  u64 capacity = 1'000'000;
  u64 factor = 10;
  u64 warmup = 10'000'000;
  u64 ops = 20'000'000;
  u64 windows = 0;
  bool breakdown = false;
};

// The --cache values, in the order the usage and errors name them.
constexpr std::string_view cache_names[] = {"tinylfu", "lru", "tinylfu_sharded", "lru_sharded", "std_lru"};

constexpr std::string_view usage_text =
    "cache_profile [--cache=tinylfu|lru|tinylfu_sharded|lru_sharded|std_lru] [--capacity=N] [--factor=N]\n"
    "              [--warmup=N] [--ops=N] [--windows=N] [--breakdown=1]";

[[noreturn]] void usage_error(const std::string& msg) {
  arenastat::bench::usage_error("cache_profile", usage_text, msg);
}

u64 parse_number(std::string_view name, std::string_view text, u64 min, u64 max) {
  return arenastat::bench::parse_count("cache_profile", usage_text, name, text, min, max);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    const auto eq = a.find('=');
    if (eq == std::string_view::npos) usage_error("unknown option '" + std::string(a) + "'");
    const std::string_view name = a.substr(0, eq), value = a.substr(eq + 1);
    if (name == "--cache") {
      if (std::ranges::find(cache_names, value) == std::end(cache_names)) {
        std::string expected;
        for (std::size_t n = 0; n < std::size(cache_names); ++n)
          expected += std::string(n == 0 ? "" : n + 1 == std::size(cache_names) ? " or " : ", ") +
                      std::string(cache_names[n]);
        usage_error("bad value for --cache: '" + std::string(value) + "' (expected " + expected + ")");
      }
      o.cache = value;
    } else if (name == "--capacity") {
      o.capacity = parse_number(name, value, 16, 1u << 24);
    } else if (name == "--factor") {
      o.factor = parse_number(name, value, 1, 1000);
    } else if (name == "--warmup") {
      o.warmup = parse_number(name, value, 0, u64{1} << 40);
    } else if (name == "--ops") {
      o.ops = parse_number(name, value, 1, u64{1} << 32);
    } else if (name == "--windows") {
      o.windows = parse_number(name, value, 0, 1000);
    } else if (name == "--breakdown") {
      o.breakdown = parse_number(name, value, 0, 1) == 1;
    } else {
      usage_error("unknown option '" + std::string(a) + "'");
    }
  }
  if (o.windows > o.ops) usage_error("--windows must not exceed --ops");
  if (o.breakdown && (o.cache == "std_lru" || o.cache.ends_with("_sharded")))
    usage_error("--breakdown needs a plain cache of ours (tinylfu or lru)");
  return o;
}

// The benchmark's hand-written peer (without bench_cache's counting allocator).
class std_lru {
 public:
  explicit std_lru(std::size_t capacity) : capacity_(capacity) {}
  template <class Loader>
  u64 get_or_load(u64 k, Loader&& load) {
    if (const auto it = map_.find(k); it != map_.end()) {
      ++hits_;
      list_.splice(list_.begin(), list_, it->second);
      return it->second->second;
    }
    ++misses_;
    const u64 v = load(k);
    if (map_.size() >= capacity_) {
      map_.erase(list_.back().first);
      list_.pop_back();
    }
    list_.emplace_front(k, v);
    map_.emplace(k, list_.begin());
    return v;
  }
  std::pair<u64, u64> hits_misses() const { return {hits_, misses_}; }

 private:
  std::list<std::pair<u64, u64>> list_;
  std::unordered_map<u64, std::list<std::pair<u64, u64>>::iterator, arenastat::mixing_hash> map_;
  std::size_t capacity_;
  u64 hits_ = 0, misses_ = 0;
};

template <class Cache>
std::pair<u64, u64> hits_misses(const Cache& c) {
  if constexpr (requires { c.stats(); }) {
    const auto s = c.stats();
    return {s.hits, s.misses};
  } else {
    return c.hits_misses();
  }
}

template <class Cache>
void run(Cache& c, const options& o) {
  const arenastat::bench::zipf_params zp(o.capacity * o.factor, 0.99);
  arenastat::bench::zipf_generator fill(zp, 1802), timed(zp, 1803);
  const auto load = [](u64 k) { return k * 2 + 11; };
  for (u64 i = 0; i < 3 * o.capacity + o.warmup; ++i) c.get_or_load(fill.next(), load);
  std::vector<u64> keys(o.ops);
  for (u64& k : keys) k = timed.next();
  const u64 windows = o.windows == 0 ? 1 : o.windows;
  std::vector<double> window_rate;
  u64 sink = 0;
  double seconds = 0;
  const auto [h0, m0] = hits_misses(c);
  u64 silent0 = 0;
  if constexpr (requires { c.silent_hit_count(); }) silent0 = c.silent_hit_count();
  for (u64 w = 0; w < windows; ++w) {
    const u64 begin = o.ops * w / windows, end = o.ops * (w + 1) / windows;
    const auto [hb, mb] = hits_misses(c);
    const auto start = std::chrono::steady_clock::now();
    for (u64 i = begin; i < end; ++i) sink += c.get_or_load(keys[i], load);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto [he, me] = hits_misses(c);
    window_rate.push_back(static_cast<double>(he - hb) / static_cast<double>((he - hb) + (me - mb)));
  }
  const auto [h1, m1] = hits_misses(c);
  const double ns_per_op = seconds * 1e9 / static_cast<double>(o.ops);
  const double hit_rate = static_cast<double>(h1 - h0) / static_cast<double>((h1 - h0) + (m1 - m0));
  std::printf("cache_profile: %s capacity %llu factor %llu warm-up %llu: %.1f ns/op, hit rate %.4f (checksum %llu)\n",
              o.cache.c_str(), static_cast<unsigned long long>(o.capacity), static_cast<unsigned long long>(o.factor),
              static_cast<unsigned long long>(o.warmup), ns_per_op, hit_rate,
              static_cast<unsigned long long>(sink));
  if constexpr (requires { c.silent_hit_count(); }) {
    if (c.silent_hits) {
      const u64 silent = c.silent_hit_count() - silent0;
      std::printf("silent hits (no shard lock): %llu, %.2f%% of the timed hits\n", static_cast<unsigned long long>(silent),
                  h1 == h0 ? 0.0 : 100.0 * static_cast<double>(silent) / static_cast<double>(h1 - h0));
    }
  }
  if (o.windows != 0) {
    std::printf("hit rate per window:");
    for (double r : window_rate) std::printf(" %.2f", r * 100);
    std::printf("\n");
  }
  if constexpr (requires { c.contains(u64{}); c.get(u64{}); }) {
    if (o.breakdown) {
      std::vector<u64> held, absent;
      for (u64 i = 0; i < o.ops; ++i) {
        const u64 k = timed.next();
        (c.contains(k) ? held : absent).push_back(k);
      }
      const auto time_ns = [&](const std::vector<u64>& ks, auto op) {
        const auto start = std::chrono::steady_clock::now();
        for (const u64 k : ks) sink += op(k);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return ks.empty() ? 0.0 : s * 1e9 / static_cast<double>(ks.size());
      };
      const double lookup = time_ns(held, [&](u64 k) { return static_cast<u64>(c.contains(k)); });
      const double hit = time_ns(held, [&](u64 k) { return c.get(k).value_or(0); });
      const double miss = time_ns(absent, [&](u64 k) { return c.get(k).value_or(0); });
      std::printf("breakdown: %zu keys held, %zu not: contains %.1f ns, get hit %.1f ns, get miss %.1f ns; "
                  "a get_or_load miss with its insertion %.1f ns (derived)\n",
                  held.size(), absent.size(), lookup, hit, miss,
                  hit_rate < 1 ? (ns_per_op - hit_rate * hit) / (1 - hit_rate) : 0.0);
      std::printf("(checksum %llu)\n", static_cast<unsigned long long>(sink));
    }
  }
  if constexpr (requires { c.policy().window_adjustments(); })
    std::printf("window: %zu entries, %llu changes by the window tuner\n", c.policy().window_max(),
                static_cast<unsigned long long>(c.policy().window_adjustments()));
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  if (o.cache == "tinylfu") {
    arenastat::tinylfu_cache<u64, u64> c{"cache_profile.tinylfu", {.max_entries = o.capacity}};
    run(c, o);
  } else if (o.cache == "lru") {
    arenastat::lru_cache<u64, u64> c{"cache_profile.lru", {.max_entries = o.capacity}};
    run(c, o);
  } else if (o.cache == "tinylfu_sharded") {
    arenastat::sharded_tinylfu_cache<u64, u64> c{"cache_profile.tinylfu_sharded", {.max_entries = o.capacity}};
    run(c, o);
  } else if (o.cache == "lru_sharded") {
    arenastat::sharded_lru_cache<u64, u64> c{"cache_profile.lru_sharded", {.max_entries = o.capacity}};
    run(c, o);
  } else {
    std_lru c{o.capacity};
    run(c, o);
  }
  return 0;
}
