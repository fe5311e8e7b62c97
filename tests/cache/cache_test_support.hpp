// Helpers shared by the cache tests.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory_resource>
#include <new>
#include <thread>
#include <vector>

#include "arenastat/account.hpp"

namespace cache_test {

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

// Loads `key` through `levels` nested loads of it: each loader but the
// innermost erases the key and asks for it again (its own load is then
// stale), the innermost returns 0, and each level adds 1. Returns the
// outermost value (levels - 1 when every level ran).
template <class Cache>
std::uint64_t load_nested(Cache& c, std::uint64_t key, unsigned levels) {
  unsigned depth = 0;
  std::function<std::uint64_t(std::uint64_t)> loader = [&](std::uint64_t k) -> std::uint64_t {
    if (++depth == levels) return 0;
    c.erase(k);
    return c.get_or_load(k, loader) + 1;
  };
  return c.get_or_load(key, loader);
}

// Releases every thread at once.
class start_gate {
 public:
  explicit start_gate(int n) : waiting_(n) {}
  void arrive_and_wait() {
    waiting_.fetch_sub(1);
    while (waiting_.load() > 0) std::this_thread::yield();
  }

 private:
  std::atomic<int> waiting_;
};

}  // namespace cache_test
