// zipf.hpp: YCSB's Zipfian generator (Gray et al., "Quickly generating
// billion-record synthetic databases", 1994), not scrambled: key 0 is the
// most frequent, then 1, 2, ... With theta = 0.99 and n = capacity x factor
// this is the key stream of the cache2k Zipfian loading benchmark.
//
// Uniform numbers come from splitmix64 (deterministic for a seed, fast):
// u = (x >> 11) * 2^-53 in [0, 1).
#pragma once
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace arenastat::bench {

class splitmix64 {
 public:
  explicit splitmix64(std::uint64_t seed) noexcept : state_(seed) {}
  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  std::uint64_t state_;
};

// zeta(n, theta) = sum_{i=1..n} i^-theta (summed from the smallest terms up).
inline double zeta(std::uint64_t n, double theta) {
  double sum = 0;
  for (std::uint64_t i = n; i >= 1; --i) sum += std::pow(static_cast<double>(i), -theta);
  return sum;
}

// The constants of one (n, theta): computing zetan is O(n), so share them
// between generators (one per thread).
struct zipf_params {
  std::uint64_t n;
  double theta, zetan, zeta2, alpha, eta, half_pow_theta;

  // Throws std::invalid_argument for n < 2 or theta outside (0, 1).
  zipf_params(std::uint64_t items, double th) : n(items), theta(th) {
    if (items < 2) throw std::invalid_argument("zipf: n must be >= 2, got " + std::to_string(items));
    if (!(th > 0 && th < 1)) throw std::invalid_argument("zipf: theta must be in (0, 1), got " + std::to_string(th));
    zetan = zeta(n, theta);
    half_pow_theta = std::pow(0.5, theta);
    zeta2 = 1 + half_pow_theta;
    alpha = 1 / (1 - theta);
    eta = (1 - std::pow(2.0 / static_cast<double>(n), 1 - theta)) / (1 - zeta2 / zetan);
  }
  // Probability of key k (0-based) under the exact Zipf law.
  double probability(std::uint64_t k) const { return std::pow(static_cast<double>(k + 1), -theta) / zetan; }
};

class zipf_generator {
 public:
  zipf_generator(const zipf_params& p, std::uint64_t seed) noexcept : p_(&p), rng_(seed) {}

  std::uint64_t next() noexcept {
    const double u = rng_.uniform();
    const double uz = u * p_->zetan;
    if (uz < 1) return 0;
    if (uz < 1 + p_->half_pow_theta) return 1;
    const auto k = static_cast<std::uint64_t>(static_cast<double>(p_->n) * std::pow(p_->eta * u - p_->eta + 1, p_->alpha));
    return k < p_->n ? k : p_->n - 1;
  }

 private:
  const zipf_params* p_;
  splitmix64 rng_;
};

}  // namespace arenastat::bench
