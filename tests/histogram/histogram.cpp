// arenastat::histogram: layout, bucket boundaries, percentiles, the
// coordinated-omission fill, merge, clamping, bad arguments, the printout.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "arenastat/histogram.hpp"

using arenastat::histogram;

namespace {

struct row {
  double value;
  double fraction;
  std::uint64_t cumulative;
  double inverse;
};

std::vector<row> data_rows(const std::string& table) {
  std::vector<row> rows;
  std::istringstream in(table);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    row r{};
    fields >> r.value >> r.fraction >> r.cumulative >> r.inverse;
    REQUIRE(fields);
    rows.push_back(r);
  }
  return rows;
}

}  // namespace

TEST_CASE("default layout: 2048 sub-buckets, 32 buckets, exact counts length", "[histogram]") {
  histogram h;
  // 3 digits: the smallest power of two >= 2 * 10^3 is 2048.
  CHECK(h.sub_bucket_count() == 2048);
  // 2048 << 31 = 2^42 is the first untrackable top above 3.6e12 (2^41 < 3.6e12).
  CHECK(h.bucket_count() == 32);
  CHECK(h.counts_length() == 33 * 1024);
  CHECK(h.footprint_bytes() == sizeof(histogram) + 33 * 1024 * sizeof(std::uint64_t));
  CHECK(h.lowest() == 1);
  CHECK(h.highest() == 3'600'000'000'000ull);
  CHECK(h.significant_digits() == 3);
}

TEST_CASE("sub-bucket count follows the significant digits", "[histogram]") {
  CHECK(histogram(1, 1000, 0).sub_bucket_count() == 2);
  CHECK(histogram(1, 1000, 1).sub_bucket_count() == 32);
  CHECK(histogram(1, 1000, 2).sub_bucket_count() == 256);
  CHECK(histogram(1, 1'000'000, 5).sub_bucket_count() == 262144);
}

TEST_CASE("bucket boundaries: exact below 2048, then widths 2, 4, 8", "[histogram]") {
  histogram h;
  for (std::uint64_t v : {0ull, 1ull, 1000ull, 2047ull}) {
    CHECK(h.lowest_equivalent_value(v) == v);
    CHECK(h.highest_equivalent_value(v) == v);
  }
  CHECK(h.lowest_equivalent_value(2048) == 2048);
  CHECK(h.highest_equivalent_value(2048) == 2049);
  CHECK(h.lowest_equivalent_value(2049) == 2048);
  CHECK(h.lowest_equivalent_value(4095) == 4094);
  CHECK(h.highest_equivalent_value(4095) == 4095);
  CHECK(h.lowest_equivalent_value(4096) == 4096);
  CHECK(h.highest_equivalent_value(4096) == 4099);
  CHECK(h.lowest_equivalent_value(8191) == 8188);
  CHECK(h.highest_equivalent_value(8192) == 8199);
  CHECK(h.lowest_equivalent_value(10000) == 10000);
  CHECK(h.highest_equivalent_value(10001) == 10007);
}

TEST_CASE("relative error stays below 10^-digits across the range", "[histogram]") {
  histogram h;
  for (std::uint64_t v = 2048; v < 3'000'000'000'000ull; v = v * 3 + 7) {
    const auto lo = h.lowest_equivalent_value(v);
    const auto hi = h.highest_equivalent_value(v);
    INFO("v = " << v);
    REQUIRE(lo <= v);
    REQUIRE(v <= hi);
    CHECK(static_cast<double>(hi - lo) / static_cast<double>(lo) < 1e-3);
  }
}

TEST_CASE("a lowest of 1000 makes the unit 512", "[histogram]") {
  histogram h(1000, 1'000'000'000, 3);
  CHECK(h.highest_equivalent_value(0) == 511);
  CHECK(h.lowest_equivalent_value(1000) == 512);
  CHECK(h.highest_equivalent_value(1000) == 1023);
  h.record(1000);
  h.record(1020);
  CHECK(h.count_at_value(600) == 2);
}

TEST_CASE("percentiles of 1..100 are the nearest ranks", "[histogram]") {
  histogram h;
  for (std::uint64_t v = 1; v <= 100; ++v) h.record(v);
  CHECK(h.count() == 100);
  CHECK(h.value_at_percentile(0) == 1);
  CHECK(h.value_at_percentile(1) == 1);
  CHECK(h.value_at_percentile(50) == 50);
  CHECK(h.value_at_percentile(50.5) == 51);
  CHECK(h.value_at_percentile(99) == 99);
  CHECK(h.value_at_percentile(99.9) == 100);
  CHECK(h.value_at_percentile(100) == 100);
  CHECK(h.min() == 1);
  CHECK(h.max() == 100);
  CHECK(h.mean() == 50.5);
}

TEST_CASE("p99.9 of 1..1000 is 999 despite binary rounding", "[histogram]") {
  histogram h;
  for (std::uint64_t v = 1; v <= 1000; ++v) h.record(v);
  CHECK(h.value_at_percentile(99.9) == 999);
  CHECK(h.value_at_percentile(99.99) == 1000);
  CHECK(h.value_at_percentile(29) == 290);
  CHECK(h.value_at_percentile(7) == 70);
}

TEST_CASE("percentiles report the highest equivalent value, capped at max", "[histogram]") {
  histogram h;
  h.record(10000);  // sub-bucket [10000, 10007]
  h.record(20000);  // sub-bucket [20000, 20015]
  CHECK(h.value_at_percentile(50) == 10007);
  CHECK(h.value_at_percentile(100) == 20000);
  CHECK(h.max() == 20000);
  CHECK(h.min() == 10000);
}

TEST_CASE("an empty histogram reports zeros", "[histogram]") {
  histogram h;
  CHECK(h.count() == 0);
  CHECK(h.min() == 0);
  CHECK(h.max() == 0);
  CHECK(h.mean() == 0.0);
  CHECK(h.value_at_percentile(99) == 0);
}

TEST_CASE("mean is exact for large values", "[histogram]") {
  histogram h(1, std::numeric_limits<std::uint64_t>::max(), 2);
  const std::uint64_t big = std::uint64_t{1} << 62;
  h.record(big);
  h.record(big);
  h.record(big);
  h.record(big + 4);
  CHECK(h.mean() == static_cast<double>(big) + 1.0);
}

TEST_CASE("record_corrected fills value - k*interval while >= interval", "[histogram]") {
  // Hand-computed: 10 with interval 3 hides 7 and 4 (1 is below the interval).
  histogram h;
  h.record_corrected(10, 3);
  CHECK(h.count() == 3);
  CHECK(h.count_at_value(10) == 1);
  CHECK(h.count_at_value(7) == 1);
  CHECK(h.count_at_value(4) == 1);
  CHECK(h.count_at_value(1) == 0);
  CHECK(h.min() == 4);
  CHECK(h.max() == 10);
  CHECK(h.mean() == 7.0);
}

TEST_CASE("a 100 ms stall at a 10 ms interval becomes 10 samples", "[histogram]") {
  histogram h;
  h.record_corrected(100, 10);  // 100, 90, ..., 10
  CHECK(h.count() == 10);
  CHECK(h.mean() == 55.0);
  CHECK(h.value_at_percentile(50) == 50);
  CHECK(h.value_at_percentile(90) == 90);
  CHECK(h.min() == 10);
}

TEST_CASE("record_corrected adds nothing below two intervals or with interval 0", "[histogram]") {
  histogram h;
  h.record_corrected(15, 10);
  CHECK(h.count() == 1);
  h.record_corrected(20, 10);  // 20 and 10
  CHECK(h.count() == 3);
  CHECK(h.count_at_value(10) == 1);
  h.record_corrected(1000, 0);
  CHECK(h.count() == 4);
}

TEST_CASE("the bulk fill matches a sample-by-sample fill", "[histogram]") {
  histogram bulk;
  histogram naive;
  const std::uint64_t value = 5'000'003;
  const std::uint64_t interval = 3;
  bulk.record_corrected(value, interval);
  naive.record(value);
  for (std::uint64_t v = value - interval; v >= interval; v -= interval) naive.record(v);
  CHECK(bulk.count() == naive.count());
  CHECK(bulk.count() == value / interval);
  CHECK(bulk.min() == naive.min());
  CHECK(bulk.max() == naive.max());
  CHECK(bulk.mean() == naive.mean());
  for (std::uint64_t v = 0; v <= value; v = naive.highest_equivalent_value(v) + 1) {
    INFO("v = " << v);
    REQUIRE(bulk.count_at_value(v) == naive.count_at_value(v));
  }
}

TEST_CASE("values above highest are clamped and counted", "[histogram]") {
  histogram h(1, 1000, 3);
  h.record(5000);
  h.record(7);
  CHECK(h.clamped_count() == 1);
  CHECK(h.count() == 2);
  CHECK(h.max() == 1000);
  CHECK(h.count_at_value(1000) == 1);
  CHECK(h.value_at_percentile(100) == 1000);
}

TEST_CASE("the coordinated-omission fill clamps the hidden samples above highest", "[histogram]") {
  histogram h(1, 1000, 3);
  h.record_corrected(3000, 1000);  // 3000 and 2000 are clamped, 1000 fits
  CHECK(h.count() == 3);
  CHECK(h.clamped_count() == 2);
  CHECK(h.count_at_value(1000) == 3);
  CHECK(h.mean() == 1000.0);
}

TEST_CASE("the fill clamps hidden samples in the bucket that reaches past highest", "[histogram]") {
  // highest 5000: the last bucket (4096..8191, sub-buckets of 2) holds 5001
  // and 5002, which the fill recorded unclamped (max 5002, clamped 1).
  histogram bulk(1, 5000, 3), naive(1, 5000, 3);
  bulk.record_corrected(5003, 1);
  for (std::uint64_t v = 1; v <= 5003; ++v) naive.record(v);  // 5003 down to 1
  CHECK(bulk.max() == 5000);
  CHECK(bulk.clamped_count() == 3);  // 5003, 5002, 5001
  CHECK(bulk.count() == 5003);
  CHECK(bulk.mean() == naive.mean());
  CHECK(bulk.percentile_distribution() == naive.percentile_distribution());
  // The default layout: a 3601 s stall at 1 ms hides 1000 samples above 3600 s.
  histogram h;
  h.record_corrected(3'601'000'000'000ull, 1'000'000);
  CHECK(h.max() == 3'600'000'000'000ull);
  CHECK(h.value_at_percentile(100) == 3'600'000'000'000ull);
  CHECK(h.clamped_count() == 1000);
  CHECK(h.count() == 3'601'000);
}

TEST_CASE("a percentile of -0.0 is the percentile 0", "[histogram]") {
  histogram h;
  for (std::uint64_t v : {100, 200, 300, 400, 500}) h.record(v);
  CHECK(histogram::nearest_rank(-0.0, 5) == 1);
  CHECK(h.value_at_percentile(-0.0) == 100);
  CHECK(h.value_at_percentile(0.0) == 100);
}

TEST_CASE("the percentile distribution keeps its rows whole at any scale", "[histogram]") {
  // At a scale of 1e-300 a value is over 300 digits long: rows were cut at
  // 160 bytes, losing their newline, and the footer joined the last row.
  histogram h;
  for (std::uint64_t v = 1; v <= 100; ++v) h.record(v);
  const std::string plain = h.percentile_distribution(1.0), tiny = h.percentile_distribution(1e-300);
  const auto lines_of = [](const std::string& t) {
    std::vector<std::string> lines;
    std::istringstream in(t);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  };
  const std::vector<std::string> a = lines_of(plain), b = lines_of(tiny);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(b[i]);
    CHECK(a[i].substr(0, 2) == b[i].substr(0, 2));  // "# " or "  ": the same kind of line
    if (b[i][0] != '#') CHECK(b[i].size() > 300);
  }
  CHECK(b.back().rfind("# Total count = 100,", 0) == 0);
}

TEST_CASE("merge adds counts, totals and extremes", "[histogram]") {
  histogram a;
  histogram b;
  for (std::uint64_t v = 1; v <= 50; ++v) a.record(v);
  for (std::uint64_t v = 51; v <= 100; ++v) b.record(v);
  b.record(1'000'000'000'000'000ull);  // clamped
  a.merge(b);
  CHECK(a.count() == 101);
  CHECK(a.clamped_count() == 1);
  CHECK(a.min() == 1);
  CHECK(a.max() == 3'600'000'000'000ull);
  CHECK(a.value_at_percentile(50) == 51);
  CHECK(b.count() == 51);  // the source is unchanged
}

TEST_CASE("merge rejects a different layout", "[histogram]") {
  histogram a;
  CHECK_THROWS_WITH(a.merge(histogram(1, 3'600'000'000'000ull, 2)),
                    Catch::Contains("layouts differ"));
  CHECK_THROWS_AS(a.merge(histogram(2, 3'600'000'000'000ull, 3)), std::invalid_argument);
  CHECK_THROWS_AS(a.merge(histogram(1, 1000, 3)), std::invalid_argument);
}

TEST_CASE("bad constructor arguments throw naming the argument", "[histogram]") {
  CHECK_THROWS_WITH(histogram(0, 1000, 3), Catch::Contains("lowest"));
  CHECK_THROWS_WITH(histogram(10, 19, 3), Catch::Contains("highest"));
  CHECK_NOTHROW(histogram(10, 20, 3));
  CHECK_THROWS_WITH(histogram(1, 1000, -1), Catch::Contains("significant_digits"));
  CHECK_THROWS_WITH(histogram(1, 1000, 6), Catch::Contains("significant_digits"));
  CHECK_THROWS_WITH(histogram(std::uint64_t{1} << 60, std::numeric_limits<std::uint64_t>::max(), 3),
                    Catch::Contains("too large"));
}

TEST_CASE("a bad percentile throws", "[histogram]") {
  histogram h;
  h.record(1);
  CHECK_THROWS_AS(h.value_at_percentile(-0.1), std::invalid_argument);
  CHECK_THROWS_AS(h.value_at_percentile(100.01), std::invalid_argument);
  CHECK_THROWS_WITH(h.value_at_percentile(std::nan("")), Catch::Contains("percentile"));
}

TEST_CASE("reset forgets the samples and keeps the layout", "[histogram]") {
  histogram h(1, 1000, 2);
  h.record(5);
  h.record(5000);
  h.reset();
  CHECK(h.count() == 0);
  CHECK(h.clamped_count() == 0);
  CHECK(h.max() == 0);
  CHECK(h.min() == 0);
  CHECK(h.count_at_value(5) == 0);
  CHECK(h.sub_bucket_count() == 256);
  h.record(3);
  CHECK(h.min() == 3);
}

TEST_CASE("the percentile distribution steps by halvings and ends at the max", "[histogram]") {
  histogram h;
  for (std::uint64_t v = 1; v <= 100; ++v) h.record(v * 1000);
  const std::string table = h.percentile_distribution(1000.0);
  REQUIRE(table.rfind("#", 0) == 0);
  CHECK(table.find("# Total count = 100, Clamped = 0") != std::string::npos);
  const auto rows = data_rows(table);
  REQUIRE(rows.size() >= 12);
  // 0, 10, ..., 50 % (step 10), then 55 % (step 5).
  CHECK(rows[0].fraction == 0.0);
  CHECK(rows[0].value == 1.0);
  CHECK(rows[5].fraction == 0.5);
  // 50000 and 55000 sit in sub-buckets 16 wide: [50000, 50015] and [54992, 55007].
  CHECK(rows[5].value == 50.015);
  CHECK(rows[5].cumulative == 50);
  CHECK(rows[5].inverse == 2.0);
  CHECK(rows[6].fraction == 0.55);
  CHECK(rows[6].value == 55.007);
  CHECK(rows.back().value == 100.0);
  CHECK(rows.back().cumulative == 100);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    CHECK(rows[i].fraction > rows[i - 1].fraction);
    CHECK(rows[i].value >= rows[i - 1].value);
  }
}

TEST_CASE("the percentile distribution rejects a bad scale", "[histogram]") {
  histogram h;
  CHECK_THROWS_AS(h.percentile_distribution(0.0), std::invalid_argument);
  CHECK_THROWS_AS(h.percentile_distribution(-1.0), std::invalid_argument);
}

TEST_CASE("a percentile just above a rank boundary takes the next rank", "[histogram]") {
  arenastat::histogram h;
  h.record(1);
  h.record(2);
  CHECK(h.value_at_percentile(50) == 1);                 // rank ceil(0.5 * 2) = 1
  CHECK(h.value_at_percentile(50.0000000000001) == 2);   // rank ceil(1.000000000000002) = 2
}

TEST_CASE("nearest ranks are exact at any sample count", "[histogram]") {
  using arenastat::histogram;
  CHECK(histogram::nearest_rank(99.9, 1000) == 999);  // the decimal 99.9, not the double above it
  CHECK(histogram::nearest_rank(100, 7) == 7);
  CHECK(histogram::nearest_rank(0, 7) == 1);
  CHECK(histogram::nearest_rank(1e-5, 7) == 1);
  CHECK(histogram::nearest_rank(50, 0) == 0);
  // 10^13 samples: 99.99% is rank 9,999 x 10^9 exactly (a slack relative to the
  // rank would land about ten ranks low here).
  CHECK(histogram::nearest_rank(99.99, 10'000'000'000'000ull) == 9'999'000'000'000ull);
  CHECK(histogram::nearest_rank(99.99, 10'000'000'000'001ull) == 9'999'000'000'001ull);
  CHECK(histogram::nearest_rank(12.5, UINT64_MAX) == UINT64_MAX / 8 + 1);
}
