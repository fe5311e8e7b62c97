// What the CLI prints of bytes it did not write itself: a target's answer, a
// program name, a target's error message. Control characters and bytes that
// are not UTF-8 must never reach a terminal raw (they can move the cursor,
// rewrite earlier lines or retitle the window).
#pragma once
#include <string>
#include <string_view>

namespace arenastat::cli {

// `bytes` with every C0 control byte (0x00-0x1f, except LF and TAB when
// `keep_lines`), DEL (0x7f), C1 control (U+0080-U+009F) and byte that is not
// part of valid UTF-8 written as \xNN (C1 controls as their two UTF-8 bytes,
// \xc2\x9b). Printable ASCII and valid UTF-8 are unchanged.
std::string escape_for_terminal(std::string_view bytes, bool keep_lines);

}  // namespace arenastat::cli
