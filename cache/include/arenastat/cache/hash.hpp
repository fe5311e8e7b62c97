// Hash post-mixing for the caches. std::hash of an integer is the identity,
// so consecutive hot keys (a Zipfian workload) would cluster in an open
// addressing table; every cache mixes the user's hash with a 64x64->128 bit
// multiply folded back to 64 bits, then one xor-shift-multiply round, before
// using it. The round is needed: the fold alone left its high half (a
// table's slot) and its low half (a sharded cache's shard) correlated for
// keys with structure in their low or high bits, and an open-addressing
// table built clusters from them whose probe distances passed the 63 a slot
// can hold: keys k * 4096 (file offsets, page addresses) filling half of a
// 2M-entry cache of 512 shards had 5,420 of 1M insertions refused,
// bit-reversed ids 1,978 of 500,000 in a plain cache; with the round, none
// (tests/cache/cache_hash_test.cpp).
#pragma once
#include <cstdint>

namespace arenastat {

inline std::uint64_t mix_hash(std::uint64_t x) noexcept {
  __extension__ using u128 = unsigned __int128;
  const u128 r = static_cast<u128>(x) * 0x9E3779B97F4A7C15ull;
  std::uint64_t h = static_cast<std::uint64_t>(r) ^ static_cast<std::uint64_t>(r >> 64);
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  return h ^ (h >> 32);
}

// A mixing hash for integers, usable with std::unordered_map too.
struct mixing_hash {
  std::uint64_t operator()(std::uint64_t x) const noexcept { return mix_hash(x); }
};

}  // namespace arenastat
