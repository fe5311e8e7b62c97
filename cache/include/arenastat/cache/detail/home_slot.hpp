// A key's home slot in the cache's table, shared by the table (cache.hpp) and
// the frequency sketch, whose counter blocks follow the home slots
// (frequency_sketch.hpp).
#pragma once
#include <cstddef>
#include <cstdint>

namespace arenastat::detail {

// The slot count of a table for `capacity` entries (load at most 3/4): the
// caches' tables and the window tuner's ghosts.
inline constexpr std::size_t slot_count_for(std::size_t capacity) noexcept { return capacity + capacity / 3 + 1; }

// The home slot of a key: its 32-bit table hash scaled to the slot count.
inline std::uint32_t home_slot(std::uint32_t h32, std::uint32_t slot_count) noexcept {
  return static_cast<std::uint32_t>((std::uint64_t{h32} * slot_count) >> 32);
}

}  // namespace arenastat::detail
