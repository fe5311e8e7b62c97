// tracking_resource: exact per-allocation tracking for long-lived components
// whose memory is freed piecemeal (caches). Wraps any upstream and charges
// every allocate/deallocate to a named account (and to the active scopes of
// the calling thread). Safe from many threads; see account.hpp for the cost
// model and the peak's lag bound.
//
// Over std::pmr::new_delete_resource() (the default upstream unless the
// program changed it) the resource calls the global operator new and sized
// operator delete itself, and so saves one virtual call per request: the
// plain forms for an alignment up to __STDCPP_DEFAULT_NEW_ALIGNMENT__ (which
// they guarantee), the aligned forms above it. That resource's do_allocate
// calls the aligned form for every request in libstdc++, a longer path to
// malloc (aligned_alloc) for the same block. A replaced global operator new
// is still the one called. Any other upstream is called through its
// memory_resource interface.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <new>
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
      : account_(&checked_account(name, tag, upstream)),
        upstream_(upstream),
        direct_new_delete_(upstream == std::pmr::new_delete_resource()),
        tag_(register_tag(tag)),
        fast_index_(account_->fast_index()) {
    account_->use_tag(tag_);
    account_->attach_resource();
  }
  // The account's last resource checks for leaks (ARENASTAT_LEAKS, leaks.hpp).
  ~tracking_resource() override { account_->detach_resource(); }
  tracking_resource(const tracking_resource&) = delete;
  tracking_resource& operator=(const tracking_resource&) = delete;

  account& tracked_account() const noexcept { return *account_; }
  std::pmr::memory_resource* upstream() const noexcept { return upstream_; }
  tag_id tag() const noexcept { return tag_; }

 protected:
  // Hot paths: no call but the upstream's (a tail call when freeing); every
  // rarer case (a scope charged, a first use on this thread, a flush or a new
  // peak due, a request too large for any object) goes out of line.
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    if (!plain_request(bytes, alignment) || scopes_charged()) [[unlikely]]
      return allocate_slow(bytes, alignment);
    // This thread's slot is looked up before the upstream call, so that the
    // loads overlap it; the account is charged after (see do_deallocate).
    const account::thread_share share = account::share_of_this_thread(fast_index_);
    void* p = take(bytes, alignment);
    if (account::try_on_allocate(share, bytes, tag_)) [[likely]] return p;
    return charge_account(p, bytes);
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    // Credited before the memory goes back so that the upstream call comes
    // last: live bytes may drop a moment early, never late, so no peak is
    // overstated.
    if (!scopes_charged() && account::try_on_deallocate(account::share_of_this_thread(fast_index_), bytes, tag_))
        [[likely]]
      return give(p, bytes, alignment);
    credit_slow(p, bytes, alignment);
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }

 private:
  // Checks every argument before anything is registered (a refused resource
  // leaves no account or tag behind), registers the tag, then returns the
  // account. Throws std::invalid_argument for a null upstream, a bad name or
  // tag, or an upstream stack that already charges the account `name` (its
  // bytes would count twice there: docs/concepts.md), std::length_error when
  // every tag is in use.
  static account& checked_account(std::string_view name, std::string_view tag, std::pmr::memory_resource* upstream);
  // Larger than any object (PTRDIFF_MAX): refused with std::bad_alloc before
  // the upstream is asked (libstdc++'s aligned operator new wraps on sizes
  // near SIZE_MAX), the account untouched.
  static constexpr std::size_t max_request = static_cast<std::size_t>(PTRDIFF_MAX);
  // Without -mpopcnt std::has_single_bit is a call into libgcc: two and-ops instead.
  static constexpr bool power_of_two(std::size_t a) noexcept { return a != 0 && (a & (a - 1)) == 0; }
  // power_of_two(alignment) && bytes <= max_request, in two tests: alignment 0
  // gives a mask of all ones, whose top bit fails the second.
  static constexpr bool plain_request(std::size_t bytes, std::size_t alignment) noexcept {
    const std::size_t mask = alignment - 1;
    return (mask & alignment) == 0 && static_cast<std::ptrdiff_t>(mask | bytes) >= 0;
  }

  // The general path: refuses oversized requests (std::bad_alloc) and an
  // alignment that is not a power of two (std::invalid_argument, as
  // arena_resource does), checks the charged scopes'
  // limits before asking upstream (under an upstream_call, so tracked
  // resources below charge only their accounts), then charges the scopes and
  // the account.
  void* allocate_slow(std::size_t bytes, std::size_t alignment);
  void* charge_account(void* p, std::size_t bytes) noexcept;
  void credit_slow(void* p, std::size_t bytes, std::size_t alignment) noexcept;

  // The upstream's allocate / deallocate (see the note at the top for new_delete).
  // The plain operator new guarantees this alignment.
  static constexpr bool plain_aligned(std::size_t alignment) noexcept {
    return alignment <= __STDCPP_DEFAULT_NEW_ALIGNMENT__;
  }
  void* take(std::size_t bytes, std::size_t alignment) {
    if (direct_new_delete_) [[likely]] {
      if (plain_aligned(alignment)) [[likely]] return ::operator new(bytes);
      return ::operator new(bytes, std::align_val_t{alignment});
    }
    return upstream_->allocate(bytes, alignment);
  }
  void give(void* p, std::size_t bytes, std::size_t alignment) noexcept {
    if (direct_new_delete_) [[likely]] {
#if defined(__cpp_sized_deallocation)
      if (plain_aligned(alignment)) [[likely]] return ::operator delete(p, bytes);
      return ::operator delete(p, bytes, std::align_val_t{alignment});
#else  // clang without -fsized-deallocation
      if (plain_aligned(alignment)) return ::operator delete(p);
      return ::operator delete(p, std::align_val_t{alignment});
#endif
    }
    upstream_->deallocate(p, bytes, alignment);
  }

  account* account_;
  std::pmr::memory_resource* upstream_;
  bool direct_new_delete_;
  tag_id tag_;
  std::uint32_t fast_index_;  // account_->fast_index(), one load less per call
};

}  // namespace arenastat
