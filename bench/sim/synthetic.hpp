// synthetic.hpp: generated traces of known shapes for cache_sim, each
// deterministic for its parameters (splitmix64 seeded by `seed`).
//
//   loop        keys 0 .. keys-1 in order, again and again.
//   zipf        Zipf(theta) over `keys` keys (YCSB's generator, zipf.hpp).
//   zipf-phase  the same, but halfway through the popular keys become keys
//               never seen before (a phase change).
//   scan        Zipf(theta) over a hot set of `keys` keys, with a scan of
//               `scan` keys never seen before after every `every` requests.
//   recency     recency-biased: with probability `fresh` a key never seen
//               before, otherwise the key requested d requests ago, d drawn
//               from an exponential distribution of mean `mean` (at least 1).
// Every generator takes `length` (the number of requests) and `seed`.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "../zipf.hpp"
#include "trace.hpp"

namespace arenastat::sim {

// A generator's parameters: name=value pairs with defaults; a name the
// generator does not know is an error.
class synth_params {
 public:
  synth_params(std::string generator, std::string_view text) : generator_(std::move(generator)) {
    if (text.empty()) return;
    for (;;) {
      const std::size_t comma = text.find(',');
      const std::string_view item = text.substr(0, comma);
      if (item.empty())
        throw trace_error(generator_ + ": expected name=value, got an empty parameter (a comma too many?)");
      const std::size_t eq = item.find('=');
      if (eq == std::string_view::npos || eq == 0)
        throw trace_error(generator_ + ": expected name=value, got '" + std::string(item) + "'");
      const std::string name(item.substr(0, eq));
      if (!values_.emplace(name, std::string(item.substr(eq + 1))).second)
        throw trace_error(generator_ + ": parameter '" + name + "' given twice");
      if (comma == std::string_view::npos) break;
      text = text.substr(comma + 1);
    }
  }
  std::uint64_t count(const std::string& name, std::uint64_t fallback, std::uint64_t min, std::uint64_t max) {
    used_.push_back(name);
    const auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    std::uint64_t v = 0;
    if (!detail::parse_u64(it->second, v) || v < min || v > max)
      throw trace_error(generator_ + ": bad value for " + name + ": '" + it->second + "' (expected an integer in " +
                        std::to_string(min) + ".." + std::to_string(max) + ")");
    return v;
  }
  double real(const std::string& name, double fallback, double min, double max) {
    used_.push_back(name);
    const auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    double v = 0;
    const std::string& s = it->second;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || p != s.data() + s.size() || !(v >= min && v <= max))
      throw trace_error(generator_ + ": bad value for " + name + ": '" + s + "' (expected a number in " +
                        shortest(min) + ".." + shortest(max) + ")");
    return v;
  }
  // 0.01, 1e+09: the bound as written, not std::to_string's six decimals.
  static std::string shortest(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
  }
  // After every parameter was read: a name given but never read is an error.
  void check_all_used() const {
    for (const auto& [name, value] : values_) {
      bool known = false;
      for (const auto& u : used_) known |= u == name;
      if (!known) throw trace_error(generator_ + ": unknown parameter '" + name + "'");
    }
  }

 private:
  std::string generator_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> used_;
};

inline bool is_synthetic(std::string_view name) {
  return name == "loop" || name == "zipf" || name == "zipf-phase" || name == "scan" || name == "recency";
}

// A generator with its parameters read and checked (parse_generator), so
// that every trace of a run can be checked before any is made.
struct generator_spec {
  std::string name, params;
  std::uint64_t length = 0, seed = 0, keys = 0, scan = 0, every = 0;
  double theta = 0, fresh = 0, mean = 0;
};

// `name` one of is_synthetic's; `params` "name=value,..." (may be empty).
// Throws trace_error naming a bad, unknown or repeated parameter.
inline generator_spec parse_generator(const std::string& name, std::string_view params) {
  synth_params p(name, params);
  generator_spec g;
  g.name = name;
  g.params = std::string(params);
  g.length = p.count("length", 1'000'000, 1, 1'000'000'000);
  g.seed = p.count("seed", 1, 0, UINT64_MAX);
  if (name == "loop") {
    g.keys = p.count("keys", 10'000, 1, 100'000'000);
  } else if (name == "zipf" || name == "zipf-phase" || name == "scan") {
    g.keys = p.count("keys", 100'000, 2, 100'000'000);
    g.theta = p.real("theta", name == "scan" ? 0.8 : 0.99, 0.01, 0.999);
    if (name == "scan") {
      g.scan = p.count("scan", 5'000, 1, 100'000'000);
      g.every = p.count("every", 20'000, 1, 1'000'000'000);
    }
  } else {  // recency
    g.fresh = p.real("fresh", 0.2, 0, 1);
    g.mean = p.real("mean", 2'000, 1, 1e9);
  }
  p.check_all_used();
  return g;
}

// The requests of `g`. With max_requests (0: all), only the first
// max_requests of the `length` the parameters describe are made (the same
// requests: a phase change at half the length stays there).
inline trace generate(const generator_spec& g, std::uint64_t max_requests = 0) {
  const std::string& name = g.name;
  const std::uint64_t length = g.length;
  const std::uint64_t produced = max_requests != 0 && max_requests < length ? max_requests : length;
  trace_builder b(g.params.empty() ? name : name + ":" + g.params);
  bench::splitmix64 rng(g.seed);
  if (name == "loop") {
    for (std::uint64_t i = 0; i < produced; ++i) b.add(i % g.keys);
  } else if (name == "zipf" || name == "zipf-phase" || name == "scan") {
    const std::uint64_t keys = g.keys;
    const bench::zipf_params z(keys, g.theta);
    bench::zipf_generator zg(z, g.seed);
    // Zipf ranks scattered over the key space (rank 0 is not key 0).
    const auto key_of = [](std::uint64_t rank) { return rank * 0x9E3779B97F4A7C15ull; };
    std::uint64_t fresh = 1ull << 62;  // scan keys: never a Zipf key
    for (std::uint64_t i = 0; b.size() < produced; ++i) {
      if (name == "zipf-phase" && b.size() >= length / 2) b.add(key_of(zg.next() + keys));
      else b.add(key_of(zg.next()));
      if (g.scan && (i + 1) % g.every == 0)
        for (std::uint64_t s = 0; s < g.scan && b.size() < produced; ++s) b.add(fresh++);
    }
  } else {  // recency
    std::vector<std::uint64_t> history;  // the keys requested so far
    history.reserve(produced);
    std::uint64_t fresh = 0;
    for (std::uint64_t i = 0; i < produced; ++i) {
      std::uint64_t k;
      if (history.empty() || rng.uniform() < g.fresh) {
        k = fresh++;
      } else {
        const double u = 1 - rng.uniform();  // (0, 1]
        auto d = static_cast<std::uint64_t>(-g.mean * std::log(u)) + 1;
        if (d > history.size()) d = history.size();
        k = history[history.size() - d];
      }
      history.push_back(k);
      b.add(k);
    }
  }
  return std::move(b).take();
}

inline trace generate(const std::string& name, std::string_view params, std::uint64_t max_requests = 0) {
  return generate(parse_generator(name, params), max_requests);
}

}  // namespace arenastat::sim
