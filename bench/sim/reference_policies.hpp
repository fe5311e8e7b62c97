// reference_policies.hpp: the simulator's reference replacement policies,
// written from the papers' descriptions, over dense key ids (trace.hpp).
// Capacities are in entries and every miss is admitted (the key is cached
// after its miss, evicting if full), except opt_bypass.
//
//   reference_lru  least recently used.
//   arc            ARC, Megiddo and Modha, "ARC: A Self-Tuning, Low Overhead
//                  Replacement Cache", FAST 2003 (Fig. 4): T1/T2 resident,
//                  B1/B2 ghost lists, target p adapted on ghost hits (integer
//                  steps: delta = max(1, |other ghost| / |this ghost|)).
//   lirs           LIRS, Jiang and Zhang, SIGMETRICS 2002: LIR blocks hold
//                  99% of the capacity (resident HIR 1%, at least 1); stack S
//                  with pruning, queue Q of resident HIR blocks; non-resident
//                  HIR blocks stay in S until pruned (unbounded, as in the paper).
//   opt            Belady's MIN for demand caching: on a miss in a full cache,
//                  evict the cached key used again farthest in the future
//                  (next-use positions from one backward pass over the trace).
//   opt_bypass     the same, but the missing key itself may be the one not kept
//                  (the optimum when a miss need not be admitted; what
//                  Caffeine's Clairvoyant policy computes).
//   caffeine_tinylfu  W-TinyLFU as Caffeine runs it (LRU window, SLRU main,
//                  sketch estimates on both sides of the duel, hill climber;
//                  documented at the class).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

namespace arenastat::sim {

inline constexpr std::uint32_t nil = UINT32_MAX;

// Doubly linked lists over ids; an id is in at most one list of a link set.
struct link_set {
  std::vector<std::uint32_t> prev, next;
  explicit link_set(std::size_t ids) : prev(ids, nil), next(ids, nil) {}
};
struct id_list {
  std::uint32_t head = nil, tail = nil;
  std::size_t size = 0;
};
inline void push_front(link_set& l, id_list& s, std::uint32_t i) {
  l.prev[i] = nil;
  l.next[i] = s.head;
  if (s.head != nil) l.prev[s.head] = i;
  else s.tail = i;
  s.head = i;
  ++s.size;
}
inline void unlink(link_set& l, id_list& s, std::uint32_t i) {
  const std::uint32_t p = l.prev[i], n = l.next[i];
  if (p != nil) l.next[p] = n;
  else s.head = n;
  if (n != nil) l.prev[n] = p;
  else s.tail = p;
  --s.size;
}
inline std::uint32_t pop_back(link_set& l, id_list& s) {
  const std::uint32_t t = s.tail;
  unlink(l, s, t);
  return t;
}

class reference_lru {
 public:
  reference_lru(std::size_t capacity, std::size_t ids) : cap_(capacity), links_(ids), in_(ids, 0) {}
  bool access(std::uint32_t k, std::size_t) {
    if (in_[k]) {
      unlink(links_, list_, k);
      push_front(links_, list_, k);
      return true;
    }
    if (list_.size == cap_) in_[pop_back(links_, list_)] = 0;
    push_front(links_, list_, k);
    in_[k] = 1;
    return false;
  }

 private:
  std::size_t cap_;
  link_set links_;
  id_list list_;
  std::vector<std::uint8_t> in_;
};

class arc {
 public:
  enum where : std::uint8_t { none, t1, t2, b1, b2 };
  arc(std::size_t capacity, std::size_t ids) : c_(capacity), links_(ids), where_(ids, none) {}

  bool access(std::uint32_t x, std::size_t) {
    switch (where_[x]) {
      case t1:
      case t2:  // Case I
        move(x, t2);
        return true;
      case b1: {  // Case II
        const std::size_t delta = b1_.size >= b2_.size ? 1 : b2_.size / b1_.size;
        p_ = p_ + delta < c_ ? p_ + delta : c_;
        replace(false);
        move(x, t2);
        return false;
      }
      case b2: {  // Case III
        const std::size_t delta = b2_.size >= b1_.size ? 1 : b1_.size / b2_.size;
        p_ = p_ > delta ? p_ - delta : 0;
        replace(true);
        move(x, t2);
        return false;
      }
      case none: break;
    }
    // Case IV
    if (t1_.size + b1_.size == c_) {
      if (t1_.size < c_) {
        where_[pop_back(links_, b1_)] = none;
        replace(false);
      } else {
        where_[pop_back(links_, t1_)] = none;
      }
    } else {
      const std::size_t total = t1_.size + t2_.size + b1_.size + b2_.size;
      if (total >= c_) {
        if (total == 2 * c_) where_[pop_back(links_, b2_)] = none;
        replace(false);
      }
    }
    where_[x] = t1;
    push_front(links_, t1_, x);
    return false;
  }
  std::size_t target() const noexcept { return p_; }

 private:
  id_list& list(where w) { return w == t1 ? t1_ : w == t2 ? t2_ : w == b1 ? b1_ : b2_; }
  void move(std::uint32_t x, where to) {
    unlink(links_, list(static_cast<where>(where_[x])), x);
    where_[x] = to;
    push_front(links_, list(to), x);
  }
  // REPLACE(x, p): in_b2 says whether the missing key was found in B2.
  void replace(bool in_b2) {
    if (t1_.size >= 1 && ((in_b2 && t1_.size == p_) || t1_.size > p_)) {
      move(t1_.tail, b1);
    } else if (t2_.size >= 1) {
      move(t2_.tail, b2);
    } else {
      move(t1_.tail, b1);
    }
  }

  std::size_t c_, p_ = 0;
  link_set links_;
  id_list t1_, t2_, b1_, b2_;
  std::vector<std::uint8_t> where_;
};

class lirs {
 public:
  lirs(std::size_t capacity, std::size_t ids)
      : hir_max_(capacity / 100 > 0 ? capacity / 100 : 1),
        lir_max_(capacity > hir_max_ ? capacity - hir_max_ : 0),
        s_links_(ids),
        q_links_(ids),
        state_(ids, 0) {
    if (capacity < 2) throw std::invalid_argument("lirs: the capacity must be at least 2");
  }

  bool access(std::uint32_t x, std::size_t) {
    const std::uint8_t st = state_[x];
    if (st & lir) {
      const bool was_bottom = s_.tail == x;
      to_top_of_s(x);
      if (was_bottom) prune();
      return true;
    }
    if (st & resident) {  // a resident HIR block
      if (st & in_s) {
        to_top_of_s(x);
        unlink(q_links_, q_, x);
        state_[x] = (state_[x] & ~in_q) | lir;
        demote_bottom_lir();
      } else {
        to_top_of_s(x);
        unlink(q_links_, q_, x);
        push_front(q_links_, q_, x);  // the end of Q (front of the list = newest)
      }
      return true;
    }
    // A miss.
    if (lir_count_ < lir_max_) {  // warm-up: the first blocks become LIR
      to_top_of_s(x);
      state_[x] |= lir | resident;
      ++lir_count_;
      return false;
    }
    if (q_.size >= hir_max_) {  // evict the resident HIR block at the front of Q
      const std::uint32_t v = pop_back(q_links_, q_);
      state_[v] &= ~(resident | in_q);
      if (!(state_[v] & in_s)) state_[v] = 0;
    }
    if ((st & in_s) && lir_max_ > 0) {  // a non-resident HIR block still in S
      to_top_of_s(x);
      state_[x] |= lir | resident;
      demote_bottom_lir();
    } else {
      to_top_of_s(x);
      state_[x] |= resident | in_q;
      push_front(q_links_, q_, x);
    }
    return false;
  }

 private:
  static constexpr std::uint8_t lir = 1, resident = 2, in_s = 4, in_q = 8;
  void to_top_of_s(std::uint32_t x) {
    if (state_[x] & in_s) unlink(s_links_, s_, x);
    push_front(s_links_, s_, x);
    state_[x] |= in_s;
  }
  // The LIR block at the bottom of S becomes a resident HIR block at the end
  // of Q; then S is pruned.
  void demote_bottom_lir() {
    const std::uint32_t b = pop_back(s_links_, s_);
    state_[b] = (state_[b] & ~(lir | in_s)) | in_q;
    push_front(q_links_, q_, b);
    prune();
  }
  // Removes HIR blocks from the bottom of S until it is a LIR block.
  void prune() {
    while (s_.tail != nil && !(state_[s_.tail] & lir)) {
      const std::uint32_t b = pop_back(s_links_, s_);
      state_[b] &= ~in_s;
      if (!(state_[b] & resident)) state_[b] = 0;
    }
  }

  std::size_t hir_max_, lir_max_, lir_count_ = 0;
  link_set s_links_, q_links_;
  id_list s_, q_;
  std::vector<std::uint8_t> state_;
};

// Next-use position of every request (trace size: never used again).
inline std::vector<std::uint32_t> next_uses(const std::vector<std::uint32_t>& keys, std::uint32_t ids) {
  std::vector<std::uint32_t> next(keys.size());
  std::vector<std::uint32_t> seen(ids, static_cast<std::uint32_t>(keys.size()));
  for (std::size_t i = keys.size(); i-- > 0;) {
    next[i] = seen[keys[i]];
    seen[keys[i]] = static_cast<std::uint32_t>(i);
  }
  return next;
}

class opt {
 public:
  // next: next_uses() of the trace replayed (positions passed to access()).
  opt(std::size_t capacity, const std::vector<std::uint32_t>& next, bool bypass)
      : cap_(capacity), next_(&next), bypass_(bypass) {}
  bool access(std::uint32_t k, std::size_t pos) {
    const std::uint32_t n = (*next_)[pos];
    // A cached key is in the set under its next use, which is now.
    const auto it = cached_.find({static_cast<std::uint32_t>(pos), k});
    if (it != cached_.end()) {
      cached_.erase(it);
      cached_.insert({n, k});
      return true;
    }
    if (cached_.size() == cap_) {
      const auto far = std::prev(cached_.end());
      if (bypass_ && far->first <= n) return false;  // the missing key is the farthest
      cached_.erase(far);
    }
    cached_.insert({n, k});
    return false;
  }

 private:
  std::size_t cap_;
  const std::vector<std::uint32_t>* next_;
  bool bypass_;
  std::set<std::pair<std::uint32_t, std::uint32_t>> cached_;  // (next use, key)
};

}  // namespace arenastat::sim

namespace arenastat::sim {

// caffeine_tinylfu: W-TinyLFU as Caffeine runs it, written from the paper
// (Einziger, Friedman, Manes, "TinyLFU: A Highly Efficient Cache Admission
// Policy", ACM ToS 2017) and Caffeine's published design notes
// (github.com/ben-manes/caffeine/wiki/Efficiency, .../Design):
//   window     LRU, 1% of the capacity (at least 1 entry); every miss enters
//              its front.
//   main       SLRU: probation (LRU) and protected (LRU, 80% of the main
//              segment); a probation hit moves to protected's front, protected's
//              overflow goes back to probation's front.
//   admission  when the window overflows its back (the candidate) goes to
//              probation; if the cache is then over capacity the candidate
//              duels probation's back (the victim; protected's back when
//              probation holds only the candidate): both frequencies are the
//              sketch's estimates; the candidate stays only if strictly more
//              frequent, else it is evicted. Jitter (Caffeine's guard against
//              hash flooding): a losing candidate of estimate >= 6 is admitted
//              with probability 1/128 (a fixed-seed generator here).
//   sketch     count-min, 4 counters of 4 bits per key, one in each of 4 rows
//              of 16 x ceil_pow2(capacity) / 4 counters (16 counters per
//              entry, Caffeine's table of ceil_pow2(capacity) longs); every
//              access increments the key's counters below 15 (not conservative);
//              after 10 x capacity increments every counter is halved and the
//              count becomes (count - odd counters / 4) / 2 (the reset).
//   doorkeeper optional (options::doorkeeper): a Bloom filter of
//              ceil_pow2(4 x capacity) bits, 2 probes, in front of the sketch:
//              a key's first access since the last reset only sets its bits;
//              the estimate is the sketch's plus 1 when its bits are set;
//              the reset clears it.
//   climber    hill climbing on the window (Caffeine's BoundedLocalCache):
//              after each sample of 10 x capacity requests, the hit rate is
//              compared with the previous sample's (0 before the first); the
//              step (6.25% of the capacity, first towards a smaller window) is
//              kept if the rate did not fall and reversed if it fell; it decays
//              by 0.98 a sample and restarts at 6.25% when the rate moved by
//              5 points or more. Growing the window takes the room from
//              protected's maximum and moves probation's back entries to the
//              window's front; shrinking gives it back to protected and moves
//              the window's back entries to probation's front (no duel).
//              Simplification: the whole step is applied at once (Caffeine
//              moves at most 1000 entries a maintenance run).
class caffeine_tinylfu {
 public:
  struct options {
    bool climb = true;
    bool jitter = true;
    bool doorkeeper = false;
  };
  caffeine_tinylfu(std::size_t capacity, std::size_t ids, options o)
      : cap_(capacity), opt_(o), links_(ids), where_(ids, none) {
    if (capacity < 2) throw std::invalid_argument("caffeine_tinylfu: the capacity must be at least 2");
    window_max_ = capacity / 100 > 0 ? capacity / 100 : 1;
    protected_max_ = (capacity - window_max_) * 8 / 10;
    std::size_t words = 1;
    while (words < capacity) words <<= 1;
    table_.assign(words, 0);
    word_mask_ = words - 1;
    sample_size_ = 10 * capacity;
    std::size_t bits = 64;
    while (bits < 4 * capacity) bits <<= 1;
    door_.assign(bits / 64, 0);
    door_mask_ = bits - 1;
    step_ = -0.0625 * static_cast<double>(capacity);
  }
  caffeine_tinylfu(std::size_t capacity, std::size_t ids) : caffeine_tinylfu(capacity, ids, options{}) {}

  bool access(std::uint32_t k, std::size_t) {
    record(k);
    const bool hit = where_[k] != none;
    if (hit) {
      ++sample_hits_;
      on_hit(k);
    } else {
      ++sample_misses_;
      where_[k] = window;
      push_front(links_, window_, k);
      evict();
    }
    if (opt_.climb && sample_hits_ + sample_misses_ >= sample_size_) climb();
    return hit;
  }

  // The sketch's estimate (plus the doorkeeper's bit).
  std::uint32_t frequency(std::uint32_t k) const {
    std::uint32_t f = 15;
    for (unsigned i = 0; i < 4; ++i) {
      const std::uint32_t c = counter(k, i);
      f = c < f ? c : f;
    }
    if (opt_.doorkeeper && door_contains(k)) ++f;
    return f;
  }
  std::size_t window_max() const noexcept { return window_max_; }
  std::size_t protected_max() const noexcept { return protected_max_; }
  std::uint64_t resets() const noexcept { return resets_; }
  enum where_t : std::uint8_t { none, window, probation, protected_ };
  where_t where(std::uint32_t k) const { return static_cast<where_t>(where_[k]); }

 private:
  static std::uint64_t mix(std::uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Row i's counter of key k: a word of the table and one of its 16 nibbles,
  // both from a hash of the key seeded by the row.
  std::pair<std::size_t, unsigned> slot(std::uint32_t k, unsigned i) const {
    const std::uint64_t h = mix(k * 4ull + i);
    return {static_cast<std::size_t>(h & word_mask_), static_cast<unsigned>((h >> 60) & 15) * 4};
  }
  std::uint32_t counter(std::uint32_t k, unsigned i) const {
    const auto [w, s] = slot(k, i);
    return static_cast<std::uint32_t>((table_[w] >> s) & 15);
  }
  bool door_contains(std::uint32_t k) const {
    const std::uint64_t h = mix(~static_cast<std::uint64_t>(k));
    const std::size_t a = h & door_mask_, b = (h >> 32) & door_mask_;
    return (door_[a / 64] >> (a % 64) & 1) && (door_[b / 64] >> (b % 64) & 1);
  }
  // Returns true if k was already in the doorkeeper.
  bool door_put(std::uint32_t k) {
    const std::uint64_t h = mix(~static_cast<std::uint64_t>(k));
    const std::size_t a = h & door_mask_, b = (h >> 32) & door_mask_;
    const bool was = (door_[a / 64] >> (a % 64) & 1) && (door_[b / 64] >> (b % 64) & 1);
    door_[a / 64] |= 1ull << (a % 64);
    door_[b / 64] |= 1ull << (b % 64);
    return was;
  }
  void record(std::uint32_t k) {
    if (opt_.doorkeeper && !door_put(k)) {
      if (++additions_ >= sample_size_) reset();
      return;
    }
    bool added = false;
    for (unsigned i = 0; i < 4; ++i) {
      const auto [w, s] = slot(k, i);
      if (((table_[w] >> s) & 15) < 15) {
        table_[w] += 1ull << s;
        added = true;
      }
    }
    if (added && ++additions_ >= sample_size_) reset();
  }
  void reset() {
    std::uint64_t odd = 0;
    for (std::uint64_t& w : table_) {
      odd += static_cast<std::uint64_t>(__builtin_popcountll(w & 0x1111111111111111ull));
      w = (w >> 1) & 0x7777777777777777ull;
    }
    additions_ = (additions_ - odd / 4) / 2;
    if (opt_.doorkeeper) std::fill(door_.begin(), door_.end(), 0);
    ++resets_;
  }

  id_list& list(std::uint8_t w) { return w == window ? window_ : w == probation ? probation_ : protected_l_; }
  void move(std::uint32_t k, where_t to) {
    unlink(links_, list(where_[k]), k);
    where_[k] = to;
    push_front(links_, list(to), k);
  }
  void on_hit(std::uint32_t k) {
    if (where_[k] == probation) {
      move(k, protected_);
      demote_protected();
    } else {
      move(k, static_cast<where_t>(where_[k]));
    }
  }
  void demote_protected() {
    while (protected_l_.size > protected_max_) move(protected_l_.tail, probation);
  }
  void evict() {
    while (window_.size > window_max_) {
      const std::uint32_t candidate = window_.tail;
      move(candidate, probation);
      if (window_.size + probation_.size + protected_l_.size <= cap_) continue;
      std::uint32_t victim = probation_.tail;
      if (victim == candidate) victim = protected_l_.tail != nil ? protected_l_.tail : candidate;
      const std::uint32_t out = victim != candidate && admit(candidate, victim) ? victim : candidate;
      unlink(links_, list(where_[out]), out);
      where_[out] = none;
    }
  }
  bool admit(std::uint32_t candidate, std::uint32_t victim) {
    const std::uint32_t cf = frequency(candidate), vf = frequency(victim);
    if (cf > vf) return true;
    if (opt_.jitter && cf >= 6) {
      rng_ = rng_ * 6364136223846793005ull + 1442695040888963407ull;
      return ((rng_ >> 33) & 127) == 0;
    }
    return false;
  }
  void climb() {
    const double rate = static_cast<double>(sample_hits_) / static_cast<double>(sample_hits_ + sample_misses_);
    const double change = rate - previous_rate_;
    const double amount = change >= 0 ? step_ : -step_;
    step_ = (change >= 0.05 || change <= -0.05) ? (amount >= 0 ? 0.0625 : -0.0625) * static_cast<double>(cap_)
                                                : 0.98 * amount;
    previous_rate_ = rate;
    sample_hits_ = sample_misses_ = 0;
    const auto a = static_cast<std::int64_t>(amount);
    if (a > 0) {
      const std::size_t quota = std::min<std::size_t>(static_cast<std::size_t>(a), protected_max_);
      protected_max_ -= quota;
      window_max_ += quota;
      demote_protected();
      for (std::size_t n = 0; n < quota; ++n) {
        const std::uint32_t e = probation_.tail != nil ? probation_.tail : protected_l_.tail;
        if (e == nil) break;
        move(e, window);
      }
    } else if (a < 0) {
      const std::size_t quota =
          std::min<std::size_t>(static_cast<std::size_t>(-a), window_max_ > 1 ? window_max_ - 1 : 0);
      protected_max_ += quota;
      window_max_ -= quota;
      while (window_.size > window_max_) move(window_.tail, probation);
    }
    ++adjustments_;
  }

  std::size_t cap_;
  options opt_;
  link_set links_;
  std::vector<std::uint8_t> where_;
  id_list window_, probation_, protected_l_;
  std::size_t window_max_ = 1, protected_max_ = 0;
  std::vector<std::uint64_t> table_, door_;
  std::size_t word_mask_ = 0, door_mask_ = 0;
  std::uint64_t additions_ = 0, sample_size_ = 0, resets_ = 0;
  std::uint64_t sample_hits_ = 0, sample_misses_ = 0, adjustments_ = 0;
  double previous_rate_ = 0, step_ = 0;
  std::uint64_t rng_ = 0x2545F4914F6CDD1Dull;
};

}  // namespace arenastat::sim
