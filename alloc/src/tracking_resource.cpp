#include "arenastat/tracking_resource.hpp"

#include <stdexcept>
#include <string>

#include "quoted.hpp"
#include "stack_accounts.hpp"

namespace arenastat {

account& tracking_resource::checked_account(std::string_view name, std::string_view tag,
                                            std::pmr::memory_resource* upstream) {
  if (upstream == nullptr)
    throw std::invalid_argument("arenastat::tracking_resource: upstream resource is null");
  account::check_name(name);
  detail::refuse_double_charge("arenastat::tracking_resource " + detail::quoted(name), upstream, name);
  register_tag(tag);  // checks the tag; before the account, which is never removed
  return account::get(name);
}

void* tracking_resource::allocate_slow(std::size_t bytes, std::size_t alignment) {
  // The hot path's two-test check agrees with the refusals below.
  static_assert(plain_request(0, 1) && plain_request(PTRDIFF_MAX, 4096) && plain_request(1, std::size_t{1} << 63));
  static_assert(!plain_request(8, 0) && !plain_request(8, 3) && !plain_request(8, 24));
  static_assert(!plain_request(std::size_t{PTRDIFF_MAX} + 1, 8) && !plain_request(SIZE_MAX, 1) &&
                !plain_request(SIZE_MAX, 0));
  if (!power_of_two(alignment))
    throw std::invalid_argument("arenastat::tracking_resource: alignment " + std::to_string(alignment) +
                                " is not a power of two");
  if (bytes > max_request) {
    if (scopes_charged()) check_scope_limits(bytes);  // a limit too small for it speaks first (oom)
    throw std::bad_alloc();
  }
  if (!scopes_charged()) return charge_account(take(bytes, alignment), bytes);
  check_scope_limits(bytes);  // a request that cannot fit is never made
  void* p;
  {
    upstream_call below;
    p = take(bytes, alignment);
  }
  try {
    charge_scopes(tag_, bytes);
  } catch (...) {
    upstream_call below;
    give(p, bytes, alignment);
    throw;
  }
  account_->on_allocate(bytes, tag_);
  return p;
}

void* tracking_resource::charge_account(void* p, std::size_t bytes) noexcept {
  account_->on_allocate(bytes, tag_);
  return p;
}

void tracking_resource::credit_slow(void* p, std::size_t bytes, std::size_t alignment) noexcept {
  account_->on_deallocate(bytes, tag_);
  if (!scopes_charged()) return give(p, bytes, alignment);
  credit_scopes(tag_, bytes);
  upstream_call below;
  give(p, bytes, alignment);
}

}  // namespace arenastat
