// What the CLI prints of bytes it did not write itself: a target's answer, a
// program name, a target's error message. Control characters and bytes that
// are not UTF-8 must never reach a terminal raw (they can move the cursor,
// rewrite earlier lines or retitle the window).
#pragma once
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

}  // namespace arenastat::cli
