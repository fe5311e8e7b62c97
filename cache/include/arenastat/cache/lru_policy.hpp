// lru_policy: least recently used. One list from most to least recently used;
// a hit or an insert puts the entry at the front; the victim is the back.
//
// Policy interface (shared with tinylfu_policy), over a Links object giving
// prev(i) / next(i), set_prev / set_next, state(i) / set_state(i, s) (8 bits
// of policy state per entry, for a policy whose selector says keeps_state) and hash(i) (the entry's table hash, recomputed
// from its key; may throw) for entry index i:
//   void configure(std::size_t capacity) noexcept
//   static constexpr std::size_t memory_bytes(std::size_t capacity, std::uint32_t slot_count)
//   static constexpr std::size_t memory_align   memory the policy needs for `capacity`
//                                               entries in a table of slot_count slots
//                                               (0: none), allocated by the cache with its
//                                               table (and accounted); configure() first
//   void attach_memory(void* p, std::uint32_t slot_count) noexcept
//   void detach_memory() noexcept               before that memory is freed
//   void record(detail::hashed_key k) noexcept  an access to a key not in the cache
//                                               (a miss, or a put inserting it); k: its
//                                               whole hash (k.h32() the table's)
//   void on_hit(std::uint32_t i, detail::hashed_key k, bool counted) noexcept
//                                               entry i (hash k) was found (a get, or a put
//                                               replacing its value); counted: the access
//                                               counts toward its frequency (false for the
//                                               store that follows a read-through load)
//   std::uint32_t likely_victim() const noexcept
//                                               a hint: the entry the next eviction will
//                                               most likely remove (nil_index: no guess);
//                                               on a miss the cache starts loading its slot
//   void prefetch(std::uint32_t h) const noexcept
//                                               a hint: start loading the policy's memory for h
//   void on_insert(std::uint32_t i, std::uint32_t h) noexcept
//                                               a new entry, h its hash (record(h) came first)
//   void on_erase(std::uint32_t i, std::uint32_t h) noexcept
//                                               entry i (hash h) leaves: erased or evicted
//   detail::victim choose_victim()              the cache is full: entry to evict and
//                                               its hash; if hash(i) throws, nothing changed
//   void clear() noexcept
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "arenastat/cache/detail/hashed_key.hpp"
#include "arenastat/cache/detail/index_list.hpp"

namespace arenastat {

template <class Links>
class lru_policy {
 public:
  explicit lru_policy(Links& links) noexcept : links_(&links) {}

  void configure(std::size_t) noexcept {}
  static constexpr std::size_t memory_bytes(std::size_t, std::uint32_t) noexcept { return 0; }
  static constexpr std::size_t memory_align = 1;
  void attach_memory(void*, std::uint32_t) noexcept {}
  void detach_memory() noexcept {}

  void record(detail::hashed_key) noexcept {}
  std::uint32_t likely_victim() const noexcept { return detail::nil_index; }  // no guess: the back's node is cold
  void prefetch(std::uint32_t) const noexcept {}
  void on_hit(std::uint32_t i, detail::hashed_key, bool) noexcept { detail::list_move_to_front(*links_, list_, i); }
  void on_insert(std::uint32_t i, std::uint32_t) noexcept { detail::list_push_front(*links_, list_, i); }
  void on_erase(std::uint32_t i, std::uint32_t) noexcept { detail::list_unlink(*links_, list_, i); }
  detail::victim choose_victim() { return {list_.tail, links_->hash(list_.tail)}; }
  void clear() noexcept { list_ = {}; }

  // Entry indices from most to least recently used (tests, diagnostics).
  template <class F>
  void for_each(F&& f) const {
    for (std::uint32_t i = list_.head; i != detail::nil_index; i = links_->next(i)) f(i);
  }

 private:
  Links* links_;
  detail::index_list list_;
};

// Policy selector for basic_cache.
struct lru {
  using shard_selector = lru;
  static constexpr bool keeps_state = false;  // no per-entry state (Links::state unused)
  template <class Links>
  using policy = lru_policy<Links>;
  static constexpr std::string_view name = "lru";
};

}  // namespace arenastat
