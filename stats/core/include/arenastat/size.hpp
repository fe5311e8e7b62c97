// Byte sizes as people write them: "4096", "64k", "10m", "2g" (binary units).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace arenastat {

// Parses a size with an optional suffix k, m or g (either case, powers of 1024).
// Throws std::invalid_argument naming the text for anything else ("10x", "",
// "-1", "1.5m") and for values that overflow 64 bits.
std::uint64_t parse_size(std::string_view text);

// "1.5M", "512K", "37B": at most 4 significant characters before the unit.
std::string human_size(std::uint64_t bytes);

}  // namespace arenastat
