// frequency_sketch: a count-min sketch of 4-bit counters for TinyLFU
// admission, in memory the cache allocates beside its table.
//
// Layout: one 32-byte block of four 64-bit rows of 16 counters per 8 home
// slots of the table; a key's counters are one per row in the block of its
// home slot. At the table's load factor (at most 3/4) a block serves about 6
// entries: 10.7 counters per entry. frequency() is the minimum of the key's 4
// counters. The policy touches the sketch only for keys the cache does not
// hold (a miss, an insertion, an entry leaving), so a hit never loads it.
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

#include "arenastat/cache/detail/home_slot.hpp"

namespace arenastat {

template <unsigned SampleFactor = 20, bool Conservative = true>
class frequency_sketch {
  static_assert(SampleFactor >= 1);

 public:
  static constexpr std::uint32_t max_count = 15;
  // One block of 4 rows of 16 counters (32 bytes) per block_slots home slots
  // of the table, so 10.7 counters per entry at the table's load of 3/4.
  static constexpr std::uint32_t block_slots = 8;
  static constexpr std::size_t block_bytes = 4 * sizeof(std::uint64_t);
  static constexpr std::size_t align = 64;  // two blocks per cache line

  // The bytes of the counters for a table of slot_count slots.
  static constexpr std::size_t bytes_for(std::uint32_t slot_count) noexcept {
    return blocks_for(slot_count) * block_bytes;
  }

  void configure(std::size_t capacity) noexcept {
    sample_size_ = SampleFactor * static_cast<std::uint64_t>(capacity);
  }
  // The counters: bytes_for(slot_count) bytes at `memory` (aligned to
  // `align`), zeroed here; detach() before they are freed.
  void attach(void* memory, std::uint32_t slot_count) noexcept {
    table_ = static_cast<std::uint64_t*>(memory);
    slot_count_ = slot_count;
    std::memset(memory, 0, bytes_for(slot_count));
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
    const std::size_t words = bytes_for(slot_count_) / sizeof(std::uint64_t);
    for (std::size_t w = 0; w < words; ++w) table_[w] = (table_[w] >> 1) & 0x7777777777777777ull;
    additions_ /= 2;
    ++halvings_;
  }
  void clear() noexcept {
    if (table_) std::memset(table_, 0, bytes_for(slot_count_));
    additions_ = 0;
  }
  std::uint64_t additions() const noexcept { return additions_; }
  // How many times halve() ran (tests, diagnostics).
  std::uint64_t halvings() const noexcept { return halvings_; }

 private:
  static constexpr std::size_t blocks_for(std::uint32_t slot_count) noexcept {
    return (std::size_t{slot_count} + block_slots - 1) / block_slots;
  }
  // The rows of the block of h's home slot.
  std::uint64_t* rows(std::uint32_t h) const noexcept {
    return table_ + std::size_t{detail::home_slot(h, slot_count_) / block_slots} * 4;
  }
  // The bits that choose a key's counter in each row: the splitmix64
  // finalizer of the 32-bit hash the cache passes (already mixed, low 3 bits
  // zero), so they are independent of the bits that chose the block.
  static std::uint64_t spread(std::uint32_t h) noexcept {
    std::uint64_t z = h + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  static unsigned nibble(std::uint64_t g, unsigned i) noexcept {
    return static_cast<unsigned>((g >> (8 * i)) & 15);
  }

  std::uint64_t* table_ = nullptr;  // the counters
  std::uint32_t slot_count_ = 0;
  std::uint64_t additions_ = 0;
  std::uint64_t sample_size_ = 0;
  std::uint64_t halvings_ = 0;
};

}  // namespace arenastat
