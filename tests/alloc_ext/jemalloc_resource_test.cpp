// jemalloc_resource: blocks come from the resource's own arena, and jemalloc's
// per-arena statistics move by exactly the size classes (nallocx) of the
// blocks, with and without the per-(thread, resource) caches.
#include <jemalloc/jemalloc.h>

#include <catch2/catch.hpp>

#include <barrier>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "arenastat/account.hpp"
#include "arenastat/jemalloc_resource.hpp"
#include "arenastat/tracking_resource.hpp"

namespace {

using arenastat::jemalloc_resource;

// The arena jemalloc says owns a block it allocated ("arenas.lookup").
unsigned arena_of(void* p) {
  unsigned arena = 0;
  std::size_t size = sizeof arena;
  REQUIRE(mallctl("arenas.lookup", &arena, &size, &p, sizeof p) == 0);
  return arena;
}

// jemalloc's allocated bytes for the arena once this thread's cache is flushed.
std::size_t allocated(const jemalloc_resource& je) {
  je.flush_thread_cache();
  return je.arena_stats().allocated_bytes();
}

struct block {
  void* p;
  std::size_t bytes;
  std::size_t alignment;
};

// A thread-local whose destructor allocates: constructed before the thread's
// first use of a resource, it is destroyed after the resource's thread-exit
// clean-up has run.
struct late_user {
  jemalloc_resource* je = nullptr;
  void** out = nullptr;
  ~late_user() {
    if (je != nullptr) *out = je->allocate(100);
  }
};
thread_local late_user tl_late_user;

}  // namespace

TEST_CASE("jemalloc_resource: every resource owns a fresh, empty arena", "[jemalloc]") {
  jemalloc_resource a;
  jemalloc_resource b;
  CHECK(a.arena_index() != b.arena_index());
  CHECK(a.uses_thread_cache());
  const auto s = a.arena_stats();
  CHECK(s.arena_index == a.arena_index());
  CHECK(s.allocated_bytes() == 0);
  CHECK(s.active_pages == 0);
  CHECK(s.page_size == 4096);
}

TEST_CASE("jemalloc_resource: allocation_size follows jemalloc's size classes", "[jemalloc]") {
  // Tiny class 8, then multiples of the 16-byte quantum, then four classes per
  // doubling (..., 96, 112, 128, ..., 896, 1024, ..., 12288, 14336, 16384, 20480,
  // ..., 98304, 114688, ...). An alignment above the natural one rounds the
  // request up to a multiple of the alignment first.
  CHECK(jemalloc_resource::allocation_size(0, 8) == 8);
  CHECK(jemalloc_resource::allocation_size(1, 8) == 8);
  CHECK(jemalloc_resource::allocation_size(8, 8) == 8);
  // The default alignment (16) is more than the tiny class 8 guarantees.
  CHECK(jemalloc_resource::allocation_size(1) == 16);
  CHECK(jemalloc_resource::allocation_size(8) == 16);
  CHECK(jemalloc_resource::allocation_size(9) == 16);
  CHECK(jemalloc_resource::allocation_size(24) == 32);
  CHECK(jemalloc_resource::allocation_size(100) == 112);
  CHECK(jemalloc_resource::allocation_size(1000) == 1024);
  CHECK(jemalloc_resource::allocation_size(14337) == 16384);
  CHECK(jemalloc_resource::allocation_size(20000) == 20480);
  CHECK(jemalloc_resource::allocation_size(100000) == 114688);
  CHECK(jemalloc_resource::allocation_size(24, 64) == 64);
  CHECK(jemalloc_resource::allocation_size(1, 4096) == 4096);
  CHECK(jemalloc_resource::allocation_size(5000, 4096) == 8192);
  for (std::size_t n : {1, 24, 100, 5000, 100000})
    CHECK(jemalloc_resource::allocation_size(n, 8) == nallocx(n, 0));
}

TEST_CASE("jemalloc_resource: without thread cache small.allocated moves by each size class", "[jemalloc]") {
  jemalloc_resource je{{.thread_cache = false}};
  CHECK_FALSE(je.uses_thread_cache());
  std::vector<block> blocks;
  std::size_t expected = 0;
  for (std::size_t n : {1, 8, 24, 32, 100, 1000, 14336}) {
    blocks.push_back({je.allocate(n), n, alignof(std::max_align_t)});
    expected += jemalloc_resource::allocation_size(n);
    CHECK(je.arena_stats().small_allocated == expected);  // no cache: exact at once
  }
  CHECK(expected == 16 + 16 + 32 + 32 + 112 + 1024 + 14336);
  while (!blocks.empty()) {
    je.deallocate(blocks.back().p, blocks.back().bytes);
    expected -= jemalloc_resource::allocation_size(blocks.back().bytes);
    blocks.pop_back();
    CHECK(je.arena_stats().small_allocated == expected);
  }
  CHECK(je.arena_stats().allocated_bytes() == 0);
  CHECK(je.thread_cache_count() == 0);
}

TEST_CASE("jemalloc_resource: large blocks move large.allocated by their size class", "[jemalloc]") {
  jemalloc_resource je;
  const std::size_t sizes[] = {20000, 100000, std::size_t{1} << 20, std::size_t{3} << 20};
  std::vector<void*> ps;
  std::size_t expected = 0;
  for (std::size_t n : sizes) {
    ps.push_back(je.allocate(n));
    expected += nallocx(n, 0);
    CHECK(allocated(je) == expected);
    CHECK(je.arena_stats().large_allocated == expected);
    CHECK(je.arena_stats().small_allocated == 0);
  }
  CHECK(je.arena_stats().active_pages * 4096 >= expected);
  for (std::size_t i = 0; i < ps.size(); ++i) je.deallocate(ps[i], sizes[i]);
  CHECK(allocated(je) == 0);
}

TEST_CASE("jemalloc_resource: the thread cache never hands out another arena's blocks", "[jemalloc]") {
  // Fill the default thread cache with 32-byte blocks of the thread's own arena:
  // mallocx(MALLOCX_ARENA(i)) with the default cache would return those.
  std::vector<void*> warm;
  for (int i = 0; i < 64; ++i) warm.push_back(mallocx(32, 0));
  for (void* p : warm) dallocx(p, 0);

  jemalloc_resource je;
  std::vector<void*> ps;
  for (int i = 0; i < 64; ++i) {
    ps.push_back(je.allocate(32));
    CHECK(arena_of(ps.back()) == je.arena_index());
  }
  CHECK(je.thread_cache_count() == 1);
  // The cache was filled from this arena: the unflushed figure includes the
  // cached blocks, and all of them are this arena's.
  CHECK(je.arena_stats().small_allocated >= 64 * 32);
  CHECK(allocated(je) == 64 * 32);
  for (void* p : ps) je.deallocate(p, 32);
  CHECK(allocated(je) == 0);
}

TEST_CASE("jemalloc_resource: alignments up to 4096 are honoured and charged by size class", "[jemalloc]") {
  jemalloc_resource je;
  std::vector<block> blocks;
  std::size_t expected = 0;
  for (std::size_t a = 1; a <= 4096; a *= 2) {
    for (std::size_t n : {1, 24, 100, 5000}) {
      void* p = je.allocate(n, a);
      CHECK(reinterpret_cast<std::uintptr_t>(p) % a == 0);
      CHECK(arena_of(p) == je.arena_index());
      blocks.push_back({p, n, a});
      expected += jemalloc_resource::allocation_size(n, a);
    }
  }
  void* big = je.allocate(64, 65536);
  CHECK(reinterpret_cast<std::uintptr_t>(big) % 65536 == 0);
  expected += jemalloc_resource::allocation_size(64, 65536);
  CHECK(allocated(je) == expected);
  for (const block& b : blocks) je.deallocate(b.p, b.bytes, b.alignment);
  je.deallocate(big, 64, 65536);
  CHECK(allocated(je) == 0);
}

TEST_CASE("jemalloc_resource: a zero-byte request gets the smallest size class", "[jemalloc]") {
  jemalloc_resource je;
  void* p = je.allocate(0);
  REQUIRE(p != nullptr);
  CHECK(allocated(je) == 16);  // aligned to 16 by default: the 16-byte class
  je.deallocate(p, 0);
  CHECK(allocated(je) == 0);
}

TEST_CASE("jemalloc_resource: an alignment that is not a power of two is rejected", "[jemalloc]") {
  jemalloc_resource je;
  CHECK_THROWS_WITH(je.allocate(8, 3), Catch::Contains("alignment 3 is not a power of two"));
  CHECK_THROWS_AS(jemalloc_resource::allocation_size(8, 0), std::invalid_argument);
  CHECK(allocated(je) == 0);
}

TEST_CASE("jemalloc_resource: a failing mallctl names itself and its errno", "[jemalloc]") {
  const unsigned missing = 1u << 20;
  try {
    (void)arenastat::read_jemalloc_arena_stats(missing);
    FAIL("no exception for arena " << missing);
  } catch (const arenastat::jemalloc_error& e) {
    CHECK(e.mallctl_name() == "stats.arenas.1048576.small.allocated");
    CHECK(e.code().value() == ENOENT);
    CHECK_THAT(e.what(), Catch::Contains("mallctl(\"stats.arenas.1048576.small.allocated\")") &&
                             Catch::Contains("errno 2"));
  }
}

TEST_CASE("jemalloc_resource: resources compare equal only to themselves", "[jemalloc]") {
  jemalloc_resource a;
  jemalloc_resource b;
  CHECK(a.is_equal(a));
  CHECK_FALSE(a.is_equal(b));
  CHECK_FALSE(a.is_equal(*std::pmr::new_delete_resource()));
}

TEST_CASE("jemalloc_resource: destroying an empty resource destroys its arena", "[jemalloc]") {
  unsigned index = 0;
  {
    jemalloc_resource je;
    index = je.arena_index();
    void* p = je.allocate(100);
    je.deallocate(p, 100);  // still in the thread cache: the destructor flushes it
  }
  try {
    (void)arenastat::read_jemalloc_arena_stats(index);
    FAIL("arena " << index << " still exists");
  } catch (const arenastat::jemalloc_error& e) {
    CHECK(e.code().value() == ENOENT);
  }
}

TEST_CASE("jemalloc_resource: destroying a resource with live blocks keeps its arena", "[jemalloc]") {
  unsigned index = 0;
  void* p = nullptr;
  {
    jemalloc_resource je;
    index = je.arena_index();
    p = je.allocate(1000);
  }
  CHECK(arena_of(p) == index);
  CHECK(arenastat::read_jemalloc_arena_stats(index).small_allocated == nallocx(1000, 0));
  dallocx(p, MALLOCX_TCACHE_NONE);  // the block stayed valid
  CHECK(arenastat::read_jemalloc_arena_stats(index).allocated_bytes() == 0);
}

TEST_CASE("jemalloc_resource: a tracking_resource on top gives exact account totals", "[jemalloc]") {
  jemalloc_resource je;
  arenastat::tracking_resource tracked{"alloc_ext/jemalloc_tracked", &je};
  const std::size_t sizes[] = {24, 100, 1000, 5000, 100000};
  std::vector<void*> ps;
  std::size_t requested = 0;
  std::size_t classes = 0;
  for (std::size_t n : sizes) {
    ps.push_back(tracked.allocate(n));
    requested += n;
    classes += nallocx(n, 0);
  }
  auto t = tracked.tracked_account().totals();
  CHECK(t.live_bytes == static_cast<std::int64_t>(requested));
  CHECK(t.allocations == 5);
  CHECK(t.peak_bytes == requested);
  CHECK(allocated(je) == classes);  // jemalloc's view: the same blocks, by size class
  for (std::size_t i = 0; i < ps.size(); ++i) tracked.deallocate(ps[i], sizes[i]);
  t = tracked.tracked_account().totals();
  CHECK(t.live_bytes == 0);
  CHECK(t.frees == 5);
  CHECK(t.allocated_bytes == requested);
  CHECK(allocated(je) == 0);
}

TEST_CASE("jemalloc_resource: a std::pmr::vector over a tracked jemalloc resource", "[jemalloc]") {
  jemalloc_resource je;
  arenastat::tracking_resource tracked{"alloc_ext/jemalloc_vector", &je};
  {
    std::pmr::vector<std::uint64_t> v{&tracked};
    v.reserve(1000);
    CHECK(tracked.tracked_account().live_bytes() == 8000);
    CHECK(allocated(je) == nallocx(8000, 0));
    CHECK(nallocx(8000, 0) == 8192);
  }
  CHECK(tracked.tracked_account().live_bytes() == 0);
  CHECK(allocated(je) == 0);
}

TEST_CASE("jemalloc_resource: with no explicit cache left it falls back to no cache", "[jemalloc]") {
  // Use up jemalloc's explicit thread caches, then ask the resource for one.
  std::vector<unsigned> taken;
  for (;;) {
    unsigned tc = 0;
    std::size_t size = sizeof tc;
    if (mallctl("tcache.create", &tc, &size, nullptr, 0) != 0) break;
    taken.push_back(tc);
  }
  REQUIRE(!taken.empty());
  {
    jemalloc_resource je;
    void* p = je.allocate(100);
    CHECK(arena_of(p) == je.arena_index());
    CHECK(je.thread_cache_count() == 0);
    CHECK(je.thread_cache_fallbacks() == 1);
    CHECK(je.arena_stats().small_allocated == nallocx(100, 0));  // no cache: exact unflushed
    je.deallocate(p, 100);
    CHECK(je.arena_stats().small_allocated == 0);
  }
  for (unsigned tc : taken) REQUIRE(mallctl("tcache.destroy", nullptr, nullptr, &tc, sizeof tc) == 0);
}

TEST_CASE("jemalloc_resource: a thread's cache is destroyed when the thread exits", "[jemalloc][threads]") {
  jemalloc_resource je;
  std::thread t{[&] {
    std::vector<void*> ps;
    for (int i = 0; i < 100; ++i) ps.push_back(je.allocate(48));
    for (void* p : ps) je.deallocate(p, 48);
  }};
  t.join();
  CHECK(je.thread_cache_count() == 0);
  CHECK(je.arena_stats().allocated_bytes() == 0);  // the exit flushed the cache
}

TEST_CASE("jemalloc_resource: allocating after the thread's clean-up uses no cache and leaks none",
          "[jemalloc][threads]") {
  jemalloc_resource je;
  void* late = nullptr;
  std::thread t{[&] {
    tl_late_user.out = &late;  // constructed now: destroyed after the clean-up
    tl_late_user.je = &je;
    void* p = je.allocate(100);  // creates this thread's cache
    je.deallocate(p, 100);
  }};
  t.join();
  REQUIRE(late != nullptr);
  CHECK(arena_of(late) == je.arena_index());
  CHECK(je.thread_cache_count() == 0);
  CHECK(je.thread_cache_fallbacks() == 0);
  CHECK(je.arena_stats().small_allocated == nallocx(100, 0));  // nothing left in any cache
  je.deallocate(late, 100);
  CHECK(allocated(je) == 0);
}

TEST_CASE("jemalloc_resource: blocks from several threads are attributed exactly after join",
          "[jemalloc][threads]") {
  constexpr int threads = 4;
  constexpr int per_thread = 500;
  jemalloc_resource je;
  std::vector<std::vector<block>> made(threads);
  std::barrier all_allocated{threads + 1};
  std::barrier may_exit{threads + 1};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        const std::size_t n = 8 + static_cast<std::size_t>((i * 37 + t * 11) % 3000);
        made[t].push_back({je.allocate(n), n, alignof(std::max_align_t)});
        if (i % 3 == 0) {  // some traffic through the cache
          je.deallocate(made[t].back().p, n);
          made[t].pop_back();
        }
      }
      all_allocated.arrive_and_wait();
      may_exit.arrive_and_wait();
    });
  }
  all_allocated.arrive_and_wait();
  CHECK(je.thread_cache_count() == threads);
  may_exit.arrive_and_wait();
  for (auto& th : pool) th.join();
  CHECK(je.thread_cache_count() == 0);
  CHECK(je.thread_cache_fallbacks() == 0);

  std::size_t expected = 0;
  for (const auto& blocks : made)
    for (const block& b : blocks) {
      CHECK(arena_of(b.p) == je.arena_index());
      expected += jemalloc_resource::allocation_size(b.bytes);
    }
  CHECK(je.arena_stats().allocated_bytes() == expected);  // exited threads: caches flushed
  for (const auto& blocks : made)
    for (const block& b : blocks) je.deallocate(b.p, b.bytes);
  CHECK(allocated(je) == 0);
}

TEST_CASE("jemalloc_resource: a thread outliving a resource gets a fresh cache from the next one",
          "[jemalloc][threads]") {
  auto first = std::make_unique<jemalloc_resource>();
  std::unique_ptr<jemalloc_resource> second;
  std::barrier step{2};
  void* from_second = nullptr;
  std::thread t{[&] {
    void* p = first->allocate(64);
    first->deallocate(p, 64);
    step.arrive_and_wait();  // 1: first used
    step.arrive_and_wait();  // 2: first destroyed, second created (same slot)
    from_second = second->allocate(64);
    step.arrive_and_wait();  // 3: allocated from second
    step.arrive_and_wait();  // 4: may exit
  }};
  step.arrive_and_wait();
  CHECK(first->thread_cache_count() == 1);
  first.reset();
  second = std::make_unique<jemalloc_resource>();
  step.arrive_and_wait();
  step.arrive_and_wait();
  CHECK(second->thread_cache_count() == 1);
  CHECK(arena_of(from_second) == second->arena_index());
  step.arrive_and_wait();
  t.join();
  CHECK(second->thread_cache_count() == 0);
  CHECK(second->arena_stats().small_allocated == 64);
  second->deallocate(from_second, 64);
  CHECK(allocated(*second) == 0);
}

TEST_CASE("jemalloc_resource: several threads through a tracking_resource give exact totals",
          "[jemalloc][threads]") {
  constexpr int threads = 3;
  constexpr int per_thread = 2000;
  jemalloc_resource je;
  arenastat::tracking_resource tracked{"alloc_ext/jemalloc_threads", &je};
  std::vector<std::vector<std::pair<void*, std::size_t>>> kept(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        const std::size_t n = 16 * static_cast<std::size_t>(1 + i % 8);
        void* p = tracked.allocate(n);
        if (i % 2 == 0)
          kept[t].emplace_back(p, n);
        else
          tracked.deallocate(p, n);
      }
    });
  }
  for (auto& th : pool) th.join();
  std::int64_t live = 0;
  std::size_t classes = 0;
  for (const auto& v : kept)
    for (auto [p, n] : v) {
      live += static_cast<std::int64_t>(n);
      classes += nallocx(n, 0);
    }
  const auto totals = tracked.tracked_account().totals();
  CHECK(totals.live_bytes == live);
  CHECK(totals.allocations == threads * per_thread);
  CHECK(totals.frees == threads * per_thread / 2);
  CHECK(je.arena_stats().allocated_bytes() == classes);
  for (const auto& v : kept)
    for (auto [p, n] : v) tracked.deallocate(p, n);
  CHECK(tracked.tracked_account().live_bytes() == 0);
  CHECK(allocated(je) == 0);
}
