// Bounded quoting of bad values in warnings (quoted.hpp).
#include "quoted.hpp"

#include <cstdio>

namespace arenastat::detail {

namespace {

// A value (quoted) gets its quote and backslash escaped too; a message
// (bounded) may hold escapes already and keeps both.
void escape_into(std::string& out, std::string_view text, bool value) {
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (value && c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c >= 0x7f || (value && c == '\'')) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out.push_back(ch);
    }
  }
}

}  // namespace

std::string quoted(std::string_view value) {
  std::string out = "'";
  escape_into(out, value.substr(0, max_quoted_bytes), true);
  out += '\'';
  if (value.size() > max_quoted_bytes) out += "... (" + std::to_string(value.size()) + " bytes)";
  return out;
}

std::string bounded(std::string_view text) {
  std::string out;
  escape_into(out, text.substr(0, max_message_bytes), false);
  if (text.size() > max_message_bytes) out += "...";
  return out;
}

}  // namespace arenastat::detail
