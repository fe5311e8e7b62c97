// Escaping of untrusted bytes for a terminal (terminal_text.hpp).
#include "terminal_text.hpp"

#include <cstdio>

namespace arenastat::cli {
namespace {

void hex(std::string& out, unsigned char c) {
  char buf[5];
  std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
  out += buf;
}

// Length of the valid UTF-8 sequence starting at s[i] (2-4), or 0.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xc0) == 0x80; };
  const unsigned char c = b(0);
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xe0 && b(1) < 0xa0) return 0;  // overlong
    if (c == 0xed && b(1) > 0x9f) return 0;  // surrogates
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xf0 && b(1) < 0x90) return 0;  // overlong
    if (c == 0xf4 && b(1) > 0x8f) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

std::string escape_for_terminal(std::string_view bytes, bool keep_lines) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x80) {
      if ((c < 0x20 && !(keep_lines && (c == '\n' || c == '\t'))) || c == 0x7f) {
        hex(out, c);
      } else {
        out.push_back(static_cast<char>(c));
      }
      ++i;
      continue;
    }
    const std::size_t n = utf8_length(bytes, i);
    if (n == 0) {
      hex(out, c);
      ++i;
      continue;
    }
    if (n == 2 && c == 0xc2 && static_cast<unsigned char>(bytes[i + 1]) <= 0x9f) {  // C1 control
      hex(out, c);
      hex(out, static_cast<unsigned char>(bytes[i + 1]));
    } else {
      out.append(bytes.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace arenastat::cli
