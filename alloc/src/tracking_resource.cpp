#include "arenastat/tracking_resource.hpp"

namespace arenastat {

void* tracking_resource::charge_slow(void* p, std::size_t bytes, std::size_t alignment) {
  if (detail::tls_scopes.depth != 0) {
    try {
      detail::charge_scopes(tag_, bytes);
    } catch (...) {
      give(p, bytes, alignment);
      throw;
    }
  }
  account_->on_allocate(bytes, tag_);
  return p;
}

void tracking_resource::credit_slow(void* p, std::size_t bytes, std::size_t alignment) noexcept {
  account_->on_deallocate(bytes, tag_);
  if (detail::tls_scopes.depth != 0) detail::credit_scopes(tag_, bytes);
  give(p, bytes, alignment);
}

}  // namespace arenastat
