// Quoting of a bad value inside a warning (an environment variable, a path):
// the first 200 bytes at most, control bytes escaped, so a warning is one
// bounded line whatever the value holds. Not installed.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace arenastat::detail {

// Longest part of a value a warning quotes.
inline constexpr std::size_t max_quoted_bytes = 200;

// 'value' with bytes 0x00-0x1f, 0x7f and the quote written as \xNN; a value
// longer than max_quoted_bytes is cut there and followed by
// "... (N bytes)": 'aaaa...aaaa'... (1048576 bytes).
std::string quoted(std::string_view value);

// The same without the quotes, for a message that embeds a bad value
// (an exception's what()): escaped, cut after max_quoted_bytes with "...".
std::string bounded(std::string_view text);

}  // namespace arenastat::detail
