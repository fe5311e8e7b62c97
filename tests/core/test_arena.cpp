#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "support.hpp"

using arenastat::arena_options;
using arenastat::arena_resource;
constexpr std::size_t H = arena_resource::chunk_header_size;  // 64

TEST_CASE("chunk sizes follow the growth policy and cap at max_chunk", "[arena]") {
  test::recording_hook hook;
  arena_resource a{"node", arena_options{.initial_chunk = 256, .growth_factor = 2.0, .max_chunk = 1024, .hook = &hook}};
  // Each request fills a whole chunk's usable space, so each takes a new chunk.
  (void)a.allocate(256 - H, 8);
  (void)a.allocate(512 - H, 8);
  (void)a.allocate(1024 - H, 8);
  (void)a.allocate(1024 - H, 8);
  CHECK(hook.acquired == std::vector<std::size_t>{256, 512, 1024, 1024});
  CHECK(a.chunk_count() == 4);
  CHECK(a.bytes_reserved() == 2816);
  CHECK(a.bytes_requested() == (256 - H) + (512 - H) + 2 * (1024 - H));
}

TEST_CASE("a non-integral growth factor rounds chunk sizes down", "[arena]") {
  test::recording_hook hook;
  arena_resource a{"node", arena_options{.initial_chunk = 100, .growth_factor = 1.5, .max_chunk = 300, .hook = &hook}};
  for (std::size_t size : {100, 150, 225, 300, 300}) (void)a.allocate(size - H, 1);
  CHECK(hook.acquired == std::vector<std::size_t>{100, 150, 225, 300, 300});
}

TEST_CASE("small requests share a chunk until it is full", "[arena]") {
  test::recording_hook hook;
  arena_resource a{"node", arena_options{.initial_chunk = 256, .growth_factor = 2.0, .max_chunk = 1024, .hook = &hook}};
  for (int i = 0; i < 6; ++i) (void)a.allocate(32, 8);  // 6 * 32 = 192 <= 208 usable
  CHECK(hook.acquired == std::vector<std::size_t>{256});
  (void)a.allocate(32, 8);  // 224 > 208
  CHECK(hook.acquired == std::vector<std::size_t>{256, 512});
}

TEST_CASE("a request larger than the chunk size gets a chunk of its own", "[arena]") {
  test::recording_hook hook;
  arena_resource a{"node", arena_options{.initial_chunk = 256, .growth_factor = 2.0, .max_chunk = 1024, .hook = &hook}};
  void* small = a.allocate(8, 8);
  (void)a.allocate(1000, 8);
  CHECK(hook.acquired == std::vector<std::size_t>{256, H + 1000});
  CHECK(a.next_chunk_size() == 512);  // the big chunk did not advance the policy
  // The regular chunk is still current: the next small request lands right after the first.
  void* next = a.allocate(8, 8);
  CHECK(static_cast<char*>(next) == static_cast<char*>(small) + 8);
  CHECK(a.chunk_count() == 2);
}

TEST_CASE("every power-of-two alignment up to 4096 is honoured", "[arena]") {
  arena_resource a{"node", arena_options{.initial_chunk = 256}};
  for (std::size_t align = 1; align <= 4096; align *= 2) {
    void* p = a.allocate(24, align);
    CHECK(reinterpret_cast<std::uintptr_t>(p) % align == 0);
    std::memset(p, 0xab, 24);
  }
}

TEST_CASE("a request that needs padding is placed in the current chunk after the padding", "[arena]") {
  // The fast path serves a bump pointer that already meets the alignment; a
  // misaligned one is padded by the slow path, still inside the current chunk.
  test::recording_hook hook;
  arena_resource a{"node", arena_options{.initial_chunk = 256, .hook = &hook}};
  char* c = static_cast<char*>(a.allocate(1, 1));
  char* p = static_cast<char*>(a.allocate(8, 8));  // bump pointer at c + 1: 7 bytes of padding
  CHECK(reinterpret_cast<std::uintptr_t>(p) % 8 == 0);
  CHECK(p == c + 8);
  char* q = static_cast<char*>(a.allocate(3, 2));  // p + 8 is already 2-aligned: no padding
  CHECK(q == p + 8);
  char* r = static_cast<char*>(a.allocate(16, 16));  // q + 3 padded up to 16
  CHECK(reinterpret_cast<std::uintptr_t>(r) % 16 == 0);
  CHECK(r > q + 2);
  CHECK(r - (q + 3) < 16);
  CHECK(a.chunk_count() == 1);
  CHECK(a.bytes_requested() == 1 + 8 + 3 + 16);
  // The rest of the chunk after padding: exactly what is left fits, one byte more does not.
  (void)a.allocate(1, 1);
  const auto chunk_end = reinterpret_cast<std::uintptr_t>(c) - H + 256;
  const auto after = reinterpret_cast<std::uintptr_t>(r) + 16 + 1;
  const std::size_t left = chunk_end - (after + 7) / 8 * 8;
  char* last = static_cast<char*>(a.allocate(left, 8));
  CHECK(reinterpret_cast<std::uintptr_t>(last) + left == chunk_end);
  CHECK(hook.acquired == std::vector<std::size_t>{256});
  (void)a.allocate(1, 1);
  CHECK(hook.acquired == std::vector<std::size_t>{256, 512});
}

TEST_CASE("an alignment of 0 is refused like any non-power-of-two, and the arena stays usable", "[arena]") {
  using Catch::Matchers::Contains;
  arena_resource a{"node", arena_options{.initial_chunk = 4096}};
  std::pmr::memory_resource* mr = &a;  // the virtual path, as containers call it
  CHECK_THROWS_WITH(mr->allocate(8, 0), Contains("alignment 0 is not a power of two"));  // no chunk yet
  char* first = static_cast<char*>(mr->allocate(16, 8));
  CHECK_THROWS_WITH(mr->allocate(8, 0), Contains("alignment 0 is not a power of two"));  // a chunk with room
  CHECK_THROWS_WITH(a.allocate(8, 0), Contains("alignment 0 is not a power of two"));    // inlined
  char* next = static_cast<char*>(mr->allocate(16, 8));
  CHECK(next == first + 16);  // the bump pointer did not move
  CHECK(a.chunk_count() == 1);
  CHECK(a.bytes_requested() == 32);
}

TEST_CASE("a large over-aligned request reserves header, padding and bytes", "[arena]") {
  test::recording_hook hook;
  arena_resource a{"node", arena_options{.initial_chunk = 256, .hook = &hook}};
  void* p = a.allocate(5000, 4096);
  CHECK(reinterpret_cast<std::uintptr_t>(p) % 4096 == 0);
  CHECK(hook.acquired == std::vector<std::size_t>{H + (4096 - 16) + 5000});
}

TEST_CASE("a zero-byte request before any chunk returns a usable pointer and takes no chunk", "[arena]") {
  arena_resource a{"node"};
  CHECK(a.allocate(0, 1) != nullptr);
  CHECK(a.chunk_count() == 0);
}

TEST_CASE("release gives every chunk back and restarts the policy", "[arena]") {
  arenastat::test_resource up{"test.upstream", test::upstream_options()};
  test::recording_hook hook;
  arena_resource a{"node", arena_options{.initial_chunk = 256, .growth_factor = 2.0, .max_chunk = 1024, .hook = &hook}, &up};
  (void)a.allocate(200, 8);
  (void)a.allocate(400, 8);
  (void)a.allocate(3000, 8);
  CHECK(up.bytes_in_use() == static_cast<std::int64_t>(a.bytes_reserved()));
  a.release();
  CHECK(up.bytes_in_use() == 0);
  CHECK(hook.released.size() == 3);
  CHECK(a.bytes_reserved() == 0);
  CHECK(a.bytes_requested() == 0);
  CHECK(a.chunk_count() == 0);
  CHECK(a.next_chunk_size() == 256);
}

TEST_CASE("the destructor reports every chunk through the hook", "[arena]") {
  arenastat::test_resource up{"test.upstream", test::upstream_options()};
  test::recording_hook hook;
  {
    arena_resource a{"node", arena_options{.initial_chunk = 256, .hook = &hook}, &up};
    (void)a.allocate(256 - H, 8);  // fills the first chunk
    (void)a.allocate(300, 8);      // the next regular chunk
  }
  CHECK(hook.acquired == std::vector<std::size_t>{256, 512});
  CHECK(hook.released.size() == 2);
  CHECK(up.bytes_in_use() == 0);
}

TEST_CASE("deallocate is a no-op", "[arena]") {
  arenastat::test_resource up{"test.upstream", test::upstream_options()};
  arena_resource a{"node", arena_options{.initial_chunk = 256}, &up};
  void* p = a.allocate(64, 8);
  a.deallocate(p, 64, 8);
  CHECK(a.bytes_requested() == 64);
  CHECK(up.bytes_in_use() == 256);
}

TEST_CASE("an upstream that throws leaves the arena and its account unchanged", "[arena]") {
  arenastat::test_resource up{"test.upstream", test::upstream_options()};
  arena_resource a{"node", arena_options{.initial_chunk = 256, .account = "test.arena.throwing"}, &up};
  (void)a.allocate(256 - H, 8);  // fills the first chunk
  up.set_allocation_limit(0);  // the next allocation throws, once
  CHECK_THROWS_AS(a.allocate(200, 8), std::bad_alloc);
  CHECK(a.chunk_count() == 1);
  CHECK(a.bytes_reserved() == 256);
  CHECK(a.bytes_requested() == 256 - H);
  auto t = arenastat::account::get("test.arena.throwing").totals();
  CHECK(t.live_bytes == 256);
  CHECK(t.allocations == 1);
  // the limit refused one allocation: growth works again
  (void)a.allocate(200, 8);
  CHECK(a.chunk_count() == 2);
  CHECK(arenastat::account::get("test.arena.throwing").totals().live_bytes == 256 + 512);
}

TEST_CASE("an arena with an account charges whole chunks to it", "[arena]") {
  {
    arena_resource a{"node", arena_options{.initial_chunk = 1024, .account = "test.arena.account"}};
    (void)a.allocate(10, 8);
    (void)a.allocate(2048 - H, 8);  // exactly the next regular chunk, 2048
    auto t = arenastat::account::get("test.arena.account").totals();
    CHECK(t.live_bytes == 1024 + 2048);
    CHECK(t.allocated_bytes == 1024 + 2048);
    CHECK(t.allocations == 2);
    CHECK(test::tag_of(t.live_by_tag, "node") == 3072);
  }
  auto t = arenastat::account::get("test.arena.account").totals();
  CHECK(t.live_bytes == 0);
  CHECK(t.frees == 2);
  CHECK(t.peak_bytes == 3072);
}

TEST_CASE("bad arena options are rejected with the field named", "[arena]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(arena_resource("node", arena_options{.initial_chunk = 10}), Contains("initial_chunk"));
  CHECK_THROWS_WITH(arena_resource("node", arena_options{.growth_factor = 0.5}), Contains("growth_factor"));
  CHECK_THROWS_WITH(arena_resource("node", arena_options{.initial_chunk = 8192, .max_chunk = 4096}), Contains("max_chunk"));
  CHECK_THROWS_WITH(arena_resource("node", arena_options{}, nullptr), Contains("upstream"));
  CHECK_THROWS_WITH(arena_resource(""), Contains("empty tag"));
  CHECK_THROWS_WITH(arena_resource("a-tag-name-that-is-far-too-long"), Contains("longer than"));
}

TEST_CASE("arena_resource works with std::pmr containers", "[arena]") {
  arena_resource a{"node", arena_options{.initial_chunk = 4096}};
  std::pmr::vector<int> v{&a};
  for (int i = 0; i < 1000; ++i) v.push_back(i);
  CHECK(v[999] == 999);
  // What the vector asks for (every reallocation) is counted by replaying the
  // same pushes over a test_resource.
  arenastat::test_resource counted{"test.arena.vector-replay", test::upstream_options()};
  {
    std::pmr::vector<int> w{&counted};
    for (int i = 0; i < 1000; ++i) w.push_back(i);
  }
  const auto asked = static_cast<std::size_t>(counted.total_bytes());
  CHECK(asked >= 1000 * sizeof(int));
  CHECK(a.bytes_requested() == asked);
}

TEST_CASE("a request near SIZE_MAX is refused and later allocations do not overlap", "[arena]") {
  arena_resource a{"node", arena_options{.initial_chunk = 4096}};
  char* first = static_cast<char*>(a.allocate(16, 8));  // the current chunk has room left
  // p + bytes would wrap for these: the fast path must not take them.
  for (std::size_t huge : {SIZE_MAX, SIZE_MAX - 8, SIZE_MAX - 4096, SIZE_MAX / 2 + 1})
    CHECK_THROWS_AS(a.allocate(huge, 8), std::bad_alloc);
  char* next = static_cast<char*>(a.allocate(16, 8));
  CHECK(next == first + 16);  // the bump pointer did not move
  CHECK(a.bytes_requested() == 32);
}

TEST_CASE("a non-power-of-two alignment throws on the fast path and the slow path alike", "[arena]") {
  using Catch::Matchers::Contains;
  arena_resource a{"node", arena_options{.initial_chunk = 4096}};
  CHECK_THROWS_WITH(a.allocate(8, 3), Contains("alignment 3 is not a power of two"));  // no chunk yet
  (void)a.allocate(8, 8);                                                              // a chunk with room
  CHECK_THROWS_WITH(a.allocate(8, 3), Contains("alignment 3 is not a power of two"));
  CHECK_THROWS_WITH(a.allocate(8, 24), Contains("alignment 24 is not a power of two"));
  CHECK(a.chunk_count() == 1);
  CHECK(a.bytes_requested() == 8);
}

TEST_CASE("bytes_requested is the sum asked on every path: fast, padded, own chunk, new chunk, refused",
          "[arena]") {
  // A model of what was asked, kept by the test: 2,000 requests of sizes 0 to
  // 700 and alignments 1 to 64 (fast path, padding, chunks of their own beyond
  // max_chunk, new chunks), every 97th refused by upstream (not counted).
  arenastat::test_resource upstream{"test.arena.requested", test::upstream_options()};
  arena_resource a{"node", arena_options{.initial_chunk = 256, .max_chunk = 512}, &upstream};
  std::uint64_t state = 12345;
  auto next = [&state](std::uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  };
  std::size_t model = 0;
  std::size_t refused = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::size_t bytes = next(701);
    const std::size_t alignment = std::size_t{1} << next(7);
    if (i % 97 == 96) upstream.set_allocation_limit(0);  // refuses the next chunk, if one is taken
    try {
      (void)a.allocate(bytes, alignment);
      model += bytes;
    } catch (const arenastat::allocation_limit_reached&) {
      ++refused;
    }
    upstream.set_allocation_limit(-1);
    REQUIRE(a.bytes_requested() == model);
    if (i == 999) {
      a.release();
      model = 0;
      REQUIRE(a.bytes_requested() == 0);
    }
  }
  CHECK(refused > 0);  // the injection reached the slow path
  CHECK(a.chunk_count() > 10);
}

TEST_CASE("a chunk is filled to its last byte through arena_resource& as through memory_resource*", "[arena]") {
  // A request ending exactly at the chunk's end stays in the chunk; the next
  // one takes a new chunk, on both paths.
  constexpr std::size_t initial = 256;
  constexpr std::size_t fit = (initial - arena_resource::chunk_header_size) / 16;  // 12 requests of 16 bytes
  arena_resource direct{"node", arena_options{.initial_chunk = initial, .max_chunk = initial}};
  arena_resource virt{"node", arena_options{.initial_chunk = initial, .max_chunk = initial}};
  std::pmr::memory_resource* mr = &virt;
  char* first = nullptr;
  for (std::size_t i = 0; i < fit; ++i) {
    auto* d = static_cast<char*>(direct.allocate(16, 16));
    (void)mr->allocate(16, 16);
    if (i == 0) first = d;
    REQUIRE(d == first + 16 * i);
    REQUIRE(direct.chunk_count() == 1);
    REQUIRE(virt.chunk_count() == 1);
  }
  CHECK(direct.bytes_reserved() == initial);
  (void)direct.allocate(16, 16);
  (void)mr->allocate(16, 16);
  CHECK(direct.chunk_count() == 2);
  CHECK(virt.chunk_count() == 2);
  CHECK(direct.bytes_requested() == 16 * (fit + 1));
  CHECK(direct.bytes_requested() == virt.bytes_requested());
  // A zero-byte request on the empty sentinel stays on the fast path too.
  arena_resource empty{"node"};
  CHECK(empty.allocate(0, 1) != nullptr);
  CHECK(empty.chunk_count() == 0);
}

TEST_CASE("requests through arena_resource& and through memory_resource* are placed alike", "[arena]") {
  // arena_resource::allocate (the inlined bump path, for callers that hold
  // the arena itself) and memory_resource::allocate (virtual) run the same
  // code: the same requests give the same offsets, chunks and counts.
  test::recording_hook direct_hook, virtual_hook;
  arena_resource direct{"node", arena_options{.initial_chunk = 256, .max_chunk = 512, .hook = &direct_hook}};
  arena_resource virt{"node", arena_options{.initial_chunk = 256, .max_chunk = 512, .hook = &virtual_hook}};
  std::pmr::memory_resource* mr = &virt;
  char* direct_prev = nullptr;
  char* virtual_prev = nullptr;
  std::size_t same_chunk_steps = 0;
  for (std::size_t i = 0; i < 300; ++i) {
    const std::size_t bytes = (i * 37) % 200;
    // Up to the chunks' alignment (16): beyond it the padding depends on
    // where upstream put the chunk, which differs between the two arenas.
    const std::size_t alignment = std::size_t{1} << (i % 5);
    const std::size_t chunks_before = direct.chunk_count();
    auto* d = static_cast<char*>(direct.allocate(bytes, alignment));
    auto* v = static_cast<char*>(mr->allocate(bytes, alignment));
    REQUIRE(reinterpret_cast<std::uintptr_t>(d) % alignment == 0);
    REQUIRE(reinterpret_cast<std::uintptr_t>(v) % alignment == 0);
    if (direct.chunk_count() == chunks_before && direct_prev != nullptr) {
      REQUIRE(d - direct_prev == v - virtual_prev);  // the same step within the current chunk
      ++same_chunk_steps;
    }
    direct_prev = d;
    virtual_prev = v;
    REQUIRE(direct.chunk_count() == virt.chunk_count());
  }
  CHECK(same_chunk_steps > 100);
  CHECK(direct_hook.acquired == virtual_hook.acquired);
  CHECK(direct.bytes_requested() == virt.bytes_requested());
  CHECK(direct.bytes_reserved() == virt.bytes_reserved());
  // The default alignment is the largest fundamental one, as memory_resource's.
  CHECK(reinterpret_cast<std::uintptr_t>(direct.allocate(1)) % alignof(std::max_align_t) == 0);
  (void)direct.allocate(1, 1);
  CHECK(reinterpret_cast<std::uintptr_t>(direct.allocate(8)) % alignof(std::max_align_t) == 0);
  CHECK_THROWS_AS(direct.allocate(8, 3), std::invalid_argument);
  direct.deallocate(direct_prev, 8);  // a no-op, as through memory_resource*
  CHECK(direct.bytes_requested() == virt.bytes_requested() + 1 + 1 + 8);
}

TEST_CASE("a hook derived from forwarding_hook keeps the limit check before upstream", "[arena][limit]") {
  // A 1 MiB request in a 64 KiB scope: admit() refuses it, so upstream is
  // never asked and on_acquire never called; the run records oom.
  arenastat::test_resource up{"test/arena/forwarding-upstream", test::upstream_options()};
  test::recording_hook hook;
  {
    arenastat::scope s{"test/arena/forwarding-limit", {.limit_bytes = 64 << 10}};
    arena_resource a{"node", arena_options{.initial_chunk = 4096, .hook = &hook}, &up};
    CHECK_THROWS_AS(a.allocate(1 << 20, 8), arenastat::limit_exceeded);
    CHECK(up.total_blocks() == 0);
    CHECK(hook.acquired.empty());
    CHECK(s.limit_hit());
  }
  CHECK(test::find_entry("test/arena/forwarding-limit", arenastat::entry_kind::scope).result == "oom");
}

TEST_CASE("a refused arena registers no tag and creates no account", "[arena]") {
  // Every argument is checked before the tag is registered: 40 refusals with
  // 40 new tag names (more than the 32 tags there are) leave the count as it was.
  const std::size_t tags = arenastat::tag_count();
  for (int i = 0; i < 40; ++i) {
    const std::string tag = "refused-arena-" + std::to_string(i);
    CHECK_THROWS_AS(arena_resource(tag, arena_options{.initial_chunk = 8}), std::invalid_argument);
    CHECK_THROWS_AS(arena_resource(tag, arena_options{.account = std::string_view()}, nullptr), std::invalid_argument);
  }
  CHECK(arenastat::tag_count() == tags);
  const std::size_t accounts = arenastat::account_entry_count();
  CHECK_THROWS_AS(arena_resource("refused-arena", arena_options{.initial_chunk = 8, .account = "test/arena/refused"}),
                  std::invalid_argument);
  CHECK_THROWS_AS(arena_resource("", arena_options{.account = "test/arena/refused-tag"}), std::invalid_argument);
  CHECK(arenastat::account_entry_count() == accounts);
  CHECK(arenastat::tag_count() == tags);
}

TEST_CASE("a forwarding hook that throws after forwarding leaves nothing charged", "[arena][hook]") {
  // The hook forwards on_acquire (the chunk is charged to the scope and the
  // account), then throws: the arena gives the charge back with the chunk.
  struct throws_after_forwarding : arenastat::forwarding_hook {
    void on_acquire(arenastat::charge_stamp& s, arenastat::tag_id t, std::size_t n, arenastat::account* a) override {
      arenastat::forwarding_hook::on_acquire(s, t, n, a);
      throw std::runtime_error("logging failed");
    }
  } hook;
  arenastat::test_resource up{"test/arena/hook-throws-upstream", test::upstream_options()};
  {
    arenastat::scope s{"test/arena/hook-throws"};
    arena_resource a{"node", arena_options{.initial_chunk = 4096, .account = "test/arena/hook-throws", .hook = &hook},
                     &up};
    CHECK_THROWS_AS(a.allocate(100, 8), std::runtime_error);
    CHECK(s.net_bytes() == 0);
    CHECK(s.peak_bytes() == 4096);  // it was charged, for a moment
    CHECK(arenastat::account::get("test/arena/hook-throws").totals().live_bytes == 0);
    CHECK(up.total_blocks() == 1);   // the chunk was taken
    CHECK(up.blocks_in_use() == 0);  // and given back
    CHECK(a.chunk_count() == 0);
  }
}

TEST_CASE("an alignment of 2^63 is refused before upstream is asked", "[arena]") {
  // Its worst-case padding alone exceeds what an object may take; the size
  // computed from it wrapped, and upstream was asked for 2^63 + 56 bytes.
  struct asked_upstream : std::pmr::memory_resource {
    std::size_t asked = 0;
    void* do_allocate(std::size_t bytes, std::size_t alignment) override {
      ++asked;
      return std::pmr::new_delete_resource()->allocate(bytes, alignment);
    }
    void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
      std::pmr::new_delete_resource()->deallocate(p, bytes, alignment);
    }
    bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }
  } up;
  arena_resource a{"node", arena_options{.initial_chunk = 4096}, &up};
  CHECK_THROWS_AS(a.allocate(8, std::size_t{1} << 63), std::bad_alloc);
  CHECK(up.asked == 0);
  CHECK(a.chunk_count() == 0);
}
