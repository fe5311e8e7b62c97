// The counting rule, over every stack of resources a user builds:
//   each scope is charged once per byte, by the outermost tracked resource,
//   in the units that resource takes from its upstream; each account is
//   charged with what passes through its resources (docs/concepts.md).
// The matrix: stacks {arena, arena over tracking, arena over arena, tracking
// over jemalloc, tracking over tracking, std pmr pool over tracking,
// Boost.Container pmr vector over tracking} x scenarios {no scope, one scope,
// nested scopes, freed on another thread after the scope ended, a limit hit}.
// Every case is tagged [threads] so that the TSan step runs the whole matrix.
// Every expected figure is derived here from the workload and the layers'
// documented policies, or counted independently by a counting upstream at the
// bottom of the stack; none is read back from the code under test.
#include <catch2/catch.hpp>

#include <boost/container/pmr/vector.hpp>

#include <arenastat/arenastat.hpp>
#include <arenastat/boost_adapter.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

namespace {

using arenastat::arena_options;
using arenastat::arena_resource;
using arenastat::entry_kind;
using arenastat::tracking_resource;

// The independent count: bytes held and the most ever held, below the tracked layers.
class counting_upstream : public std::pmr::memory_resource {
 public:
  std::int64_t held() const { return held_.load(); }
  std::size_t largest() const { return largest_.load(); }  // the largest request ever made
  std::int64_t peak() const { return peak_.load(); }
  std::uint64_t calls() const { return calls_.load(); }

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    ++calls_;
    if (bytes > largest_.load()) largest_.store(bytes);
    void* p = std::pmr::new_delete_resource()->allocate(bytes, alignment);
    const std::int64_t now = held_ += static_cast<std::int64_t>(bytes);
    std::int64_t p0 = peak_.load();
    while (now > p0 && !peak_.compare_exchange_weak(p0, now)) {
    }
    return p;
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    held_ -= static_cast<std::int64_t>(bytes);
    std::pmr::new_delete_resource()->deallocate(p, bytes, alignment);
  }
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }

  std::atomic<std::int64_t> held_{0}, peak_{0};
  std::atomic<std::uint64_t> calls_{0};
  std::atomic<std::size_t> largest_{0};
};

constexpr std::size_t H = arena_resource::chunk_header_size;
constexpr std::size_t block = 1000;  // every workload takes 10 blocks of 1000 bytes
constexpr std::size_t blocks = 10;
constexpr std::size_t chunk = 4096;  // arenas: fixed-size chunks (growth factor 1)
// Blocks of 1000 (8-aligned) per chunk of 4096 with its header: 4; 10 blocks take 3 chunks.
constexpr std::size_t per_chunk = (chunk - H) / block;
constexpr std::size_t arena_bytes = (blocks + per_chunk - 1) / per_chunk * chunk;

arena_options fixed_chunks(std::string_view account = {}) {
  return {.initial_chunk = chunk, .growth_factor = 1.0, .max_chunk = chunk, .account = account};
}

int unique() {
  static std::atomic<int> n{0};
  return ++n;
}

// Each stack: the resource the program calls (top), a workload, the bytes a
// scope must see (derived), and the accounts with the bytes each must see.
struct account_expectation {
  std::string name;
  std::int64_t bytes;
};

struct stack_base {
  std::string prefix = "matrix/" + std::to_string(unique()) + "/";
  counting_upstream bottom;
  virtual ~stack_base() = default;
  virtual void work() = 0;        // takes the memory; holds it until drop() or destruction
  virtual void drop() = 0;        // gives everything back
  virtual std::int64_t scope_bytes() const = 0;
  virtual std::vector<account_expectation> accounts() const = 0;
  // A request too large for any limit of the tests, taken through the top.
  virtual void huge() = 0;
};

struct arena_alone : stack_base {
  std::unique_ptr<arena_resource> a =
      std::make_unique<arena_resource>("node", fixed_chunks(prefix + "arena"), &bottom);
  void work() override {
    for (std::size_t i = 0; i < blocks; ++i) (void)a->allocate(block, 8);
  }
  void drop() override { a.reset(); }
  std::int64_t scope_bytes() const override { return arena_bytes; }
  std::vector<account_expectation> accounts() const override { return {{prefix + "arena", arena_bytes}}; }
  void huge() override { (void)a->allocate(std::size_t{1} << 40, 8); }
};

struct arena_over_tracking : stack_base {
  std::unique_ptr<tracking_resource> t = std::make_unique<tracking_resource>(prefix + "tracking", &bottom);
  std::unique_ptr<arena_resource> a = std::make_unique<arena_resource>("node", fixed_chunks(), t.get());
  void work() override {
    for (std::size_t i = 0; i < blocks; ++i) (void)a->allocate(block, 8);
  }
  void drop() override {
    a.reset();
    t.reset();
  }
  std::int64_t scope_bytes() const override { return arena_bytes; }  // the chunks, once
  std::vector<account_expectation> accounts() const override { return {{prefix + "tracking", arena_bytes}}; }
  void huge() override { (void)a->allocate(std::size_t{1} << 40, 8); }
};

struct arena_over_arena : stack_base {
  static constexpr std::size_t inner_chunk = 65536;
  std::unique_ptr<arena_resource> inner = std::make_unique<arena_resource>(
      "resource",
      arena_options{.initial_chunk = inner_chunk, .growth_factor = 1.0, .max_chunk = inner_chunk,
                    .account = prefix + "inner"},
      &bottom);
  std::unique_ptr<arena_resource> outer =
      std::make_unique<arena_resource>("node", fixed_chunks(prefix + "outer"), inner.get());
  void work() override {
    for (std::size_t i = 0; i < blocks; ++i) (void)outer->allocate(block, 8);
  }
  void drop() override {
    outer.reset();
    inner.reset();
  }
  // The scope sees the outer arena's chunks; the inner arena's one chunk (it
  // holds the three outer chunks) is only its own account's.
  std::int64_t scope_bytes() const override { return arena_bytes; }
  std::vector<account_expectation> accounts() const override {
    return {{prefix + "outer", arena_bytes}, {prefix + "inner", inner_chunk}};
  }
  void huge() override { (void)outer->allocate(std::size_t{1} << 40, 8); }
};

struct tracking_over_jemalloc : stack_base {
  std::unique_ptr<arenastat::jemalloc_resource> j = std::make_unique<arenastat::jemalloc_resource>();
  std::unique_ptr<tracking_resource> t = std::make_unique<tracking_resource>(prefix + "tracking", j.get());
  std::vector<void*> held;
  void work() override {
    for (std::size_t i = 0; i < blocks; ++i) held.push_back(t->allocate(block, 8));
  }
  void drop() override {
    for (void* p : held) t->deallocate(p, block, 8);
    held.clear();
    t.reset();
    j.reset();
  }
  std::int64_t scope_bytes() const override { return blocks * block; }
  std::vector<account_expectation> accounts() const override { return {{prefix + "tracking", blocks * block}}; }
  void huge() override { held.push_back(t->allocate(std::size_t{1} << 40, 8)); }
};

struct tracking_over_tracking : stack_base {
  std::unique_ptr<tracking_resource> lower = std::make_unique<tracking_resource>(prefix + "lower", &bottom);
  std::unique_ptr<tracking_resource> upper = std::make_unique<tracking_resource>(prefix + "upper", lower.get());
  std::vector<void*> held;
  void work() override {
    for (std::size_t i = 0; i < blocks; ++i) held.push_back(upper->allocate(block, 8));
  }
  void drop() override {
    for (void* p : held) upper->deallocate(p, block, 8);
    held.clear();
    upper.reset();
    lower.reset();
  }
  std::int64_t scope_bytes() const override { return blocks * block; }  // once, not twice
  // An account over another: both see every byte that passes through them.
  std::vector<account_expectation> accounts() const override {
    return {{prefix + "upper", blocks * block}, {prefix + "lower", blocks * block}};
  }
  void huge() override { held.push_back(upper->allocate(std::size_t{1} << 40, 8)); }
};

// Layers whose own bookkeeping is not ours (a std pmr pool, Boost.Container):
// the scope and the account see exactly what the tracked layer takes, which the
// counting upstream below it counts independently.
struct pool_over_tracking : stack_base {
  std::unique_ptr<tracking_resource> t = std::make_unique<tracking_resource>(prefix + "tracking", &bottom);
  std::unique_ptr<std::pmr::unsynchronized_pool_resource> pool =
      std::make_unique<std::pmr::unsynchronized_pool_resource>(t.get());
  std::int64_t taken = 0;  // what the pool took from the tracked layer during work()
  std::int64_t total = 0;  // what it holds after work(), its own start-up bookkeeping included
  void work() override {
    const std::int64_t before = bottom.held();
    for (std::size_t i = 0; i < blocks; ++i) (void)pool->allocate(block, 8);
    total = bottom.held();
    taken = total - before;
  }
  void drop() override {
    pool.reset();
    t.reset();
  }
  std::int64_t scope_bytes() const override { return taken; }
  std::vector<account_expectation> accounts() const override { return {{prefix + "tracking", total}}; }
  void huge() override { (void)pool->allocate(std::size_t{1} << 40, 8); }
};

struct boost_vector_over_tracking : stack_base {
  std::unique_ptr<tracking_resource> t = std::make_unique<tracking_resource>(prefix + "tracking", &bottom);
  arenastat::boost_adapter adapter{t.get()};
  std::unique_ptr<boost::container::pmr::vector<char>> v;
  void work() override {
    v = std::make_unique<boost::container::pmr::vector<char>>(&adapter);
    v->reserve(blocks * block);  // one block of exactly 10,000 bytes
  }
  void drop() override {
    v.reset();
    t.reset();
  }
  std::int64_t scope_bytes() const override { return blocks * block; }
  std::vector<account_expectation> accounts() const override { return {{prefix + "tracking", blocks * block}}; }
  void huge() override {
    auto w = std::make_unique<boost::container::pmr::vector<char>>(&adapter);
    w->reserve(std::size_t{1} << 40);
  }
};

std::int64_t live_of(const std::string& account) { return arenastat::account::get(account).live_bytes(); }

arenastat::entry scope_entry(const std::string& name) {
  for (arenastat::entry& e : arenastat::snapshot())
    if (e.name == name && e.kind == entry_kind::scope) return e;
  FAIL("no scope entry " << name);
  return {};
}

}  // namespace

#define MATRIX_STACKS                                                                                  \
  arena_alone, arena_over_tracking, arena_over_arena, tracking_over_jemalloc, tracking_over_tracking, \
      pool_over_tracking, boost_vector_over_tracking

TEMPLATE_TEST_CASE("matrix: with no scope, each account sees what passes through it", "[composition][threads]",
                   MATRIX_STACKS) {
  TestType s;
  s.work();
  for (const account_expectation& a : s.accounts()) {
    INFO(a.name);
    CHECK(live_of(a.name) == a.bytes);
  }
  s.drop();
  for (const account_expectation& a : s.accounts()) CHECK(live_of(a.name) == 0);
  CHECK(s.bottom.held() == 0);
}

TEMPLATE_TEST_CASE("matrix: one scope is charged once per byte", "[composition][threads]", MATRIX_STACKS) {
  TestType s;
  const std::string name = s.prefix + "scope";
  // Bytes a layer took before the scope began (the std pool's bookkeeping):
  // tracking_resource credits a free to the scopes active at the free, so
  // freeing them in the scope takes its net below zero by that much.
  const std::int64_t before = s.bottom.held();
  {
    arenastat::scope sc{name};
    s.work();
    CHECK(sc.net_bytes() == s.scope_bytes());
    for (const account_expectation& a : s.accounts()) {
      INFO(a.name);
      CHECK(live_of(a.name) == a.bytes);
    }
    s.drop();
    CHECK(sc.net_bytes() == -before);
  }
  CHECK(scope_entry(name).peak_bytes == static_cast<std::uint64_t>(s.scope_bytes()));
}

TEMPLATE_TEST_CASE("matrix: nested scopes each see the bytes once", "[composition][threads]", MATRIX_STACKS) {
  TestType s;
  const std::string outer = s.prefix + "outer", inner = s.prefix + "outer/inner";
  const std::int64_t before = s.bottom.held();  // see "one scope is charged once per byte"
  {
    arenastat::scope o{outer};
    {
      arenastat::scope i{inner};
      s.work();
      CHECK(i.net_bytes() == s.scope_bytes());
      CHECK(o.net_bytes() == s.scope_bytes());
      s.drop();
    }
    CHECK(o.net_bytes() == -before);
  }
  CHECK(scope_entry(inner).peak_bytes == static_cast<std::uint64_t>(s.scope_bytes()));
  CHECK(scope_entry(outer).peak_bytes == static_cast<std::uint64_t>(s.scope_bytes()));
}

TEMPLATE_TEST_CASE("matrix: freed on another thread after the scope ended", "[composition][threads]", MATRIX_STACKS) {
  auto s = std::make_unique<TestType>();
  const std::string name = s->prefix + "scope";
  {
    arenastat::scope sc{name};
    s->work();
  }
  const auto accounts = s->accounts();
  const std::int64_t expected = s->scope_bytes();
  std::thread other([&] { s->drop(); });
  other.join();
  // The ended scope keeps its figures; the accounts are back to zero; nothing leaked.
  const arenastat::entry e = scope_entry(name);
  CHECK(e.peak_bytes == static_cast<std::uint64_t>(expected));
  CHECK(e.count == 1);
  for (const account_expectation& a : accounts) CHECK(live_of(a.name) == 0);
  CHECK(s->bottom.held() == 0);
  // A later scope on this thread is not credited for those frees.
  {
    arenastat::scope later{s->prefix + "later"};
    CHECK(later.net_bytes() == 0);
  }
}

TEMPLATE_TEST_CASE("matrix: a limit refuses the request before upstream is asked, and the run is oom",
                   "[composition][threads]", MATRIX_STACKS) {
  TestType s;
  const std::string name = s.prefix + "limited";
  std::int64_t held_before = 0, bookkeeping = 0;
  {
    arenastat::scope sc{name, {.limit_bytes = 1 << 20}};  // 1 MiB
    s.work();
    held_before = s.bottom.held();
    CHECK_THROWS_AS(s.huge(), arenastat::limit_exceeded);      // 1 TiB
    CHECK(s.bottom.largest() < (std::size_t{1} << 20));        // the refused request never went down
    // A layer's own bookkeeping made on the way (the std pool's) is charged like any byte.
    bookkeeping = s.bottom.held() - held_before;
    CHECK(sc.net_bytes() == s.scope_bytes() + bookkeeping);
    CHECK(sc.limit_hit());
    s.drop();
  }
  const arenastat::entry e = scope_entry(name);
  CHECK(e.result == "oom");
  CHECK(e.oom_count == 1);
  CHECK(e.peak_bytes == static_cast<std::uint64_t>(s.scope_bytes() + bookkeeping));
}

// Two layers of one stack charging the same account would count the lower
// layer's bytes twice there: refused when the upper layer is built, before
// anything is registered.
TEST_CASE("a resource over a stack that already charges its account is refused", "[composition]") {
  const std::string why =
      ", which already charges account 'stack.same' for every byte taken through it: they would count twice there; "
      "give one of the two layers another account";
  tracking_resource below{"stack.same"};
  const std::size_t accounts = arenastat::account_entry_count();
  CHECK_THROWS_WITH((arena_resource{"node", {.account = "stack.same"}, &below}),
                    "arenastat::arena_resource: its upstream stack holds a tracking_resource 'stack.same'" + why);
  CHECK_THROWS_WITH((tracking_resource{"stack.same", &below}),
                    "arenastat::tracking_resource 'stack.same': its upstream stack holds a tracking_resource "
                    "'stack.same'" + why);
  CHECK_THROWS_WITH((arenastat::test_resource{"stack.same", &below}),
                    "arenastat::test_resource 'stack.same': its upstream stack holds a tracking_resource "
                    "'stack.same'" + why);
  // Found through the layers between: an arena of another account, a tracking_resource of another.
  arena_resource arena_between{"node", {.account = "stack.other"}, &below};
  tracking_resource tracking_between{"stack.third", &arena_between};
  CHECK_THROWS_WITH((tracking_resource{"stack.same", &tracking_between}),
                    "arenastat::tracking_resource 'stack.same': its upstream stack holds a tracking_resource "
                    "'stack.same'" + why);
  // An arena charging the account is found too.
  arena_resource charged{"node", {.account = "stack.arena"}};
  CHECK_THROWS_WITH((tracking_resource{"stack.arena", &charged}),
                    "arenastat::tracking_resource 'stack.arena': its upstream stack holds an arena_resource with "
                    "account 'stack.arena', which already charges account 'stack.arena' for every byte taken through "
                    "it: they would count twice there; give one of the two layers another account");
  // Found through the standard library's layers, which name their upstream.
  std::pmr::synchronized_pool_resource sync_pool{&below};
  std::pmr::unsynchronized_pool_resource pool_over_sync{&sync_pool};
  std::pmr::monotonic_buffer_resource buffer_over_pools{&pool_over_sync};
  CHECK_THROWS_WITH((tracking_resource{"stack.same", &buffer_over_pools}),
                    "arenastat::tracking_resource 'stack.same': its upstream stack holds a tracking_resource "
                    "'stack.same'" + why);
  CHECK_THROWS_WITH((arena_resource{"node", {.account = "stack.same"}, &sync_pool}),
                    "arenastat::arena_resource: its upstream stack holds a tracking_resource 'stack.same'" + why);
  CHECK(arenastat::account_entry_count() == accounts + 3);  // stack.other, stack.third, stack.arena; none refused
  // Different accounts at each layer are fine; so are siblings of one account.
  CHECK_NOTHROW(tracking_resource{"stack.fourth", &tracking_between});
  CHECK_NOTHROW(tracking_resource{"stack.same"});
}
