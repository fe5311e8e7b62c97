// histogram: a log-linear latency histogram with a fixed number of
// significant digits (the idea of HdrHistogram, written for arenastat).
//
//   arenastat::histogram h;                 // 1 ns .. 1 hour, 3 significant digits
//   h.record(elapsed_ns);                   // a few ns, never allocates
//   h.value_at_percentile(99.9);
//
// Layout. Values are grouped in buckets; bucket b covers [2^(b+m) * S/2, 2^(b+m) * S)
// (bucket 0 also covers [0, 2^m * S/2)) split in S/2 sub-buckets of equal width
// 2^(b+m), where m = floor(log2(lowest)) and S = sub_bucket_count() is the smallest
// power of two >= 2 * 10^significant_digits. So every value below S * 2^m is
// stored with an absolute error below 2^m (the unit: lowest is the smallest
// value told apart), and every value >= S/2 * 2^m with a relative error below
// 10^-significant_digits; with lowest = 1 that is every value. (With a larger
// lowest, values between lowest and S/2 * 2^m keep fewer digits: at lowest =
// 1000, 3 digits, the unit is 512 and 1100 shares [1024, 1535] with 1500.)
// The counts array is sized once in the constructor; record() only indexes it.
//
// Values above `highest` are recorded as `highest` and counted in
// clamped_count(). Percentiles are reported as the highest value equivalent to
// (sharing a sub-bucket with) the sample that reaches the percentile, capped at
// max(): the true value lies at or below the figure reported, and within the
// precision above. min() and max() are the exact extreme values recorded
// (after clamping); mean() is exact (the sum is kept in 128 bits).
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace arenastat {

namespace detail {
__extension__ typedef unsigned __int128 uint128;
}  // namespace detail

class histogram {
 public:
  // Throws std::invalid_argument naming the argument when lowest < 1,
  // highest < 2 * lowest, significant_digits is outside 0..5, or lowest is
  // too large for that many digits (lowest's sub-buckets would pass 2^63:
  // e.g. lowest 2^50 with 5 digits).
  explicit histogram(std::uint64_t lowest = 1, std::uint64_t highest = 3'600'000'000'000ull,
                     int significant_digits = 3);

  // Records one sample. Values above highest() are clamped (see clamped_count()).
  void record(std::uint64_t value) noexcept {
    if (value > highest_) [[unlikely]] {
      value = highest_;
      ++clamped_;
    }
    ++counts_[index_of(value)];
    ++total_;
    sum_ += value;
    if (value < min_) min_ = value;
    if (value > max_) max_ = value;
  }

  // Records `value` and, to correct for coordinated omission, the samples a
  // stalled measurement loop hid: value - k * expected_interval for k = 1, 2, ...
  // while that stays >= expected_interval. An expected_interval of 0 records
  // `value` alone. Each of these is clamped as record() clamps it (so the
  // same as record() called for each). Costs O(buckets touched), not
  // O(value / expected_interval).
  void record_corrected(std::uint64_t value, std::uint64_t expected_interval) noexcept;

  // Adds every sample of `other`. Throws std::invalid_argument unless both
  // were built with the same lowest, highest and significant digits.
  void merge(const histogram& other);

  // The value at or below which `percentile` percent of the samples fall
  // (nearest rank; see the header comment for the precision). 0 when empty.
  // Throws std::invalid_argument for a percentile outside 0..100 or NaN.
  std::uint64_t value_at_percentile(double percentile) const;

  // The nearest rank of `percentile` among `count` samples: the smallest r
  // >= 1 with r >= percentile/100 * count, exact in integers, the percentile
  // taken as the shortest decimal of the double (99.9 means 99.9). 0 when
  // count is 0. Throws std::invalid_argument like value_at_percentile.
  static std::uint64_t nearest_rank(double percentile, std::uint64_t count);

  std::uint64_t min() const noexcept { return total_ == 0 ? 0 : min_; }  // 0 when empty
  std::uint64_t max() const noexcept { return max_; }                     // 0 when empty
  double mean() const noexcept;                                            // 0 when empty
  std::uint64_t count() const noexcept { return total_; }
  std::uint64_t clamped_count() const noexcept { return clamped_; }

  // Samples recorded in the sub-bucket that holds `value` (value clamped to highest()).
  std::uint64_t count_at_value(std::uint64_t value) const noexcept;
  // Bounds of the sub-bucket that holds `value`: every value in
  // [lowest_equivalent_value(v), highest_equivalent_value(v)] is counted as v.
  std::uint64_t lowest_equivalent_value(std::uint64_t value) const noexcept;
  std::uint64_t highest_equivalent_value(std::uint64_t value) const noexcept;

  // A printable table, one row per percentile step (5 steps per halving of
  // the remaining 1 - p), up to the row whose rank reaches the last sample
  // (its value is max()). Columns: value / value_scale,
  // percentile (as a fraction), cumulative count, 1/(1-p). Header and footer
  // lines start with '#' so gnuplot reads the rows directly.
  std::string percentile_distribution(double value_scale = 1.0) const;

  // Bytes this histogram holds: the object and its counts array.
  std::size_t footprint_bytes() const noexcept;

  // Forgets every sample; the layout stays.
  void reset() noexcept;

  // Layout observers.
  std::uint64_t lowest() const noexcept { return lowest_; }
  std::uint64_t highest() const noexcept { return highest_; }
  int significant_digits() const noexcept { return digits_; }
  std::uint32_t sub_bucket_count() const noexcept { return std::uint32_t{1} << (half_magnitude_ + 1); }
  std::uint32_t bucket_count() const noexcept { return bucket_count_; }
  std::size_t counts_length() const noexcept { return counts_.size(); }

 private:
  std::size_t index_of(std::uint64_t value) const noexcept {
    // Position of the highest set bit, with every value below the first
    // bucket's top treated as if it were in bucket 0.
    const int pow2_ceiling = 64 - std::countl_zero(value | sub_bucket_mask_);
    const int bucket = pow2_ceiling - unit_magnitude_ - (half_magnitude_ + 1);
    const std::uint64_t sub = value >> (bucket + unit_magnitude_);
    return (static_cast<std::size_t>(bucket + 1) << half_magnitude_) +
           static_cast<std::size_t>(sub - (std::uint64_t{1} << half_magnitude_));
  }
  std::uint64_t value_at_index(std::size_t index) const noexcept;
  std::uint64_t highest_equivalent_at_index(std::size_t index) const noexcept;
  void record_n(std::uint64_t value, std::uint64_t n) noexcept;

  std::uint64_t lowest_;
  std::uint64_t highest_;
  int digits_;
  int unit_magnitude_;        // floor(log2(lowest))
  int half_magnitude_;        // log2(sub_bucket_count / 2)
  std::uint32_t bucket_count_;
  std::uint64_t sub_bucket_mask_;
  std::uint64_t total_ = 0;
  std::uint64_t clamped_ = 0;
  std::uint64_t min_ = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t max_ = 0;
  detail::uint128 sum_ = 0;
  std::vector<std::uint64_t> counts_;
};

}  // namespace arenastat
