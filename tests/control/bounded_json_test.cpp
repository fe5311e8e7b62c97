// parse_bounded_json (stats/control/cli/bounded_json.hpp): the CLI's parse of
// JSON answers stops at a nesting depth and a number of values.
#include <catch2/catch.hpp>

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
