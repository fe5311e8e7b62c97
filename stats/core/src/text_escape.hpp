// Names are user data (often request paths): every text output escapes them
// with escape_text so that a name cannot end a line, move the cursor or forge
// a row. Not installed; used by the core (leak lines), the report room, the
// control room and the CLI (object library arenastat_text: standard library
// only).
//
// The one escaper of text meant for people (reports, error lines, a terminal).
// The other escapers write other formats and differ on purpose, each the only
// one of its format: the JSON writer (json_writer.hpp: \uXXXX, invalid UTF-8
// as U+FFFD, since a JSON reader must get a valid string back), the Prometheus
// label and HELP escapes (prometheus.cpp: exactly the three escapes the
// exposition formats define; in a label value from a name, an invalid byte is
// U+FFFD and its two hex digits and a literal U+FFFD is doubled, so distinct
// names stay distinct series), JSON inside an HTML <script> (html.cpp:
// json_for_script, '<' '>' '&' as \u escapes), quoted()/bounded() for
// warnings about bad values (quoted.hpp, beside this file: ASCII only and
// bounded) and wire::single_line (control_request.hpp: one
// status line, control bytes as blanks). One UTF-8 validator serves them:
// utf8_sequence below.
#pragma once
#include <string>
#include <string_view>

namespace arenastat::detail {

// `text` with each byte that could forge output written as \xHH:
//   - C0 controls (0x00-0x1f) and DEL (0x7f);
//   - the bytes of C1 controls (U+0080-U+009F), line and paragraph
//     separators (U+2028, U+2029), bidirectional controls (U+202A-U+202E,
//     U+2066-U+2069, the marks U+200E, U+200F and U+061C) and characters
//     that print as nothing (U+00AD, U+034F, U+115F, U+1160, U+17B4, U+17B5,
//     U+180E, U+200B, U+2060-U+2064, U+3164, U+FEFF, U+FFA0, U+FFF9-U+FFFB,
//     U+E0000-U+E007F: two names that differ by one would look the same);
//   - every byte that is not part of well-formed UTF-8 (bad lead, truncated,
//     overlong, surrogate, above U+10FFFF);
// and a backslash as \\ (so the escapes above are unambiguous). Everything
// else, including all other UTF-8, is copied unchanged.
//
// escape_rules change two things for text that is escaped already (an answer
// the CLI prints on a terminal: its names went through escape_text in the
// target, so its backslashes are escapes to keep) or is made of lines.
struct escape_rules {
  bool backslash = true;    // write '\' as \\ (off: copied)
  bool keep_lines = false;  // copy LF and TAB
};
std::string escape_text(std::string_view text, escape_rules rules = {});
void append_escaped(std::string& out, std::string_view text, escape_rules rules = {});

// Length of the well-formed UTF-8 sequence at the start of `s`, 0 if none
// (also used by the JSON writer and the Prometheus label escape).
std::size_t utf8_sequence(std::string_view s) noexcept;

// Names written where text must be valid UTF-8 (JSON strings, Prometheus
// label values) stay distinct: a name that is well-formed UTF-8 without
// U+FFFD is written as it is; otherwise (needs_utf8_marking) each byte outside
// well-formed UTF-8 is U+FFFD and its two lowercase hex digits
// (append_marked_byte) and a literal U+FFFD is written twice. Raw names have
// no U+FFFD, marked ones have one, and a marked one reads back one way only.
inline constexpr std::string_view replacement_character = "\xef\xbf\xbd";  // U+FFFD
bool needs_utf8_marking(std::string_view s) noexcept;
void append_marked_byte(std::string& out, unsigned char c);
// The name a marked string was made from (a reader of the JSON answer, such
// as the CLI's top, shows names as the text reports do): U+FFFD U+FFFD is one
// U+FFFD, U+FFFD and two lowercase hex digits the byte they spell; anything
// else, including a U+FFFD followed by neither, is copied unchanged.
std::string unmark_utf8(std::string_view marked);

}  // namespace arenastat::detail
