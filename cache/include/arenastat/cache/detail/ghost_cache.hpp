// ghost_cache: a cache of keys only (their 32-bit table hashes), replaying a
// policy exactly as basic_cache runs it, in memory its owner provides. The
// window tuner (window_tuner.hpp) runs several, one per window size, on a
// sample of the keys (a miniature simulation: Waldspurger et al., "Cache
// Modeling and Optimization using Miniature Simulations", USENIX ATC 2017).
//
// Same decisions as basic_cache<K, V, Selector> running get_or_load() (or
// put()) on the same 32-bit hashes (tests compare them access by access):
// on an access that misses, the policy's victim leaves (once full), then the
// access is recorded and the key enters; a hit is a counted hit. The table
// has basic_cache's slot count (so the policy's sketch has the same
// geometry) with plain linear probing; two keys of equal hash are one key
// here (a ghost only estimates).
//
// Memory, for `entries` entries: the policy's memory, 12-byte nodes {hash,
// prev, next + policy state}, uint32 slots; bytes_for() is a multiple of 64.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "arenastat/cache/detail/hashed_key.hpp"
#include "arenastat/cache/detail/home_slot.hpp"
#include "arenastat/cache/detail/index_list.hpp"

namespace arenastat::detail {

struct ghost_node {
  std::uint32_t key;   // the key's table hash
  std::uint32_t prev;  // entry index
  std::uint32_t next;  // entry index (24 bits), policy state (top 8 bits)
};

// The Links a policy runs over (the node_store interface of cache.hpp).
struct ghost_links {
  static constexpr std::uint32_t index_mask = (std::uint32_t{1} << index_bits) - 1;
  ghost_node* nodes = nullptr;
  std::uint32_t allocated = 0;  // nodes handed out so far

  std::uint32_t prev(std::uint32_t i) const noexcept { return nodes[i].prev; }
  std::uint32_t next(std::uint32_t i) const noexcept { return nodes[i].next & index_mask; }
  void set_prev(std::uint32_t i, std::uint32_t v) const noexcept { nodes[i].prev = v; }
  void set_next(std::uint32_t i, std::uint32_t v) const noexcept {
    nodes[i].next = (nodes[i].next & ~index_mask) | v;
  }
  std::uint32_t state(std::uint32_t i) const noexcept { return nodes[i].next >> index_bits; }
  void set_state(std::uint32_t i, std::uint32_t s) const noexcept {
    nodes[i].next = (nodes[i].next & index_mask) | (s << index_bits);
  }
  template <class F>
  void transform_states(F f) const noexcept {
    for (std::uint32_t i = 0; i < allocated; ++i) set_state(i, f(state(i)) & 0xFFu);
  }
  void prefetch(std::uint32_t) const noexcept {}
  std::uint32_t hash(std::uint32_t i) const noexcept { return nodes[i].key; }
};

// Selector: a policy selector of basic_cache (basic_tinylfu<...>) whose
// policy has memory_bytes(capacity, slots), attach_memory(p, slots) and
// set_window_entries(n).
template <class Selector>
class ghost_cache {
 public:
  using policy_type = typename Selector::template policy<ghost_links>;

  ghost_cache() noexcept : policy_(links_) {}
  ghost_cache(const ghost_cache&) = delete;
  ghost_cache& operator=(const ghost_cache&) = delete;

  // basic_cache's slot count for a capacity (load factor at most 3/4).
  static constexpr std::uint32_t slots_for(std::uint32_t entries) noexcept {
    return static_cast<std::uint32_t>(slot_count_for(entries));
  }
  static constexpr std::size_t round64(std::size_t n) noexcept { return (n + 63) & ~std::size_t{63}; }
  static constexpr std::size_t policy_bytes(std::uint32_t entries) noexcept {
    return round64(policy_type::memory_bytes(entries, slots_for(entries)));
  }
  static constexpr std::size_t bytes_for(std::uint32_t entries) noexcept {
    return policy_bytes(entries) + round64(std::size_t{entries} * sizeof(ghost_node)) +
           round64(std::size_t{slots_for(entries)} * sizeof(std::uint32_t));
  }
  static constexpr std::size_t align = 64;

  // Starts empty over bytes_for(entries) bytes at `memory` (64-byte aligned),
  // with the policy's window at window_entries (entries >= 1).
  void attach(void* memory, std::uint32_t entries, std::size_t window_entries) noexcept {
    auto* base = static_cast<unsigned char*>(memory);
    entries_ = entries;
    slot_count_ = slots_for(entries);
    window_entries_ = window_entries;
    links_.nodes = reinterpret_cast<ghost_node*>(base + policy_bytes(entries));
    slots_ = reinterpret_cast<std::uint32_t*>(base + policy_bytes(entries) +
                                              round64(std::size_t{entries} * sizeof(ghost_node)));
    policy_.configure(entries);
    policy_.attach_memory(base, slot_count_);
    clear();  // the policy's lists too (a ghost detached and attached again)
  }
  void detach() noexcept {
    policy_.detach_memory();
    links_.nodes = nullptr;
    slots_ = nullptr;
    entries_ = 0;
  }
  // Back to empty (the memory stays attached).
  void clear() noexcept {
    if (slots_ == nullptr) return;
    policy_.clear();
    policy_.set_window_entries(window_entries_);
    std::memset(slots_, 0, std::size_t{slot_count_} * sizeof(std::uint32_t));
    links_.allocated = 0;
  }

  // One counted access to the key of table hash h; true when it hit.
  bool access(std::uint32_t h) noexcept {
    const hashed_key k{std::uint64_t{h} << 32};  // k.h32() == h: h has no policy bits
    std::uint32_t pos = home_slot(h, slot_count_);
    for (std::uint32_t s; (s = slots_[pos]) != 0; pos = advance(pos)) {
      if (links_.nodes[s - 1].key == h) {
        policy_.on_hit(s - 1, k, true);
        return true;
      }
    }
    std::uint32_t i;
    if (links_.allocated < entries_) {
      i = links_.allocated++;
    } else {
      const victim v = policy_.choose_victim();
      i = v.index;
      erase_slot(v.hash, i);
      policy_.on_erase(i, v.hash);
      pos = home_slot(h, slot_count_);  // the erase may have shifted h's free slot
      while (slots_[pos] != 0) pos = advance(pos);
    }
    policy_.record(k);
    links_.nodes[i].key = h;
    slots_[pos] = i + 1;
    policy_.on_insert(i, h);
    return false;
  }

  std::uint32_t entries() const noexcept { return entries_; }
  std::uint32_t size() const noexcept { return links_.allocated; }
  const policy_type& policy() const noexcept { return policy_; }
  // Whether every entry is found from its home slot (tests).
  bool consistent() const noexcept {
    std::uint32_t used = 0;
    for (std::uint32_t p = 0; p < slot_count_; ++p) used += slots_[p] != 0;
    if (used != links_.allocated) return false;
    for (std::uint32_t i = 0; i < links_.allocated; ++i) {
      std::uint32_t pos = home_slot(links_.nodes[i].key, slot_count_);
      while (slots_[pos] != 0 && slots_[pos] != i + 1) pos = advance(pos);
      if (slots_[pos] != i + 1) return false;
    }
    return true;
  }

 private:
  std::uint32_t advance(std::uint32_t pos) const noexcept { return pos + 1 == slot_count_ ? 0 : pos + 1; }
  // Linear probing's deletion without tombstones: later entries of the
  // cluster whose home is not in (hole, their slot] move into the hole.
  void erase_slot(std::uint32_t h, std::uint32_t i) noexcept {
    std::uint32_t hole = home_slot(h, slot_count_);
    while (slots_[hole] != i + 1) hole = advance(hole);
    for (std::uint32_t j = advance(hole); slots_[j] != 0; j = advance(j)) {
      const std::uint32_t home = home_slot(links_.nodes[slots_[j] - 1].key, slot_count_);
      const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (stays) continue;
      slots_[hole] = slots_[j];
      hole = j;
    }
    slots_[hole] = 0;
  }

  ghost_links links_;
  policy_type policy_;
  std::uint32_t* slots_ = nullptr;
  std::uint32_t entries_ = 0;
  std::uint32_t slot_count_ = 0;
  std::size_t window_entries_ = 1;
};

}  // namespace arenastat::detail
