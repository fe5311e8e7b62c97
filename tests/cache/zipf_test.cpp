// The Zipfian generator of bench_cache (bench/zipf.hpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "../../bench/zipf.hpp"

using arenastat::bench::splitmix64;
using arenastat::bench::zipf_generator;
using arenastat::bench::zipf_params;

TEST_CASE("zipf: splitmix64 matches its reference outputs for seed 0", "[zipf]") {
  splitmix64 r(0);
  CHECK(r.next() == 0xE220A8397B1DCDAFull);
  CHECK(r.next() == 0x6E789E6AA1B965F4ull);
  CHECK(r.next() == 0x06C45D188009454Full);
}

TEST_CASE("zipf: zeta(n) for the benchmark sizes matches the recipe", "[zipf]") {
  CHECK(zipf_params(1'000'000, 0.99).zetan == Approx(15.391849746).epsilon(1e-9));
}

TEST_CASE("zipf: the first values for seed 1802 follow YCSB's formula", "[zipf]") {
  const zipf_params p(1000, 0.99);
  zipf_generator g(p, 1802);
  // Recompute every draw from the raw uniform numbers, in long double.
  splitmix64 raw(1802);
  const long double zetan = p.zetan;
  const long double eta = (1 - std::pow(2.0L / 1000, 1 - 0.99L)) / (1 - (1 + std::pow(0.5L, 0.99L)) / zetan);
  std::vector<std::uint64_t> got;
  for (int i = 0; i < 10; ++i) {
    const long double u = static_cast<long double>(raw.next() >> 11) / 9007199254740992.0L;
    std::uint64_t expected;
    if (u * zetan < 1) expected = 0;
    else if (u * zetan < 1 + std::pow(0.5L, 0.99L)) expected = 1;
    else expected = static_cast<std::uint64_t>(1000 * std::pow(eta * u - eta + 1, 1 / (1 - 0.99L)));
    const std::uint64_t v = g.next();
    CHECK(v == expected);
    got.push_back(v);
  }
  // Pinned so that a change of the generator shows up here.
  CHECK(got == std::vector<std::uint64_t>{3, 12, 25, 98, 28, 71, 78, 536, 470, 128});
}

TEST_CASE("zipf: key 0 and key 1 are drawn with their theoretical frequency", "[zipf]") {
  const zipf_params p(1000, 0.99);
  zipf_generator g(p, 42);
  constexpr int draws = 1'000'000;
  int zeros = 0, ones = 0;
  for (int i = 0; i < draws; ++i) {
    const auto k = g.next();
    REQUIRE(k < 1000);
    zeros += k == 0;
    ones += k == 1;
  }
  const double p0 = 1 / p.zetan;                    // YCSB: exactly u < 1/zetan
  const double p1 = std::pow(0.5, 0.99) / p.zetan;  // exactly 1/zetan <= u < (1 + 0.5^theta)/zetan
  CHECK(p0 == Approx(p.probability(0)));
  const double sd0 = std::sqrt(draws * p0 * (1 - p0)), sd1 = std::sqrt(draws * p1 * (1 - p1));
  CHECK(std::abs(zeros - draws * p0) < 5 * sd0);
  CHECK(std::abs(ones - draws * p1) < 5 * sd1);
}

TEST_CASE("zipf: bad parameters are refused", "[zipf]") {
  CHECK_THROWS_WITH(zipf_params(1, 0.99), Catch::Contains("n must be >= 2"));
  CHECK_THROWS_WITH(zipf_params(100, 1.0), Catch::Contains("theta"));
}
