// Intrusive doubly-linked lists of entry indices (32-bit links stored in the
// entries themselves), used by the eviction policies. No allocation.
#pragma once
#include <cstdint>

namespace arenastat::detail {

inline constexpr std::uint32_t nil_index = 0xFFFFFFFFu;

struct index_list {
  std::uint32_t head = nil_index;  // most recently used end
  std::uint32_t tail = nil_index;  // least recently used end
  std::uint32_t size = 0;
};

// Links must provide prev(i) and next(i) returning std::uint32_t&.
template <class Links>
inline void list_push_front(Links& l, index_list& list, std::uint32_t i) noexcept {
  l.prev(i) = nil_index;
  l.next(i) = list.head;
  if (list.head != nil_index) l.prev(list.head) = i;
  else list.tail = i;
  list.head = i;
  ++list.size;
}

template <class Links>
inline void list_unlink(Links& l, index_list& list, std::uint32_t i) noexcept {
  const std::uint32_t p = l.prev(i), n = l.next(i);
  if (p != nil_index) l.next(p) = n;
  else list.head = n;
  if (n != nil_index) l.prev(n) = p;
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
