// What the CLI prints of bytes it did not write itself: a target's answer, a
// program name, a target's error message. Control characters and bytes that
// are not UTF-8 must never reach a terminal raw (they can move the cursor,
// rewrite earlier lines or retitle the window).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include "text_escape.hpp"

namespace arenastat::cli {

// `bytes` escaped by the report's escaper (text_escape.hpp: C0 controls, DEL,
// C1 controls, line/paragraph separators, bidirectional controls and bytes
// that are not valid UTF-8 as \xNN), except that backslashes are copied (an
// answer's names are escaped already: its backslashes are escapes) and, when
// `keep_lines`, LF and TAB too.
inline std::string escape_for_terminal(std::string_view bytes, bool keep_lines) {
  return detail::escape_text(bytes, {.backslash = false, .keep_lines = keep_lines});
}

// escape_for_terminal(bytes, keep_lines) handed to `out` a piece at a time:
// pieces of `piece` to `piece` + 3 bytes, each cut before a byte that starts a
// character or after 3 continuation bytes (a UTF-8 sequence has at most 3, so
// none is split; more are invalid and escaped one by one wherever the cut
// falls), so a large answer never needs a copy of up to four times its size.
// The pieces joined equal the whole.
template <class Out>
void escape_for_terminal_in_pieces(std::string_view bytes, bool keep_lines, Out&& out,
                                   std::size_t piece = std::size_t{64} << 10) {
  while (!bytes.empty()) {
    std::size_t n = piece < bytes.size() ? piece : bytes.size();
    for (int more = 0; more < 3 && n < bytes.size() && (static_cast<unsigned char>(bytes[n]) & 0xc0) == 0x80; ++more) ++n;
    out(escape_for_terminal(bytes.substr(0, n), keep_lines));
    bytes.remove_prefix(n);
  }
}

}  // namespace arenastat::cli
