// Internal: copying and comparing short byte strings (scope names) inline.
// A scope's entry copies its name and its exit compares it with the record
// it folded last; for names of a few dozen bytes the calls into the C
// library's memcpy and memcmp (their size dispatch included) were about a
// tenth of a scope's instructions. Both read and write only [0, n): the last
// word is taken at n - 8 (overlapping the one before) rather than past the end.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace arenastat::detail {

// For n <= short_bytes_max. The words before the last one are taken by a
// switch, not a loop (GCC turns a copying loop back into a call to memcpy).
constexpr std::size_t short_bytes_max = 64;

inline void copy_short(char* dst, const char* src, std::size_t n) noexcept {
  if (n >= 8) {
    switch ((n - 1) / 8) {  // the whole words before the last (0 to 7)
      case 7: std::memcpy(dst + 48, src + 48, 8); [[fallthrough]];
      case 6: std::memcpy(dst + 40, src + 40, 8); [[fallthrough]];
      case 5: std::memcpy(dst + 32, src + 32, 8); [[fallthrough]];
      case 4: std::memcpy(dst + 24, src + 24, 8); [[fallthrough]];
      case 3: std::memcpy(dst + 16, src + 16, 8); [[fallthrough]];
      case 2: std::memcpy(dst + 8, src + 8, 8); [[fallthrough]];
      case 1: std::memcpy(dst, src, 8); [[fallthrough]];
      default: break;
    }
    std::memcpy(dst + n - 8, src + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(dst, src, 4);
    std::memcpy(dst + n - 4, src + n - 4, 4);
  } else if (n != 0) {
    dst[0] = src[0];
    dst[n / 2] = src[n / 2];
    dst[n - 1] = src[n - 1];
  }
}

inline std::uint64_t load8(const char* p) noexcept {
  std::uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}
inline std::uint32_t load4(const char* p) noexcept {
  std::uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
}

inline bool equal_short(const char* a, const char* b, std::size_t n) noexcept {
  if (n >= 8) {
    std::uint64_t diff = load8(a + n - 8) ^ load8(b + n - 8);
    if (n <= 16) return (diff | (load8(a) ^ load8(b))) == 0;  // two words, no loop
    for (std::size_t i = 0; i + 8 < n; i += 8) diff |= load8(a + i) ^ load8(b + i);
    return diff == 0;
  }
  if (n >= 4) return ((load4(a) ^ load4(b)) | (load4(a + n - 4) ^ load4(b + n - 4))) == 0;
  if (n == 0) return true;
  return a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1];
}

// Equal byte strings: inline up to short_bytes_max bytes, memcmp beyond.
inline bool same_name(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  return a.size() <= short_bytes_max ? equal_short(a.data(), b.data(), a.size())
                                     : std::memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace arenastat::detail
