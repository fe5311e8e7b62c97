// frequency_sketch: a count-min sketch of 4-bit counters for TinyLFU
// admission, kept inside the cache's hash table.
//
// Layout: the table is made of 64-byte lines, each holding 8 slots (32 bytes)
// followed by 64 counters in four 64-bit rows of 16 (32 bytes). A key's
// counters are one per row in the line of its home slot, so recording an
// access touches the line the lookup loads anyway (a separate sketch array
// cost about one more memory access per operation: docs/cache.md). At the
// table's load factor (at most 3/4) a line serves about 6 entries: 10.7
// counters per entry. frequency() is the minimum of the key's 4 counters.
// Conservative update (the default): an increment raises only the counters
// equal to that minimum, which keeps collisions from inflating estimates.
// Aging: after SampleFactor x capacity counted increments (its own, and those
// the policy counts in cached entries: count_addition) every counter is halved
// (TinyLFU's reset), so the sketch follows a changing popularity. The policy
// counts accesses to keys it holds in its entries (tinylfu_policy.hpp); an
// entry leaving hands its count back with raise().
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "arenastat/cache/detail/table_line.hpp"

namespace arenastat {

template <unsigned SampleFactor = 20, bool Conservative = true>
class frequency_sketch {
  static_assert(SampleFactor >= 1);

 public:
  static constexpr std::uint32_t max_count = 15;

  void configure(std::size_t capacity) noexcept {
    sample_size_ = SampleFactor * static_cast<std::uint64_t>(capacity);
  }
  // The lined table whose lines hold the counters (detail/table_line.hpp;
  // slot_count a multiple of line_slots, its counters zero); detach() before
  // it is freed.
  void attach(std::uint32_t* table, std::uint32_t slot_count) noexcept {
    table_ = table;
    slot_count_ = slot_count;
    additions_ = 0;
  }
  void detach() noexcept {
    table_ = nullptr;
    additions_ = 0;
  }

  // Branch-free on the counters' values (which counters rise depends on
  // the data: branching on them mispredicted often). Returns true when this
  // increment completed a sample and every counter was halved.
  bool increment(std::uint32_t h) noexcept {
    if (!table_) return false;
    std::uint64_t* row = rows(h);
    const std::uint64_t g = spread(h);
    unsigned shift[4];
    std::uint32_t c[4];
    for (unsigned i = 0; i < 4; ++i) {
      shift[i] = nibble(g, i) * 4;
      c[i] = static_cast<std::uint32_t>((row[i] >> shift[i]) & 15);
    }
    if constexpr (Conservative) {
      const std::uint32_t m01 = c[0] < c[1] ? c[0] : c[1];
      const std::uint32_t m23 = c[2] < c[3] ? c[2] : c[3];
      const std::uint32_t floor = m01 < m23 ? m01 : m23;
      if (floor >= max_count) return false;
      for (unsigned i = 0; i < 4; ++i) row[i] += static_cast<std::uint64_t>(c[i] == floor) << shift[i];
    } else {
      bool added = false;
      for (unsigned i = 0; i < 4; ++i) {
        const bool up = c[i] < max_count;
        row[i] += static_cast<std::uint64_t>(up) << shift[i];
        added |= up;
      }
      if (!added) return false;
    }
    return count_addition();
  }

  // An increment counted elsewhere (an entry's own counter, kept by the
  // policy) that counts toward the sample; true when it completed one and
  // every counter was halved (the policy then halves its own).
  bool count_addition() noexcept {
    if (++additions_ < sample_size_) [[likely]] return false;
    halve();
    return true;
  }

  // Raises each of h's counters to at least f (f <= max_count): an entry
  // leaving the cache hands back the count it kept while cached.
  void raise(std::uint32_t h, std::uint32_t f) noexcept {
    if (!table_) return;
    std::uint64_t* row = rows(h);
    const std::uint64_t g = spread(h);
    for (unsigned i = 0; i < 4; ++i) {
      const unsigned shift = nibble(g, i) * 4;
      const auto c = static_cast<std::uint32_t>((row[i] >> shift) & 15);
      row[i] += static_cast<std::uint64_t>(c < f ? f - c : 0) << shift;
    }
  }


  // Starts loading h's line.
  void prefetch(std::uint32_t h) const noexcept {
    if (table_) __builtin_prefetch(rows(h));
  }

  std::uint32_t frequency(std::uint32_t h) const noexcept {
    if (!table_) return 0;
    const std::uint64_t* row = rows(h);
    const std::uint64_t g = spread(h);
    std::uint32_t f = max_count;
    for (unsigned i = 0; i < 4; ++i) {
      const auto c = static_cast<std::uint32_t>((row[i] >> (nibble(g, i) * 4)) & 15);
      f = c < f ? c : f;
    }
    return f;
  }

  // Halves every counter (the TinyLFU reset).
  [[gnu::noinline]] void halve() noexcept {
    for (std::uint32_t line = 0; line < slot_count_ / detail::line_slots; ++line) {
      std::uint64_t* row = line_rows(line);
      for (unsigned i = 0; i < 4; ++i) row[i] = (row[i] >> 1) & 0x7777777777777777ull;
    }
    additions_ /= 2;
    ++halvings_;
  }
  void clear() noexcept {
    if (table_)
      for (std::uint32_t line = 0; line < slot_count_ / detail::line_slots; ++line)
        std::memset(line_rows(line), 0, 4 * sizeof(std::uint64_t));
    additions_ = 0;
  }
  std::uint64_t additions() const noexcept { return additions_; }
  // How many times halve() ran: estimates only fall when this changes.
  std::uint64_t halvings() const noexcept { return halvings_; }

 private:
  // The rows of the line of h's home slot.
  std::uint64_t* rows(std::uint32_t h) const noexcept {
    return line_rows(detail::home_slot(h, slot_count_) / detail::line_slots);
  }
  std::uint64_t* line_rows(std::uint32_t line) const noexcept {
    return reinterpret_cast<std::uint64_t*>(table_ + detail::line_policy_word(line));
  }
  // The bits that choose a key's counter in each row: the splitmix64
  // finalizer of the 32-bit hash the cache passes (already mixed, low 3 bits
  // zero), so they are independent of the bits that chose the line.
  static std::uint64_t spread(std::uint32_t h) noexcept {
    std::uint64_t z = h + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  static unsigned nibble(std::uint64_t g, unsigned i) noexcept {
    return static_cast<unsigned>((g >> (8 * i)) & 15);
  }

  std::uint32_t* table_ = nullptr;
  std::uint32_t slot_count_ = 0;
  std::uint64_t additions_ = 0;
  std::uint64_t sample_size_ = 0;
  std::uint64_t halvings_ = 0;
};

}  // namespace arenastat
