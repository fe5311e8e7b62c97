// basic_cache's loads in progress: a loader that asks the cache for its own
// key, directly or through another key's load, is refused (std::logic_error)
// instead of calling itself without end; a load made stale by a write to its
// key may start again (cache.hpp, load_and_put; docs/cache.md, API).
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <memory_resource>
#include <new>
#include <stdexcept>
#include <string>

#include "arenastat/cache/cache.hpp"
#include "cache_test_support.hpp"

using arenastat::lru_cache;
using arenastat::tinylfu_cache;
using u64 = std::uint64_t;
using Catch::Matchers::Contains;

TEST_CASE("own load: a loader asking for its own key is refused, and its load stores nothing", "[cache][load]") {
  lru_cache<u64, u64> c{"test.own.direct", {.max_entries = 8}};
  int calls = 0;
  std::function<u64(u64)> loader = [&](u64 k) {
    ++calls;
    return c.get_or_load(k, loader) + 1;  // asks for itself
  };
  CHECK_THROWS_WITH(c.get_or_load(3, loader), Contains("get_or_load of a key from inside that key's own loader"));
  CHECK(calls == 1);                // the loader ran once, not again and again
  CHECK(c.stats().misses == 1);     // the refused request counts nothing
  CHECK(c.stats().loads == 1);
  CHECK(c.size() == 0);             // the load failed: nothing stored
  CHECK(c.get_or_load(3, [](u64 k) { return k * 10; }) == 30);  // the key loads normally afterwards
}

TEST_CASE("own load: a loader reaching its own key through another key's load is refused", "[cache][load]") {
  tinylfu_cache<u64, u64> c{"test.own.through", {.max_entries = 8}};
  std::function<u64(u64)> load_a, load_b;
  load_a = [&](u64) { return c.get_or_load(2, load_b); };  // key 1 asks for key 2
  load_b = [&](u64) { return c.get_or_load(1, load_a); };  // key 2 asks for key 1, whose load is running
  CHECK_THROWS_AS(c.get_or_load(1, load_a), std::logic_error);
  CHECK(c.size() == 0);
  CHECK(c.stats().loads == 2);  // key 1's and key 2's
}

TEST_CASE("own load: a loader that catches the refusal and returns a value has it stored", "[cache][load]") {
  lru_cache<u64, u64> c{"test.own.caught", {.max_entries = 8}};
  std::function<u64(u64)> loader = [&](u64 k) -> u64 {
    try {
      return c.get_or_load(k, loader);
    } catch (const std::logic_error&) {
      return 77;
    }
  };
  CHECK(c.get_or_load(5, loader) == 77);
  CHECK(c.get(5) == 77);
  CHECK(c.stats().loads == 1);
}

TEST_CASE("own load: after the loader wrote its key, asking for it again starts a new load", "[cache][load]") {
  // A write makes the load in progress stale (as in sharded_cache): the
  // inner load runs, and the outer one then stores its own value over it.
  lru_cache<u64, u64> c{"test.own.stale", {.max_entries = 8}};
  SECTION("after an erase") {
    const u64 v = c.get_or_load(4, [&](u64 k) {
      c.erase(k);
      return c.get_or_load(k, [](u64) { return u64{40}; }) + 1;
    });
    CHECK(v == 41);
    CHECK(c.get(4) == 41);
    CHECK(c.stats().loads == 2);
  }
  SECTION("after a clear") {
    const u64 v = c.get_or_load(4, [&](u64 k) {
      c.clear();  // counters back to 0
      return c.get_or_load(k, [](u64) { return u64{40}; }) + 2;
    });
    CHECK(v == 42);
    CHECK(c.get(4) == 42);
    CHECK(c.stats().loads == 1);  // the inner load, after the clear
  }
  SECTION("after a put of the key, the request is a hit and loads nothing") {
    const u64 v = c.get_or_load(4, [&](u64 k) {
      c.put(k, 9);
      return c.get_or_load(k, [](u64) -> u64 { throw std::runtime_error("not called"); }) + 3;
    });
    CHECK(v == 12);
    CHECK(c.get(4) == 12);
    CHECK(c.stats().loads == 1);
  }
}

TEST_CASE("own load: nested loads of different keys are not refused", "[cache][load]") {
  lru_cache<u64, u64> c{"test.own.nested", {.max_entries = 8}};
  const u64 v = c.get_or_load(1, [&](u64) {
    return c.get_or_load(2, [&](u64) { return c.get_or_load(3, [](u64) { return u64{3}; }) + 2; }) + 1;
  });
  CHECK(v == 6);
  CHECK(c.get(1) == 6);
  CHECK(c.get(2) == 5);
  CHECK(c.get(3) == 3);
}

TEST_CASE("own load: the load started again after a write is itself refused if it asks for the key", "[cache][load]") {
  // The outer load is stale after the erase; the inner one is not, so its
  // loader asking for the key again is refused: the recursion ends there.
  lru_cache<u64, u64> c{"test.own.restarted", {.max_entries = 8}};
  int inner_calls = 0;
  std::function<u64(u64)> inner = [&](u64 k) {
    ++inner_calls;
    return c.get_or_load(k, inner);
  };
  CHECK_THROWS_AS(c.get_or_load(6,
                                [&](u64 k) {
                                  c.erase(k);  // absent: stale all the same, as in sharded_cache
                                  return c.get_or_load(k, inner);
                                }),
                  std::logic_error);
  CHECK(inner_calls == 1);
  CHECK(c.size() == 0);
}

TEST_CASE("own load: a put that throws inside the loader does not make the load stale", "[cache][load]") {
  // The put changed nothing (its first insertion cannot get its table from
  // an upstream that has no memory), so the load is still the key's only
  // one: asking for the key from the loader is still refused.
  lru_cache<u64, u64> c{"test.own.throwing-put", {.max_entries = 8, .track = false}, std::pmr::null_memory_resource()};
  int calls = 0;
  std::function<u64(u64)> loader = [&](u64 k) {
    ++calls;
    CHECK_THROWS_AS(c.put(k, 1), std::bad_alloc);
    return c.get_or_load(k, loader);
  };
  CHECK_THROWS_AS(c.get_or_load(2, loader), std::logic_error);
  CHECK(calls == 1);
}

TEST_CASE("own load: a loader that writes its own key and asks for it every time is refused at the bound",
          "[cache][load]") {
  // Each loader erases its key, then asks for it: the ask starts a new load
  // (the running ones are stale) until max_stale_nested_loads stale loads are
  // in progress; the next ask is refused, and every load unwinds with it.
  tinylfu_cache<u64, u64> c{"test.own.restarts", {.max_entries = 8}};
  unsigned calls = 0;
  std::function<u64(u64)> loader = [&](u64 k) {
    ++calls;
    c.erase(k);
    return c.get_or_load(k, loader);
  };
  CHECK_THROWS_WITH(c.get_or_load(6, loader),
                    Contains("wrote it and asked for it " + std::to_string(arenastat::max_stale_nested_loads) +
                             " times over"));
  CHECK(calls == arenastat::max_stale_nested_loads);  // one loader call per stale load, none beyond
  CHECK(c.stats().loads == arenastat::max_stale_nested_loads);
  CHECK(c.size() == 0);
}

TEST_CASE("own load: stale nested loads of one key below the bound all run", "[cache][load]") {
  // max_stale_nested_loads - 1 loaders each erase the key and ask again; the
  // innermost returns 0; each level adds 1 and stores it over the inner one's.
  lru_cache<u64, u64> c{"test.own.restarts.below", {.max_entries = 8}};
  const unsigned levels = arenastat::max_stale_nested_loads;
  CHECK(cache_test::load_nested(c, 2, levels) == levels - 1);
  CHECK(c.get(2) == levels - 1);
  CHECK(c.stats().loads == levels);
}
