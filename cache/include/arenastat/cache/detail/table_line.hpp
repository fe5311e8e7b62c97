// The cache table's geometry, shared by the table (cache.hpp) and the
// frequency sketch kept in its lines (frequency_sketch.hpp).
#pragma once
#include <cstddef>
#include <cstdint>

namespace arenastat::detail {

// A key's home slot: its 32-bit table hash scaled to the slot count.
inline std::uint32_t home_slot(std::uint32_t h32, std::uint32_t slot_count) noexcept {
  return static_cast<std::uint32_t>((std::uint64_t{h32} * slot_count) >> 32);
}

// A lined table (policies with counters_in_table) is made of 64-byte lines:
// line_slots uint32 slots, then 32 bytes that belong to the policy.
inline constexpr std::uint32_t line_slots = 8;
inline constexpr std::uint32_t line_words = 16;  // uint32 words per line

// Index, in uint32 words, of slot `pos` of a lined table.
inline constexpr std::uint32_t lined_slot_word(std::uint32_t pos) noexcept {
  return pos / line_slots * line_words + pos % line_slots;
}
// Index, in uint32 words, of the policy's half of line `line`.
inline constexpr std::size_t line_policy_word(std::uint32_t line) noexcept {
  return std::size_t{line} * line_words + line_slots;
}

}  // namespace arenastat::detail
