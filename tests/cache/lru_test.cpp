// LRU: exact eviction order on hand-traced sequences.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "arenastat/cache/cache.hpp"
#include "cache_test_support.hpp"

using arenastat::lru_cache;
using cache_test::lru_order;
using keys = std::vector<std::uint64_t>;

TEST_CASE("lru: inserts line up from most to least recently used", "[cache][lru]") {
  lru_cache<std::uint64_t, std::uint64_t> c{"test.lru.order", {.max_entries = 3}};
  c.put(1, 10);
  c.put(2, 20);
  c.put(3, 30);
  CHECK(lru_order(c) == keys{3, 2, 1});
  CHECK(c.size() == 3);
}

TEST_CASE("lru: a hit moves the key to the front, the back is evicted", "[cache][lru]") {
  lru_cache<std::uint64_t, std::uint64_t> c{"test.lru.evict", {.max_entries = 3}};
  c.put(1, 10);
  c.put(2, 20);
  c.put(3, 30);
  REQUIRE(c.get(1) == 10u);          // order 1 3 2
  CHECK(lru_order(c) == keys{1, 3, 2});
  c.put(4, 40);                       // evicts 2
  CHECK(lru_order(c) == keys{4, 1, 3});
  CHECK_FALSE(c.contains(2));
  c.put(5, 50);                       // evicts 3
  CHECK(lru_order(c) == keys{5, 4, 1});
  CHECK_FALSE(c.contains(3));
  REQUIRE(c.get(4) == 40u);           // order 4 5 1
  c.put(6, 60);                       // evicts 1
  CHECK(lru_order(c) == keys{6, 4, 5});
  CHECK(c.stats().evictions == 3);
}

TEST_CASE("lru: put on a present key replaces the value and refreshes it", "[cache][lru]") {
  lru_cache<std::uint64_t, std::uint64_t> c{"test.lru.replace", {.max_entries = 2}};
  c.put(1, 10);
  c.put(2, 20);
  c.put(1, 11);                       // order 1 2
  c.put(3, 30);                       // evicts 2
  CHECK(c.get(1) == 11u);
  CHECK_FALSE(c.contains(2));
  CHECK(c.stats().evictions == 1);
}

TEST_CASE("lru: a miss changes nothing; hits and misses are counted", "[cache][lru]") {
  lru_cache<std::uint64_t, std::uint64_t> c{"test.lru.miss", {.max_entries = 2}};
  c.put(1, 10);
  c.put(2, 20);
  CHECK(c.get(7) == std::nullopt);
  CHECK(lru_order(c) == keys{2, 1});
  CHECK(c.get(1) == 10u);
  const auto s = c.stats();
  CHECK(s.hits == 1);
  CHECK(s.misses == 1);
}

TEST_CASE("lru: erase frees a slot that the next insert reuses without eviction", "[cache][lru]") {
  lru_cache<std::uint64_t, std::uint64_t> c{"test.lru.erase", {.max_entries = 3}};
  c.put(1, 10);
  c.put(2, 20);
  c.put(3, 30);
  CHECK(c.erase(2));
  CHECK_FALSE(c.erase(2));
  CHECK(lru_order(c) == keys{3, 1});
  c.put(4, 40);
  CHECK(lru_order(c) == keys{4, 3, 1});
  CHECK(c.stats().evictions == 0);
  c.put(5, 50);                       // evicts 1
  CHECK(lru_order(c) == keys{5, 4, 3});
}

TEST_CASE("lru: get_or_load calls the loader on a miss only and stores its value", "[cache][lru]") {
  lru_cache<std::uint64_t, std::uint64_t> c{"test.lru.load", {.max_entries = 4}};
  int calls = 0;
  auto loader = [&](std::uint64_t k) {
    ++calls;
    return k * 2 + 11;
  };
  CHECK(c.get_or_load(5, loader) == 21u);
  CHECK(c.get_or_load(5, loader) == 21u);
  CHECK(calls == 1);
  const auto s = c.stats();
  CHECK(s.loads == 1);
  CHECK(s.hits == 1);
  CHECK(s.misses == 1);
}

TEST_CASE("lru: a sequence through a full cache keeps the last N distinct keys", "[cache][lru]") {
  lru_cache<std::uint64_t, std::uint64_t> c{"test.lru.window", {.max_entries = 100}};
  for (std::uint64_t k = 0; k < 1000; ++k) c.put(k, k);
  CHECK(c.size() == 100);
  for (std::uint64_t k = 0; k < 900; ++k) CHECK_FALSE(c.contains(k));
  for (std::uint64_t k = 900; k < 1000; ++k) CHECK(c.contains(k));
  CHECK(c.stats().evictions == 900);
}

TEST_CASE("cache: string keys and values are stored, copied out and destroyed", "[cache]") {
  lru_cache<std::string, std::string> c{"test.cache.strings", {.max_entries = 2}};
  c.put("alpha", std::string(100, 'a'));
  c.put("beta", "b");
  c.put("gamma", "g");  // evicts alpha
  CHECK_FALSE(c.contains("alpha"));
  CHECK(c.get("beta") == std::string("b"));
  c.clear();
  CHECK(c.size() == 0);
  CHECK(cache_test::live("test.cache.strings") == 0);
}
