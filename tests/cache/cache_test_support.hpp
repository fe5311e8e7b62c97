// Helpers shared by the cache tests.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <new>
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

}  // namespace cache_test
