// detail::copy_short / equal_short / same_name: the inline name copy and
// comparison of scopes (stats/core/src/short_bytes.hpp), against the byte
// loops they replace, for every length they serve.
#include <catch2/catch.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "short_bytes.hpp"

using arenastat::detail::copy_short;
using arenastat::detail::equal_short;
using arenastat::detail::same_name;
using arenastat::detail::short_bytes_max;

namespace {
// Distinct, non-zero bytes for each position of a test string.
std::string pattern(std::size_t n, char seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('!' + (seed + 7 * i) % 90);
  return s;
}
}  // namespace

TEST_CASE("copy_short copies exactly n bytes for every n up to 64, touching nothing around them",
          "[short_bytes]") {
  for (std::size_t n = 0; n <= short_bytes_max; ++n) {
    const std::string src = pattern(n, 3);
    std::array<char, short_bytes_max + 32> dst;
    dst.fill('#');
    copy_short(dst.data() + 16, src.data(), n);
    for (std::size_t i = 0; i < 16; ++i) CHECK(dst[i] == '#');
    CHECK(std::string_view(dst.data() + 16, n) == src);
    for (std::size_t i = 16 + n; i < dst.size(); ++i) CHECK(dst[i] == '#');
  }
}

TEST_CASE("equal_short finds a difference at any position for every n up to 64", "[short_bytes]") {
  for (std::size_t n = 0; n <= short_bytes_max; ++n) {
    const std::string a = pattern(n, 5);
    std::string b = a;
    CHECK(equal_short(a.data(), b.data(), n));
    for (std::size_t i = 0; i < n; ++i) {
      b[i] = static_cast<char>(b[i] ^ 0x40);
      CHECK_FALSE(equal_short(a.data(), b.data(), n));
      b[i] = a[i];
    }
  }
}

TEST_CASE("same_name compares lengths first and long names in full", "[short_bytes]") {
  CHECK(same_name("bench/scope", "bench/scope"));
  CHECK_FALSE(same_name("bench/scope", "bench/scop"));
  CHECK_FALSE(same_name("", "a"));
  CHECK(same_name("", ""));
  const std::string long_a = pattern(1000, 1);
  std::string long_b = long_a;
  CHECK(same_name(long_a, long_b));
  long_b[999] = static_cast<char>(long_b[999] ^ 1);
  CHECK_FALSE(same_name(long_a, long_b));
}
