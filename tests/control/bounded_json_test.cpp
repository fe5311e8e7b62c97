// parse_bounded_json (stats/control/cli/bounded_json.hpp): the CLI's parse of
// JSON answers stops at a nesting depth and a number of values.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "bounded_json.hpp"

using arenastat::cli::json_bound_exceeded;
using arenastat::cli::parse_bounded_json;

namespace {

std::string nested(int levels) { return std::string(static_cast<std::size_t>(levels), '[') + std::string(static_cast<std::size_t>(levels), ']'); }

}  // namespace

TEST_CASE("parse_bounded_json refuses nesting deeper than max_depth, naming the bound", "[cli][json]") {
  CHECK(parse_bounded_json(nested(8), {.max_depth = 8, .max_values = 100}).dump() == nested(8));
  CHECK_THROWS_MATCHES(parse_bounded_json(nested(9), {.max_depth = 8, .max_values = 100}), json_bound_exceeded,
                       Catch::Message("it nests arrays and objects deeper than 8 levels"));
  CHECK_THROWS_MATCHES(parse_bounded_json(R"({"a":{"b":[{}]}})", {.max_depth = 3, .max_values = 100}),
                       json_bound_exceeded, Catch::Message("it nests arrays and objects deeper than 3 levels"));
  // 20 MB of '[' (an answer that took 1.5 GB to parse): refused at the 9th.
  CHECK_THROWS_MATCHES(parse_bounded_json(std::string(20'000'000, '['), {.max_depth = 8, .max_values = 100}),
                       json_bound_exceeded, Catch::Message("it nests arrays and objects deeper than 8 levels"));
}

TEST_CASE("parse_bounded_json refuses more than max_values values, containers included", "[cli][json]") {
  const std::string five = R"({"a":[1,"x"],"b":null})";  // the object, the array, 1, "x", null: 5 values
  CHECK(parse_bounded_json(five, {.max_depth = 8, .max_values = 5}) ==
        nlohmann::json::parse(five));
  CHECK_THROWS_MATCHES(parse_bounded_json(five, {.max_depth = 8, .max_values = 4}), json_bound_exceeded,
                       Catch::Message("it holds more than 4 values"));
  std::string flat = "[";
  for (int i = 0; i < 1'000'000; ++i) flat += "0,";
  flat += "0]";
  CHECK_THROWS_MATCHES(parse_bounded_json(flat, {.max_depth = 8, .max_values = 1000}), json_bound_exceeded,
                       Catch::Message("it holds more than 1000 values"));
}

TEST_CASE("parse_bounded_json reports a syntax error as nlohmann's parse_error", "[cli][json]") {
  CHECK_THROWS_AS(parse_bounded_json("[1,", {.max_depth = 8, .max_values = 100}), nlohmann::json::parse_error);
}

// escape_for_terminal_in_pieces (stats/control/cli/terminal_text.hpp): the
// CLI escapes a large answer for a terminal a piece at a time.
#include "terminal_text.hpp"

TEST_CASE("an answer escaped for a terminal in pieces equals it escaped whole", "[cli][escape]") {
  // Every kind of byte the escaper treats: ASCII, LF and TAB (kept), C0 and
  // DEL, 2-, 3- and 4-byte UTF-8 (a bidi override among them), C1 controls,
  // a lone continuation byte, a sequence cut short and a byte never in UTF-8.
  const std::string kinds = "ab\n\t\x1b[2J\x7f\xc3\xa9\xe2\x82\xac\xe2\x80\xae\xf0\x9f\x98\x80\xc2\x9b\x80\xe2\x82z\xff";
  std::string text;
  for (int i = 0; i < 50; ++i) text += kinds.substr(static_cast<std::size_t>(i) % kinds.size()) + kinds;
  const std::string whole = arenastat::cli::escape_for_terminal(text, true);
  for (const std::size_t piece : {1, 2, 3, 5, 7, 64, 1000}) {
    std::string joined;
    std::size_t pieces = 0;
    arenastat::cli::escape_for_terminal_in_pieces(text, true, [&](const std::string& p) {
      joined += p;
      ++pieces;
    }, piece);
    INFO("piece " << piece);
    CHECK(joined == whole);
    CHECK(pieces >= text.size() / (piece + 3));  // pieces of about `piece` bytes: never one copy of the whole
  }
}

TEST_CASE("a run of continuation bytes is escaped in pieces of bounded size, equal to the whole", "[cli][escape]") {
  // 1000 lone continuation bytes (invalid UTF-8: each escaped as \x80), after
  // a lead byte: no piece may grow over the run.
  const std::string text = "\xe2" + std::string(1000, '\x80');
  const std::string whole = arenastat::cli::escape_for_terminal(text, true);
  std::string joined;
  std::size_t largest = 0;
  arenastat::cli::escape_for_terminal_in_pieces(text, true, [&](const std::string& p) {
    joined += p;
    largest = std::max(largest, p.size());
  }, 16);
  CHECK(joined == whole);
  CHECK(largest <= (16 + 3) * 4);  // at most piece + 3 bytes in, 4 bytes out each
}
