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
#pragma once
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
