// basic_cache: a single-threaded cache whose every byte is tracked.
//
//   arenastat::tinylfu_cache<std::uint64_t, std::uint64_t> c{"my-cache", {.max_entries = 1'000'000}};
//   c.put(1, 2);
//   auto v = c.get(1);                                  // std::optional<V>
//   auto w = c.get_or_load(7, [](std::uint64_t k) { return k * 2; });
//
// Memory. By default the cache wraps its upstream in a tracking_resource
// charged to the account named after the cache (tag "cache"), and allocates
// everything through it: the hash table, the pages of entries and the policy's
// memory (tinylfu: its frequency sketch and window tuner). Nothing else is allocated (a value type's own heap memory,
// e.g. a std::string's buffer, is not part of the cache's footprint).
//
// Layout (docs/cache.md has the figures):
//   pages of up to 4096 entries, allocated as the cache fills: per entry one
//     node {K key; V value; uint32 prev, next}; the links are 24-bit entry
//     indices and the top 8 bits of `next` hold the policy's state, so a hit
//     touches the table slot and the node and nothing else;
//   the table: uint32 slots, capacity + capacity/3 + 1 of them, allocated at
//     the first insertion for the full capacity (it never rehashes), Robin
//     Hood linear probing with backward-shift deletion; a slot packs the
//     probe distance (6 bits), entry index + 1 and a tag of the hash (the
//     bits left over), so lookups never call the hash function on stored
//     keys;
//   the policy's memory (tinylfu: its frequency sketch, 32 bytes per 8
//     slots, and from 64 entries the window tuner's four ghost caches of
//     window_tuner::ghost_entries(capacity) entries: the capacity up to
//     1024, then capacity / 16 within 1024..4096; 92,928 bytes each at
//     4096), allocated with the table.
// No entry stores its hash: eviction recomputes it from the stored key (the
// victim's table slot, and for tinylfu the sketch counters the victim hands
// its count back to): one or two calls of the hash per eviction.
// Capacity: by entries, by bytes, or both. A byte bound is turned into the
// largest entry capacity whose full footprint (footprint_bytes()) fits in it,
// so the tracked live bytes never exceed the bound, at any moment: the table
// and sketch are sized once for that capacity, and pages only grow up to it.
//
// Exceptions. Hash, equality and the resource may throw; the loader may throw.
// put() gives the strong guarantee (the contents and statistics are unchanged
// when it throws; the structures allocated for the first insertion may stay
// allocated and stay accounted); get_or_load() leaves the cache unchanged when
// the loader throws (only the miss and load counters count it; the policy
// counts the key's access when the value is stored). K and V must be nothrow
// move constructible and destructible, V nothrow move assignable. Not
// thread-safe: see sharded_cache.
//
// A Robin Hood probe distance above 63 slots (6 bits) is not representable:
// an insert that would need one is refused (put returns false, rejected
// counts it). With a working hash this needs a cluster far beyond what load
// 3/4 produces (none in 48M puts filling 16M entries). The room is checked
// before a full cache evicts (a refusal changes nothing), so with a hash that
// sends 64 keys to one slot a full cache refuses every new key.
#pragma once
#include <atomic>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <memory_resource>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "arenastat/cache/detail/index_list.hpp"
#include "arenastat/cache/detail/hashed_key.hpp"
#include "arenastat/cache/detail/home_slot.hpp"
#include "arenastat/cache/detail/read_stripes.hpp"
#include "arenastat/cache/hash.hpp"
#include "arenastat/cache/lru_policy.hpp"
#include "arenastat/cache/tinylfu_policy.hpp"
#include "arenastat/tracking_resource.hpp"

namespace arenastat {

// How many loads of one key, each made stale by a write of that key from
// inside the next one's loader, may be in progress at once on one thread
// (get_or_load in both caches). A loader that writes its own key and then
// asks for it starts a new load (its own is stale); one that does so every
// time would nest loads until the stack overflows: the ask beyond this many
// stale loads is refused with std::logic_error. Legitimate code nests one
// or two.
inline constexpr unsigned max_stale_nested_loads = 16;

namespace detail {
// The refusal past max_stale_nested_loads, for `kind` ("basic_cache") `name`.
inline std::string stale_nest_message(std::string_view kind, const std::string& name) {
  return std::string(kind) + " '" + name + "': get_or_load of a key whose loader wrote it and asked for it " +
         std::to_string(max_stale_nested_loads) + " times over, nested (each load starts another without end)";
}
}  // namespace detail

struct cache_options {
  std::size_t max_entries = 0;   // 0: bounded by max_bytes alone
  std::uint64_t max_bytes = 0;   // 0: bounded by max_entries alone
  bool track = true;             // wrap the upstream in a tracking_resource named after the cache
};

struct cache_stats {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t loads = 0;        // loader calls
  std::uint64_t evictions = 0;
  std::uint64_t rejected = 0;     // inserts refused (probe distance limit)
  std::size_t size = 0;
  std::size_t capacity = 0;
  std::int64_t live_bytes = 0;    // the account's live bytes (own bytes when untracked)
  std::uint64_t peak_bytes = 0;   // the account's peak (own peak when untracked)
  std::uint64_t own_bytes = 0;    // bytes this cache holds now
  double bytes_per_entry = 0;     // own_bytes / size, 0 when empty
  double hit_rate() const noexcept {
    const auto n = hits + misses;
    return n == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(n);
  }
};

namespace detail {

template <class K, class V>
struct cache_node {
  union { K key; };
  union { V value; };
  std::uint32_t prev = 0;
  std::uint32_t next = 0;  // 24-bit index, policy state in the top 8 bits
  cache_node() noexcept {}
  ~cache_node() {}
};

template <class K, class Hash>
hashed_key hash_of_key(const Hash& hash, const K& key) {
  return hashed_key{mix_hash(static_cast<std::uint64_t>(hash(key)))};
}

// Entries in pages; the Links object the policies work on: 24-bit links,
// 8 bits of policy state in the top byte of `next` (when the policy keeps
// state: a link store then writes the low 3 bytes, a state store the top
// byte; without state a link store is a plain store), and the hash of an
// entry recomputed from its key.
template <class K, class V, class Hash, bool PolicyState>
struct node_store {
  static_assert(!PolicyState || std::endian::native == std::endian::little,
                "policy state is the top byte of `next`: byte 3 on a little-endian machine");
  using node = cache_node<K, V>;
  static constexpr std::uint32_t page_shift = 12;
  static constexpr std::uint32_t page_entries = std::uint32_t{1} << page_shift;
  static constexpr std::uint32_t index_mask = nil_index;
  node** pages = nullptr;
  const Hash* hasher = nullptr;
  std::uint32_t allocated = 0;  // nodes handed out so far: indices below are in allocated pages

  node& at(std::uint32_t i) const noexcept { return pages[i >> page_shift][i & (page_entries - 1)]; }
  std::uint32_t prev(std::uint32_t i) const noexcept { return at(i).prev; }
  std::uint32_t next(std::uint32_t i) const noexcept { return at(i).next & index_mask; }
  void set_prev(std::uint32_t i, std::uint32_t v) const noexcept { at(i).prev = v; }
  // With policy state, only the link's three bytes are stored: no read of
  // the word first (a read-modify-write stalled on the cold neighbour an
  // unlink touches; docs/cache.md, "Where the time goes", has the A/B figure).
  void set_next(std::uint32_t i, std::uint32_t v) const noexcept {
    std::uint32_t& w = at(i).next;
    if constexpr (PolicyState) {
      std::memcpy(reinterpret_cast<unsigned char*>(&w), &v, 3);
    } else {
      w = v;
    }
  }
  std::uint32_t state(std::uint32_t i) const noexcept
    requires PolicyState
  {
    return at(i).next >> index_bits;
  }
  void set_state(std::uint32_t i, std::uint32_t s) const noexcept
    requires PolicyState
  {
    reinterpret_cast<unsigned char*>(&at(i).next)[3] = static_cast<unsigned char>(s);  // the top byte
  }
  // Replaces the state s of every node ever handed out (free ones too: a
  // node's state is set again when it is reused) by f(s), page by page.
  template <class F>
  void transform_states(F f) const noexcept
    requires PolicyState
  {
    for (std::uint32_t first = 0; first < allocated; first += page_entries) {
      node* page = pages[first >> page_shift];
      const std::uint32_t n = allocated - first < page_entries ? allocated - first : page_entries;
      for (std::uint32_t k = 0; k < n; ++k) {
        unsigned char& b = reinterpret_cast<unsigned char*>(&page[k].next)[3];
        b = static_cast<unsigned char>(f(std::uint32_t{b}));
      }
    }
  }
  // Starts loading entry i's node.
  void prefetch(std::uint32_t i) const noexcept { __builtin_prefetch(&at(i)); }
  static constexpr bool nothrow_hash = std::is_nothrow_invocable_v<const Hash&, const K&>;
  // The table hash of entry i (may throw what the user's hash throws).
  std::uint32_t hash(std::uint32_t i) const { return hash_of_key(*hasher, at(i).key).h32(); }
};

}  // namespace detail

template <class K, class V, class Policy = tinylfu, class Hash = std::hash<K>, class Eq = std::equal_to<K>>
class basic_cache {
  static_assert(std::is_nothrow_move_constructible_v<K> && std::is_nothrow_destructible_v<K>,
                "cache keys must be nothrow move constructible and destructible");
  static_assert(std::is_nothrow_move_constructible_v<V> && std::is_nothrow_destructible_v<V> &&
                    std::is_nothrow_move_assignable_v<V>,
                "cache values must be nothrow move constructible, assignable and destructible");

  using store_type = detail::node_store<K, V, Hash, Policy::keeps_state>;
  using node = typename store_type::node;

 public:
  using key_type = K;
  using mapped_type = V;
  using policy_type = typename Policy::template policy<store_type>;
  using hashed_key = detail::hashed_key;

  static constexpr std::size_t max_capacity = detail::nil_index;  // indices are 24-bit
  // A slot's low dist_bits hold the probe distance; the rest the entry index
  // + 1 and a tag of the hash (more tag bits: fewer nodes loaded for nothing).
  static constexpr std::uint32_t dist_bits = 6;
  static constexpr std::uint32_t max_probe_distance = (1u << dist_bits) - 1;
  static constexpr std::uint32_t page_entries = store_type::page_entries;
  static constexpr std::size_t node_bytes = sizeof(node);
  static constexpr std::size_t entry_bytes = sizeof(node);  // everything an entry holds

  static constexpr std::size_t table_align = alignof(std::uint32_t);

  // Table slots for a capacity (load factor at most 3/4).
  static constexpr std::size_t slot_count_for(std::size_t capacity) noexcept { return detail::slot_count_for(capacity); }
  // Bytes of the table for a slot count.
  static constexpr std::uint64_t table_bytes_for(std::size_t slots) noexcept {
    return std::uint64_t{slots} * sizeof(std::uint32_t);
  }
  // Bytes of the policy's memory (tinylfu's sketch and window tuner) for a
  // capacity and its slot count.
  static constexpr std::uint64_t policy_bytes_for(std::size_t capacity, std::size_t slots) noexcept {
    return policy_type::memory_bytes(capacity, static_cast<std::uint32_t>(slots));
  }
  // Every byte the cache holds when `capacity` entries are stored.
  static constexpr std::uint64_t footprint_bytes(std::size_t capacity) noexcept {
    const std::size_t pages = (capacity + page_entries - 1) / page_entries;
    const std::size_t slots = slot_count_for(capacity);
    return table_bytes_for(slots) + policy_bytes_for(capacity, slots) + pages * sizeof(node*) +
           std::uint64_t{capacity} * entry_bytes;
  }
  // The largest capacity whose footprint fits in `bytes` (0 when none does).
  static std::size_t capacity_for_bytes(std::uint64_t bytes) noexcept {
    std::size_t lo = 0, hi = max_capacity;
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo + 1) / 2;
      if (footprint_bytes(mid) <= bytes) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  // Throws std::invalid_argument naming the problem: empty name, no bound,
  // max_entries above max_capacity, or max_bytes below a one-entry footprint.
  basic_cache(std::string_view name, const cache_options& options,
              std::pmr::memory_resource* upstream = std::pmr::get_default_resource(), Hash hash = Hash{},
              Eq eq = Eq{})
      : policy_(links()), hash_(std::move(hash)), eq_(std::move(eq)), name_(name) {
    store_.hasher = &hash_;
    if (name.empty()) throw std::invalid_argument("cache: the name (its account) must not be empty");
    if (upstream == nullptr) throw std::invalid_argument("cache '" + name_ + "': upstream resource is null");
    if (options.max_entries == 0 && options.max_bytes == 0)
      throw std::invalid_argument("cache '" + name_ + "': set max_entries, max_bytes or both (both are 0)");
    if (options.max_entries > max_capacity)
      throw std::invalid_argument("cache '" + name_ + "': max_entries " + std::to_string(options.max_entries) +
                                  " exceeds the per-cache limit " + std::to_string(max_capacity) +
                                  " (use sharded_cache)");
    std::size_t cap = options.max_entries != 0 ? options.max_entries : max_capacity;
    if (options.max_bytes != 0) {
      const std::size_t by_bytes = capacity_for_bytes(options.max_bytes);
      if (by_bytes == 0)
        throw std::invalid_argument("cache '" + name_ + "': max_bytes " + std::to_string(options.max_bytes) +
                                    " is below the footprint of a one-entry cache (" +
                                    std::to_string(footprint_bytes(1)) + " bytes)");
      if (by_bytes < cap) cap = by_bytes;
    }
    capacity_ = cap;
    max_bytes_ = options.max_bytes;
    slot_count_ = static_cast<std::uint32_t>(slot_count_for(cap));
    const int idx_bits = std::bit_width(static_cast<std::uint32_t>(cap));
    idx_mask_ = (std::uint32_t{1} << idx_bits) - 1;
    tag_shift_ = dist_bits + idx_bits;
    tag_mask_ = tag_shift_ >= 32 ? 0 : (std::uint32_t{1} << (32 - tag_shift_)) - 1;
    page_count_ = static_cast<std::uint32_t>((cap + page_entries - 1) / page_entries);
    policy_.configure(cap);
    if (options.track) {
      tracker_.emplace(name_, "cache", upstream);
      res_ = &*tracker_;
    } else {
      res_ = upstream;
    }
  }
  ~basic_cache() { release_all(); }
  basic_cache(const basic_cache&) = delete;
  basic_cache& operator=(const basic_cache&) = delete;

  // ---- operations ----------------------------------------------------------

  // get and get_or_load are inlined into the caller with their hit path
  // (see get_hashed).
  [[gnu::always_inline]] std::optional<V> get(const K& key) { return get_hashed(key, hash_key(key)); }

  // Inserts or replaces. Returns false only when the insert was refused
  // (probe distance limit). Strong guarantee.
  bool put(const K& key, V value) {
    const hashed_key h = hash_key(key);
    const bool stored = put_hashed(K(key), std::move(value), h, true);
    if (loading_ != nullptr) [[unlikely]] mark_written(h);
    return stored;
  }
  bool put(K&& key, V value) {
    const hashed_key h = hash_key(key);
    const bool stored = put_hashed(std::move(key), std::move(value), h, true);
    if (loading_ != nullptr) [[unlikely]] mark_written(h);
    return stored;
  }

  // Read-through: the value of `key`, calling loader(key) and storing its
  // result on a miss. A throwing loader leaves the cache unchanged. On a
  // miss the policy counts the access when the value is stored, after the
  // eviction that makes room (as put() does): the lookup only starts loading
  // the memory that counting and the eviction will touch, whose cache misses
  // then overlap the loader and the eviction.
  template <class Loader>
  [[gnu::always_inline]] V get_or_load(const K& key, Loader&& loader) {
    const hashed_key h = hash_key(key);
    prefetch_counts(h);
    const std::uint32_t i = index_of(h.h32(), key);
    if (i != npos) [[likely]] return hit_value(i, h);
    return load_and_put(key, h, std::forward<Loader>(loader));
  }

  // get_or_load's miss: the loader's value, stored and counted (out of line).
  // While the loader runs, its key is on this cache's list of loads in
  // progress: a get_or_load of that key from inside the loader (directly or
  // through the loads it starts) would call the loader again without end, and
  // is refused with std::logic_error, counting nothing, unless the loader
  // first wrote the key (a put or erase that returned, whatever its result,
  // or a clear: its load is then stale, and a new one starts, as in
  // sharded_cache, up to max_stale_nested_loads stale loads of the key).
  template <class Loader>
  [[gnu::noinline]] V load_and_put(const K& key, hashed_key h, Loader&& loader) {
    if (loading_ != nullptr) [[unlikely]] refuse_own_load(key, h);
    prefetch_likely_victim();  // the key's counters were requested at the lookup
    ++misses_;
    ++loads_;
    load_frame frame{&key, h, loading_};
    V v = [&] {
      const frame_on_list on_list(loading_, frame);
      return std::invoke(std::forward<Loader>(loader), key);
    }();
    put_hashed(K(key), V(v), h, true);
    return v;
  }

  bool erase(const K& key) {
    const hashed_key h = hash_key(key);
    const bool erased = erase_hashed(key, h);
    if (loading_ != nullptr) [[unlikely]] mark_written(h);
    return erased;
  }

  // Removes every entry and gives every byte back (the account returns to 0).
  void clear() noexcept {
    release_all();
    hits_ = misses_ = loads_ = evictions_ = rejected_ = 0;
    for (load_frame* f = loading_; f != nullptr; f = f->outer) f->written = true;
  }

  // No effect on the policy or the statistics.
  bool contains(const K& key) const {
    const hashed_key h = hash_key(key);
    return slots_ && find(h.h32(), key) != npos;
  }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::size_t capacity() const noexcept { return capacity_; }
  std::uint64_t max_bytes() const noexcept { return max_bytes_; }
  const std::string& name() const noexcept { return name_; }
  std::pmr::memory_resource* resource() const noexcept { return res_; }
  bool tracked() const noexcept { return tracker_.has_value(); }
  std::uint64_t own_bytes() const noexcept { return own_bytes_; }
  std::uint64_t own_peak_bytes() const noexcept { return own_peak_; }

  cache_stats stats() const {
    cache_stats s;
    s.hits = hits_;
    s.misses = misses_;
    s.loads = loads_;
    s.evictions = evictions_;
    s.rejected = rejected_;
    s.size = size_;
    s.capacity = capacity_;
    s.own_bytes = own_bytes_;
    if (tracker_) {
      s.live_bytes = tracker_->tracked_account().live_bytes();
      s.peak_bytes = tracker_->tracked_account().peak_bytes();
    } else {
      s.live_bytes = static_cast<std::int64_t>(own_bytes_);
      s.peak_bytes = own_peak_;
    }
    s.bytes_per_entry = size_ == 0 ? 0.0 : static_cast<double>(own_bytes_) / static_cast<double>(size_);
    return s;
  }

  // ---- introspection (tests, diagnostics) ------------------------------------
  const policy_type& policy() const noexcept { return policy_; }
  const K& key_at(std::uint32_t i) const noexcept { return store_.at(i).key; }

  // ---- pre-hashed entry points (sharded_cache) -------------------------------
  hashed_key hash_key(const K& key) const { return detail::hash_of_key(hash_, key); }

  // erase() without the hashing, and without marking a load of this cache's
  // own (load_and_put) stale: sharded_cache runs its loads itself.
  bool erase_hashed(const K& key, hashed_key h) {
    if (!slots_) return false;
    const std::uint32_t pos = find(h.h32(), key);
    if (pos == npos) return false;
    const std::uint32_t i = slot_index(slot(pos));
    table_erase_at(pos);
    policy_.on_erase(i, h.h32());
    destroy_node(i);
    store_.set_next(i, free_head_);
    free_head_ = i;
    --size_;
    return true;
  }

  // The hit path is inline and short; the miss's work is out of line
  // (see tinylfu_policy::on_hit on why the length of the hit path counts).
  [[gnu::always_inline]] std::optional<V> get_hashed(const K& key, hashed_key h) {
    prefetch_counts(h);
    const std::uint32_t i = index_of(h.h32(), key);
    if (i == npos) [[unlikely]] {
      count_miss(h);
      return std::nullopt;
    }
    return hit_value(i, h);
  }

  bool put_hashed(K&& key, V&& value, hashed_key h, bool record) {
    const std::uint32_t h32 = h.h32();
    if (slots_) {
      const std::uint32_t pos = find(h32, key);
      if (pos != npos) {
        const std::uint32_t i = slot_index(slot(pos));
        store_.at(i).value = std::move(value);
        policy_.on_hit(i, h, record);
        return true;
      }
    }
    ensure_tables();  // may throw: nothing stored yet
    if (!can_insert(h32)) {
      ++rejected_;
      if (record) policy_.record(h);
      return false;
    }
    std::uint32_t i;
    if (size_ < capacity_) {
      i = acquire_node();  // may throw (a new page): nothing stored yet
    } else {
      // The victim's hash comes with it (computed before the policy changed
      // anything, so a throwing hash leaves everything as it was).
      const auto victim = policy_.choose_victim();
      i = victim.index;
      table_erase_at(slot_of_index(i, victim.hash));
      policy_.on_erase(i, victim.hash);
      destroy_node(i);
      --size_;
      ++evictions_;
    }
    if (record) policy_.record(h);
    node& n = store_.at(i);
    std::construct_at(std::addressof(n.key), std::move(key));
    std::construct_at(std::addressof(n.value), std::move(value));
    table_insert(h32, i);
    policy_.on_insert(i, h32);
    ++size_;
    return true;
  }

  void count_load() noexcept { ++loads_; }

  // Whether silent_hit() exists for these types: keys and values copied as
  // bytes, and a policy that can tell a hit that changes nothing.
  static constexpr bool silent_hits =
      std::is_trivially_copyable_v<K> && std::is_trivially_copyable_v<V> &&
      requires(const policy_type& p, std::uint32_t s, hashed_key k) {
        { p.hit_is_silent(s, k) } -> std::same_as<bool>;
      };

  // sharded_cache's hit without the lock: the value of key when it is cached
  // and a counted hit on it would change nothing (policy_type::hit_is_silent);
  // then the hit changes nothing here either, and is not counted here (the
  // caller counts it). Runs while a writer may change the cache: it reads the
  // table, the node and the policy state as they are, and trusts nothing it
  // read until unchanged() (the shard's version) says no writer ran since
  // before the first read; a slot, index or page pointer seen mid-write is
  // bounded before use (index below the capacity, page present, probe within
  // the distance limit), and the memory read is never freed meanwhile (the
  // caller keeps clear() out). The key is compared (the user's Eq) only on a
  // copy taken and checked that way. nullopt: not cached, not silent, or a
  // writer ran: take the lock and do it there.
  template <class Unchanged>
    requires silent_hits
  ARENASTAT_RACY_READER std::optional<V> silent_hit(const K& key, hashed_key h, Unchanged&& unchanged) const {
    std::uint32_t* const slots = detail::racy_load_acquire(slots_);
    if (slots == nullptr) return std::nullopt;
    node** const pages = detail::racy_load(store_.pages);  // set before slots_ was published, and kept
    const std::uint32_t h32 = h.h32();
    const std::uint32_t want = tag_of(h32);
    std::uint32_t pos = home(h32);
    for (std::uint32_t d = 0; d <= max_probe_distance; ++d, pos = advance(pos)) {
      const std::uint32_t s = detail::racy_load(slots[pos]);
      if (s == 0 || dist(s) < d) return std::nullopt;
      if (slot_tag(s) != want) continue;
      const std::uint32_t i = slot_index(s);
      if (i >= capacity_) return std::nullopt;
      node* const page = detail::racy_load(pages[i >> store_type::page_shift]);
      if (page == nullptr) return std::nullopt;
      node& n = page[i & (page_entries - 1)];
      struct alignas(K) key_bytes {
        unsigned char b[sizeof(K)];
      } kb;
      struct alignas(V) value_bytes {
        unsigned char b[sizeof(V)];
      } vb;
      detail::racy_copy(&kb, std::addressof(n.key), sizeof(K));
      detail::racy_copy(&vb, std::addressof(n.value), sizeof(V));
      const std::uint32_t state = detail::racy_load(n.next) >> detail::index_bits;
      const bool silent = policy_.hit_is_silent(state, h);
      if (!unchanged()) return std::nullopt;
      if (eq_(std::bit_cast<K>(kb), key)) {
        if (!silent) return std::nullopt;
        return std::bit_cast<V>(vb);
      }
    }
    return std::nullopt;
  }

 private:
  template <class, class, class, class, class>
  friend class sharded_cache;
  // sharded_cache hands its shards the shared window tuner through this.
  policy_type& mutable_policy() noexcept { return policy_; }
  // get_hashed's hit alone: the value of a cached key, its hit counted; a
  // miss counts nothing here (sharded_cache counts it with count_miss once it
  // knows the call is not refused).
  [[gnu::always_inline]] std::optional<V> hit_hashed(const K& key, hashed_key h) {
    prefetch_counts(h);
    const std::uint32_t i = index_of(h.h32(), key);
    if (i == npos) [[unlikely]] return std::nullopt;
    return hit_value(i, h);
  }

  static constexpr std::uint32_t npos = 0xFFFFFFFFu;

  // The entries' links, for the policy: its constructor keeps this address
  // (store_ is built after policy_, see the members).
  store_type& links() noexcept { return store_; }

  // ---- slots ------------------------------------------------------------------
  std::uint32_t& slot(std::uint32_t pos) const noexcept { return slots_[pos]; }
  static std::uint32_t dist(std::uint32_t s) noexcept { return s & max_probe_distance; }
  std::uint32_t slot_index(std::uint32_t s) const noexcept { return ((s >> dist_bits) & idx_mask_) - 1; }
  std::uint32_t slot_tag(std::uint32_t s) const noexcept {
    return static_cast<std::uint32_t>(static_cast<std::uint64_t>(s) >> tag_shift_);
  }
  std::uint32_t tag_of(std::uint32_t h32) const noexcept { return (h32 >> 3) & tag_mask_; }
  std::uint32_t home(std::uint32_t h32) const noexcept { return detail::home_slot(h32, slot_count_); }
  std::uint32_t make_slot(std::uint32_t d, std::uint32_t i, std::uint32_t h32) const noexcept {
    return d | ((i + 1) << dist_bits) | static_cast<std::uint32_t>(static_cast<std::uint64_t>(tag_of(h32)) << tag_shift_);
  }
  std::uint32_t advance(std::uint32_t pos) const noexcept { return pos + 1 == slot_count_ ? 0 : pos + 1; }

  // The slot holding key (npos: none; the table must exist).
  std::uint32_t find(std::uint32_t h32, const K& key) const { return probe(h32, key).pos; }
  // The entry index of key, npos when absent (or before the first insertion).
  std::uint32_t index_of(std::uint32_t h32, const K& key) const { return slots_ ? probe(h32, key).index : npos; }
  struct found {
    std::uint32_t pos, index;
  };
  found probe(std::uint32_t h32, const K& key) const {
    std::uint32_t pos = home(h32);
    const std::uint32_t want = tag_of(h32);
    for (std::uint32_t d = 0;; ++d) {
      const std::uint32_t s = slot(pos);
      if (s == 0 || dist(s) < d) return {npos, npos};
      if (slot_tag(s) == want) {
        const std::uint32_t i = slot_index(s);
        if (eq_(store_.at(i).key, key)) return {pos, i};
      }
      pos = advance(pos);
    }
  }

  // Whether table_insert(h32, .) can place the key within the probe limit.
  bool can_insert(std::uint32_t h32) const noexcept {
    std::uint32_t pos = home(h32);
    for (std::uint32_t d = 0;; ++d) {
      const std::uint32_t s = slot(pos);
      if (s == 0 || dist(s) < d) break;
      if (d == max_probe_distance) return false;
      pos = advance(pos);
    }
    for (std::uint32_t s; (s = slot(pos)) != 0; pos = advance(pos))
      if (dist(s) == max_probe_distance) return false;
    return true;
  }

  // Robin Hood: the cluster stays sorted by home slot, so an insert shifts the
  // rest of its cluster one slot right (each distance + 1).
  void table_insert(std::uint32_t h32, std::uint32_t i) noexcept {
    std::uint32_t pos = home(h32), d = 0;
    for (;; ++d) {
      const std::uint32_t s = slot(pos);
      if (s == 0 || dist(s) < d) break;
      pos = advance(pos);
    }
    std::uint32_t e = pos;
    while (slot(e) != 0) e = advance(e);
    while (e != pos) {
      const std::uint32_t p = e == 0 ? slot_count_ - 1 : e - 1;
      slot(e) = slot(p) + 1;
      e = p;
    }
    slot(pos) = make_slot(d, i, h32);
  }

  // Backward-shift deletion: no tombstones, no rehash.
  void table_erase_at(std::uint32_t pos) noexcept {
    for (;;) {
      const std::uint32_t nxt = advance(pos);
      const std::uint32_t s = slot(nxt);
      if (s == 0 || dist(s) == 0) {
        slot(pos) = 0;
        return;
      }
      slot(pos) = s - 1;
      pos = nxt;
    }
  }

  // The slot of entry i, whose table hash is h32.
  std::uint32_t slot_of_index(std::uint32_t i, std::uint32_t h32) const noexcept {
    std::uint32_t pos = home(h32);
    while (((slot(pos) >> dist_bits) & idx_mask_) != i + 1) pos = advance(pos);
    return pos;
  }

  // ---- memory -------------------------------------------------------------------
  void* take(std::size_t bytes, std::size_t align) {
    void* p = res_->allocate(bytes, align);
    own_bytes_ += bytes;
    if (own_bytes_ > own_peak_) own_peak_ = own_bytes_;
    return p;
  }
  void give(void* p, std::size_t bytes, std::size_t align) noexcept {
    res_->deallocate(p, bytes, align);
    own_bytes_ -= bytes;
  }
  std::uint32_t page_size(std::uint32_t p) const noexcept {
    const std::size_t first = std::size_t{p} * page_entries;
    return static_cast<std::uint32_t>(capacity_ - first < page_entries ? capacity_ - first : page_entries);
  }

  // The table, the page directory and the policy's memory, once, sized for
  // the capacity. All or nothing.
  void ensure_tables() {
    if (slots_) return;
    const std::size_t table_bytes = table_bytes_for(slot_count_);
    const std::size_t pages_bytes = page_count_ * sizeof(node*);
    const std::size_t policy_bytes = policy_bytes_for(capacity_, slot_count_);
    auto* table = static_cast<std::uint32_t*>(take(table_bytes, table_align));
    node** pages = nullptr;
    void* policy_memory = nullptr;
    try {
      pages = static_cast<node**>(take(pages_bytes, alignof(node*)));
      if (policy_bytes != 0) policy_memory = take(policy_bytes, policy_type::memory_align);
    } catch (...) {
      if (pages) give(pages, pages_bytes, alignof(node*));
      give(table, table_bytes, table_align);
      throw;
    }
    std::memset(table, 0, table_bytes);
    for (std::uint32_t p = 0; p < page_count_; ++p) pages[p] = nullptr;
    store_.pages = pages;
    policy_memory_ = policy_memory;
    if (policy_memory) policy_.attach_memory(policy_memory, slot_count_);
    // Published last, after everything it leads to (silent_hit() may read
    // it without the lock and follows it).
    std::atomic_ref<std::uint32_t*>(slots_).store(table, std::memory_order_release);
  }

  // A counted hit's value for the caller. When V's copy may throw it is made
  // before the hit is counted, so a copy that throws leaves the statistics
  // and the policy's order as they were (everything that can throw runs
  // before the first change).
  [[gnu::always_inline]] V hit_value(std::uint32_t i, hashed_key h) {
    if constexpr (std::is_nothrow_copy_constructible_v<V>) {
      return hit(i, h);
    } else {
      V v(store_.at(i).value);
      (void)hit(i, h);
      return v;
    }
  }
  // A counted hit on entry i: its value.
  [[gnu::always_inline]] const V& hit(std::uint32_t i, hashed_key h) noexcept {
    ++hits_;
    policy_.on_hit(i, h, true);
    return store_.at(i).value;
  }
  // A lookup missed: the policy counts the key (a read-through insertion
  // may follow).
  [[gnu::noinline]] void count_miss(hashed_key h) noexcept {
    prefetch_likely_victim();
    policy_.record(h);
    ++misses_;
  }
  // Every lookup starts loading what the policy keeps for a key it does not
  // hold (W-TinyLFU: the key's sketch counters; LRU: nothing), before the
  // probe: a miss then finds the counters on their way. Started at the miss
  // instead, the load of the sketch's row was one more wait after the probe's
  // (its own cache miss at 1M entries): about 14% of cache_profile's time on
  // W-TinyLFU, in the counting at the end of the miss (docs/cache.md, session
  // 9). A hit does not read the line: one prefetch wasted, a few instructions.
  [[gnu::always_inline]] void prefetch_counts(hashed_key h) const noexcept { policy_.prefetch(h.h32()); }

  // A miss may be followed by an insertion that evicts: start loading the
  // table line of the policy's likely victim (and its policy memory), so the
  // eviction finds them in cache. Only when the hash cannot throw (a hint).
  void prefetch_likely_victim() const noexcept {
    if constexpr (store_type::nothrow_hash) {
      if (size_ < capacity_) return;  // no eviction is coming
      const std::uint32_t v = policy_.likely_victim();
      if (v == detail::nil_index) return;
      const std::uint32_t vh = store_.hash(v);
      __builtin_prefetch(&slot(home(vh)));
      policy_.prefetch(vh);
    }
  }

  std::uint32_t acquire_node() {
    if (free_head_ != detail::nil_index) {
      const std::uint32_t i = free_head_;
      free_head_ = store_.next(i);
      return i;
    }
    const std::uint32_t p = store_.allocated >> store_type::page_shift;
    if ((store_.allocated & (page_entries - 1)) == 0) {
      const std::uint32_t n = page_size(p);
      void* mem = take(std::size_t{n} * entry_bytes, alignof(node));
      auto* nodes = static_cast<node*>(mem);
      for (std::uint32_t k = 0; k < n; ++k) ::new (static_cast<void*>(nodes + k)) node();
      store_.pages[p] = nodes;
    }
    return store_.allocated++;
  }

  void destroy_node(std::uint32_t i) noexcept {
    node& n = store_.at(i);
    std::destroy_at(std::addressof(n.key));
    std::destroy_at(std::addressof(n.value));
  }

  void release_all() noexcept {
    if (!slots_) return;
    if constexpr (!std::is_trivially_destructible_v<K> || !std::is_trivially_destructible_v<V>) {
      for (std::uint32_t pos = 0; pos < slot_count_; ++pos)
        if (slot(pos) != 0) destroy_node(slot_index(slot(pos)));
    }
    for (std::uint32_t p = 0; p < page_count_; ++p) {
      if (store_.pages[p] == nullptr) continue;
      const std::uint32_t n = page_size(p);
      std::destroy_n(store_.pages[p], n);
      give(store_.pages[p], std::size_t{n} * entry_bytes, alignof(node));
    }
    give(store_.pages, page_count_ * sizeof(node*), alignof(node*));
    if (policy_memory_) {
      policy_.detach_memory();
      give(policy_memory_, policy_bytes_for(capacity_, slot_count_), policy_type::memory_align);
      policy_memory_ = nullptr;
    }
    give(slots_, table_bytes_for(slot_count_), table_align);
    policy_.clear();
    store_.pages = nullptr;
    slots_ = nullptr;
    size_ = 0;
    store_.allocated = 0;
    free_head_ = detail::nil_index;
  }

  // A load in progress (load_and_put's frame, on the stack): its key, and
  // whether the key was written since the load began.
  struct load_frame {
    const K* key;
    hashed_key h;
    load_frame* outer;
    bool written = false;
  };
  // Puts a frame on the list for the loader's run, takes it off after.
  struct frame_on_list {
    frame_on_list(load_frame*& list, load_frame& f) noexcept : list_(list), outer_(list) { list = &f; }
    ~frame_on_list() { list_ = outer_; }
    frame_on_list(const frame_on_list&) = delete;
    frame_on_list& operator=(const frame_on_list&) = delete;
    load_frame*& list_;
    load_frame* outer_;
  };
  // After a put or erase of the key hashed h (whatever its result; not after
  // one that threw, which changed nothing), as sharded_cache's
  // supersede_loads: matched by the whole hash alone, so that this cannot
  // throw (a colliding key's load is then only allowed to start again).
  void mark_written(hashed_key h) noexcept {
    for (load_frame* f = loading_; f != nullptr; f = f->outer)
      if (f->h.full == h.full) f->written = true;
  }
  // Refuses a load of `key` from inside its own loader: while a load of it
  // is in progress and not stale, or when max_stale_nested_loads stale ones are.
  [[gnu::noinline]] void refuse_own_load(const K& key, hashed_key h) const {
    unsigned stale = 0;
    for (const load_frame* f = loading_; f != nullptr; f = f->outer) {
      if (f->h.full != h.full || !eq_(*f->key, key)) continue;
      if (!f->written)
        throw std::logic_error("basic_cache '" + name_ +
                               "': get_or_load of a key from inside that key's own loader (the load would call "
                               "its loader again without end)");
      if (++stale == max_stale_nested_loads) throw_stale_nest();
    }
  }
  [[noreturn, gnu::cold, gnu::noinline]] void throw_stale_nest() const {
    throw std::logic_error(detail::stale_nest_message("basic_cache", name_));
  }

  // Members in the order an operation touches them. First what a hit
  // writes: the hit and miss counters and the policy, whose first members
  // are its links pointer and its lists' ends (all of lru's state). In a
  // sharded_cache they share a cache line with the shard's lock, which every
  // operation writes too, so an LRU hit moves one shard line between cores,
  // not two. Then what a miss writes, then what lookups only read, then the
  // cold rest.
  std::uint64_t hits_ = 0, misses_ = 0;
  // The loads in progress, innermost first (load_and_put); read by every put
  // and erase, so on the first line.
  load_frame* loading_ = nullptr;
  policy_type policy_;
  std::size_t size_ = 0;
  std::uint32_t free_head_ = detail::nil_index;
  std::uint64_t loads_ = 0, evictions_ = 0;
  std::uint32_t* slots_ = nullptr;
  store_type store_;
  std::uint32_t slot_count_ = 0;
  std::uint32_t idx_mask_ = 0;
  std::uint32_t tag_shift_ = 32;
  std::uint32_t tag_mask_ = 0;
  std::uint32_t page_count_ = 0;
  std::size_t capacity_ = 0;
  [[no_unique_address]] Hash hash_;
  [[no_unique_address]] Eq eq_;
  std::pmr::memory_resource* res_ = nullptr;
  std::uint64_t max_bytes_ = 0;
  std::uint64_t own_bytes_ = 0;
  std::uint64_t own_peak_ = 0;
  std::uint64_t rejected_ = 0;
  void* policy_memory_ = nullptr;
  std::string name_;
  std::optional<tracking_resource> tracker_;
};

template <class K, class V, class Hash = std::hash<K>, class Eq = std::equal_to<K>>
using lru_cache = basic_cache<K, V, lru, Hash, Eq>;
template <class K, class V, class Hash = std::hash<K>, class Eq = std::equal_to<K>>
using tinylfu_cache = basic_cache<K, V, tinylfu, Hash, Eq>;

}  // namespace arenastat
