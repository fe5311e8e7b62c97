// Arena tags: short category names ("node", "resource", "heap") that split a
// context's bytes, like HotSpot's arena tags. A tag is registered once and
// then named by a small integer so the hot paths index arrays, never strings.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace arenastat {

using tag_id = std::uint8_t;

inline constexpr std::size_t max_tags = 32;          // distinct tags per process
inline constexpr std::size_t max_tag_name = 23;      // characters in a tag name

// Returns the id of `name`, registering it on first use. Thread-safe.
// Throws std::invalid_argument for an empty or over-long name or one with a
// control byte (0x00-0x1f, 0x7f), and std::length_error once max_tags
// distinct tags exist.
tag_id register_tag(std::string_view name);
// Throws std::invalid_argument as register_tag would for a bad name,
// registering nothing (the length_error of a full registry is register_tag's).
void check_tag_name(std::string_view name);

// Name of a registered tag ("" for an id never registered).
std::string_view tag_name(tag_id id) noexcept;

// Number of tags registered so far; ids are 0 .. tag_count()-1.
std::size_t tag_count() noexcept;

}  // namespace arenastat
