// escape_text (text_escape.hpp).
#include "text_escape.hpp"

namespace arenastat::detail {

std::size_t utf8_sequence(std::string_view s) noexcept {
  if (s.empty()) return 0;
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xbf;  // bounds of the second byte
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c == 0xe0) n = 3, lo = 0xa0;
  else if (c == 0xed) n = 3, hi = 0x9f;  // no surrogates
  else if (c >= 0xe1 && c <= 0xef) n = 3;
  else if (c == 0xf0) n = 4, lo = 0x90;
  else if (c == 0xf4) n = 4, hi = 0x8f;  // not above U+10FFFF
  else if (c >= 0xf1 && c <= 0xf3) n = 4;
  else return 0;
  if (s.size() < n || b(1) < lo || b(1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i)
    if (b(i) < 0x80 || b(i) > 0xbf) return 0;
  return n;
}

namespace {

void hex_byte(std::string& out, unsigned char c) {
  constexpr char digits[] = "0123456789abcdef";
  out += "\\x";
  out += digits[c >> 4];
  out += digits[c & 15];
}

// The code point of a well-formed sequence (utf8_sequence said so).
char32_t code_point(std::string_view seq) noexcept {
  const auto b = [&](std::size_t i) { return static_cast<char32_t>(static_cast<unsigned char>(seq[i])); };
  if (seq.size() == 2) return (b(0) & 0x1f) << 6 | (b(1) & 0x3f);
  if (seq.size() == 3) return (b(0) & 0x0f) << 12 | (b(1) & 0x3f) << 6 | (b(2) & 0x3f);
  return (b(0) & 0x07) << 18 | (b(1) & 0x3f) << 12 | (b(2) & 0x3f) << 6 | (b(3) & 0x3f);
}

// A well-formed sequence that a terminal may act on rather than print, or
// that prints as nothing (so two names that differ by it would look the same).
bool forging_sequence(std::string_view seq) noexcept {
  const char32_t c = code_point(seq);
  return (c >= 0x80 && c <= 0x9f)                                   // C1 controls
         || c == 0x00ad || c == 0x034f                               // soft hyphen, combining grapheme joiner
         || c == 0x061c                                              // Arabic letter mark
         || c == 0x115f || c == 0x1160 || c == 0x3164 || c == 0xffa0  // Hangul fillers
         || c == 0x17b4 || c == 0x17b5 || c == 0x180e                // Khmer inherent vowels, Mongolian separator
         || c == 0x200b || c == 0x200e || c == 0x200f               // zero width space, left-to-right and right-to-left marks
         || (c >= 0x2028 && c <= 0x202e)                             // line and paragraph separators, bidirectional controls
         || (c >= 0x2060 && c <= 0x2064)                             // word joiner, invisible operators
         || (c >= 0x2066 && c <= 0x2069)                             // bidirectional isolates
         || c == 0xfeff                                              // zero width no-break space (byte order mark)
         || (c >= 0xfff9 && c <= 0xfffb)                             // interlinear annotation controls
         || (c >= 0xe0000 && c <= 0xe007f);                          // tag characters
}

}  // namespace

void append_escaped(std::string& out, std::string_view text, escape_rules rules) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\\' && rules.backslash) {
      out += "\\\\";
      ++i;
    } else if ((c < 0x20 && !(rules.keep_lines && (c == '\n' || c == '\t'))) || c == 0x7f) {
      hex_byte(out, c);
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else {
      const std::size_t n = utf8_sequence(text.substr(i));
      if (n == 0) {
        hex_byte(out, c);
        ++i;
      } else {
        const std::string_view seq = text.substr(i, n);
        if (forging_sequence(seq)) {
          for (const char b : seq) hex_byte(out, static_cast<unsigned char>(b));
        } else {
          out += seq;
        }
        i += n;
      }
    }
  }
}

std::string escape_text(std::string_view text, escape_rules rules) {
  std::string out;
  out.reserve(text.size());
  append_escaped(out, text, rules);
  return out;
}

bool needs_utf8_marking(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {  // ASCII: most names are only that
      ++i;
      continue;
    }
    const std::size_t n = utf8_sequence(s.substr(i));
    if (n == 0 || s.substr(i, n) == replacement_character) return true;
    i += n;
  }
  return false;
}

void append_marked_byte(std::string& out, unsigned char c) {
  constexpr char digits[] = "0123456789abcdef";
  out += replacement_character;
  out += digits[c >> 4];
  out += digits[c & 15];
}

std::string unmark_utf8(std::string_view marked) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  out.reserve(marked.size());
  const std::size_t mark = replacement_character.size();
  for (std::size_t i = 0; i < marked.size();) {
    const std::size_t at = marked.find(replacement_character, i);
    if (at == std::string_view::npos) {
      out.append(marked.substr(i));
      break;
    }
    out.append(marked.substr(i, at - i));
    const std::string_view rest = marked.substr(at + mark);
    if (rest.starts_with(replacement_character)) {  // a literal U+FFFD, written twice
      out.append(replacement_character);
      i = at + 2 * mark;
    } else if (rest.size() >= 2 && hex(rest[0]) >= 0 && hex(rest[1]) >= 0) {  // a byte
      out += static_cast<char>(hex(rest[0]) * 16 + hex(rest[1]));
      i = at + mark + 2;
    } else {  // not a marking: kept as it is
      out.append(replacement_character);
      i = at + mark;
    }
  }
  return out;
}

}  // namespace arenastat::detail
