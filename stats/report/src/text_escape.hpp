// Names are user data (often request paths): every text output escapes them
// with escape_text so that a name cannot end a line, move the cursor or forge
// a row. Not installed; used by the report room and the control room.
#pragma once
#include <string>
#include <string_view>

namespace arenastat::detail {

// `text` with each byte that could forge output written as \xHH:
//   - C0 controls (0x00-0x1f) and DEL (0x7f);
//   - the bytes of C1 controls (U+0080-U+009F), line and paragraph
//     separators (U+2028, U+2029) and bidirectional controls (U+202A-U+202E,
//     U+2066-U+2069);
//   - every byte that is not part of well-formed UTF-8 (bad lead, truncated,
//     overlong, surrogate, above U+10FFFF);
// and a backslash as \\ (so the escapes above are unambiguous). Everything
// else, including all other UTF-8, is copied unchanged.
std::string escape_text(std::string_view text);
void append_escaped(std::string& out, std::string_view text);

// Length of the well-formed UTF-8 sequence at the start of `s`, 0 if none
// (also used by the JSON writer).
std::size_t utf8_sequence(std::string_view s) noexcept;

}  // namespace arenastat::detail
