#include "arenastat/grow_hook.hpp"

namespace arenastat {
namespace {

class tracking_grow_hook final : public grow_hook {
 public:
  void admit(tag_id, std::size_t bytes) override {
    if (scopes_charged()) check_scope_limits(bytes);
  }
  void on_acquire(charge_stamp& stamp, tag_id tag, std::size_t bytes, account* acct) override {
    stamp = charge_chunk(tag, bytes, acct);  // also the chunk ledger (ARENASTAT_LEAKS)
  }
  void on_release(const charge_stamp& stamp, std::size_t bytes) noexcept override {
    credit_chunk(stamp, bytes);
  }
};

}  // namespace

grow_hook& tracking_hook() noexcept {
  // Never destroyed: arenas made before its first use (static objects, threads
  // still running at exit) call it during static destruction. A local static
  // would be destroyed first, and a call then reaches grow_hook's pure virtuals.
  static tracking_grow_hook* const hook = new tracking_grow_hook;
  return *hook;
}

}  // namespace arenastat
