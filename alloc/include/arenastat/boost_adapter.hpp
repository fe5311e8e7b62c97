// boost_adapter: lets boost::container::pmr containers allocate through any
// std::pmr::memory_resource (arena_resource, tracking_resource,
// jemalloc_resource, ...).
//
// Boost.Container has its own polymorphic-allocator hierarchy
// (boost::container::pmr::memory_resource), unrelated to std::pmr. This adapter
// is a boost::container::pmr::memory_resource that forwards every call,
// bytes and alignment unchanged, to a std::pmr::memory_resource*:
//
//   arenastat::tracking_resource tracked{"parser"};
//   arenastat::boost_adapter to_boost{&tracked};
//   boost::container::pmr::vector<int> v{&to_boost};   // charged to "parser"
//
// Boost.Container's own containers also accept std::pmr::polymorphic_allocator
// directly (boost::container::vector<T, std::pmr::polymorphic_allocator<T>>);
// the adapter is only needed for the boost::container::pmr aliases.
//
// Header-only, and not included by <arenastat/arenastat.hpp> (core users need
// no Boost). Linking: boost::container::pmr's default and global resources
// (get_default_resource, new_delete_resource), which a default-constructed or
// copied boost::container::pmr::polymorphic_allocator uses, live in the
// compiled library libboost_container (Debian: libboost-container1.81-dev):
//   find_package(Boost 1.81 REQUIRED COMPONENTS container)
//   target_link_libraries(app PRIVATE Boost::container)
//
// Lifetime: the adapter does not own the target; the target must outlive the
// adapter and every container using it.
#pragma once
#include <cstddef>
#include <memory_resource>
#include <stdexcept>

#include <boost/container/pmr/memory_resource.hpp>

namespace arenastat {

class boost_adapter final : public boost::container::pmr::memory_resource {
 public:
  // Throws std::invalid_argument for a null target.
  explicit boost_adapter(std::pmr::memory_resource* target) : target_(checked(target)) {}

  std::pmr::memory_resource* target() const noexcept { return target_; }

 protected:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    return target_->allocate(bytes, alignment);
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    target_->deallocate(p, bytes, alignment);
  }
  // Equal to another adapter whose target is equal to ours (memory from one
  // can be freed through the other).
  bool do_is_equal(const boost::container::pmr::memory_resource& other) const noexcept override {
    if (this == &other) return true;
    const auto* o = dynamic_cast<const boost_adapter*>(&other);
    return o != nullptr && target_->is_equal(*o->target_);
  }

 private:
  static std::pmr::memory_resource* checked(std::pmr::memory_resource* target) {
    if (target == nullptr) throw std::invalid_argument("arenastat::boost_adapter: target resource is null");
    return target;
  }

  std::pmr::memory_resource* target_;
};

}  // namespace arenastat
