// The one JSON writer of the reports, the diff and the control commands:
// compact (no blanks, one line), keys in the order written, appended straight
// to a string (no document tree). Valid JSON for any byte string: strings
// escape '"', '\\', every control character (U+0000-U+001F, U+007F-U+009F)
// and U+2028/U+2029 as \uXXXX (or \n \t \r \b \f), and write each byte
// that is not part of well-formed UTF-8 as U+FFFD and its two hex digits
// (a literal U+FFFD in such a string twice), so that distinct names stay
// distinct (text_escape.hpp). Not installed.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace arenastat::detail {

class json_writer {
 public:
  explicit json_writer(std::string& out) : out_(out) {}

  json_writer& begin_object();
  json_writer& end_object();
  json_writer& begin_array();
  json_writer& end_array();
  json_writer& key(std::string_view k);

  json_writer& value(std::string_view s);
  json_writer& value(const char* s) { return value(std::string_view(s)); }
  json_writer& value(std::uint64_t v);
  json_writer& value(std::int64_t v);
  json_writer& value(int v) { return value(static_cast<std::int64_t>(v)); }
  json_writer& value(unsigned v) { return value(static_cast<std::uint64_t>(v)); }
  json_writer& value(long long v) { return value(static_cast<std::int64_t>(v)); }
  json_writer& value(unsigned long long v) { return value(static_cast<std::uint64_t>(v)); }
  json_writer& value(double v);  // shortest round-trip form; NaN and infinities as null
  json_writer& value(bool v);
  json_writer& null();

  template <class T>
  json_writer& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

 private:
  // The comma before a member or element, unless it is its container's first
  // (or the value after a key).
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = 0;
    }
  }
  std::string& out_;
  std::vector<unsigned char> first_;  // per open container: 1 while nothing is written in it
  bool after_key_ = false;
};

// Appends `s` as a JSON string (quotes included).
void append_json_string(std::string& out, std::string_view s);

}  // namespace arenastat::detail
