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

// 'value' with every byte outside printable ASCII (0x20-0x7e) and the quote
// written as \xNN, a backslash as \\ (so the escapes are unambiguous, as in
// escape_text); a value longer than max_quoted_bytes is cut there and
// followed by "... (N bytes)": 'aaaa...aaaa'... (1048576 bytes). Every
// warning about a bad environment value quotes it with this function.
std::string quoted(std::string_view value);

// Longest part of a message (which quotes values, each cut) a warning holds.
inline constexpr std::size_t max_message_bytes = 1024;

// For a message that embeds a bad value (an exception's what(), which may
// hold escapes already, and should quote its values with quoted() so that a
// long one leaves the reason after it): bytes outside printable ASCII as
// \xNN, quotes and backslashes kept, cut after max_message_bytes with "...".
std::string bounded(std::string_view text);

}  // namespace arenastat::detail
