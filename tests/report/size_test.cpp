// parse_size and human_size: exact values and every malformed form.
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include "arenastat/size.hpp"

using arenastat::human_size;
using arenastat::parse_size;
using Catch::Matchers::Contains;

TEST_CASE("parse_size reads plain byte counts", "[size]") {
  CHECK(parse_size("0") == 0);
  CHECK(parse_size("4096") == 4096);
  CHECK(parse_size("007") == 7);
  CHECK(parse_size("18446744073709551615") == std::numeric_limits<std::uint64_t>::max());
}

TEST_CASE("parse_size suffixes are powers of 1024 in either case", "[size]") {
  CHECK(parse_size("64k") == 65536);
  CHECK(parse_size("64K") == 65536);
  CHECK(parse_size("10m") == 10485760);
  CHECK(parse_size("10M") == 10485760);
  CHECK(parse_size("2g") == 2147483648ULL);
  CHECK(parse_size("2G") == 2147483648ULL);
  CHECK(parse_size("0k") == 0);
  CHECK(parse_size("17179869183g") == (std::uint64_t{17179869183} << 30));
}

TEST_CASE("parse_size rejects malformed text and names it", "[size]") {
  CHECK_THROWS_WITH(parse_size("10x"), Contains("'10x'"));
  CHECK_THROWS_WITH(parse_size(""), Contains("''"));
  CHECK_THROWS_WITH(parse_size("-1"), Contains("'-1'"));
  CHECK_THROWS_WITH(parse_size("1.5m"), Contains("'1.5m'"));
  CHECK_THROWS_WITH(parse_size("k"), Contains("'k'"));
  CHECK_THROWS_WITH(parse_size(" 10"), Contains("' 10'"));
  CHECK_THROWS_WITH(parse_size("10 "), Contains("'10 '"));
  CHECK_THROWS_WITH(parse_size("+5"), Contains("'+5'"));
  CHECK_THROWS_WITH(parse_size("10kb"), Contains("'10kb'"));
  CHECK_THROWS_WITH(parse_size("0x10"), Contains("'0x10'"));
  CHECK_THROWS_AS(parse_size("10x"), std::invalid_argument);
}

TEST_CASE("parse_size says what a malformed size should look like", "[size]") {
  CHECK_THROWS_WITH(parse_size("10x"),
                    "invalid size '10x': expected a whole number of bytes with an optional "
                    "suffix k, m or g (e.g. 4096, 64k, 10m)");
}

TEST_CASE("parse_size rejects values that overflow 64 bits", "[size]") {
  CHECK_THROWS_WITH(parse_size("18446744073709551616"),
                    "invalid size '18446744073709551616': does not fit in 64 bits");
  CHECK_THROWS_WITH(parse_size("17179869184g"), Contains("does not fit in 64 bits"));
  CHECK_THROWS_WITH(parse_size("99999999999999999999999k"), Contains("does not fit in 64 bits"));
}

TEST_CASE("human_size prints bytes below 1 KiB as they are", "[size]") {
  CHECK(human_size(0) == "0B");
  CHECK(human_size(37) == "37B");
  CHECK(human_size(1023) == "1023B");
}

TEST_CASE("human_size prints one decimal below 10 units", "[size]") {
  CHECK(human_size(1024) == "1.0K");
  CHECK(human_size(1536) == "1.5K");
  CHECK(human_size(1075) == "1.0K");  // 1.0498K rounds down
  CHECK(human_size(1076) == "1.1K");  // 1.0508K rounds up
  CHECK(human_size(1572864) == "1.5M");
  CHECK(human_size(std::uint64_t{1} << 30) == "1.0G");
  CHECK(human_size(std::uint64_t{1} << 40) == "1.0T");
  CHECK(human_size(std::uint64_t{3} << 49) == "1.5P");
}

TEST_CASE("human_size prints whole units from 10 up", "[size]") {
  CHECK(human_size(10239) == "10K");  // 9.999K rounds to 10K, not 10.0K
  CHECK(human_size(524288) == "512K");
  CHECK(human_size(1048063) == "1023K");
  CHECK(human_size(std::numeric_limits<std::uint64_t>::max()) == "16E");
}

TEST_CASE("human_size moves up a unit when rounding reaches 1024", "[size]") {
  CHECK(human_size(1048064) == "1.0M");  // 1023.5K
  CHECK(human_size(1048575) == "1.0M");
}
