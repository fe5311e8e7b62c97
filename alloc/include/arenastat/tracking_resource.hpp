// tracking_resource: exact per-allocation tracking for long-lived components
// whose memory is freed piecemeal (caches). Wraps any upstream and charges
// every allocate/deallocate to a named account (and to the active scopes of
// the calling thread). Safe from many threads; see account.hpp for the cost
// model and the peak's lag bound.
#pragma once
#include <cstddef>
#include <memory_resource>
#include <string_view>

#include "arenastat/account.hpp"
#include "arenastat/tags.hpp"

namespace arenastat {

class tracking_resource final : public std::pmr::memory_resource {
 public:
  static constexpr std::string_view default_tag = "heap";

  explicit tracking_resource(std::string_view name,
                             std::pmr::memory_resource* upstream = std::pmr::get_default_resource())
      : tracking_resource(name, default_tag, upstream) {}
  tracking_resource(std::string_view name, std::string_view tag,
                    std::pmr::memory_resource* upstream = std::pmr::get_default_resource())
      : account_(&account::get(name)), upstream_(upstream), tag_(register_tag(tag)) {
    account_->use_tag(tag_);
  }

  account& tracked_account() const noexcept { return *account_; }
  std::pmr::memory_resource* upstream() const noexcept { return upstream_; }
  tag_id tag() const noexcept { return tag_; }

 protected:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    void* p = upstream_->allocate(bytes, alignment);
    if (detail::tls_scopes.depth != 0) [[unlikely]] charge_scopes_or_undo(p, bytes, alignment);
    account_->on_allocate(bytes, tag_);
    return p;
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    upstream_->deallocate(p, bytes, alignment);
    credit_bytes(tag_, bytes, account_);
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }

 private:
  void charge_scopes_or_undo(void* p, std::size_t bytes, std::size_t alignment);

  account* account_;
  std::pmr::memory_resource* upstream_;
  tag_id tag_;
};

}  // namespace arenastat
