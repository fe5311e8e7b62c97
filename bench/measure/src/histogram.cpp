// histogram: layout, percentiles, the coordinated-omission fill and the printout.
#include "arenastat/histogram.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace arenastat {

namespace {

constexpr std::uint64_t max_u64 = std::numeric_limits<std::uint64_t>::max();

// Smallest power-of-two exponent e with 2^e >= 2 * 10^digits.
int sub_bucket_count_magnitude(int digits) {
  std::uint64_t single_unit_range = 2;
  for (int i = 0; i < digits; ++i) single_unit_range *= 10;
  int e = 0;
  while ((std::uint64_t{1} << e) < single_unit_range) ++e;
  return e;
}

std::string to_string_u64(std::uint64_t v) { return std::to_string(v); }

}  // namespace

histogram::histogram(std::uint64_t lowest, std::uint64_t highest, int significant_digits)
    : lowest_(lowest), highest_(highest), digits_(significant_digits) {
  if (lowest < 1) throw std::invalid_argument("histogram: lowest must be >= 1, got 0");
  if (significant_digits < 0 || significant_digits > 5)
    throw std::invalid_argument("histogram: significant_digits must be in 0..5, got " +
                                std::to_string(significant_digits));
  if (highest / 2 < lowest)
    throw std::invalid_argument("histogram: highest (" + to_string_u64(highest) +
                                ") must be >= 2 * lowest (" + to_string_u64(lowest) + ")");
  unit_magnitude_ = 63 - std::countl_zero(lowest);
  half_magnitude_ = std::max(sub_bucket_count_magnitude(significant_digits), 1) - 1;
  if (unit_magnitude_ + half_magnitude_ + 1 > 63)
    throw std::invalid_argument("histogram: lowest (" + to_string_u64(lowest) +
                                ") is too large for " + std::to_string(significant_digits) +
                                " significant digits");
  const std::uint64_t sub_buckets = std::uint64_t{1} << (half_magnitude_ + 1);
  sub_bucket_mask_ = (sub_buckets - 1) << unit_magnitude_;

  // Buckets until the first value the layout cannot hold exceeds highest.
  std::uint64_t smallest_untrackable = sub_buckets << unit_magnitude_;
  std::uint32_t buckets = 1;
  while (smallest_untrackable <= highest) {
    if (smallest_untrackable > max_u64 / 2) {
      ++buckets;
      break;
    }
    smallest_untrackable <<= 1;
    ++buckets;
  }
  bucket_count_ = buckets;
  counts_.assign(static_cast<std::size_t>(buckets + 1) << half_magnitude_, 0);
}

std::uint64_t histogram::value_at_index(std::size_t index) const noexcept {
  int bucket = static_cast<int>(index >> half_magnitude_) - 1;
  const std::uint64_t half = std::uint64_t{1} << half_magnitude_;
  std::uint64_t sub = (index & (half - 1)) + half;
  if (bucket < 0) {
    sub -= half;
    bucket = 0;
  }
  return sub << (bucket + unit_magnitude_);
}

std::uint64_t histogram::highest_equivalent_at_index(std::size_t index) const noexcept {
  const std::uint64_t low = value_at_index(index);
  const int bucket = std::max(static_cast<int>(index >> half_magnitude_) - 1, 0);
  return low + ((std::uint64_t{1} << (bucket + unit_magnitude_)) - 1);
}

std::uint64_t histogram::lowest_equivalent_value(std::uint64_t value) const noexcept {
  return value_at_index(index_of(std::min(value, highest_)));
}

std::uint64_t histogram::highest_equivalent_value(std::uint64_t value) const noexcept {
  return highest_equivalent_at_index(index_of(std::min(value, highest_)));
}

std::uint64_t histogram::count_at_value(std::uint64_t value) const noexcept {
  return counts_[index_of(std::min(value, highest_))];
}

void histogram::record_n(std::uint64_t value, std::uint64_t n) noexcept {
  counts_[index_of(value)] += n;
  total_ += n;
  sum_ += static_cast<detail::uint128>(value) * n;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
}

void histogram::record_corrected(std::uint64_t value, std::uint64_t expected_interval) noexcept {
  record(value);
  if (expected_interval == 0 || value / expected_interval < 2) return;
  // The hidden samples are value - k*interval (k = 1..K) while >= interval:
  // an arithmetic run from `first` up to `last` with step `interval`.
  const std::uint64_t step = expected_interval;
  std::uint64_t next = value % step + step;
  const std::uint64_t last = value - step;
  while (next <= last) {
    if (next > highest_) {  // the rest of the run is clamped
      const std::uint64_t n = (last - next) / step + 1;
      clamped_ += n;
      record_n(highest_, n);
      return;
    }
    // Every run member up to the end of next's sub-bucket lands in one count
    // (the last bucket reaches past highest: members above it are clamped).
    const std::uint64_t top = std::min({highest_equivalent_value(next), last, highest_});
    const std::uint64_t n = (top - next) / step + 1;
    const std::uint64_t run_last = next + (n - 1) * step;
    counts_[index_of(next)] += n;
    total_ += n;
    sum_ += (static_cast<detail::uint128>(next) + run_last) * n / 2;
    min_ = std::min(min_, next);
    max_ = std::max(max_, run_last);
    if (run_last > last - step) return;  // run_last + step would pass last
    next = run_last + step;
  }
}

void histogram::merge(const histogram& other) {
  if (other.lowest_ != lowest_ || other.highest_ != highest_ || other.digits_ != digits_)
    throw std::invalid_argument(
        "histogram::merge: layouts differ (lowest/highest/significant_digits " +
        to_string_u64(lowest_) + "/" + to_string_u64(highest_) + "/" + std::to_string(digits_) +
        " vs " + to_string_u64(other.lowest_) + "/" + to_string_u64(other.highest_) + "/" +
        std::to_string(other.digits_) + ")");
  for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  total_ += other.total_;
  clamped_ += other.clamped_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

namespace {

// Nearest rank: the smallest rank r with r >= p/100 * count, at least 1,
// computed exactly in integers. The percentile is taken as the decimal it
// was written as (the shortest decimal that converts to the same double: the
// double nearest 99.9 is slightly above 99.9, yet 99.9 of 1000 samples is
// rank 999), then rank = ceil(digits * count / (100 * 10^scale)).
__extension__ typedef unsigned __int128 u128;

std::uint64_t rank_at(double percentile, std::uint64_t count) {
  if (count == 0) return 0;
  if (percentile == 0.0) return 1;  // -0.0 too (its text "-0" is not digits)
  char text[64];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, percentile);
  if (ec != std::errc()) return 1;  // cannot happen for 0..100
  u128 digits = 0;
  int scale = 0;  // digits after the decimal point
  bool point = false;
  const char* c = text;
  for (; c != end && *c != 'e'; ++c) {
    if (*c == '.') {
      point = true;
      continue;
    }
    digits = digits * 10 + static_cast<unsigned>(*c - '0');
    scale += point;
  }
  if (c != end) {  // "1e-05": a negative exponent adds to the scale; a positive one multiplies
    int exponent = 0;
    std::from_chars(c + 1 + (c[1] == '+'), end, exponent);
    scale -= exponent;
  }
  for (; scale < 0; ++scale) digits *= 10;
  // 100 * 10^scale overflows 128 bits past scale 36, where p/100 * count < 1.
  if (scale > 36) return 1;
  u128 denominator = 100;
  for (int i = 0; i < scale; ++i) denominator *= 10;
  const u128 numerator = digits * count;  // < 10^17 * 2^64 < 2^121
  const u128 r = (numerator + denominator - 1) / denominator;
  return static_cast<std::uint64_t>(std::clamp<u128>(r, 1, count));
}

// Appends printf-formatted text of any length (a tiny value_scale makes a
// value hundreds of digits long).
[[gnu::format(printf, 2, 3)]] void append_format(std::string& out, const char* format, ...) {
  std::va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  if (n > 0) {
    const std::size_t at = out.size();
    out.resize(at + static_cast<std::size_t>(n) + 1);
    std::vsnprintf(out.data() + at, static_cast<std::size_t>(n) + 1, format, again);
    out.resize(at + static_cast<std::size_t>(n));
  }
  va_end(again);
}

void check_percentile(double percentile) {
  if (!(percentile >= 0.0 && percentile <= 100.0))
    throw std::invalid_argument("histogram: percentile must be in 0..100, got " +
                                std::to_string(percentile));
}

}  // namespace

std::uint64_t histogram::nearest_rank(double percentile, std::uint64_t count) {
  check_percentile(percentile);
  return rank_at(percentile, count);
}

std::uint64_t histogram::value_at_percentile(double percentile) const {
  check_percentile(percentile);
  if (total_ == 0) return 0;
  const std::uint64_t rank = rank_at(percentile, total_);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::min(highest_equivalent_at_index(i), max_);
  }
  return max_;
}

double histogram::mean() const noexcept {
  if (total_ == 0) return 0.0;
  return static_cast<double>(sum_) / static_cast<double>(total_);
}

std::string histogram::percentile_distribution(double value_scale) const {
  if (!(value_scale > 0.0) || !std::isfinite(value_scale))
    throw std::invalid_argument("histogram::percentile_distribution: value_scale must be > 0, got " +
                                std::to_string(value_scale));
  std::string out;
  append_format(out, "# %12s %14s %12s %18s\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)");
  constexpr int ticks_per_half = 5;
  std::size_t index = 0;
  std::uint64_t seen = counts_.empty() ? 0 : counts_[0];
  double p = 0.0;
  for (int row = 0; total_ != 0 && row < 4000; ++row) {
    const std::uint64_t rank = rank_at(p, total_);
    while (seen < rank && index + 1 < counts_.size()) seen += counts_[++index];
    const std::uint64_t value = std::min(highest_equivalent_at_index(index), max_);
    const double fraction = p / 100.0;
    append_format(out, "  %12.3f %14.12f %12llu %18.2f\n", static_cast<double>(value) / value_scale, fraction,
                  static_cast<unsigned long long>(seen), 1.0 / (1.0 - fraction));
    if (rank >= total_) break;
    // Step: 100 / (ticks * 2^(h+1)) where h halvings of the rest are done.
    int halvings = 0;
    double rest = 100.0 / 2.0;
    while (100.0 - p <= rest && halvings < 60) {
      rest /= 2.0;
      ++halvings;
    }
    p += 100.0 / (ticks_per_half * std::ldexp(1.0, halvings + 1));
  }
  append_format(out, "# Mean = %.3f, Min = %.3f, Max = %.3f\n", mean() / value_scale,
                static_cast<double>(min()) / value_scale, static_cast<double>(max_) / value_scale);
  append_format(out, "# Total count = %llu, Clamped = %llu, Buckets = %u, SubBuckets = %u\n",
                static_cast<unsigned long long>(total_), static_cast<unsigned long long>(clamped_),
                bucket_count_, sub_bucket_count());
  return out;
}

std::size_t histogram::footprint_bytes() const noexcept {
  return sizeof(*this) + counts_.capacity() * sizeof(std::uint64_t);
}

void histogram::reset() noexcept {
  std::fill(counts_.begin(), counts_.end(), 0);
  total_ = 0;
  clamped_ = 0;
  min_ = max_u64;
  max_ = 0;
  sum_ = 0;
}

}  // namespace arenastat
