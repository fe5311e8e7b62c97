// Hash post-mixing for the caches. std::hash of an integer is the identity,
// so consecutive hot keys (a Zipfian workload) would cluster in an open
// addressing table; every cache mixes the user's hash with a 64x64->128 bit
// multiply folded back to 64 bits before using it.
#pragma once
#include <cstdint>

namespace arenastat {

inline std::uint64_t mix_hash(std::uint64_t x) noexcept {
  __extension__ using u128 = unsigned __int128;
  const u128 r = static_cast<u128>(x) * 0x9E3779B97F4A7C15ull;
  return static_cast<std::uint64_t>(r) ^ static_cast<std::uint64_t>(r >> 64);
}

// A mixing hash for integers, usable with std::unordered_map too.
struct mixing_hash {
  std::uint64_t operator()(std::uint64_t x) const noexcept { return mix_hash(x); }
};

}  // namespace arenastat
