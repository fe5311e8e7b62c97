#include <catch2/catch.hpp>

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <memory>
#include <mutex>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <memory_resource>
#include <vector>
#include <stdexcept>
#include <thread>

#include "support.hpp"
#include "thread_state.hpp"

using arenastat::arena_options;
using arenastat::arena_resource;
using arenastat::entry_kind;
using arenastat::scope;

namespace {

// "c<i>", built by +=: GCC 12 warns (-Wstringop-overflow) about "literal" + std::to_string(i).
std::string counter_name(int i) {
  std::string name = "c";
  name += std::to_string(i);
  return name;
}

}  // namespace

namespace {
arena_options chunks_of(std::size_t size) {
  return arena_options{.initial_chunk = size, .growth_factor = 2.0, .max_chunk = std::size_t{1} << 20};
}
}  // namespace

TEST_CASE("a scope is charged each chunk taken while it is active", "[scope]") {
  scope s{"test/scope/charge"};
  arena_resource a{"node", chunks_of(4096)};
  (void)a.allocate(100, 8);
  CHECK(s.net_bytes() == 4096);
  CHECK(s.peak_bytes() == 4096);
  CHECK(s.tag_bytes(arenastat::register_tag("node")) == 4096);
  (void)a.allocate(100, 8);  // same chunk: no charge
  CHECK(s.net_bytes() == 4096);
}

TEST_CASE("release lowers a scope's net bytes but not its peak", "[scope]") {
  scope s{"test/scope/release"};
  arena_resource a{"node", chunks_of(4096)};
  constexpr std::size_t H = arena_resource::chunk_header_size;
  (void)a.allocate(5000, 8);  // H + 5000 > 4096: a chunk of its own, H + 5000 bytes
  (void)a.allocate(100, 8);   // regular chunk 4096
  CHECK(s.net_bytes() == static_cast<std::int64_t>(H + 5000 + 4096));
  a.release();
  CHECK(s.net_bytes() == 0);
  CHECK(s.peak_bytes() == H + 5000 + 4096);
}

TEST_CASE("the table keeps the per-tag breakdown at the moment of the peak", "[scope]") {
  {
    scope s{"test/scope/breakdown"};
    arena_resource node{"node", chunks_of(4096)};
    arena_resource res{"resource", chunks_of(8192)};
    (void)node.allocate(10, 8);
    (void)res.allocate(10, 8);  // peak: 4096 node + 8192 resource
    node.release();       // 8192
    arena_resource node2{"node", chunks_of(2048)};
    (void)node2.allocate(10, 8);  // 10240 < 12288: no new peak
    CHECK(s.peak_bytes() == 12288);
  }
  const arenastat::entry e = test::find_entry("test/scope/breakdown", entry_kind::scope);
  CHECK(e.peak_bytes == 12288);
  CHECK(test::tag_of(e.at_peak, "node") == 4096);
  CHECK(test::tag_of(e.at_peak, "resource") == 8192);
  CHECK(e.at_peak.size() == 2);
  CHECK(e.result == "ok");
  CHECK(e.count == 1);
}

TEST_CASE("nested scopes charge every active level", "[scope]") {
  {
    scope outer{"test/scope/outer"};
    arena_resource a{"node", chunks_of(1024)};
    (void)a.allocate(10, 8);  // 1024 to outer only
    {
      scope inner{"test/scope/outer/inner"};
      arena_resource b{"resource", chunks_of(4096)};
      (void)b.allocate(10, 8);
      CHECK(inner.net_bytes() == 4096);
      CHECK(outer.net_bytes() == 1024 + 4096);
    }  // b released inside inner
    CHECK(outer.net_bytes() == 1024);
    CHECK(outer.peak_bytes() == 5120);
  }
  CHECK(test::find_entry("test/scope/outer/inner", entry_kind::scope).peak_bytes == 4096);
  const arenastat::entry outer = test::find_entry("test/scope/outer", entry_kind::scope);
  CHECK(outer.peak_bytes == 5120);
  CHECK(test::tag_of(outer.at_peak, "node") == 1024);
  CHECK(test::tag_of(outer.at_peak, "resource") == 4096);
}

TEST_CASE("a chunk released after its scope ended is not credited to a later scope", "[scope]") {
  arena_resource a{"node", chunks_of(4096)};
  {
    scope first{"test/scope/first"};
    (void)a.allocate(10, 8);
  }
  CHECK(test::find_entry("test/scope/first", entry_kind::scope).last_peak_bytes == 4096);
  scope later{"test/scope/later"};
  a.release();
  CHECK(later.net_bytes() == 0);
  CHECK(later.peak_bytes() == 0);
}

TEST_CASE("a release credits the scopes that were charged, not newer ones", "[scope]") {
  scope outer{"test/scope/credit-outer"};
  arena_resource a{"node", chunks_of(4096)};
  (void)a.allocate(10, 8);
  scope inner{"test/scope/credit-inner"};
  a.release();
  CHECK(outer.net_bytes() == 0);
  CHECK(inner.net_bytes() == 0);
}

TEST_CASE("a release on another thread is credited to the owner's active scope", "[scope][threads]") {
  scope s{"test/scope/cross-thread"};
  auto* a = new arena_resource{"node", chunks_of(4096)};
  (void)a->allocate(10, 8);
  CHECK(s.net_bytes() == 4096);
  std::thread([a] { delete a; }).join();
  // Applied at the owner's next tracked event.
  arena_resource b{"node", chunks_of(1024)};
  (void)b.allocate(10, 8);
  CHECK(s.net_bytes() == 1024);
  CHECK(s.peak_bytes() == 4096);
}

// The owner's queue of credits, read under its lock (thread_state.hpp).
static std::size_t queued_credits(arenastat::detail::thread_state& owner) {
  std::lock_guard lock(owner.pending_mutex);
  return owner.pending.size();
}

TEST_CASE("a release on another thread queues a credit only while a scope it was for is active",
          "[scope][threads]") {
  // One chunk taken in a scope on a worker; the worker waits at each step
  // while this thread releases a chunk.
  std::atomic<int> step{0};
  const auto wait_for = [&](int n) {
    while (step.load() != n) std::this_thread::yield();
  };
  arena_resource* held = nullptr;      // taken in the worker's scope, released while it is active
  arena_resource* after_end = nullptr;  // taken in a scope that ended, released while the worker waits
  arenastat::detail::thread_state* owner = nullptr;
  std::thread worker([&] {
    {
      scope ended{"test/scope/queue/ended"};
      after_end = new arena_resource{"node", chunks_of(4096)};
      (void)after_end->allocate(10, 8);
    }
    scope s{"test/scope/queue/active"};
    held = new arena_resource{"node", chunks_of(2048)};
    (void)held->allocate(10, 8);
    owner = arenastat::detail::tls_scopes.state;
    step = 1;
    wait_for(2);
    CHECK(s.net_bytes() == 2048);  // not yet applied: the credit waits for a tracked event
    arena_resource next{"node", chunks_of(1024)};
    (void)next.allocate(10, 8);  // applies it
    CHECK(s.net_bytes() == 1024);
  });
  wait_for(1);
  REQUIRE(owner != nullptr);
  delete after_end;  // its scope has ended: nothing to credit, nothing queued
  CHECK(queued_credits(*owner) == 0);
  delete held;  // its scope is active: queued for the worker
  CHECK(queued_credits(*owner) == 1);
  step = 2;
  worker.join();
}

TEST_CASE("a release after its owner thread exited queues nothing", "[scope][threads]") {
  std::vector<std::unique_ptr<arena_resource>> arenas;
  arenastat::detail::thread_state* owner = nullptr;
  std::thread([&] {
    scope s{"test/scope/queue/exited"};
    for (int i = 0; i < 100; ++i) {
      arenas.push_back(std::make_unique<arena_resource>("node", chunks_of(1024)));
      (void)arenas.back()->allocate(10, 8);
    }
    owner = arenastat::detail::tls_scopes.state;
  }).join();
  REQUIRE(owner != nullptr);
  arenas.clear();  // 100 chunks stamped by a thread that is gone
  CHECK(queued_credits(*owner) == 0);
  CHECK_FALSE(owner->has_pending.load());
}

TEST_CASE("in a fork's child, a chunk a parent's other thread stamped queues no credit for it", "[scope]") {
  // The worker holds a scope and a chunk while this thread forks: in the
  // child the worker does not exist, so the chunk's release there must not
  // queue a credit it would wait for for ever. (Not run under TSan: a fork
  // with threads running.)
  std::atomic<int> step{0};
  arena_resource* a = nullptr;
  arenastat::detail::thread_state* owner = nullptr;
  std::thread worker([&] {
    scope s{"test/scope/fork/worker"};
    a = new arena_resource{"node", chunks_of(1024)};
    (void)a->allocate(10, 8);
    owner = arenastat::detail::tls_scopes.state;
    step = 1;
    while (step.load() != 2) std::this_thread::yield();
  });
  while (step.load() != 1) std::this_thread::yield();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    delete a;
    ::_exit(queued_credits(*owner) == 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  step = 2;
  worker.join();
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  delete a;  // here the worker's scope has ended: nothing queued either
  CHECK(queued_credits(*owner) == 0);
}

TEST_CASE("a run in a fork's child is recorded with the child's thread id", "[scope]") {
  { scope s{"test/scope/fork/parent"}; }  // this thread has its record before the fork
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    { scope s{"test/scope/fork/child"}; }
    const arenastat::entry e = test::find_entry("test/scope/fork/child", entry_kind::scope);
    const std::uint64_t ids[2] = {e.thread, static_cast<std::uint64_t>(::syscall(SYS_gettid))};
    const bool sent = ::write(fds[1], ids, sizeof ids) == static_cast<ssize_t>(sizeof ids);
    ::_exit(sent ? 0 : 1);
  }
  ::close(fds[1]);
  std::uint64_t ids[2] = {0, 0};
  const ssize_t got = ::read(fds[0], ids, sizeof ids);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(got == static_cast<ssize_t>(sizeof ids));
  CHECK(ids[1] == static_cast<std::uint64_t>(pid));  // the child's only thread has the child's pid
  CHECK(ids[0] == ids[1]);
  CHECK(ids[0] != static_cast<std::uint64_t>(::syscall(SYS_gettid)));
}

TEST_CASE("repeated runs are counted; the table keeps last and largest peaks", "[scope]") {
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t size : {2048, 8192, 4096}) {
    scope s{"test/scope/repeated"};
    arena_resource a{"node", chunks_of(size)};
    (void)a.allocate(10, 8);
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const arenastat::entry e = test::find_entry("test/scope/repeated", entry_kind::scope);
  CHECK(e.count == 3);
  CHECK(e.last_peak_bytes == 4096);
  CHECK(e.peak_bytes == 8192);
  // The three runs lie inside the measured interval, the last one among them.
  CHECK(e.last_time_s > 0);
  CHECK(e.time_s > e.last_time_s);
  CHECK(e.time_s <= elapsed);
  CHECK(e.thread == static_cast<std::uint64_t>(::syscall(SYS_gettid)));  // this thread, by its OS id
}

TEST_CASE("a limit throws at the allocation that would pass it and records oom", "[scope]") {
  using Catch::Matchers::Contains;
  arena_resource* keep = nullptr;
  {
    scope s{"test/scope/limited", {.limit_bytes = 10000}};
    arena_resource a{"node", chunks_of(4096)};
    (void)a.allocate(4000, 8);                 // chunk 1: 4096 <= 10000
    CHECK_THROWS_MATCHES(a.allocate(4000, 8), arenastat::limit_exceeded,  // chunk 2 would make 12288
                         Catch::Matchers::Predicate<arenastat::limit_exceeded>([](const auto& e) {
                           return e.scope_name() == "test/scope/limited" && e.limit() == 10000 &&
                                  e.net_bytes() == 4096 && e.requested() == 8192;
                         }));
    try {
      (void)a.allocate(4000, 8);
    } catch (const std::bad_alloc& e) {  // catchable as bad_alloc
      CHECK_THAT(e.what(), Contains("test/scope/limited") && Contains("10000") && Contains("4096") &&
                               Contains("8192"));
    }
    CHECK(a.chunk_count() == 1);
    CHECK(s.net_bytes() == 4096);
    CHECK(s.limit_hit());
    (void)keep;
  }
  const arenastat::entry e = test::find_entry("test/scope/limited", entry_kind::scope);
  CHECK(e.result == "oom");
  CHECK(e.oom_count == 1);
}

TEST_CASE("an outer scope's limit applies to allocations in inner scopes", "[scope]") {
  scope outer{"test/scope/limit-outer", {.limit_bytes = 6000}};
  arena_resource a{"node", chunks_of(4096)};
  (void)a.allocate(10, 8);
  scope inner{"test/scope/limit-inner"};
  arena_resource b{"node", chunks_of(4096)};
  CHECK_THROWS_AS(b.allocate(10, 8), arenastat::limit_exceeded);
  CHECK(outer.limit_hit());
  CHECK_FALSE(inner.limit_hit());
  CHECK(inner.net_bytes() == 0);
}

TEST_CASE("a scope left by another exception records err", "[scope]") {
  try {
    scope s{"test/scope/err"};
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  CHECK(test::find_entry("test/scope/err", entry_kind::scope).result == "err");
}

TEST_CASE("a scope that hit its limit and is then left by another exception records oom, not err", "[scope]") {
  std::uint64_t oom_before = 0, err_before = 0;  // a repeated test case in one process
  for (const arenastat::entry& e : arenastat::snapshot())
    if (e.name == "test/scope/oom-then-err" && e.kind == entry_kind::scope) oom_before = e.oom_count, err_before = e.err_count;
  try {
    scope s{"test/scope/oom-then-err", {.limit_bytes = 1024}};
    arena_resource a{"node", chunks_of(4096)};
    CHECK_THROWS_AS(a.allocate(10, 8), arenastat::limit_exceeded);  // caught
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  const arenastat::entry e = test::find_entry("test/scope/oom-then-err", entry_kind::scope);
  CHECK(e.result == "oom");
  CHECK(e.oom_count == oom_before + 1);
  CHECK(e.err_count == err_before);
}

TEST_CASE("a scope begun and ended while another exception unwinds records ok", "[scope]") {
  // Its destructor runs with one exception in flight, as at its start.
  struct ends_a_scope {
    ~ends_a_scope() { scope s{"test/scope/during-unwinding"}; }
  };
  try {
    ends_a_scope e;
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  CHECK(test::find_entry("test/scope/during-unwinding", entry_kind::scope).result == "ok");
}

TEST_CASE("a scope left by an exception records err on a thread that reuses another's thread record",
          "[scope][threads]") {
  // Thread records (and the exception globals read through them) are reused
  // by later threads. B starts before A and waits, so its stack, and with it
  // its exception globals, differ from A's; A enters a scope and ends, which
  // puts its record on the free list; then B takes that record (the last one
  // given back is taken first) and leaves a scope by an exception. Read
  // through A's globals, B's count would be 0 and its scope would say ok.
  std::atomic<bool> go{false};
  std::thread b([&go] {
    while (!go.load()) std::this_thread::yield();
    try {
      scope s{"test/scope/reused-record-err"};
      throw std::runtime_error("boom");
    } catch (const std::runtime_error&) {
    }
    { scope fine{"test/scope/reused-record-ok"}; }
  });
  std::thread a([] { scope s{"test/scope/record-giver"}; });
  a.join();
  go.store(true);
  b.join();
  CHECK(test::find_entry("test/scope/record-giver", entry_kind::scope).result == "ok");
  CHECK(test::find_entry("test/scope/reused-record-err", entry_kind::scope).result == "err");
  CHECK(test::find_entry("test/scope/reused-record-ok", entry_kind::scope).result == "ok");
}

TEST_CASE("user counters keep their value at the peak and their last value", "[scope]") {
  {
    scope s{"test/scope/counters"};
    arena_resource a{"node", chunks_of(1024)};
    s.set_counter("nodes", 10);
    (void)a.allocate(10, 8);        // peak 1024 with nodes = 10
    s.set_counter("nodes", 20);
    (void)a.allocate(1000, 8);      // new chunk 2048: peak 3072 with nodes = 20
    s.set_counter("nodes", 30);
    s.set_counter("late", 5); // born after the peak
  }
  const arenastat::entry e = test::find_entry("test/scope/counters", entry_kind::scope);
  REQUIRE(e.counters.size() == 2);
  // nodes: 20 when the peak (3072) was reached, 30 last; reports show 20.
  CHECK(e.counters[0] == arenastat::counter_value{"nodes", 20, 30, true});
  CHECK(e.counters[0].shown() == 20);
  // late: first set after the peak, so it had no value then; reports show 5.
  CHECK(e.counters[1] == arenastat::counter_value{"late", 0, 5, false});
  CHECK(e.counters[1].shown() == 5);
}

TEST_CASE("a counter set once at the end of the work shows that value", "[scope]") {
  // The README's pattern: build, then record the size.
  {
    scope s{"test/scope/counter-at-end"};
    arena_resource a{"node", chunks_of(1024)};
    std::pmr::vector<int> v{&a};
    for (int i = 0; i < 1000; ++i) v.push_back(i);
    s.set_counter("nodes", static_cast<std::int64_t>(v.size()));
  }
  const arenastat::entry e = test::find_entry("test/scope/counter-at-end", entry_kind::scope);
  REQUIRE(e.counters.size() == 1);
  CHECK(e.counters[0].shown() == 1000);
  CHECK(e.counters[0].last == 1000);
  CHECK_FALSE(e.counters[0].at_peak);
}

TEST_CASE("counters of a scope that never allocates keep their last value", "[scope]") {
  {
    scope s{"test/scope/counters-idle"};
    s.set_counter("items", 3);
    s.set_counter("items", 7);
  }
  CHECK(test::find_entry("test/scope/counters-idle", entry_kind::scope).counters ==
        std::vector<arenastat::counter_value>{{"items", 0, 7, false}});
}

TEST_CASE("bad scope names and counters are rejected clearly", "[scope]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(scope(""), Contains("empty name"));
  scope s{"test/scope/bad-counters"};
  CHECK_THROWS_WITH(s.set_counter("", 1), Contains("counter name"));
  CHECK_THROWS_WITH(s.set_counter("a-counter-name-much-too-long", 1), Contains("counter name"));
  for (int i = 0; i < 8; ++i) s.set_counter(counter_name(i), i);
  CHECK_THROWS_WITH(s.set_counter("c8", 1), Contains("already has 8 counters"));
}

TEST_CASE("counter names are byte strings: a NUL inside one ends nothing", "[scope]") {
  using namespace std::string_literals;
  {
    scope s{"test/scope/nul-counters"};
    s.set_counter("a\0x"s, 1);
    s.set_counter("a\0y"s, 2);
    s.set_counter("a"s, 3);
    s.set_counter("a\0x"s, 4);  // the first counter again, not a fourth
  }
  const arenastat::entry e = test::find_entry("test/scope/nul-counters", entry_kind::scope);
  REQUIRE(e.counters.size() == 3);
  // Never allocated: no peak was reached with a value, so each shows its last value.
  CHECK(e.counters[0] == arenastat::counter_value{"a\0x"s, 0, 4, false});
  CHECK(e.counters[1] == arenastat::counter_value{"a\0y"s, 0, 2, false});
  CHECK(e.counters[2] == arenastat::counter_value{"a"s, 0, 3, false});
}

TEST_CASE("errors naming a counter or scope escape them", "[scope]") {
  scope s{"test/scope/\x1b[2J"};
  CHECK_THROWS_WITH(s.set_counter("\x1b]0;title\x07 and far too long", 1),
                    "arenastat::scope::set_counter: counter name '\\x1b]0;title\\x07 and far too long' must have 1 "
                    "to 23 bytes, not 27");  // 1 + 3 + 5 + 1 + 17 bytes
  for (int i = 0; i < 8; ++i) s.set_counter(counter_name(i), i);
  CHECK_THROWS_WITH(s.set_counter("\x07", 1), "arenastat::scope::set_counter: scope 'test/scope/\\x1b[2J' already "
                                              "has 8 counters; cannot add '\\x07'");
}

TEST_CASE("scopes nest 64 deep; the 65th is refused", "[scope]") {
  // Runs folded under this name before (the same process may run this test
  // case again): the 64 nested scopes add exactly 64.
  std::uint64_t before = 0;
  for (const arenastat::entry& e : arenastat::snapshot())
    if (e.name == "test/scope/deep" && e.kind == entry_kind::scope) before = e.count;
  std::vector<std::unique_ptr<scope>> stack;
  for (int i = 0; i < 64; ++i) stack.push_back(std::make_unique<scope>("test/scope/deep"));
  CHECK_THROWS_AS(scope("test/scope/too-deep"), std::length_error);
  arena_resource a{"node", chunks_of(1024)};
  (void)a.allocate(10, 8);
  CHECK(stack.front()->net_bytes() == 1024);
  CHECK(stack.back()->net_bytes() == 1024);
  while (!stack.empty()) stack.pop_back();
  CHECK(test::find_entry("test/scope/deep", entry_kind::scope).count == before + 64);
}

TEST_CASE("scopes on different threads are independent", "[scope][threads]") {
  std::atomic<int> ready{0};
  std::int64_t seen[2] = {};
  auto work = [&](const char* name, std::size_t chunk, std::int64_t* net) {
    scope s{name};
    arena_resource a{"node", chunks_of(chunk)};
    (void)a.allocate(10, 8);
    ready.fetch_add(1);
    while (ready.load() < 2) std::this_thread::yield();  // both hold their chunk at once
    *net = s.net_bytes();
  };
  std::thread t1(work, "test/scope/thread-a", 2048, &seen[0]);
  std::thread t2(work, "test/scope/thread-b", 8192, &seen[1]);
  t1.join();
  t2.join();
  CHECK(seen[0] == 2048);
  CHECK(seen[1] == 8192);
  CHECK(test::find_entry("test/scope/thread-a", entry_kind::scope).peak_bytes == 2048);
  CHECK(test::find_entry("test/scope/thread-b", entry_kind::scope).peak_bytes == 8192);
}

TEST_CASE("reset_peaks makes scope entries forget their largest run", "[scope]") {
  std::uint64_t before = 0;  // runs of this name already folded (a repeated test case in one process)
  for (const arenastat::entry& e : arenastat::snapshot())
    if (e.name == "test/scope/reset" && e.kind == entry_kind::scope) before = e.count;
  {
    scope s{"test/scope/reset"};
    arena_resource a{"node", chunks_of(8192)};
    (void)a.allocate(10, 8);
  }
  arenastat::reset_peaks();
  CHECK(test::find_entry("test/scope/reset", entry_kind::scope).peak_bytes == 0);
  {
    scope s{"test/scope/reset"};
    arena_resource a{"node", chunks_of(1024)};
    (void)a.allocate(10, 8);
  }
  const arenastat::entry e = test::find_entry("test/scope/reset", entry_kind::scope);
  CHECK(e.peak_bytes == 1024);
  CHECK(e.count == before + 2);
}

TEST_CASE("reset_peaks during a run: the run's peak is what it held since the reset", "[scope]") {
  arenastat::tracking_resource heap{"test/scope/reset-active-heap", "reset_tag_a"};
  arenastat::tracking_resource other{"test/scope/reset-active-other", "reset_tag_b"};
  // 1 MiB held and given back before the reset; 100 bytes after it.
  {
    scope s{"test/scope/reset-active"};
    s.set_counter("items", 7);
    void* p = heap.allocate(1 << 20, 8);
    heap.deallocate(p, 1 << 20, 8);
    arenastat::reset_peaks();
    void* q = other.allocate(100, 8);
    other.deallocate(q, 100, 8);
  }
  arenastat::entry e = test::find_entry("test/scope/reset-active", entry_kind::scope);
  CHECK(e.peak_bytes == 100);
  CHECK(e.last_peak_bytes == 100);
  CHECK(e.at_peak == std::vector<arenastat::tag_bytes>{{"reset_tag_b", 100}});
  REQUIRE(e.counters.size() == 1);
  CHECK(e.counters[0].value == 7);  // set before the reset, held at the new peak
  // 3000 bytes held across the reset, 50 more after it: 3050; a run that
  // changes nothing after the reset ends with its net bytes of then (3000).
  {
    scope s{"test/scope/reset-held"};
    void* p = heap.allocate(3000, 8);
    void* big = other.allocate(1 << 20, 8);
    other.deallocate(big, 1 << 20, 8);
    arenastat::reset_peaks();
    void* q = other.allocate(50, 8);
    other.deallocate(q, 50, 8);
    heap.deallocate(p, 3000, 8);
  }
  e = test::find_entry("test/scope/reset-held", entry_kind::scope);
  CHECK(e.peak_bytes == 3050);
  CHECK(e.at_peak == std::vector<arenastat::tag_bytes>{{"reset_tag_a", 3000}, {"reset_tag_b", 50}});
  {
    scope s{"test/scope/reset-quiet"};
    void* p = heap.allocate(3000, 8);
    void* big = heap.allocate(1 << 20, 8);
    heap.deallocate(big, 1 << 20, 8);
    arenastat::reset_peaks();  // nothing changes after it
    heap.deallocate(p, 3000, 8);  // a credit: the peak since the reset was 3000
  }
  CHECK(test::find_entry("test/scope/reset-quiet", entry_kind::scope).peak_bytes == 3000);
  {
    scope s{"test/scope/reset-end"};
    void* big = heap.allocate(1 << 20, 8);
    heap.deallocate(big, 1 << 20, 8);
    arenastat::reset_peaks();  // the scope ends with nothing charged since: 0
  }
  CHECK(test::find_entry("test/scope/reset-end", entry_kind::scope).peak_bytes == 0);
}

TEST_CASE("reset_peaks during a run: counters at the peak are their values at the reset", "[scope]") {
  arenastat::tracking_resource heap{"test/scope/reset-counters-heap"};
  // 400 bytes held across the reset and never exceeded: the run's peak is
  // the reset's moment, when c was 3 and d did not exist.
  {
    scope s{"test/scope/reset-counters"};
    void* p = heap.allocate(400, 8);
    s.set_counter("c", 3);
    arenastat::reset_peaks();
    s.set_counter("c", 5);
    s.set_counter("d", 1);
    heap.deallocate(p, 400, 8);
  }
  const arenastat::entry e = test::find_entry("test/scope/reset-counters", entry_kind::scope);
  CHECK(e.peak_bytes == 400);
  CHECK(e.counters == std::vector<arenastat::counter_value>{{"c", 3, 5, true}, {"d", 0, 1, false}});
  // The same with nothing after the counters but the end of the run.
  {
    scope s{"test/scope/reset-counters-end"};
    void* p = heap.allocate(400, 8);
    s.set_counter("c", 3);
    arenastat::reset_peaks();
    s.set_counter("c", 5);
    heap.deallocate(p, 400, 8);
  }
  CHECK(test::find_entry("test/scope/reset-counters-end", entry_kind::scope).counters ==
        std::vector<arenastat::counter_value>{{"c", 3, 5, true}});
  // Nothing held at the reset: no peak yet, as in a run that never
  // allocated, so a counter shows its last value.
  {
    scope s{"test/scope/reset-counters-none"};
    s.set_counter("c", 3);
    arenastat::reset_peaks();
    s.set_counter("c", 5);
  }
  CHECK(test::find_entry("test/scope/reset-counters-none", entry_kind::scope).counters ==
        std::vector<arenastat::counter_value>{{"c", 0, 5, false}});
}

TEST_CASE("reset_peaks during a run: the scope's own peak accessors count from the reset at once", "[scope]") {
  arenastat::tracking_resource heap{"test/scope/reset-accessors-heap", "reset_accessor_tag"};
  scope s{"test/scope/reset-accessors"};
  void* big = heap.allocate(1000, 8);
  heap.deallocate(big, 1000, 8);
  void* p = heap.allocate(400, 8);
  CHECK(s.peak_bytes() == 1000);
  CHECK(s.tag_bytes_at_peak(heap.tag()) == 1000);
  arenastat::reset_peaks();
  // No charge or credit since: the peak is the 400 bytes held at the reset.
  CHECK(s.peak_bytes() == 400);
  CHECK(s.tag_bytes_at_peak(heap.tag()) == 400);
  heap.deallocate(p, 400, 8);
  CHECK(s.peak_bytes() == 400);
  CHECK(s.tag_bytes_at_peak(heap.tag()) == 400);
  arenastat::reset_peaks();  // nothing held now
  CHECK(s.peak_bytes() == 0);
  CHECK(s.tag_bytes_at_peak(heap.tag()) == 0);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// docs/concepts.md gives the size of a scope object on its owner's stack.
static_assert(sizeof(arenastat::scope) == 1040, "update docs/concepts.md (\"A `scope` object is ... bytes\")");
#endif

TEST_CASE("a tag the scope never charged reads 0; freeing memory taken before the scope credits it", "[scope]") {
  arenastat::tracking_resource heap{"test/scope/credit-before", "scope_credit_tag"};
  void* p = heap.allocate(100, 8);  // before the scope: not charged to it
  {
    scope s{"test/scope/credit-before"};
    CHECK(s.tag_bytes(heap.tag()) == 0);
    CHECK(s.tag_bytes(arenastat::max_tags - 1) == 0);
    CHECK(s.tag_bytes_at_peak(heap.tag()) == 0);
    heap.deallocate(p, 100, 8);  // inside: credited
    CHECK(s.net_bytes() == -100);
    CHECK(s.tag_bytes(heap.tag()) == -100);
    CHECK(s.tag_bytes_at_peak(heap.tag()) == 0);
    void* q = heap.allocate(300, 8);
    CHECK(s.tag_bytes(heap.tag()) == 200);
    CHECK(s.peak_bytes() == 200);
    CHECK(s.tag_bytes_at_peak(heap.tag()) == 200);
    heap.deallocate(q, 300, 8);
  }
  const arenastat::entry e = test::find_entry("test/scope/credit-before", entry_kind::scope);
  CHECK(e.peak_bytes == 200);
  REQUIRE(e.at_peak.size() == 1);
  CHECK(e.at_peak[0].bytes == 200);
}

TEST_CASE("a scope name longer than the inline buffer is kept whole", "[scope]") {
  const std::string name = "test/scope/long/" + std::string(300, 'x');
  std::uint64_t before = 0;
  for (const arenastat::entry& e : arenastat::snapshot())
    if (e.name == name && e.kind == entry_kind::scope) before = e.count;
  for (int i = 0; i < 2; ++i) {
    scope s{name};
    CHECK(s.name() == name);
    s.set_counter("c", i);
  }
  const std::string edge(63, 'y');  // the longest inline name
  { scope s{edge}; CHECK(s.name() == edge); }
  CHECK(test::find_entry(name, entry_kind::scope).count == before + 2);
  CHECK(test::find_entry(edge, entry_kind::scope).count >= 1);
}

TEST_CASE("a name folded again after its record was replaced by a larger breakdown is counted once per run", "[scope]") {
  // The thread's fold memo points at the record it folded last; a record
  // replaced (a new largest run with another shape) must not be written through it.
  std::uint64_t before = 0;
  for (const arenastat::entry& e : arenastat::snapshot())
    if (e.name == "test/scope/memo" && e.kind == entry_kind::scope) before = e.count;
  for (std::size_t size : {0, 1024, 0, 4096, 2048}) {
    scope s{"test/scope/memo"};
    if (size != 0) {
      arena_resource a{"node", chunks_of(size)};
      s.set_counter("size", static_cast<std::int64_t>(size));
      (void)a.allocate(8, 8);
    }
    { scope inner{"test/scope/memo/inner"}; }  // another name folded between
  }
  const arenastat::entry e = test::find_entry("test/scope/memo", entry_kind::scope);
  CHECK(e.count == before + 5);
  CHECK(e.peak_bytes == 4096);
  CHECK(e.last_peak_bytes == 2048);
  REQUIRE(e.counters.size() == 1);
  CHECK(e.counters[0].value == 4096);
}

TEST_CASE("scope durations from the calibrated time-stamp counter agree with steady_clock", "[scope]") {
  using namespace std::chrono_literals;
  { scope s{"test/scope/clock-warmup"}; }  // starts the calibration if nothing did before
  std::this_thread::sleep_for(60ms);
  { scope s{"test/scope/clock-warmup"}; }  // past the 50 ms window: the first rate
  // An invariant TSC (Linux: constant_tsc and nonstop_tsc) must be in use by now.
  bool invariant = false;
  {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line))
      if (line.rfind("flags", 0) == 0) {
        invariant = line.find(" constant_tsc") != std::string::npos && line.find(" nonstop_tsc") != std::string::npos;
        break;
      }
  }
  const std::string clock = arenastat::scope_clock_name();
  INFO("scope clock: " << clock);
#if defined(__x86_64__)
  if (invariant) CHECK(clock == "tsc");
#endif
  CHECK((clock == "tsc" || clock == "steady_clock"));
  for (auto sleep : {20ms, 1ms}) {
    const auto t0 = std::chrono::steady_clock::now();
    {
      scope s{"test/scope/clock"};
      std::this_thread::sleep_for(sleep);
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double asked = std::chrono::duration<double>(sleep).count();
    const arenastat::entry e = test::find_entry("test/scope/clock", entry_kind::scope);
    // The rate's error is about 1e-6 after a 50 ms window; 1e-5 leaves room.
    CHECK(e.last_time_s >= asked * (1 - 1e-5));
    CHECK(e.last_time_s <= elapsed * (1 + 1e-5));
  }
}

TEST_CASE("a limit above INT64_MAX limits nothing it cannot reach, and refuses nothing", "[scope][limit]") {
  // UINT64_MAX, a natural way to write "no limit", was read as -1: every
  // allocation was refused.
  scope s{"test/scope/limit-max", {.limit_bytes = UINT64_MAX}};
  arena_resource a{"node", chunks_of(4096)};
  CHECK_NOTHROW(a.allocate(4000, 8));
  CHECK(s.net_bytes() == 4096);
  CHECK_FALSE(s.limit_hit());
}

TEST_CASE("a request near PTRDIFF_MAX is refused by the scope's limit, not passed upstream", "[scope][limit]") {
  // net + request overflowed int64 and wrapped below the limit: the request
  // went to upstream (bad_alloc there, the run recorded err, not oom).
  scope s{"test/scope/limit-huge", {.limit_bytes = 1 << 20}};
  arena_resource a{"node", chunks_of(4096)};
  (void)a.allocate(10, 8);
  // The chunk: 64 bytes of header + PTRDIFF_MAX - 100 = PTRDIFF_MAX - 36, and 4096 + that > INT64_MAX.
  CHECK_THROWS_AS(a.allocate(static_cast<std::size_t>(PTRDIFF_MAX) - 100, 8), arenastat::limit_exceeded);
  CHECK(s.limit_hit());
  CHECK(s.net_bytes() == 4096);
}

TEST_CASE("a request larger than any object is refused by the scope's limit when there is one (oom, not err)",
          "[scope][limit]") {
  arenastat::tracking_resource tr{"test/scope/limit-impossible", std::pmr::new_delete_resource()};
  {
    scope s{"test/scope/limit-impossible", {.limit_bytes = 1 << 20}};
    arena_resource a{"node", chunks_of(4096)};
    CHECK_THROWS_AS(a.allocate(static_cast<std::size_t>(PTRDIFF_MAX) - 40, 8), arenastat::limit_exceeded);
    CHECK_THROWS_AS(a.allocate(SIZE_MAX, 8), arenastat::limit_exceeded);
    CHECK_THROWS_AS(tr.allocate(static_cast<std::size_t>(PTRDIFF_MAX) + 1, 8), arenastat::limit_exceeded);
    CHECK(s.limit_hit());
    CHECK(s.net_bytes() == 0);
  }
  CHECK(test::find_entry("test/scope/limit-impossible", entry_kind::scope).result == "oom");
  // With no limit to pass, such a request is still std::bad_alloc.
  scope unlimited{"test/scope/limit-impossible-none"};
  CHECK_THROWS_AS(tr.allocate(static_cast<std::size_t>(PTRDIFF_MAX) + 1, 8), std::bad_alloc);
  CHECK_FALSE(unlimited.limit_hit());
}

TEST_CASE("a scope whose net is negative may take its limit plus what it freed", "[scope][limit]") {
  // Bytes taken before the scope and freed inside it make its net negative
  // (counting rule: net since entry); the limit applies to net + request.
  arenastat::tracking_resource tr{"test/scope/limit-negative", std::pmr::new_delete_resource()};
  void* before = tr.allocate(5000, 8);
  scope s{"test/scope/limit-negative", {.limit_bytes = 10000}};
  tr.deallocate(before, 5000, 8);
  CHECK(s.net_bytes() == -5000);
  void* p = tr.allocate(15000, 8);  // -5000 + 15000 = 10000: at the limit, allowed
  CHECK(s.net_bytes() == 10000);
  CHECK_THROWS_AS(tr.allocate(1, 8), arenastat::limit_exceeded);  // 10001 > 10000
  tr.deallocate(p, 15000, 8);
}

TEST_CASE("a scope destroyed on another thread aborts with a message naming it", "[scope]") {
  // Not [threads]: the TSan step runs those in one process, and forking there
  // is not supported once threads have run (TSan's die_after_fork).
  // The thread that began it would keep a pointer to it on its stack of
  // scopes, and its next charge would write freed memory. In a child: it aborts.
  int err[2];
  REQUIRE(::pipe(err) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(err[1], 2);
    auto s = std::make_unique<scope>("test/scope/foreign\x1b[2J");
    std::thread([&s] { s.reset(); }).join();
    ::_exit(0);  // not reached
  }
  ::close(err[1]);
  std::string said;
  char buf[512];
  for (ssize_t n; (n = ::read(err[0], buf, sizeof buf)) > 0;) said.append(buf, static_cast<std::size_t>(n));
  ::close(err[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
  CHECK(said == "arenastat: scope 'test/scope/foreign\\x1b[2J' ended on a thread other than the one that began it "
                "(a scope belongs to its thread); aborting\n");
}
