// The mixed 64-bit hash of a key, shared by the caches and their policies.
#pragma once
#include <cstdint>

namespace arenastat::detail {

// The table and the sketch use a 32-bit hash with these low bits cleared
// (the slot's tag is taken above them).
inline constexpr std::uint32_t policy_bits = 7u;

// The table uses the high 32 bits (the policy bits cleared); sharded_cache
// and the window tuner's sample the low 32.
struct hashed_key {
  std::uint64_t full;
  std::uint32_t h32() const noexcept { return static_cast<std::uint32_t>(full >> 32) & ~policy_bits; }
  std::uint32_t low() const noexcept { return static_cast<std::uint32_t>(full); }
};

}  // namespace arenastat::detail
