// The grow hook: how an arena reports each chunk it takes or gives back.
// Counting happens per chunk, never per allocation (HotSpot hooks Arena::grow
// the same way). The default hook charges the statistics table; a custom hook
// may observe chunks and chain to tracking_hook().
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
  // May throw (e.g. limit_exceeded): the arena then returns the chunk upstream.
  virtual void on_acquire(charge_stamp& stamp, tag_id tag, std::size_t bytes, account* acct) = 0;
  // A chunk stamped by on_acquire is given back to upstream.
  virtual void on_release(const charge_stamp& stamp, std::size_t bytes) noexcept = 0;
};

// Charges chunks to the charged scopes and the arena's account (charge_chunk /
// credit_chunk); admits a chunk only within every charged scope's limit.
grow_hook& tracking_hook() noexcept;

}  // namespace arenastat
