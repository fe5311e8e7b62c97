// sharded_cache: the thread-safe variant. N shards, each a basic_cache with
// its own lock (detail::versioned_shard_mutex: spins briefly, then sleeps) and its own
// policy state; a key's shard is chosen from the low
// 32 bits of its mixed hash (the shard's table uses the high bits).
//
// Memory: one tracking_resource named after the cache feeds every shard and
// the shard array itself, so the account holds the whole cache. Bounds are
// split evenly: shard k gets max_entries / N entries (the first
// max_entries % N shards one more) and an equal share of max_bytes -
// shard_array_bytes() (for tinylfu, less the window tuner its total capacity
// needs: shard_bytes_for()), so the account never exceeds max_bytes. After
// clear() the account holds exactly fixed_bytes(): the shards themselves and,
// for tinylfu, the window tuner every shard shares.
//
// Window tuning (tinylfu, from 64 entries in all): one tuner for the whole
// cache (detail::shared_window_tuner: the ghosts of
// window_tuner::ghost_entries(capacity) entries over a hash sample of every
// shard's keys, under a lock of its own tried only for sampled keys); each
// shard follows the window percent it chooses.
//
// Silent hits (silent_hits: W-TinyLFU, trivially copyable K and V): a hit
// that would change nothing (tinylfu_policy::hit_is_silent) is served
// without the shard lock, as the reader of a sequence lock whose writers are
// the lock's holders (detail::versioned_shard_mutex): the reader checks the
// shard's version before and after its reads, and counts the hit in its
// thread's stripe (detail::read_stripes), so a hot key's hit writes no line
// another thread's hit writes. clear() drains the stripes before it frees
// anything.
//
// Single-flight loading: get_or_load() on a missing key registers an
// in-flight record (on the loading thread's stack, no allocation) before
// calling the loader outside the shard lock; every other thread asking for
// the same key meanwhile waits for that result (or its exception) instead of
// loading again. A loader that asks for its own key (on its own thread) gets
// std::logic_error instead of waiting for itself forever (unless it wrote the
// key first: its load is then superseded and the ask starts a new one, up to
// max_stale_nested_loads stale loads of the key on the thread), and so does a
// wait that would close a cycle across threads (A's loader waits for a key B
// is loading while B's loader waits, directly or through other threads'
// loads, in any sharded_cache, for a key A is loading: detail/load_waits.hpp),
// instead of both sleeping forever. The loading thread
// returns only after its waiters have taken the result. A load nobody waits
// for allocates nothing; the first waiter of
// a load makes its condition variable (one global-heap allocation in
// libstdc++, outside the cache's account, freed when the load ends).
#pragma once
#include <algorithm>
#include <bit>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>

#include "arenastat/cache/cache.hpp"
#include "arenastat/cache/detail/footprint_resource.hpp"
#include "arenastat/cache/detail/load_waits.hpp"
#include "arenastat/cache/detail/shard_mutex.hpp"

namespace arenastat {

namespace detail {
// The shared window tuner a shard policy asks for (shared_tuner_type), or none.
struct no_shared_tuner {
  static constexpr std::size_t align = 1;
  static constexpr std::size_t bytes_for(std::size_t) noexcept { return 0; }
  void attach(void*, std::size_t, unsigned) noexcept {}
  void detach() noexcept {}
  void clear() noexcept {}
  unsigned percent() const noexcept { return 0; }
};
// The policy selector a shard runs: Policy::shard_selector, or Policy.
template <class Policy>
struct shard_selector_of {
  using type = Policy;
};
template <class Policy>
  requires requires { typename Policy::shard_selector; }
struct shard_selector_of<Policy> {
  using type = typename Policy::shard_selector;
};
template <class P>
struct shared_tuner_of {
  using type = no_shared_tuner;
};
template <class P>
  requires requires(P& p, typename P::shared_tuner_type* t) { p.share_tuner(t); }
struct shared_tuner_of<P> {
  using type = typename P::shared_tuner_type;
};
}  // namespace detail

struct sharded_cache_options {
  std::size_t max_entries = 0;
  std::uint64_t max_bytes = 0;
  std::size_t shards = 0;   // 0: default_shards() (128 x hardware threads, >= 1024 entries each)
  bool track = true;
};

template <class K, class V, class Policy = tinylfu, class Hash = std::hash<K>, class Eq = std::equal_to<K>>
class sharded_cache {
 public:
  // Each shard runs Policy::shard_selector when there is one (tinylfu's
  // follows the shared tuner), else Policy.
  using shard_cache = basic_cache<K, V, typename detail::shard_selector_of<Policy>::type, Hash, Eq>;
  using tuner_type = typename detail::shared_tuner_of<typename shard_cache::policy_type>::type;
  static constexpr bool shares_tuner = !std::is_same_v<tuner_type, detail::no_shared_tuner>;
  // Whether hits that change nothing are served without the shard lock
  // (see silent_hit; W-TinyLFU with trivially copyable keys and values).
  static constexpr bool silent_hits = shard_cache::silent_hits;
  using hashed_key = detail::hashed_key;
  static constexpr std::size_t max_shards = 4096;
  static constexpr std::size_t min_default_shard_entries = 1024;

  // The shard count used when the options say 0: 128 x hardware threads (a
  // power of two, at most max_shards), halved until each shard holds at least
  // min_default_shard_entries entries (of the smaller capacity of the bounds:
  // for a byte bound, the entries of one cache of that many bytes). Many small shards keep two threads from
  // meeting on the same shard, whose lock and entries would then move between
  // the cores: with few shards a second thread added nothing on the Zipfian
  // benchmark, with many it did (docs/cache.md has the figures).
  static std::size_t default_shards(const sharded_cache_options& options) noexcept {
    std::size_t n = std::bit_ceil(std::size_t{128} * std::max(1u, std::thread::hardware_concurrency()));
    n = std::min(n, max_shards);
    // With both bounds the smaller capacity wins, as in the shards: counted
    // from max_entries alone, a small max_bytes got a shard array larger
    // than itself.
    std::uint64_t entries = options.max_entries;
    if (options.max_bytes != 0) {
      const std::uint64_t by_bytes = shard_cache::capacity_for_bytes(options.max_bytes);
      if (entries == 0 || by_bytes < entries) entries = by_bytes;
    }
    while (n > 1 && entries / n < min_default_shard_entries) n /= 2;
    return n;
  }

  // Throws std::invalid_argument naming the problem (see basic_cache; also a
  // shard count above max_shards or above max_entries).
  sharded_cache(std::string_view name, const sharded_cache_options& options,
                std::pmr::memory_resource* upstream = std::pmr::get_default_resource(), Hash hash = Hash{},
                Eq eq = Eq{})
      : name_(name), hash_(hash), eq_(eq) {
    if (name.empty()) throw std::invalid_argument("sharded_cache: the name (its account) must not be empty");
    if (upstream == nullptr) throw std::invalid_argument("sharded_cache '" + name_ + "': upstream resource is null");
    std::size_t n = options.shards;
    if (n == 0) n = default_shards(options);
    if (n > max_shards)
      throw std::invalid_argument("sharded_cache '" + name_ + "': shards " + std::to_string(n) + " exceeds " +
                                  std::to_string(max_shards));
    if (options.max_entries == 0 && options.max_bytes == 0)
      throw std::invalid_argument("sharded_cache '" + name_ + "': set max_entries, max_bytes or both (both are 0)");
    if (options.max_entries != 0 && options.max_entries < n)
      throw std::invalid_argument("sharded_cache '" + name_ + "': max_entries " +
                                  std::to_string(options.max_entries) + " is below the shard count " +
                                  std::to_string(n));
    const std::uint64_t array_bytes = n * sizeof(shard);
    if (options.max_bytes != 0 && options.max_bytes <= array_bytes)
      throw std::invalid_argument("sharded_cache '" + name_ + "': max_bytes " + std::to_string(options.max_bytes) +
                                  " does not exceed the shard array (" + std::to_string(array_bytes) + " bytes)");
    // Checked here, on the whole cache's figures: a shard's own message would
    // give its share and tell a sharded_cache to use sharded_cache.
    const std::uint64_t most_entries = std::uint64_t{shard_cache::max_capacity} * n;
    if (options.max_entries > most_entries) {
      // Suggest more shards only when enough of them would do.
      const std::uint64_t needed = (options.max_entries + shard_cache::max_capacity - 1) / shard_cache::max_capacity;
      throw std::invalid_argument("sharded_cache '" + name_ + "': max_entries " + std::to_string(options.max_entries) +
                                  " exceeds what " + std::to_string(n) + " shards hold (" +
                                  std::to_string(shard_cache::max_capacity) + " entries each: " +
                                  std::to_string(most_entries) + ")" +
                                  (needed <= max_shards ? "; use at least " + std::to_string(needed) + " shards (at most " +
                                                              std::to_string(max_shards) + ")"
                                                        : "; no cache holds more than " +
                                                              std::to_string(std::uint64_t{shard_cache::max_capacity} *
                                                                             max_shards) +
                                                              " entries (" + std::to_string(max_shards) +
                                                              " shards is the most)"));
    }
    bool tuner_fits = true;
    const std::uint64_t shard_bytes =
        options.max_bytes == 0 ? 0 : shard_bytes_for(options.max_bytes - array_bytes, n, tuner_fits);
    if (options.max_bytes != 0 && shard_cache::capacity_for_bytes(shard_bytes) == 0)
      throw std::invalid_argument("sharded_cache '" + name_ + "': max_bytes " + std::to_string(options.max_bytes) +
                                  " leaves each of its " + std::to_string(n) + " shards " +
                                  std::to_string(shard_bytes) + " bytes, below the footprint of a one-entry cache (" +
                                  std::to_string(shard_cache::footprint_bytes(1)) +
                                  " bytes); use fewer shards or more bytes");
    if (options.track) {
      tracker_.emplace(name_, "cache", upstream);
      res_ = &*tracker_;
    } else {
      footprint_.emplace(upstream);  // the exact peak of what the shards hold together
      res_ = &*footprint_;
    }
    shards_ = static_cast<shard*>(res_->allocate(n * sizeof(shard), alignof(shard)));
    std::size_t built = 0;
    try {
      for (; built < n; ++built) {
        cache_options o;
        o.track = false;
        if (options.max_bytes != 0) o.max_bytes = shard_bytes;
        if (options.max_entries != 0) o.max_entries = options.max_entries / n + (built < options.max_entries % n ? 1 : 0);
        ::new (static_cast<void*>(shards_ + built)) shard(name_, o, res_, hash_, eq_);
      }
      shard_count_ = static_cast<std::uint32_t>(n);
      tuner_bytes_ = tuner_fits ? tuner_type::bytes_for(capacity()) : 0;
      if (tuner_bytes_ != 0) tuner_memory_ = res_->allocate(tuner_bytes_, tuner_type::align);
    } catch (...) {
      for (std::size_t k = 0; k < built; ++k) shards_[k].~shard();
      res_->deallocate(shards_, n * sizeof(shard), alignof(shard));
      throw;
    }
    if constexpr (shares_tuner) {
      if (tuner_memory_ != nullptr) {
        tuner_.attach(tuner_memory_, capacity(), shard_cache::policy_type::initial_window_percent);
        for (std::uint32_t k = 0; k < shard_count_; ++k) shards_[k].cache.mutable_policy().share_tuner(&tuner_);
      }
    }
  }

  ~sharded_cache() {
    for (std::uint32_t k = 0; k < shard_count_; ++k) shards_[k].~shard();
    if (tuner_memory_ != nullptr) {
      tuner_.detach();
      res_->deallocate(tuner_memory_, tuner_bytes_, tuner_type::align);
    }
    res_->deallocate(shards_, shard_array_bytes(), alignof(shard));
  }
  sharded_cache(const sharded_cache&) = delete;
  sharded_cache& operator=(const sharded_cache&) = delete;

  std::optional<V> get(const K& key) {
    const hashed_key h = hash_key(key);
    shard& s = shard_for(h);
    if constexpr (silent_hits)
      if (std::optional<V> v = silent_hit(s, key, h)) return v;
    std::lock_guard lk(s.mu);
    return s.cache.get_hashed(key, h);
  }

  bool put(const K& key, V value) {
    const hashed_key h = hash_key(key);
    K k(key);
    shard& s = shard_for(h);
    std::lock_guard lk(s.mu);
    const bool stored = s.cache.put_hashed(std::move(k), std::move(value), h, true);
    supersede_loads(s, h);
    return stored;
  }

  bool erase(const K& key) {
    const hashed_key h = hash_key(key);
    shard& s = shard_for(h);
    std::lock_guard lk(s.mu);
    const bool erased = s.cache.erase_hashed(key, h);
    supersede_loads(s, h);
    return erased;
  }

  // Read-through with single-flight loading (see the header comment). A put,
  // erase or clear of the key while its load runs wins: the load's value goes
  // to the callers already waiting for it but is not stored over that write,
  // and a caller after the write starts a load of its own. A
  // miss is counted by the policy at the lookup, under the shard lock (the
  // loader runs outside it), not after the eviction as basic_cache's
  // get_or_load counts it.
  template <class Loader>
  V get_or_load(const K& key, Loader&& loader) {
    const hashed_key h = hash_key(key);
    shard& s = shard_for(h);
    if constexpr (silent_hits)
      if (std::optional<V> v = silent_hit(s, key, h)) return std::move(*v);
    std::unique_lock lk(s.mu);
    if (std::optional<V> v = s.cache.hit_hashed(key, h)) return std::move(*v);
    // A miss, counted below unless the call is refused (which counts nothing,
    // as in basic_cache).
    unsigned own_stale = 0;
    for (flight* f = s.flights; f != nullptr; f = f->next) {
      if (f->h.full != h.full || !eq_(*f->key, key)) continue;
      // A load that began before a write of the key has a stale value: a
      // caller after that write loads afresh (its flight goes first), its
      // own loader too (it waits for nothing), up to max_stale_nested_loads
      // stale loads of the key on this thread.
      if (f->superseded) {
        if (f->loader == std::this_thread::get_id() && ++own_stale == max_stale_nested_loads) [[unlikely]]
          throw_stale_nest();
        continue;
      }
      if (f->loader == std::this_thread::get_id()) [[unlikely]] throw_recursive_load();
      return wait_for(lk, *f, s, h);
    }
    s.cache.count_miss(h);
    flight f;
    f.key = &key;
    f.h = h;
    f.loader = std::this_thread::get_id();
    f.next = s.flights;
    s.flights = &f;
    s.cache.count_load();
    lk.unlock();
    try {
      V v = std::invoke(std::forward<Loader>(loader), key);
      lk.lock();
      if (!f.superseded) s.cache.put_hashed(K(key), V(v), h, false);
      f.value.emplace(std::move(v));
    } catch (...) {
      if (!lk.owns_lock()) lk.lock();
      f.error = std::current_exception();
    }
    for (flight** p = &s.flights; *p != nullptr; p = &(*p)->next) {
      if (*p == &f) {
        *p = f.next;
        break;
      }
    }
    f.done = true;
    if (f.waiters != 0) {  // then a waiter made the condition variable
      detail::process_load_waits().flight_done(&f);  // before any waiter runs on
      f.cv->notify_all();
      f.cv->wait(lk, [&] { return f.waiters == 0; });
    }
    if (f.error) std::rethrow_exception(f.error);
    return std::move(*f.value);
  }

  // Removes every entry of every shard (the shards and the tuner stay: see
  // the header comment); the tuner starts over.
  // Silent hits (served without a lock) are shut out meanwhile: clear()
  // frees what they read.
  void clear() {
    stripes_.begin_reclaim();
    for (std::uint32_t k = 0; k < shard_count_; ++k) {
      std::lock_guard lk(shards_[k].mu);
      shards_[k].cache.clear();
      for (flight* f = shards_[k].flights; f != nullptr; f = f->next) f->superseded = true;
    }
    tuner_.clear();
    silent_hits_cleared_.store(stripes_.hits(), std::memory_order_release);
    stripes_.end_reclaim();
  }

  std::size_t size() const {
    std::size_t n = 0;
    for (std::uint32_t k = 0; k < shard_count_; ++k) {
      std::lock_guard lk(shards_[k].mu);
      n += shards_[k].cache.size();
    }
    return n;
  }
  std::size_t capacity() const noexcept {
    std::size_t n = 0;
    for (std::uint32_t k = 0; k < shard_count_; ++k) n += shards_[k].cache.capacity();
    return n;
  }
  bool contains(const K& key) const {
    const hashed_key h = hash_key(key);
    shard& s = shard_for(h);
    std::lock_guard lk(s.mu);
    return s.cache.contains(key);
  }

  // Sums of every shard; bytes as in basic_cache::stats(), plus the shard array.
  cache_stats stats() const {
    cache_stats t;
    for (std::uint32_t k = 0; k < shard_count_; ++k) {
      std::lock_guard lk(shards_[k].mu);
      const cache_stats s = shards_[k].cache.stats();
      t.hits += s.hits;
      t.misses += s.misses;
      t.loads += s.loads;
      t.evictions += s.evictions;
      t.rejected += s.rejected;
      t.size += s.size;
      t.capacity += s.capacity;
      t.own_bytes += s.own_bytes;
    }
    t.hits += silent_hit_count();
    t.own_bytes += fixed_bytes();
    if (tracker_) {
      t.live_bytes = tracker_->tracked_account().live_bytes();
      t.peak_bytes = tracker_->tracked_account().peak_bytes();
    } else {
      // One counter for both: the shards' own bytes, summed one lock at a
      // time, are no snapshot. Its peak is raised just after it, so a read
      // between the two takes the larger.
      t.live_bytes = static_cast<std::int64_t>(footprint_->bytes());
      t.peak_bytes = std::max<std::uint64_t>(footprint_->peak(), footprint_->bytes());
    }
    t.bytes_per_entry = t.size == 0 ? 0.0 : static_cast<double>(t.own_bytes) / static_cast<double>(t.size);
    return t;
  }

  // Hits served without the shard lock since construction or clear(),
  // included in stats().hits (0 when silent_hits is false).
  std::uint64_t silent_hit_count() const noexcept {
    // The baseline first (acquire: the stripes then read at least what
    // clear() read for it), so a clear() meanwhile cannot make this negative.
    const std::uint64_t cleared = silent_hits_cleared_.load(std::memory_order_acquire);
    const std::uint64_t now = stripes_.hits();
    return now > cleared ? now - cleared : 0;
  }

  std::size_t shard_count() const noexcept { return shard_count_; }
  std::size_t shard_array_bytes() const noexcept { return std::size_t{shard_count_} * sizeof(shard); }
  // The window tuner's ghosts (tinylfu; 0 for lru).
  std::size_t tuner_bytes() const noexcept { return tuner_bytes_; }
  // What the cache holds with no entry: the shard array and the tuner.
  std::size_t fixed_bytes() const noexcept { return shard_array_bytes() + tuner_bytes_; }
  // The window percent the shared tuner chose (tinylfu; 0 for lru).
  unsigned window_percent() const noexcept { return tuner_.percent(); }
  const std::string& name() const noexcept { return name_; }
  std::pmr::memory_resource* resource() const noexcept { return res_; }

  hashed_key hash_key(const K& key) const { return detail::hash_of_key(hash_, key); }

 private:
  struct flight {
    const K* key = nullptr;
    hashed_key h{};
    std::thread::id loader;  // the thread running the loader
    flight* next = nullptr;
    // Made by the first waiter: libstdc++'s condition_variable_any allocates
    // (a shared mutex) when built, and most loads have no waiter.
    std::optional<std::condition_variable_any> cv;
    std::optional<V> value;
    std::exception_ptr error;
    unsigned waiters = 0;
    bool done = false;
    bool superseded = false;  // the key was put, erased or cleared during the load: its value is not stored
  };

  // The lock and the cache's first members (its hit and miss counters and
  // the policy's list ends, written by every locked lookup) share the
  // shard's first cache line (basic_cache's members say what comes after).
  struct alignas(64) shard {
    shard(const std::string& name, const cache_options& o, std::pmr::memory_resource* res, const Hash& h,
          const Eq& e)
        : cache(name, o, res, h, e) {}
    mutable detail::versioned_shard_mutex mu;
    shard_cache cache;
    flight* flights = nullptr;
  };

  // The byte bound of each of n shards so that the shards and the tuner
  // their total capacity needs fit in `bytes`: the largest per-shard capacity
  // c with n x footprint(c) + tuner(n x c) <= bytes (both grow with c). When
  // not even one entry per shard fits beside a tuner, the shards share
  // `bytes` without one (tuner_fits false).
  static std::uint64_t shard_bytes_for(std::uint64_t bytes, std::size_t n, bool& tuner_fits) noexcept {
    tuner_fits = true;
    if constexpr (!shares_tuner) {
      return bytes / n;
    } else {
      std::size_t lo = 0, hi = shard_cache::capacity_for_bytes(bytes / n);
      while (lo < hi) {
        const std::size_t mid = lo + (hi - lo + 1) / 2;
        if (n * shard_cache::footprint_bytes(mid) + tuner_type::bytes_for(n * mid) <= bytes) lo = mid;
        else hi = mid - 1;
      }
      if (lo == 0) {
        tuner_fits = false;
        return bytes / n;
      }
      return shard_cache::footprint_bytes(lo);
    }
  }

  shard& shard_for(hashed_key h) const noexcept {
    return shards_[(static_cast<std::uint64_t>(h.low()) * shard_count_) >> 32];
  }

  // A put or erase of the key of hash h (under s's lock): a load of that key
  // in flight read its value before this write, so it must not store it over
  // the write (a stale value back after an erase). Matched by the whole hash
  // alone (no Eq call: this runs after the write, and must not throw); a
  // colliding key's load then only goes uncached.
  static void supersede_loads(shard& s, hashed_key h) noexcept {
    for (flight* f = s.flights; f != nullptr; f = f->next)
      if (f->h.full == h.full) f->superseded = true;
  }

  // A hit served without the shard lock, when the key is cached and the hit
  // would change nothing (basic_cache::silent_hit, read under the shard's
  // version; counted in the thread's stripe); nullopt: take the lock.
  [[gnu::always_inline]] std::optional<V> silent_hit(shard& s, const K& key, hashed_key h) {
    detail::read_stripes::stripe* st = stripes_.enter();
    if (st == nullptr) [[unlikely]] return std::nullopt;
    struct leaver {
      detail::read_stripes& stripes;
      detail::read_stripes::stripe& stripe;
      bool hit = false;
      ~leaver() { stripes.leave(stripe, hit); }
    } leave{stripes_, *st};
    const std::uint64_t v = s.mu.read_begin();
    if (v & 1) return std::nullopt;
    std::optional<V> r = s.cache.silent_hit(key, h, [&s, v]() noexcept { return s.mu.read_unchanged(v); });
    leave.hit = r.has_value();
    return r;
  }

  // A loader asked for its own key (directly or through other loads): waiting
  // for the load in flight would wait for itself.
  [[noreturn, gnu::cold, gnu::noinline]] void throw_recursive_load() const {
    throw std::logic_error("sharded_cache '" + name_ +
                           "': get_or_load of a key from inside that key's own loader (the load would wait for itself)");
  }

  // A loader that wrote its own key and asked for it, nested
  // max_stale_nested_loads times on this thread.
  [[noreturn, gnu::cold, gnu::noinline]] void throw_stale_nest() const {
    throw std::logic_error(detail::stale_nest_message("sharded_cache", name_));
  }

  // Loads on two or more threads whose loaders wait for each other's keys:
  // the wait that would close the cycle is refused.
  [[noreturn, gnu::cold, gnu::noinline]] void throw_load_cycle() const {
    throw std::logic_error("sharded_cache '" + name_ +
                           "': get_or_load of a key whose load, on another thread, waits (through its loader) for a "
                           "load this thread runs: the loads would wait for each other forever");
  }

  // Waits (shard lock held, released while asleep) for the load in flight f
  // run by another thread, and takes its value or exception. The wait is
  // recorded in the process's load_waits first, and refused (logic_error)
  // when it would close a cycle of waits.
  // Waits for another thread's load of the key (h) in shard s: a miss,
  // counted once the wait is not refused (a refused call counts nothing).
  V wait_for(std::unique_lock<detail::versioned_shard_mutex>& lk, flight& f, shard& s, hashed_key h) {
    if (!f.cv) f.cv.emplace();
    detail::load_waits& waits = detail::process_load_waits();
    const std::thread::id me = std::this_thread::get_id();
    if (!waits.begin_wait(me, &f, f.loader)) throw_load_cycle();
    s.cache.count_miss(h);
    struct wait_end {
      detail::load_waits& waits;
      std::thread::id me;
      ~wait_end() { waits.end_wait(me); }
    } end{waits, me};
    ++f.waiters;
    f.cv->wait(lk, [&] { return f.done; });
    std::exception_ptr err = f.error;
    std::optional<V> out;
    if (!err) {
      try {
        out.emplace(*f.value);
      } catch (...) {
        err = std::current_exception();
      }
    }
    if (--f.waiters == 0) f.cv->notify_all();
    if (err) std::rethrow_exception(err);
    return std::move(*out);
  }

  std::string name_;
  [[no_unique_address]] Hash hash_;
  [[no_unique_address]] Eq eq_;
  std::optional<tracking_resource> tracker_;
  std::optional<detail::footprint_resource> footprint_;  // untracked: what the cache holds, and its peak
  std::pmr::memory_resource* res_ = nullptr;
  shard* shards_ = nullptr;
  std::uint32_t shard_count_ = 0;
  tuner_type tuner_;
  void* tuner_memory_ = nullptr;
  std::size_t tuner_bytes_ = 0;
  detail::read_stripes stripes_;
  std::atomic<std::uint64_t> silent_hits_cleared_{0};  // stripes_.hits() at the last clear()
};

template <class K, class V, class Hash = std::hash<K>, class Eq = std::equal_to<K>>
using sharded_lru_cache = sharded_cache<K, V, lru, Hash, Eq>;
template <class K, class V, class Hash = std::hash<K>, class Eq = std::equal_to<K>>
using sharded_tinylfu_cache = sharded_cache<K, V, tinylfu, Hash, Eq>;

}  // namespace arenastat
