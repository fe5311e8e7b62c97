// libFuzzer target for the caches (built with the library under ASan+UBSan
// by scripts/fuzz.sh). The input picks a cache (lru or tinylfu basic_cache,
// or a sharded_cache of either with 1 to 4 shards), a small capacity (by
// entries or by bytes), a key universe and a hash (working, or weak: many
// keys share a hash, so probes, tags and the probe limit are exercised),
// then drives get / put / erase / get_or_load (with loaders that throw, or
// call back into the cache) / clear / contains / stats, with the upstream
// failing a chosen allocation and the user's hash or equality throwing at a
// chosen call.
// Invariants checked after every step (abort with a message on failure):
//   * lru (basic and sharded): the contents and the evictions equal a
//     reference LRU (std::list + std::map, one per shard, same capacities);
//     for basic_cache the whole recency order too;
//   * every cache: size <= capacity, stats().size == size(); a value read is
//     the last value stored for that key, and an erased or cleared key is
//     absent;
//   * hits + misses equal the lookups made (get, get_or_load) since the last
//     clear;
//   * the account's live bytes equal the cache's own bytes, the upstream
//     holds exactly as much, and never more than max_bytes;
//   * sharded_cache: a put, erase or clear of a key during its load wins (the
//     load's value is returned, not stored);
//   * an operation that throws leaves the cache as it was (contents, order,
//     statistics), except that a get_or_load whose loader ran counts its miss
//     and its load (as documented);
//   * after destruction the account and the upstream are back at zero.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <map>
#include <memory>
#include <memory_resource>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <arenastat/arenastat.hpp>
#include <arenastat/cache/cache.hpp>
#include <arenastat/cache/sharded_cache.hpp>

#include "fuzz_support.hpp"

namespace {

using fuzz::reader;

using u64 = std::uint64_t;

[[noreturn]] void fail(const char* what, long a = 0, long b = 0) {
  std::fprintf(stderr, "cache_fuzz: invariant broken: %s (%ld vs %ld)\n", what, a, b);
  std::abort();
}
void require(bool ok, const char* what, long a = 0, long b = 0) {
  if (!ok) fail(what, a, b);
}

// The user's hash and equality: `bomb` > 0 makes the bomb-th call of either
// from now throw. `weak`: the hash keeps only the key's low 2 bits.
struct user_functions {
  static inline int bomb = 0;
  static inline bool weak = false;
  static void tick() {
    if (bomb > 0 && --bomb == 0) throw std::runtime_error("user function bomb");
  }
};
struct fuzz_hash {
  std::size_t operator()(u64 k) const {
    user_functions::tick();
    return user_functions::weak ? (k & 3) : k;
  }
};
struct fuzz_eq {
  bool operator()(u64 a, u64 b) const {
    user_functions::tick();
    return a == b;
  }
};

// While alive, no injected failure fires (the checks use the cache too).
struct quiet {
  int bomb, fail_in;
  fuzz::counting_upstream& up;
  explicit quiet(fuzz::counting_upstream& u) : bomb(user_functions::bomb), fail_in(u.fail_in), up(u) {
    user_functions::bomb = 0;
    up.fail_in = 0;
  }
  ~quiet() {
    user_functions::bomb = bomb;
    up.fail_in = fail_in;
  }
};


// The reference LRU of one shard.
struct ref_lru {
  std::size_t capacity = 0;
  std::list<u64> order;  // most recently used first
  std::map<u64, std::pair<u64, std::list<u64>::iterator>> entries;
  u64 evictions = 0;

  std::optional<u64> get(u64 k) {
    auto it = entries.find(k);
    if (it == entries.end()) return std::nullopt;
    order.splice(order.begin(), order, it->second.second);
    return it->second.first;
  }
  void put(u64 k, u64 v) {
    if (auto it = entries.find(k); it != entries.end()) {
      it->second.first = v;
      order.splice(order.begin(), order, it->second.second);
      return;
    }
    if (entries.size() == capacity) {
      entries.erase(order.back());
      order.pop_back();
      ++evictions;
    }
    order.push_front(k);
    entries.emplace(k, std::make_pair(v, order.begin()));
  }
  bool present(u64 k) const { return entries.count(k) != 0; }
  void erase(u64 k) {
    auto it = entries.find(k);
    if (it == entries.end()) return;
    order.erase(it->second.second);
    entries.erase(it);
  }
  void clear() {
    order.clear();
    entries.clear();
    evictions = 0;
  }
};

enum class kind : std::uint8_t { lru, tinylfu, sharded_lru, sharded_tinylfu };

template <class Cache>
constexpr bool is_sharded = false;
template <class K, class V, class P, class H, class E>
constexpr bool is_sharded<arenastat::sharded_cache<K, V, P, H, E>> = true;

// The policy a cache runs.
template <class C>
struct policy_of;
template <class K, class V, class P, class H, class E>
struct policy_of<arenastat::basic_cache<K, V, P, H, E>> {
  using type = P;
};
template <class K, class V, class P, class H, class E>
struct policy_of<arenastat::sharded_cache<K, V, P, H, E>> {
  using type = P;
};

// Everything an operation that throws must leave as it was.
struct snapshot {
  u64 hits, misses, loads, evictions, rejected;
  std::size_t size;
  std::vector<bool> present;
  std::vector<u64> order;  // basic lru: keys from most to least recently used
  bool operator==(const snapshot&) const = default;
};

template <class Cache>
class driver {
 public:
  static constexpr bool sharded = is_sharded<Cache>;
  static constexpr bool lru = std::is_same_v<typename policy_of<Cache>::type, arenastat::lru>;

  driver(Cache& c, fuzz::counting_upstream& up, u64 universe, std::uint64_t max_bytes, std::size_t shards,
         std::size_t max_entries)
      : c_(c), up_(up), universe_(universe), max_bytes_(max_bytes) {
    refs_.resize(shards);
    const std::size_t cap = c.capacity();
    for (std::size_t s = 0; s < shards; ++s)
      refs_[s].capacity = max_entries != 0 ? max_entries / shards + (s < max_entries % shards ? 1 : 0) : cap / shards;
    std::size_t sum = 0;
    for (auto& r : refs_) sum += r.capacity;
    require(sum == cap, "capacity equals the shards' capacities", static_cast<long>(sum), static_cast<long>(cap));
  }

  void run(reader& in) {
    while (!in.empty()) {
      const std::uint8_t op = in.byte();
      const u64 k = in.byte() % universe_;
      step(op, k, in);
      check();
    }
  }

 private:
  ref_lru& ref_for(u64 k) {
    quiet q(up_);
    const std::uint64_t low = c_.hash_key(k).low();
    return refs_[(low * refs_.size()) >> 32];
  }

  snapshot take() {
    quiet q(up_);
    snapshot s{};
    const arenastat::cache_stats st = c_.stats();
    s.hits = st.hits;
    s.misses = st.misses;
    s.loads = st.loads;
    s.evictions = st.evictions;
    s.rejected = st.rejected;
    s.size = st.size;
    for (u64 k = 0; k < universe_; ++k) s.present.push_back(c_.contains(k));
    if constexpr (!sharded && lru) {
      c_.policy().for_each([&](std::uint32_t i) { s.order.push_back(c_.key_at(i)); });
    }
    return s;
  }

  // A value the cache gave for k (nullopt: it said absent).
  void saw(u64 k, const std::optional<u64>& v) {
    if (v) {
      auto it = last_.find(k);
      require(it != last_.end(), "a value read for a key erased, cleared or never stored", static_cast<long>(k));
      require(it->second == *v, "a value read is the last value stored", static_cast<long>(*v),
              static_cast<long>(it->second));
    }
  }

  void model_put(u64 k, u64 v, bool stored) {
    last_[k] = v;
    if (lru && stored) ref_for(k).put(k, v);
  }
  void model_clear() {
    last_.clear();
    for (auto& r : refs_) r.clear();
    lookups_ = 0;
  }

  // Whether a put or erase of k2 supersedes sharded_cache's load of k (the
  // load's value is then not stored): the same whole hash.
  bool supersedes(u64 k2, u64 k) {
    if constexpr (!sharded) return false;
    quiet q(up_);
    return c_.hash_key(k2).full == c_.hash_key(k).full;
  }

  // The inner operation a re-entrant loader of key k runs (on another key or
  // the same).
  void reenter(std::uint8_t what, u64 k2, u64 v2, u64 k) {
    if (what % 4 != 2 && (what % 4 == 3 ? sharded : supersedes(k2, k))) superseded_ = true;
    switch (what % 4) {
      case 0: {
        const u64 rejected = c_.stats().rejected;
        c_.put(k2, v2);
        model_put(k2, v2, c_.stats().rejected == rejected);
        break;
      }
      case 1:
        c_.erase(k2);
        last_.erase(k2);
        if (lru) ref_for(k2).erase(k2);
        break;
      case 2: {
        const std::optional<u64> v = c_.get(k2);
        ++lookups_;
        saw(k2, v);
        if (lru) require(ref_for(k2).get(k2) == v, "lru: a re-entrant get agrees with the reference");
        break;
      }
      default:
        c_.clear();
        model_clear();
        break;
    }
  }

  void step(std::uint8_t op, u64 k, reader& in) {
    const snapshot before = take();
    bool loader_ran = false, reentered = false;
    try {
      switch (op % 10) {
        case 0: {  // get
          const std::optional<u64> v = c_.get(k);
          ++lookups_;
          saw(k, v);
          if (lru) require(ref_for(k).get(k) == v, "lru: get agrees with the reference", static_cast<long>(k));
          break;
        }
        case 1: {  // put
          const u64 v = in.byte();
          const bool stored = c_.put(k, v);
          model_put(k, v, stored);
          break;
        }
        case 2: {  // erase
          const bool had = c_.erase(k);
          if (lru) require(had == ref_for(k).present(k), "lru: erase finds what the reference holds");
          last_.erase(k);
          if (lru) ref_for(k).erase(k);
          break;
        }
        case 3:
        case 4: {  // get_or_load; the loader throws, or calls back into the cache
          const std::uint8_t how = in.byte();
          const u64 v = in.byte();
          const u64 k2 = in.byte() % universe_;
          bool hit = true;
          u64 rejected_at_store = 0;
          superseded_ = false;
          const u64 got = c_.get_or_load(k, [&](u64 key) -> u64 {
            require(key == k, "the loader gets the key asked for");
            loader_ran = true;
            hit = false;
            // The lookup counted its miss before the loader runs.
            ++lookups_;
            if (how & 1) throw std::runtime_error("loader refuses");
            if (how & 2) {
              reentered = true;
              reenter(how >> 2, k2, v ^ 0x55, k);
            }
            rejected_at_store = c_.stats().rejected;
            return v;
          });
          if (hit) {
            ++lookups_;
            saw(k, got);
            if (lru) require(ref_for(k).get(k) == std::optional<u64>(got), "lru: a loaded hit agrees");
          } else {
            require(got == v, "get_or_load returns the loader's value");
            // sharded_cache: a put, erase or clear of the key during its load
            // wins over the load's value (not stored).
            if (!superseded_) model_put(k, v, c_.stats().rejected == rejected_at_store);
          }
          break;
        }
        case 5:  // clear
          c_.clear();
          model_clear();
          break;
        case 6: {  // contains
          const bool has = c_.contains(k);
          if (!has) break;
          require(last_.count(k) != 0, "contains a key erased, cleared or never stored", static_cast<long>(k));
          break;
        }
        case 7:  // the fail_in-th allocation from now fails
          up_.fail_in = in.byte() % 8;
          break;
        case 8:  // the bomb-th call of the hash or equality from now throws
          user_functions::bomb = in.byte() % 16;
          break;
        default: {  // stats, read twice: reading them changes nothing
          quiet q(up_);
          const auto a = c_.stats();
          const auto b = c_.stats();
          require(a.hits == b.hits && a.misses == b.misses && a.size == b.size && a.live_bytes == b.live_bytes,
                  "stats() is stable");
          break;
        }
      }
    } catch (const std::bad_alloc&) {
      if (!reentered) after_throw(before, loader_ran);
    } catch (const std::runtime_error&) {
      if (!reentered) after_throw(before, loader_ran);
    }
  }

  void after_throw(snapshot before, bool loader_ran) {
    // A loader that ran counted its miss and its load (documented); nothing
    // else may change. (After a loader that called back into the cache the
    // model, updated by the inner operation, is checked instead.)
    if (loader_ran) {
      ++before.misses;
      ++before.loads;
    }
    const snapshot after = take();
    require(after.hits == before.hits, "strong guarantee: hits", static_cast<long>(after.hits),
            static_cast<long>(before.hits));
    require(after.misses == before.misses, "strong guarantee: misses", static_cast<long>(after.misses),
            static_cast<long>(before.misses));
    require(after.loads == before.loads, "strong guarantee: loads", static_cast<long>(after.loads),
            static_cast<long>(before.loads));
    require(after.evictions == before.evictions, "strong guarantee: evictions");
    require(after.rejected == before.rejected, "strong guarantee: rejected");
    require(after.size == before.size, "strong guarantee: size", static_cast<long>(after.size),
            static_cast<long>(before.size));
    require(after.present == before.present, "strong guarantee: contents");
    require(after.order == before.order, "strong guarantee: lru order");
  }

  void check() {
    quiet q(up_);
    const arenastat::cache_stats s = c_.stats();
    require(s.size == c_.size(), "stats().size == size()");
    require(s.size <= c_.capacity(), "size <= capacity", static_cast<long>(s.size), static_cast<long>(c_.capacity()));
    require(s.hits + s.misses == lookups_, "hits + misses == lookups", static_cast<long>(s.hits + s.misses),
            static_cast<long>(lookups_));
    require(s.live_bytes == static_cast<std::int64_t>(s.own_bytes), "live bytes == own bytes",
            static_cast<long>(s.live_bytes), static_cast<long>(s.own_bytes));
    require(up_.held == s.live_bytes, "upstream == live bytes", static_cast<long>(up_.held),
            static_cast<long>(s.live_bytes));
    if (max_bytes_ != 0)
      require(static_cast<std::uint64_t>(s.live_bytes) <= max_bytes_, "live bytes <= max_bytes",
              static_cast<long>(s.live_bytes), static_cast<long>(max_bytes_));
    std::size_t present = 0;
    for (u64 k = 0; k < universe_; ++k) {
      const bool has = c_.contains(k);
      present += has;
      if (has) require(last_.count(k) != 0, "holds a key erased, cleared or never stored", static_cast<long>(k));
      if (lru) require(has == ref_for(k).present(k), "lru: contents equal the reference's", static_cast<long>(k));
    }
    require(present == s.size, "size == keys held", static_cast<long>(present), static_cast<long>(s.size));
    if constexpr (lru) {
      u64 evictions = 0;
      for (auto& r : refs_) evictions += r.evictions;
      require(s.evictions == evictions, "lru: evictions equal the reference's", static_cast<long>(s.evictions),
              static_cast<long>(evictions));
      if constexpr (!sharded) {
        std::vector<u64> order;
        c_.policy().for_each([&](std::uint32_t i) { order.push_back(c_.key_at(i)); });
        std::vector<u64> want(refs_[0].order.begin(), refs_[0].order.end());
        require(order == want, "lru: recency order equals the reference's");
      }
    }
  }

  Cache& c_;
  fuzz::counting_upstream& up_;
  u64 universe_;
  std::uint64_t max_bytes_;
  std::vector<ref_lru> refs_;
  std::map<u64, u64> last_;  // the last value stored per key (erase and clear forget it)
  u64 lookups_ = 0;          // gets and get_or_loads counted since the last clear
  bool superseded_ = false;  // the load in progress was superseded (sharded_cache)
};

template <class P>
struct basic_of {
  using type = arenastat::basic_cache<u64, u64, P, fuzz_hash, fuzz_eq>;
};

template <class Cache>
void run_one(reader& in, const char* name, std::size_t max_entries, std::uint64_t max_bytes, std::size_t shards,
             u64 universe, int fail_at_construction) {
  fuzz::counting_upstream up;
  up.fail_in = fail_at_construction;
  {
    std::optional<Cache> c;
    try {
      if constexpr (is_sharded<Cache>) {
        c.emplace(name, arenastat::sharded_cache_options{.max_entries = max_entries, .max_bytes = max_bytes,
                                                         .shards = shards},
                  &up);
      } else {
        c.emplace(name, arenastat::cache_options{.max_entries = max_entries, .max_bytes = max_bytes}, &up);
      }
    } catch (const std::bad_alloc&) {
      require(up.held == 0, "a failed construction gives every byte back", static_cast<long>(up.held));
      return;
    } catch (const std::invalid_argument&) {
      require(up.held == 0, "a refused construction holds nothing");
      return;
    }
    up.fail_in = 0;
    driver<Cache> d(*c, up, universe, max_bytes, is_sharded<Cache> ? shards : 1, max_entries);
    d.run(in);
    user_functions::bomb = 0;
    up.fail_in = 0;
  }
  require(up.held == 0, "the upstream holds nothing after destruction", static_cast<long>(up.held));
  require(arenastat::account::get(name).live_bytes() == 0, "the account is back at 0 after destruction");
}

// Which cache, and its bound: by entries, or by bytes (a footprint plus a
// slack read from the input; `slack_unit` per input step).
struct cache_setup {
  std::size_t entries;
  bool by_bytes;
  int fail_at_construction;
  u64 universe;
  reader& in;
  template <class Policy>
  void basic(const char* name) {
    using C = typename basic_of<Policy>::type;
    const std::uint64_t bytes = by_bytes ? C::footprint_bytes(entries) + in.byte() : 0;
    run_one<C>(in, name, by_bytes ? 0 : entries, bytes, 1, universe, fail_at_construction);
  }
  template <class Policy>
  void sharded(const char* name, std::size_t shards, std::uint64_t slack_unit) {
    using C = arenastat::sharded_cache<u64, u64, Policy, fuzz_hash, fuzz_eq>;
    const std::size_t e = entries < shards ? shards : entries;
    const std::uint64_t bytes =
        by_bytes ? shards * (C::shard_cache::footprint_bytes(e / shards) + 512) + in.byte() * slack_unit : 0;
    run_one<C>(in, name, by_bytes ? 0 : e, bytes, shards, universe, fail_at_construction);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  reader in{data, size};
  const std::uint8_t config = in.byte();
  const auto which = static_cast<kind>(config & 3);
  user_functions::weak = (config & 4) != 0;
  const bool by_bytes = (config & 8) != 0;
  const int fail_at_construction = (config & 16) ? 1 + (config >> 5) : 0;
  const std::size_t entries = 1 + in.byte() % 96;  // 1..96: tinylfu's tuner starts at 64
  const u64 universe = 1 + in.byte() % 160;
  const std::size_t shards = 1 + in.byte() % 4;
  user_functions::bomb = 0;

  cache_setup run{entries, by_bytes, fail_at_construction, universe, in};
  switch (which) {
    case kind::lru: run.basic<arenastat::lru>("fuzz.cache.lru"); break;
    case kind::tinylfu: run.basic<arenastat::tinylfu>("fuzz.cache.tinylfu"); break;
    case kind::sharded_lru: run.sharded<arenastat::lru>("fuzz.cache.sharded_lru", shards, 8); break;
    case kind::sharded_tinylfu: run.sharded<arenastat::tinylfu>("fuzz.cache.sharded_tinylfu", shards, 1024); break;
  }
  return 0;
}
