// Intrusive doubly-linked lists of entry indices (links stored in the entries
// themselves), used by the eviction policies. No allocation.
//
// Indices are 24-bit: nil_index is 0xFFFFFF, so a link word can keep 8 bits
// of policy state above the index (node_store keeps them in `next`).
#pragma once
#include <cstdint>

namespace arenastat::detail {

inline constexpr std::uint32_t index_bits = 24;
inline constexpr std::uint32_t nil_index = (std::uint32_t{1} << index_bits) - 1;

// What choose_victim() returns: the entry to evict and its table hash.
struct victim {
  std::uint32_t index;
  std::uint32_t hash;
};

struct index_list {
  std::uint32_t head = nil_index;  // most recently used end
  std::uint32_t tail = nil_index;  // least recently used end
  std::uint32_t size = 0;
};

// Links must provide prev(i) / next(i) returning the index and
// set_prev(i, v) / set_next(i, v).
template <class Links>
inline void list_push_front(Links& l, index_list& list, std::uint32_t i) noexcept {
  l.set_prev(i, nil_index);
  l.set_next(i, list.head);
  if (list.head != nil_index) l.set_prev(list.head, i);
  else list.tail = i;
  list.head = i;
  ++list.size;
}

template <class Links>
inline void list_unlink(Links& l, index_list& list, std::uint32_t i) noexcept {
  const std::uint32_t p = l.prev(i), n = l.next(i);
  if (p != nil_index) l.set_next(p, n);
  else list.head = n;
  if (n != nil_index) l.set_prev(n, p);
  else list.tail = p;
  --list.size;
}

template <class Links>
inline void list_move_to_front(Links& l, index_list& list, std::uint32_t i) noexcept {
  if (list.head == i) return;
  list_unlink(l, list, i);
  list_push_front(l, list, i);
}

}  // namespace arenastat::detail
