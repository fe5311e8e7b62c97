// Tag registration: one id per name, and the names refused with a reason.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "arenastat/tags.hpp"

using arenastat::register_tag;
using arenastat::tag_count;
using arenastat::tag_name;

TEST_CASE("a tag name registers once and keeps its id", "[tags]") {
  const arenastat::tag_id a = register_tag("tags-test/once");
  const std::size_t count = tag_count();
  CHECK(register_tag("tags-test/once") == a);
  CHECK(tag_count() == count);
  CHECK(tag_name(a) == "tags-test/once");
}

TEST_CASE("a tag name with a control byte is refused and takes no id", "[tags]") {
  const std::size_t count = tag_count();
  // A NUL would have cut the stored name and registered it again on every call.
  for (const std::string& bad : {std::string("nul\0t", 5), std::string("line\nbreak"), std::string("del\x7f"),
                                 std::string("\x1b[2J")}) {
    INFO(bad);
    CHECK_THROWS_AS(register_tag(bad), std::invalid_argument);
  }
  CHECK(tag_count() == count);
  CHECK_THROWS_WITH(register_tag(std::string("nul\0t", 5)),
                    "arenastat: tag name 'nul\\x00t' has a control byte (0x00-0x1f or 0x7f)");
}

TEST_CASE("an empty or over-long tag name is refused with its reason", "[tags]") {
  CHECK_THROWS_WITH(register_tag(""), "arenastat: empty tag name");
  const std::string long_name(arenastat::max_tag_name + 1, 'x');
  CHECK_THROWS_WITH(register_tag(long_name),
                    "arenastat: tag name '" + long_name + "' is longer than 23 characters");
  CHECK_NOTHROW(register_tag(std::string(arenastat::max_tag_name, 'y')));
}
