#include "arenastat/tracking_resource.hpp"

namespace arenastat {

void tracking_resource::charge_scopes_or_undo(void* p, std::size_t bytes, std::size_t alignment) {
  try {
    detail::charge_scopes(tag_, bytes);
  } catch (...) {
    upstream_->deallocate(p, bytes, alignment);
    throw;
  }
}

}  // namespace arenastat
