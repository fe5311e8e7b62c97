// The grow hook: how an arena reports each chunk it takes or gives back.
// Counting happens per chunk, never per allocation (HotSpot hooks Arena::grow
// the same way). The default hook charges the statistics table; a custom hook
// that observes chunks and keeps the statistics derives from forwarding_hook,
// which passes all three calls on (admit too: it is where a scope's limit
// refuses a chunk before upstream is asked).
#pragma once
#include <cstddef>

#include "arenastat/context.hpp"

namespace arenastat {

class grow_hook {
 public:
  virtual ~grow_hook() = default;
  // Called before a chunk of `bytes` is taken from upstream; may throw
  // (e.g. limit_exceeded) so that a chunk that cannot be charged is never
  // asked for. The default admits every chunk.
  virtual void admit(tag_id tag, std::size_t bytes) {
    (void)tag;
    (void)bytes;
  }
  // A chunk of `bytes` was taken from upstream. Fills the stamp the chunk keeps.
  // May throw (e.g. limit_exceeded): the arena then returns the chunk upstream,
  // first calling on_release with the stamp if it was filled (a hook that
  // forwarded the chunk, then threw, has had it charged).
  virtual void on_acquire(charge_stamp& stamp, tag_id tag, std::size_t bytes, account* acct) = 0;
  // A chunk stamped by on_acquire is given back to upstream.
  virtual void on_release(const charge_stamp& stamp, std::size_t bytes) noexcept = 0;
};

// Charges chunks to the charged scopes and the arena's account (charge_chunk /
// credit_chunk); admits a chunk only within every charged scope's limit.
grow_hook& tracking_hook() noexcept;

// Passes every call on to `next` (tracking_hook() unless given). Derive from
// it to observe chunks while keeping the statistics and the limits: override
// what you observe and call the base. A hook that forwards on_acquire and
// on_release but not admit keeps the statistics, but a chunk beyond a scope's
// limit is then made before on_acquire refuses it.
//
//   struct chunk_log : arenastat::forwarding_hook {
//     void on_acquire(arenastat::charge_stamp& s, arenastat::tag_id t, std::size_t n, arenastat::account* a) override {
//       forwarding_hook::on_acquire(s, t, n, a);
//       std::printf("chunk of %zu bytes\n", n);
//     }
//   };
class forwarding_hook : public grow_hook {
 public:
  forwarding_hook() noexcept : next_(tracking_hook()) {}
  explicit forwarding_hook(grow_hook& next) noexcept : next_(next) {}
  void admit(tag_id tag, std::size_t bytes) override { next_.admit(tag, bytes); }
  void on_acquire(charge_stamp& stamp, tag_id tag, std::size_t bytes, account* acct) override {
    next_.on_acquire(stamp, tag, bytes, acct);
  }
  void on_release(const charge_stamp& stamp, std::size_t bytes) noexcept override { next_.on_release(stamp, bytes); }

 private:
  grow_hook& next_;
};

}  // namespace arenastat
