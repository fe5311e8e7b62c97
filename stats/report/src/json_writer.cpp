// json_writer (json_writer.hpp).
#include "json_writer.hpp"

#include <array>
#include <charconv>
#include <cmath>

#include "text_escape.hpp"

namespace arenastat::detail {

namespace {

// Bytes a JSON string holds as they are: printable ASCII other than '"' and '\\'.
constexpr std::array<bool, 256> plain_bytes = [] {
  std::array<bool, 256> t{};
  for (unsigned b = 0x20; b < 0x7f; ++b) t[b] = b != '"' && b != '\\';
  return t;
}();

// The end of the run of plain bytes in s that starts at `from` (a table
// lookup a byte: names and keys are short, and a word-at-a-time scan measured
// no faster on them).
std::size_t plain_run(std::string_view s, std::size_t from) noexcept {
  std::size_t i = from;
  while (i < s.size() && plain_bytes[static_cast<unsigned char>(s[i])]) ++i;
  return i;
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  // The common case (names, keys): nothing to escape, copied at once, and no
  // scan for ill-formed UTF-8 (plain bytes are ASCII).
  std::size_t i = plain_run(s, 0);
  if (i == s.size()) {
    out += '"';
    out.append(s);
    out += '"';
    return;
  }
  constexpr char digits[] = "0123456789abcdef";
  auto u_escape = [&](unsigned code) {
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out += digits[(code >> shift) & 15];
  };
  out += '"';
  out.append(s, 0, i);
  const bool marked = needs_utf8_marking(s);  // names stay distinct (text_escape.hpp)
  while (i < s.size()) {
    // A run of printable ASCII other than '"' and '\\' is copied as it is, at once.
    const std::size_t plain = plain_run(s, i);
    if (plain > i) {
      out.append(s, i, plain - i);
      i = plain;
      continue;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20 || c == 0x7f) u_escape(c);
          else out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    const std::size_t n = utf8_sequence(s.substr(i));
    if (n == 0) {
      append_marked_byte(out, c);  // U+FFFD and the byte's two hex digits
      ++i;
      continue;
    }
    const auto b1 = static_cast<unsigned char>(s[i + 1]);
    if (n == 2 && c == 0xc2 && b1 <= 0x9f) {
      u_escape(b1);  // C1 control U+0080-U+009F
    } else if (n == 3 && c == 0xe2 && b1 == 0x80 &&
               (static_cast<unsigned char>(s[i + 2]) == 0xa8 || static_cast<unsigned char>(s[i + 2]) == 0xa9)) {
      u_escape(0x2000u + (static_cast<unsigned char>(s[i + 2]) & 0x3fu));  // U+2028, U+2029
    } else if (marked && s.substr(i, n) == replacement_character) {
      out += replacement_character;  // a literal U+FFFD is written twice
      out += replacement_character;
    } else {
      out += s.substr(i, n);
    }
    i += n;
  }
  out += '"';
}

json_writer& json_writer::begin_object() {
  separate();
  out_ += '{';
  first_.push_back(1);
  return *this;
}

json_writer& json_writer::end_object() {
  out_ += '}';
  first_.pop_back();
  return *this;
}

json_writer& json_writer::begin_array() {
  separate();
  out_ += '[';
  first_.push_back(1);
  return *this;
}

json_writer& json_writer::end_array() {
  out_ += ']';
  first_.pop_back();
  return *this;
}

json_writer& json_writer::key(std::string_view k) {
  separate();
  append_json_string(out_, k);
  out_ += ':';
  after_key_ = true;
  return *this;
}

json_writer& json_writer::value(std::string_view s) {
  separate();
  append_json_string(out_, s);
  return *this;
}

json_writer& json_writer::value(std::uint64_t v) {
  separate();
  char buf[24];
  out_.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  return *this;
}

json_writer& json_writer::value(std::int64_t v) {
  separate();
  char buf[24];
  out_.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  return *this;
}

json_writer& json_writer::value(double v) {
  if (!std::isfinite(v)) return null();
  separate();
  char buf[32];
  char* end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  const std::string_view text(buf, static_cast<std::size_t>(end - buf));
  out_ += text;
  if (text.find_first_of(".e") == std::string_view::npos) out_ += ".0";  // stays a floating-point number
  return *this;
}

json_writer& json_writer::value(bool v) {
  separate();
  out_ += v ? "true" : "false";
  return *this;
}

json_writer& json_writer::null() {
  separate();
  out_ += "null";
  return *this;
}

}  // namespace arenastat::detail
