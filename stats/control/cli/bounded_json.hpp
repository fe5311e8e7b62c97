// A JSON parse with bounds, for answers the CLI did not write itself. A parsed
// document costs far more memory than its text (every value is a node, every
// array and object a container: 20 MB of '[' took 1.5 GB), so an answer of up
// to 256 MiB from a hostile or broken server must not be parsed unbounded.
// Header-only: the CLI is not linked with the library, and the tests include
// it directly.
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

namespace arenastat::cli {

struct json_bounds {
  int max_depth;           // arrays and objects nested in one another, the outermost included
  std::size_t max_values;  // values of any kind, arrays and objects included
};

// What bound a document exceeded: "it nests arrays and objects deeper than 8
// levels", "it holds more than 9216 values".
class json_bound_exceeded : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses `text`, giving up as soon as it nests deeper or holds more values
// than `bounds` allow (json_bound_exceeded), so what is built before that is
// bounded too. A syntax error throws nlohmann::json::parse_error.
inline nlohmann::json parse_bounded_json(std::string_view text, const json_bounds& bounds) {
  using event = nlohmann::json::parse_event_t;
  std::size_t values = 0;
  const auto check = [&](int depth, event e, nlohmann::json&) {
    // `depth` counts the arrays and objects around the event's value.
    const bool opens = e == event::object_start || e == event::array_start;
    if (opens && depth + 1 > bounds.max_depth) {
      throw json_bound_exceeded("it nests arrays and objects deeper than " + std::to_string(bounds.max_depth) +
                                " levels");
    }
    if ((opens || e == event::value) && ++values > bounds.max_values) {
      throw json_bound_exceeded("it holds more than " + std::to_string(bounds.max_values) + " values");
    }
    return true;
  };
  return nlohmann::json::parse(text.begin(), text.end(), check);
}

}  // namespace arenastat::cli
