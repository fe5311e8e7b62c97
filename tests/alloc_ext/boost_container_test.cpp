// Boost.Container over arenastat resources: boost containers with a
// std::pmr::polymorphic_allocator, and boost::container::pmr containers
// through arenastat::boost_adapter.
#include <jemalloc/jemalloc.h>

#include <catch2/catch.hpp>

#include <boost/container/devector.hpp>
#include <boost/container/flat_map.hpp>
#include <boost/container/pmr/flat_map.hpp>
#include <boost/container/pmr/polymorphic_allocator.hpp>
#include <boost/container/pmr/string.hpp>
#include <boost/container/pmr/vector.hpp>
#include <boost/container/stable_vector.hpp>
#include <boost/container/vector.hpp>

#include <cstdint>
#include <functional>
#include <memory_resource>
#include <set>
#include <string>
#include <utility>

#include "arenastat/arena_resource.hpp"
#include "arenastat/boost_adapter.hpp"
#include "arenastat/jemalloc_resource.hpp"
#include "arenastat/tracking_resource.hpp"

namespace {

namespace bc = boost::container;

template <class T>
using std_alloc = std::pmr::polymorphic_allocator<T>;

// An independent tally of the traffic that reaches it (test-only), to check
// the tracked figures where the containers' allocation pattern is not public.
class tally_resource final : public std::pmr::memory_resource {
 public:
  std::int64_t live = 0;
  std::uint64_t allocations = 0;
  std::size_t last_alignment = 0;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    void* p = std::pmr::new_delete_resource()->allocate(bytes, alignment);
    live += static_cast<std::int64_t>(bytes);
    ++allocations;
    last_alignment = alignment;
    return p;
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    std::pmr::new_delete_resource()->deallocate(p, bytes, alignment);
    live -= static_cast<std::int64_t>(bytes);
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }
};

std::int64_t live(const arenastat::tracking_resource& r) { return r.tracked_account().live_bytes(); }

// Elements devector::reserve(n) allocates (Boost 1.81, default relocate_on_90):
// it keeps a tenth of the buffer free, capacity() = buffer - buffer / 10, and
// reserve rounds the buffer to ((n + 8) / 9) * 10 elements.
constexpr std::size_t devector_storage(std::size_t n) { return ((n + 8) / 9) * 10; }

}  // namespace

// ---- boost containers with std::pmr::polymorphic_allocator -----------------

TEST_CASE("boost: a reserved vector<uint64_t> of 1000 is 8000 live bytes, 0 after", "[boost]") {
  arenastat::tracking_resource tracked{"alloc_ext/boost_vector_reserve"};
  {
    bc::vector<std::uint64_t, std_alloc<std::uint64_t>> v{&tracked};
    v.reserve(1000);
    CHECK(live(tracked) == 8000);
    CHECK(tracked.tracked_account().totals().allocations == 1);
  }
  CHECK(live(tracked) == 0);
  CHECK(tracked.tracked_account().totals().frees == 1);
}

TEST_CASE("boost: a growing vector holds exactly capacity() elements live", "[boost]") {
  arenastat::tracking_resource tracked{"alloc_ext/boost_vector_growth"};
  {
    bc::vector<std::uint64_t, std_alloc<std::uint64_t>> v{&tracked};
    std::set<std::size_t> capacities;
    for (std::uint64_t i = 0; i < 1000; ++i) {
      v.push_back(i);
      capacities.insert(v.capacity());
      REQUIRE(live(tracked) == static_cast<std::int64_t>(v.capacity() * 8));
    }
    CHECK(tracked.tracked_account().totals().allocations == capacities.size());
  }
  CHECK(live(tracked) == 0);
}

TEST_CASE("boost: flat_map storage is capacity() pairs live", "[boost]") {
  arenastat::tracking_resource tracked{"alloc_ext/boost_flat_map"};
  using pair = std::pair<std::uint64_t, std::uint64_t>;
  {
    bc::flat_map<std::uint64_t, std::uint64_t, std::less<>, std_alloc<pair>> m{&tracked};
    m.reserve(100);
    CHECK(live(tracked) == 100 * 16);
    for (std::uint64_t k = 0; k < 100; ++k) m.emplace(99 - k, k);
    CHECK(m.capacity() == 100);
    CHECK(live(tracked) == 1600);
    m.emplace(1000, 1);  // grows
    CHECK(live(tracked) == static_cast<std::int64_t>(m.capacity() * sizeof(pair)));
    CHECK(m.begin()->first == 0);
  }
  CHECK(live(tracked) == 0);
}

TEST_CASE("boost: devector storage is tracked at both ends", "[boost]") {
  tally_resource tally;
  arenastat::tracking_resource tracked{"alloc_ext/boost_devector", &tally};
  {
    bc::devector<std::uint64_t, std_alloc<std::uint64_t>> d{&tracked};
    d.reserve(500);
    CHECK(d.capacity() >= 500);
    CHECK(live(tracked) == static_cast<std::int64_t>(devector_storage(500) * 8));
    for (std::uint64_t i = 0; i < 2000; ++i) {
      if (i % 2) d.push_front(i); else d.push_back(i);
      REQUIRE(live(tracked) == tally.live);
    }
    CHECK(d.size() == 2000);
    CHECK(live(tracked) >= static_cast<std::int64_t>(2000 * 8));
  }
  CHECK(live(tracked) == 0);
}

TEST_CASE("boost: stable_vector nodes and index are all tracked", "[boost]") {
  tally_resource tally;
  arenastat::tracking_resource tracked{"alloc_ext/boost_stable_vector", &tally};
  {
    bc::stable_vector<std::uint64_t, std_alloc<std::uint64_t>> s{&tracked};
    for (std::uint64_t i = 0; i < 300; ++i) s.push_back(i);
    // One node per element at least (value + up pointer), plus the index.
    CHECK(live(tracked) == tally.live);
    CHECK(live(tracked) > static_cast<std::int64_t>(300 * 2 * sizeof(void*)));
    CHECK(tracked.tracked_account().totals().allocations == tally.allocations);
    s.erase(s.begin(), s.begin() + 200);
    s.shrink_to_fit();
    CHECK(live(tracked) == tally.live);
  }
  CHECK(live(tracked) == 0);
  CHECK(tally.live == 0);
}

TEST_CASE("boost: std::pmr strings inside a boost vector get the same resource", "[boost]") {
  tally_resource tally;
  arenastat::tracking_resource tracked{"alloc_ext/boost_nested", &tally};
  {
    bc::vector<std::pmr::string, std_alloc<std::pmr::string>> v{&tracked};
    v.reserve(10);
    for (int i = 0; i < 10; ++i) v.emplace_back(200, 'x');  // beyond the small-string buffer
    CHECK(v[3].get_allocator().resource() == &tracked);
    CHECK(live(tracked) == static_cast<std::int64_t>(10 * sizeof(std::pmr::string) + 10 * 201));
    CHECK(live(tracked) == tally.live);
  }
  CHECK(live(tracked) == 0);
}

TEST_CASE("boost: containers over an arena_resource bump its requested bytes", "[boost]") {
  arenastat::arena_resource arena{"node"};
  std::size_t expected = 0;
  {
    bc::vector<std::uint64_t, std_alloc<std::uint64_t>> v{&arena};
    v.reserve(1000);
    expected += 8000;
    CHECK(arena.bytes_requested() == expected);
    std::set<std::size_t> capacities{v.capacity()};
    for (std::uint64_t i = 0; i < 5000; ++i) {
      v.push_back(i);
      if (capacities.insert(v.capacity()).second) expected += v.capacity() * 8;
    }
    CHECK(arena.bytes_requested() == expected);
  }
  CHECK(arena.bytes_requested() == expected);  // deallocate is a no-op in an arena
  CHECK(arena.bytes_reserved() >= expected);
  arena.release();
  CHECK(arena.bytes_reserved() == 0);
}

// ---- boost::container::pmr through boost_adapter ---------------------------

TEST_CASE("boost_adapter: a pmr::vector charges the tracked account", "[boost][adapter]") {
  arenastat::tracking_resource tracked{"alloc_ext/boost_pmr_vector"};
  arenastat::boost_adapter to_boost{&tracked};
  {
    bc::pmr::vector<std::uint64_t> v{&to_boost};
    v.reserve(1000);
    CHECK(live(tracked) == 8000);
    CHECK(v.get_allocator().resource() == &to_boost);
  }
  CHECK(live(tracked) == 0);
}

TEST_CASE("boost_adapter: a pmr::flat_map over an arena_resource", "[boost][adapter]") {
  arenastat::arena_resource arena{"node"};
  arenastat::boost_adapter to_boost{&arena};
  bc::pmr::flat_map<std::uint64_t, std::uint64_t> m{&to_boost};
  m.reserve(64);
  CHECK(arena.bytes_requested() == 64 * 16);
  for (std::uint64_t k = 0; k < 64; ++k) m[k] = k * k;
  CHECK(arena.bytes_requested() == 64 * 16);
  CHECK(m.at(7) == 49);
}

TEST_CASE("boost_adapter: pmr strings in a pmr::vector allocate through the adapter too", "[boost][adapter]") {
  tally_resource tally;
  arenastat::tracking_resource tracked{"alloc_ext/boost_pmr_nested", &tally};
  arenastat::boost_adapter to_boost{&tracked};
  {
    bc::pmr::vector<bc::pmr::string> v{&to_boost};
    for (int i = 0; i < 20; ++i) v.emplace_back(300, 'y');
    CHECK(v[5].get_allocator().resource() == &to_boost);
    CHECK(live(tracked) == tally.live);
    CHECK(tracked.tracked_account().totals().allocations == tally.allocations);
    CHECK(tally.allocations > 20);  // the strings' buffers plus the vector's
  }
  CHECK(live(tracked) == 0);
}

// Boost 1.81's <boost/container/pmr/devector.hpp> is unusable (it shares the
// include guard of pmr/vector.hpp and passes the growth policy as the
// allocator), so the devector names boost's polymorphic_allocator itself.
TEST_CASE("boost_adapter: a devector with boost's polymorphic_allocator over a jemalloc_resource",
          "[boost][adapter][jemalloc]") {
  arenastat::jemalloc_resource je;
  arenastat::boost_adapter to_boost{&je};
  {
    bc::devector<std::uint64_t, bc::pmr::polymorphic_allocator<std::uint64_t>> d{&to_boost};
    d.reserve(1000);
    const std::size_t bytes = devector_storage(1000) * 8;  // 8960 -> size class 10240
    je.flush_thread_cache();
    CHECK(je.arena_stats().allocated_bytes() == nallocx(bytes, 0));
  }
  je.flush_thread_cache();
  CHECK(je.arena_stats().allocated_bytes() == 0);
}

TEST_CASE("boost_adapter: forwards the alignment unchanged", "[boost][adapter]") {
  tally_resource tally;
  arenastat::boost_adapter to_boost{&tally};
  void* p = to_boost.allocate(64, 256);
  CHECK(reinterpret_cast<std::uintptr_t>(p) % 256 == 0);
  CHECK(tally.last_alignment == 256);
  CHECK(tally.live == 64);
  to_boost.deallocate(p, 64, 256);
  CHECK(tally.live == 0);
}

TEST_CASE("boost_adapter: equality follows the target resources", "[boost][adapter]") {
  tally_resource a;
  tally_resource b;
  arenastat::boost_adapter a1{&a};
  arenastat::boost_adapter a2{&a};
  arenastat::boost_adapter b1{&b};
  CHECK(a1.is_equal(a2));
  CHECK_FALSE(a1.is_equal(b1));
  CHECK_FALSE(a1.is_equal(*bc::pmr::new_delete_resource()));
  CHECK(a1.target() == &a);
}

TEST_CASE("boost_adapter: a null target is rejected", "[boost][adapter]") {
  CHECK_THROWS_WITH(arenastat::boost_adapter{nullptr}, "arenastat::boost_adapter: target resource is null");
}
