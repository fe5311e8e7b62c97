// Helpers shared by the cache tests.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <new>
#include <vector>

#include "arenastat/account.hpp"

namespace cache_test {

// An upstream that throws std::bad_alloc on its Nth allocation (1-based;
// 0 = never) and keeps its own exact count of live bytes.
class failing_resource final : public std::pmr::memory_resource {
 public:
  explicit failing_resource(std::size_t fail_at = 0) : fail_at_(fail_at) {}
  void fail_at(std::size_t n) { fail_at_ = n; allocations_ = 0; }
  std::size_t allocations() const { return allocations_; }
  std::int64_t live() const { return live_; }

 private:
  void* do_allocate(std::size_t bytes, std::size_t align) override {
    if (++allocations_ == fail_at_) throw std::bad_alloc();
    void* p = std::pmr::new_delete_resource()->allocate(bytes, align);
    live_ += static_cast<std::int64_t>(bytes);
    return p;
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t align) override {
    live_ -= static_cast<std::int64_t>(bytes);
    std::pmr::new_delete_resource()->deallocate(p, bytes, align);
  }
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }

  std::size_t fail_at_;
  std::size_t allocations_ = 0;
  std::int64_t live_ = 0;
};

// Every hash maps to one value: all keys share one home slot.
struct constant_hash {
  std::size_t operator()(std::uint64_t) const noexcept { return 42; }
};

inline std::int64_t live(std::string_view account_name) {
  return arenastat::account::get(account_name).live_bytes();
}

// Keys from most to least recently used in an lru cache.
template <class Cache>
std::vector<std::uint64_t> lru_order(const Cache& c) {
  std::vector<std::uint64_t> keys;
  c.policy().for_each([&](std::uint32_t i) { keys.push_back(c.key_at(i)); });
  return keys;
}

}  // namespace cache_test
