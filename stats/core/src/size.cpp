// Byte sizes as people write them, and back.
#include "arenastat/size.hpp"
#include "quoted.hpp"

#include <cstdio>
#include <limits>
#include <stdexcept>

namespace arenastat {

namespace {

[[noreturn]] void bad_size(std::string_view text, const char* why) {
  throw std::invalid_argument("invalid size " + detail::quoted(text) + ": " + why);
}

// Power of 1024 named by a suffix letter, or -1 for no known suffix.
int suffix_power(char c) noexcept {
  switch (c) {
    case 'k': case 'K': return 1;
    case 'm': case 'M': return 2;
    case 'g': case 'G': return 3;
    default: return -1;
  }
}

}  // namespace

std::uint64_t parse_size(std::string_view text) {
  static constexpr const char* expected =
      "expected a whole number of bytes with an optional suffix k, m or g (e.g. 4096, 64k, 10m)";
  if (text.empty()) bad_size(text, expected);

  std::string_view digits = text;
  int power = 0;
  if (const int p = suffix_power(text.back()); p > 0) {
    power = p;
    digits.remove_suffix(1);
  }
  if (digits.empty()) bad_size(text, expected);

  constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t value = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') bad_size(text, expected);
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (value > (max - d) / 10) bad_size(text, "does not fit in 64 bits");
    value = value * 10 + d;
  }
  for (int i = 0; i < power; ++i) {
    if (value > (max >> 10)) bad_size(text, "does not fit in 64 bits");
    value <<= 10;
  }
  return value;
}

std::string human_size(std::uint64_t bytes) {
  static constexpr char units[] = {'B', 'K', 'M', 'G', 'T', 'P', 'E'};
  if (bytes < 1024) return std::to_string(bytes) + 'B';

  // Largest unit that leaves a value >= 1; then round to one decimal below 10
  // and to a whole number above, moving up a unit when rounding reaches 1024.
  unsigned u = 1;
  while (u + 1 < sizeof units && bytes >= (std::uint64_t{1} << (10 * (u + 1)))) ++u;
  for (;; ++u) {
    // bytes = q * unit + r, with r * 10 + unit / 2 < 2^64 for every unit up to E.
    const unsigned shift = 10 * u;
    const std::uint64_t unit = std::uint64_t{1} << shift;
    const std::uint64_t q = bytes >> shift;
    const std::uint64_t r = bytes & (unit - 1);
    const std::uint64_t tenths = q * 10 + ((r * 10 + unit / 2) >> shift);
    char buf[32];
    if (tenths < 100) {
      std::snprintf(buf, sizeof buf, "%u.%u%c", static_cast<unsigned>(tenths / 10),
                    static_cast<unsigned>(tenths % 10), units[u]);
      return buf;
    }
    const std::uint64_t whole = q + (r >= unit / 2 ? 1 : 0);
    if (whole < 1024 || u + 1 == sizeof units) {
      std::snprintf(buf, sizeof buf, "%llu%c", static_cast<unsigned long long>(whole), units[u]);
      return buf;
    }
  }
}

}  // namespace arenastat
