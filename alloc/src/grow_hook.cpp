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
  static tracking_grow_hook hook;  // trivially destructible in effect: no state
  return hook;
}

}  // namespace arenastat
