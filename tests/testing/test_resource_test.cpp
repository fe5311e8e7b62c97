// arenastat::test_resource, exception_test, default_resource_guard and the
// Catch2 helpers: every misuse with its exact message.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arenastat/test_resource.hpp>
#include <arenastat/testing/catch2.hpp>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <memory_resource>
#include <string>
#include <vector>

#include "arenastat/arena_resource.hpp"
#include "arenastat/scope.hpp"
#include "arenastat/table.hpp"
#include "arenastat/tracking_resource.hpp"

// Requests larger than any object and a write past a block's end are what
// these tests are about: GCC sees them and warns.
#pragma GCC diagnostic ignored "-Walloc-size-larger-than="
#pragma GCC diagnostic ignored "-Wstringop-overflow"

namespace {

std::string ptr(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

// Runs `f` with stderr sent to a file; returns what it wrote.
template <class F>
std::string stderr_of(F&& f) {
  char path[] = "/tmp/arenastat-testing-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  const int saved = ::dup(2);
  ::dup2(fd, 2);
  f();
  ::dup2(saved, 2);
  ::close(saved);
  std::string out;
  ::lseek(fd, 0, SEEK_SET);
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  ::unlink(path);
  return out;
}

// Runs `f` in a fork()ed child with stderr captured; returns (exit code or
// 128 + signal, stderr).
template <class F>
std::pair<int, std::string> in_child(F&& f) {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(pipe_fds[1], 2);
    ::close(pipe_fds[0]);
    f();
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string err;
  char buf[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<std::size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), err};
}

// A deliberately unsafe container: push_back grows by allocating the new
// buffer, then a bookkeeping node; if the node's allocation throws, the new
// buffer leaks. The safe variant frees it.
template <bool Safe>
class growing_vector {
 public:
  explicit growing_vector(std::pmr::memory_resource* r) : r_(r) {}
  ~growing_vector() {
    if (data_) r_->deallocate(data_, capacity_ * sizeof(int), alignof(int));
    for (void* n : nodes_) r_->deallocate(n, 32, 8);
  }
  void push_back(int v) {
    if (size_ == capacity_) {
      const std::size_t cap = capacity_ ? capacity_ * 2 : 2;
      auto* fresh = static_cast<int*>(r_->allocate(cap * sizeof(int), alignof(int)));
      void* node = nullptr;
      if constexpr (Safe) {
        try {
          node = r_->allocate(32, 8);
        } catch (...) {
          r_->deallocate(fresh, cap * sizeof(int), alignof(int));
          throw;
        }
      } else {
        node = r_->allocate(32, 8);  // throws: `fresh` leaks
      }
      nodes_.push_back(node);
      std::copy(data_, data_ + size_, fresh);
      if (data_) r_->deallocate(data_, capacity_ * sizeof(int), alignof(int));
      data_ = fresh;
      capacity_ = cap;
    }
    data_[size_++] = v;
  }
  std::size_t size() const { return size_; }

 private:
  std::pmr::memory_resource* r_;
  int* data_ = nullptr;
  std::size_t size_ = 0, capacity_ = 0;
  std::vector<void*> nodes_;  // std::allocator: not the resource's
};

}  // namespace

TEST_CASE("test_resource: counts blocks and bytes in use, max and total, like BDE's", "[test_resource]") {
  arenastat::test_resource r{"testing/counts"};
  void* a = r.allocate(100, 8);
  void* b = r.allocate(50, 16);
  CHECK(r.blocks_in_use() == 2);
  CHECK(r.bytes_in_use() == 150);
  r.deallocate(a, 100, 8);
  void* c = r.allocate(10, 1);
  CHECK(r.blocks_in_use() == 2);
  CHECK(r.bytes_in_use() == 60);
  CHECK(r.max_blocks() == 2);
  CHECK(r.max_bytes() == 150);
  CHECK(r.total_blocks() == 3);
  CHECK(r.total_bytes() == 160);
  CHECK(r.deallocations() == 1);
  CHECK(r.leak_report() == "arenastat::test_resource 'testing/counts' has 2 blocks (60 bytes) in use: #2 (50 bytes), #3 (10 bytes)");
  CHECK(reinterpret_cast<std::uintptr_t>(b) % 16 == 0);
  r.deallocate(b, 50, 16);
  r.deallocate(c, 10, 1);
  CHECK(r.leak_report().empty());
  CHECK(r.misuses() == 0);
}

TEST_CASE("test_resource: tracked under its name like any account, and charged to scopes", "[test_resource]") {
  arenastat::test_resource r{"testing/account"};
  {
    arenastat::scope s{"testing/account-scope"};
    void* p = r.allocate(300);
    CHECK(r.tracked_account().live_bytes() == 300);
    CHECK(s.net_bytes() == 300);
    r.deallocate(p, 300);
  }
  const arenastat::account_totals t = r.tracked_account().totals();
  CHECK(t.live_bytes == 0);
  CHECK(t.peak_bytes == 300);
  CHECK(t.allocations == 1);
  CHECK(t.frees == 1);
  CHECK(r.tracked_account().resource_count() == 1);
}

TEST_CASE("test_resource: a pointer it did not allocate", "[test_resource][misuse]") {
  arenastat::test_resource r{"testing/unknown"};
  int x = 0;
  CHECK_THROWS_WITH(r.deallocate(&x, 4, 4), "arenastat::test_resource 'testing/unknown': deallocate(" + ptr(&x) +
                                                ", 4, 4) of a pointer it did not allocate");
  CHECK(r.misuses() == 1);
}

TEST_CASE("test_resource: a double free", "[test_resource][misuse]") {
  arenastat::test_resource r{"testing/double"};
  void* p = r.allocate(24, 8);
  r.deallocate(p, 24, 8);
  CHECK_THROWS_AS(r.deallocate(p, 24, 8), arenastat::test_resource_error);
  CHECK_THROWS_WITH(r.deallocate(p, 24, 8), "arenastat::test_resource 'testing/double': deallocate(" + ptr(p) +
                                                ", 24, 8) of block #1 (24 bytes), already deallocated (double free)");
  CHECK(r.blocks_in_use() == 0);
}

TEST_CASE("test_resource: damage_report names at most 10 damaged blocks, then how many more", "[test_resource]") {
  arenastat::test_resource r{"testing/damage-many", {.quiet = true}};
  std::vector<unsigned char*> blocks;
  for (int i = 0; i < 12; ++i) {
    blocks.push_back(static_cast<unsigned char*>(r.allocate(8, 8)));
    blocks.back()[8] = 0;  // the first byte of the back guard
  }
  std::string expected;
  for (int i = 1; i <= 10; ++i)
    expected += "  block #" + std::to_string(i) + " (8 bytes): written past the end: guard bytes at offset 8 changed\n";
  expected += "  ... and 2 more blocks whose guard bytes changed";
  CHECK(r.damage_report() == expected);
}

TEST_CASE("test_resource: a block larger than the quarantine's bytes goes back alone, older ones stay",
          "[test_resource][misuse]") {
  arenastat::test_resource r{"testing/quarantine-large", {.quiet = true}};
  void* small = r.allocate(24, 8);
  constexpr std::size_t large = arenastat::test_resource::quarantine_max_bytes + 1;  // over the bound by itself
  void* big = r.allocate(large, 8);
  r.deallocate(small, 24, 8);
  r.deallocate(big, large, 8);  // given back at once, not past the small one
  CHECK_THROWS_WITH(r.deallocate(small, 24, 8), "arenastat::test_resource 'testing/quarantine-large': deallocate(" +
                                                    ptr(small) +
                                                    ", 24, 8) of block #1 (24 bytes), already deallocated (double free)");
}

TEST_CASE("test_resource: a double free is named after its address was asked for again", "[test_resource][misuse]") {
  // The freed block is held in the quarantine, so the next request of the
  // same size cannot get its address and the second free still names #1.
  arenastat::test_resource r{"testing/double-reuse"};
  void* a = r.allocate(24, 8);
  r.deallocate(a, 24, 8);
  void* b = r.allocate(24, 8);
  CHECK(b != a);
  CHECK_THROWS_WITH(r.deallocate(a, 24, 8), "arenastat::test_resource 'testing/double-reuse': deallocate(" + ptr(a) +
                                                ", 24, 8) of block #1 (24 bytes), already deallocated (double free)");
  CHECK(r.blocks_in_use() == 1);  // #2 is untouched
  r.deallocate(b, 24, 8);
  CHECK(r.blocks_in_use() == 0);
  CHECK(r.misuses() == 1);
}

namespace {
// Counts what reaches it, to see when the quarantine gives blocks back.
struct counting_upstream final : std::pmr::memory_resource {
  std::int64_t blocks = 0, bytes = 0;
  void* do_allocate(std::size_t n, std::size_t a) override {
    ++blocks;
    bytes += static_cast<std::int64_t>(n);
    return std::pmr::new_delete_resource()->allocate(n, a);
  }
  void do_deallocate(void* p, std::size_t n, std::size_t a) override {
    --blocks;
    bytes -= static_cast<std::int64_t>(n);
    std::pmr::new_delete_resource()->deallocate(p, n, a);
  }
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }
};
}  // namespace

TEST_CASE("test_resource: the quarantine holds the last quarantine_blocks freed blocks, then gives the oldest back",
          "[test_resource]") {
  counting_upstream up;
  {
    arenastat::test_resource r{"testing/quarantine", {.guard_bytes = 8, .quarantine_blocks = 3}, &up};
    std::vector<void*> p;
    for (int i = 0; i < 5; ++i) p.push_back(r.allocate(16, 8));
    CHECK(up.blocks == 5);
    CHECK(up.bytes == 5 * (8 + 16 + 8));
    for (void* q : p) r.deallocate(q, 16, 8);
    CHECK(r.blocks_in_use() == 0);
    CHECK(r.bytes_in_use() == 0);
    CHECK(up.blocks == 3);  // #3, #4, #5 held
    // #1 left the quarantine: its second free is no longer known as a double free.
    CHECK_THROWS_WITH(r.deallocate(p[0], 16, 8), "arenastat::test_resource 'testing/quarantine': deallocate(" +
                                                     ptr(p[0]) + ", 16, 8) of a pointer it did not allocate");
    CHECK_THROWS_WITH(r.deallocate(p[4], 16, 8), "arenastat::test_resource 'testing/quarantine': deallocate(" +
                                                     ptr(p[4]) + ", 16, 8) of block #5 (16 bytes), already deallocated (double free)");
  }
  CHECK(up.blocks == 0);  // the destructor gave the held blocks back
  CHECK(up.bytes == 0);
  arenastat::test_resource none{"testing/quarantine-off", {.quarantine_blocks = 0}, &up};
  none.deallocate(none.allocate(16, 8), 16, 8);
  CHECK(up.blocks == 0);
}

TEST_CASE("test_resource: the quarantine gives blocks back beyond quarantine_max_bytes", "[test_resource]") {
  counting_upstream up;
  const std::size_t big = arenastat::test_resource::quarantine_max_bytes / 2;  // one fits with its guards, two do not
  arenastat::test_resource r{"testing/quarantine-bytes", &up};
  void* a = r.allocate(big, 8);
  void* b = r.allocate(big, 8);
  r.deallocate(a, big, 8);
  CHECK(up.blocks == 2);  // a held: big + 32 <= max
  r.deallocate(b, big, 8);
  CHECK(up.blocks == 1);  // 2 x (big + 32) > max: a, the oldest, went back
  CHECK(up.bytes == static_cast<std::int64_t>(16 + big + 16));
}

TEST_CASE("test_resource: a request whose size with its guards exceeds PTRDIFF_MAX throws bad_alloc, counting nothing",
          "[test_resource]") {
  counting_upstream up;
  arenastat::test_resource r{"testing/huge", &up};
  CHECK_THROWS_AS(r.allocate(SIZE_MAX - 32, 8), std::bad_alloc);
  CHECK_THROWS_AS(r.allocate(SIZE_MAX, 1), std::bad_alloc);
  CHECK_THROWS_AS(r.allocate(std::size_t{PTRDIFF_MAX} - 31, 8), std::bad_alloc);  // 16 + n + 16 > PTRDIFF_MAX
  arenastat::test_resource g{"testing/huge-guard", {.guard_bytes = std::size_t{1} << 63}, &up};
  CHECK_THROWS_AS(g.allocate(8, 8), std::bad_alloc);
  CHECK(up.blocks == 0);
  CHECK(r.total_blocks() == 0);
  CHECK(r.bytes_in_use() == 0);
  CHECK(r.max_bytes() == 0);
  CHECK(r.next_serial() == 1);
}

TEST_CASE("test_resource: an alignment that is not a power of two is a misuse", "[test_resource][misuse]") {
  arenastat::test_resource r{"testing/align0"};
  CHECK_THROWS_WITH(r.allocate(8, 0), "arenastat::test_resource 'testing/align0': allocate(8, 0): alignment 0 is not a power of two");
  CHECK_THROWS_WITH(r.allocate(8, 24), "arenastat::test_resource 'testing/align0': allocate(8, 24): alignment 24 is not a power of two");
  CHECK(r.misuses() == 2);
  CHECK(r.total_blocks() == 0);
}

TEST_CASE("test_resource: destroyed with blocks in use, it credits the active scopes as deallocate would",
          "[test_resource]") {
  // Over a tracking_resource, the upstream's own charge is hidden both ways
  // (the scope sees only the test_resource's 100 bytes, then nothing).
  arenastat::tracking_resource tracked{"testing/leak-scope-upstream"};
  arenastat::scope s{"testing/leak-scope"};
  {
    arenastat::test_resource r{"testing/leak-scope-r", {.quiet = true}, &tracked};
    (void)r.allocate(100);
    CHECK(s.net_bytes() == 100);
  }
  CHECK(s.net_bytes() == 0);
  CHECK(tracked.tracked_account().live_bytes() == 0);
  {
    arenastat::test_resource r{"testing/leak-scope-r2", {.quiet = true}};
    (void)r.allocate(100);
  }
  CHECK(s.net_bytes() == 0);
  CHECK(s.peak_bytes() == 100);
}

TEST_CASE("test_resource: a size differing from the allocation's", "[test_resource][misuse]") {
  arenastat::test_resource r{"testing/size"};
  void* p = r.allocate(24, 8);
  CHECK_THROWS_WITH(r.deallocate(p, 32, 8), "arenastat::test_resource 'testing/size': deallocate(" + ptr(p) +
                                                ", 32, 8) of block #1: size 32 differs from the allocation's 24");
  CHECK(r.blocks_in_use() == 1);  // still in use: given back right, it goes
  r.deallocate(p, 24, 8);
  CHECK(r.blocks_in_use() == 0);
}

TEST_CASE("test_resource: an alignment differing from the allocation's (and both)", "[test_resource][misuse]") {
  arenastat::test_resource r{"testing/align"};
  void* p = r.allocate(24, 8);
  CHECK_THROWS_WITH(r.deallocate(p, 24, 16), "arenastat::test_resource 'testing/align': deallocate(" + ptr(p) +
                                                 ", 24, 16) of block #1: alignment 16 differs from the allocation's 8");
  CHECK_THROWS_WITH(r.deallocate(p, 8, 4), "arenastat::test_resource 'testing/align': deallocate(" + ptr(p) +
                                               ", 8, 4) of block #1: size 8 differs from the allocation's 24; "
                                               "alignment 4 differs from the allocation's 8");
  r.deallocate(p, 24, 8);
}

TEST_CASE("test_resource: guard bytes find a write past the end", "[test_resource][misuse]") {
  arenastat::test_resource r{"testing/overrun"};
  auto* p = static_cast<char*>(r.allocate(10, 2));
  std::memset(p, 'x', 13);  // 3 bytes too many
  CHECK_THROWS_WITH(r.deallocate(p, 10, 2),
                    "arenastat::test_resource 'testing/overrun': deallocate(" + ptr(p) +
                        ", 10, 2) of block #1 (10 bytes): written past the end: guard bytes at offsets 10..12 changed");
  CHECK(r.blocks_in_use() == 0);  // given back all the same
}

TEST_CASE("test_resource: guard bytes find a write before the start", "[test_resource][misuse]") {
  arenastat::test_resource r{"testing/underrun"};
  auto* p = static_cast<char*>(r.allocate(8, 8));
  p[-1] = 0;
  CHECK_THROWS_WITH(r.deallocate(p, 8, 8),
                    "arenastat::test_resource 'testing/underrun': deallocate(" + ptr(p) +
                        ", 8, 8) of block #1 (8 bytes): written before the start: guard bytes at offset -1 changed");
}

TEST_CASE("test_resource: misuse_action::abort writes the message and aborts", "[test_resource][misuse]") {
  const auto [code, err] = in_child([] {
    arenastat::test_resource r{"testing/abort", {.on_misuse = arenastat::misuse_action::abort}};
    int x = 0;
    std::fprintf(stderr, "%s\n", ptr(&x).c_str());
    std::fflush(stderr);
    r.deallocate(&x, 4, 4);
  });
  CHECK(code == 128 + SIGABRT);
  const std::string p = err.substr(0, err.find('\n'));
  CHECK(err == p + "\narenastat::test_resource 'testing/abort': deallocate(" + p +
                   ", 4, 4) of a pointer it did not allocate\n");
}

TEST_CASE("test_resource: a misuse thrown from a destructor terminates, naming the error and its message",
          "[test_resource][misuse]") {
  struct wrong_size_holder {
    std::pmr::memory_resource* r;
    void* p;
    ~wrong_size_holder() { r->deallocate(p, 16, 8); }  // allocated with 8: implicitly noexcept
  };
  const auto [code, err] = in_child([] {
    arenastat::test_resource r{"testing/terminate", {.quiet = true}};
    void* p = r.allocate(8, 8);
    std::fprintf(stderr, "%s\n", ptr(p).c_str());
    std::fflush(stderr);
    { wrong_size_holder h{&r, p}; }
  });
  CHECK(code == 128 + SIGABRT);
  const std::string p = err.substr(0, err.find('\n'));
  CHECK(err.find("'arenastat::test_resource_error'") != std::string::npos);
  CHECK(err.find("arenastat::test_resource 'testing/terminate': deallocate(" + p +
                 ", 16, 8) of block #1: size 16 differs from the allocation's 8") != std::string::npos);
}

TEST_CASE("test_resource: destroyed with blocks in use, it says which (and aborts in abort mode)", "[test_resource]") {
  const std::string err = stderr_of([] {
    arenastat::test_resource r{"testing/leaky"};
    (void)r.allocate(40);
    void* p = r.allocate(8);
    (void)r.allocate(16);
    r.deallocate(p, 8);
  });
  CHECK(err == "arenastat::test_resource 'testing/leaky' destroyed with 2 blocks (56 bytes) in use: #1 (40 bytes), #3 (16 bytes)\n");
  CHECK(arenastat::account::get("testing/leaky").live_bytes() == 0);  // given back at destruction
  CHECK(stderr_of([] {
          arenastat::test_resource r{"testing/leaky-quiet", {.quiet = true}};
          (void)r.allocate(40);
        }).empty());
  const auto [code, abort_err] = in_child([] {
    arenastat::test_resource r{"testing/leaky-abort", {.on_misuse = arenastat::misuse_action::abort}};
    (void)r.allocate(40);
  });
  CHECK(code == 128 + SIGABRT);
  CHECK(abort_err == "arenastat::test_resource 'testing/leaky-abort' destroyed with 1 block (40 bytes) in use: #1 (40 bytes)\n");
}

TEST_CASE("test_resource: destroyed with blocks in use, it names the guard bytes written over", "[test_resource][misuse]") {
  const std::string err = stderr_of([] {
    arenastat::test_resource r{"testing/leaky-damaged"};
    (void)r.allocate(16);
    auto* p = static_cast<unsigned char*>(r.allocate(8));
    p[-1] = 0;  // one byte before the block, two past its end
    p[8] = 0;
    p[9] = 0;
  });
  CHECK(err ==
        "arenastat::test_resource 'testing/leaky-damaged' destroyed with 2 blocks (24 bytes) in use: #1 (16 bytes), "
        "#2 (8 bytes)\n"
        "  block #2 (8 bytes): written before the start: guard bytes at offset -1 changed; written past the end: "
        "guard bytes at offsets 8..9 changed\n");
}

TEST_CASE("test_resource: the allocation limit refuses the allocation after N with std::bad_alloc", "[test_resource]") {
  arenastat::test_resource r{"testing/limit"};
  r.set_allocation_limit(2);
  void* a = r.allocate(8);
  void* b = r.allocate(8);
  CHECK_THROWS_AS(r.allocate(8), std::bad_alloc);
  CHECK(r.allocation_limit() == -1);  // one refusal, then off
  void* c = r.allocate(8);
  r.set_allocation_limit(0);
  CHECK_THROWS_WITH(r.allocate(5), "arenastat::test_resource 'testing/limit': allocation limit reached (allocation #4 of 5 bytes refused)");
  CHECK(r.total_blocks() == 3);
  for (void* p : {a, b, c}) r.deallocate(p, 8);
}

TEST_CASE("exception_test: a safe container passes every limit", "[exception_test]") {
  arenastat::test_resource r{"testing/safe"};
  const std::int64_t runs = arenastat::exception_test(r, [&] {
    growing_vector<true> v{&r};
    for (int i = 0; i < 5; ++i) v.push_back(i);  // grows at 0, 2, 4: 6 allocations
  });
  CHECK(runs == 6);
  CHECK(r.blocks_in_use() == 0);
}

TEST_CASE("exception_test: finds the deliberately unsafe container", "[exception_test]") {
  arenastat::test_resource r{"testing/unsafe", {.quiet = true}};
  CHECK_THROWS_WITH(arenastat::exception_test(r,
                                              [&] {
                                                growing_vector<false> v{&r};
                                                for (int i = 0; i < 5; ++i) v.push_back(i);
                                              }),
                    "arenastat::exception_test: test_resource 'testing/unsafe': after the exception at allocation 2 "
                    "of the run (limit 1), 1 block (8 bytes) in use, 0 blocks (0 bytes) before the run; left by the "
                    "run: #1 (8 bytes)");
}

TEST_CASE("exception_test: blocks held before the run are not leaks; other exceptions propagate", "[exception_test]") {
  arenastat::test_resource r{"testing/held"};
  void* held = r.allocate(64);
  CHECK(arenastat::exception_test(r, [&] { r.deallocate(r.allocate(8), 8); }) == 1);
  CHECK_THROWS_WITH(arenastat::exception_test(r, [] { throw std::runtime_error("boom"); }), "boom");
  r.deallocate(held, 64);
}

TEST_CASE("exception_test: a run that freed an older block hides no leak behind equal totals", "[exception_test]") {
  arenastat::test_resource r{"testing/masked", {.quiet = true}};
  void* old_entry = r.allocate(24);  // #1, held before the test
  // Each run makes a fresh entry (24 bytes) in place of the old one, then
  // needs 8 bytes more; when those are refused, the fresh entry leaks.
  CHECK_THROWS_WITH(arenastat::exception_test(r,
                                              [&] {
                                                void* fresh = r.allocate(24);
                                                if (old_entry) r.deallocate(std::exchange(old_entry, nullptr), 24);
                                                r.deallocate(r.allocate(8), 8);
                                                r.deallocate(fresh, 24);
                                              }),
                    "arenastat::exception_test: test_resource 'testing/masked': after the exception at allocation 2 "
                    "of the run (limit 1), 1 block (24 bytes) in use, 1 block (24 bytes) before the run; left by the "
                    "run: #2 (24 bytes) (the run also freed blocks allocated before it, so the totals alone match)");
}

TEST_CASE("exception_test: a refusal caught inside f is followed by the next limit", "[exception_test]") {
  arenastat::test_resource r{"testing/caught"};
  int second_refused = 0;
  // f falls back when its first allocation is refused, then allocates again:
  // run 0 refuses the first (caught), run 1 the second, run 2 refuses none.
  const std::int64_t runs = arenastat::exception_test(r, [&] {
    void* a = nullptr;
    try {
      a = r.allocate(8);
    } catch (const arenastat::allocation_limit_reached&) {
    }
    void* b = nullptr;
    try {
      b = r.allocate(16);
    } catch (const arenastat::allocation_limit_reached&) {
      ++second_refused;
      if (a) r.deallocate(a, 8);
      throw;
    }
    r.deallocate(b, 16);
    if (a) r.deallocate(a, 8);
  });
  CHECK(runs == 2);
  CHECK(second_refused == 1);
  CHECK(r.allocation_limit() == -1);
  CHECK(r.blocks_in_use() == 0);
}

TEST_CASE("exception_test: a refusal the code under test handles, leaking, fails the test", "[exception_test]") {
  arenastat::test_resource r{"testing/handled-leak", {.quiet = true}};
  // add() takes a 32-byte node, then a 64-byte payload; when the payload is
  // refused it returns false and loses the node. Run 0 refuses the node
  // (thrown, nothing held: clean); run 1 refuses the payload, caught inside:
  // the node, block #1 (run 0 made no block), is left.
  const auto add = [&] {
    void* node = r.allocate(32);
    void* payload = nullptr;
    try {
      payload = r.allocate(64);
    } catch (const std::bad_alloc&) {
      return false;
    }
    r.deallocate(payload, 64);
    r.deallocate(node, 32);
    return true;
  };
  CHECK_THROWS_WITH(arenastat::exception_test(r, [&] { (void)add(); }),
                    "arenastat::exception_test: test_resource 'testing/handled-leak': after the refusal of allocation 2 "
                    "of the run (limit 1), which the run caught, 1 block (32 bytes) in use, 0 blocks (0 bytes) before "
                    "the run; left by the run: #1 (32 bytes)");
}

TEST_CASE("exception_test: f may turn the limit off; a run with nothing refused ends the test", "[exception_test]") {
  arenastat::test_resource r{"testing/limit-off"};
  std::vector<std::int64_t> seen;
  // f makes the allocation under test, then turns the limit off (as a BDE
  // test does for its checks) and allocates again. Run 0 refuses the first;
  // run 1 makes both: the test ends after 1 refused run.
  const std::int64_t runs = arenastat::exception_test(r, [&] {
    seen.push_back(r.allocation_limit());
    r.deallocate(r.allocate(8), 8);
    r.set_allocation_limit(-1);
    r.deallocate(r.allocate(8), 8);
  });
  CHECK(runs == 1);
  CHECK(seen == std::vector<std::int64_t>{0, 1});
  CHECK(r.limit_refusals() == 1);
  CHECK(r.allocation_limit() == -1);
}

TEST_CASE("test_resource: limit_refusals counts the allocations the limit refused", "[test_resource]") {
  arenastat::test_resource r{"testing/refusals"};
  CHECK(r.limit_refusals() == 0);
  r.set_allocation_limit(0);
  CHECK_THROWS_AS(r.allocate(8), arenastat::allocation_limit_reached);
  r.set_allocation_limit(1);
  void* p = r.allocate(8);
  CHECK_THROWS_AS(r.allocate(8), arenastat::allocation_limit_reached);
  CHECK_THROWS_AS(r.allocate(8, 3), arenastat::test_resource_error);  // a bad alignment is not the limit's
  r.deallocate(p, 8);
  CHECK(r.limit_refusals() == 2);
}

TEST_CASE("exception_test: nested on one resource, or over a limit already set, is refused", "[exception_test]") {
  arenastat::test_resource r{"testing/nested"};
  const std::string nested =
      "arenastat::exception_test: test_resource 'testing/nested' is already under an exception_test: it does not "
      "nest on one resource";
  CHECK_THROWS_WITH(arenastat::exception_test(r, [&] { arenastat::exception_test(r, [] {}); }), nested);
  CHECK(r.allocation_limit() == -1);
  // Also after f caught a refusal, when the limit is off for the rest of the run.
  int inner_runs = 0;
  CHECK_THROWS_WITH(arenastat::exception_test(r,
                                              [&] {
                                                try {
                                                  r.deallocate(r.allocate(8), 8);
                                                } catch (const arenastat::allocation_limit_reached&) {
                                                }
                                                arenastat::exception_test(r, [&] { ++inner_runs; });
                                              }),
                    nested);
  CHECK(inner_runs == 0);
  // Once the outer test has ended, the resource takes a new one.
  CHECK(arenastat::exception_test(r, [&] { r.deallocate(r.allocate(8), 8); }) == 1);
  r.set_allocation_limit(3);
  CHECK_THROWS_WITH(arenastat::exception_test(r, [] {}),
                    "arenastat::exception_test: test_resource 'testing/nested' already has an allocation limit (3 "
                    "more allocations): exception_test sets the limit itself; a limit set before it would be lost");
  CHECK(r.allocation_limit() == 3);  // the caller's, left as it was
}

TEST_CASE("exception_test: nested on two resources fails each allocation of both", "[exception_test]") {
  arenastat::test_resource outer{"testing/nested-outer"}, inner{"testing/nested-inner"};
  std::vector<std::int64_t> inner_runs;
  // The outer f allocates on `outer` around an inner test of two allocations on `inner`.
  const std::int64_t runs = arenastat::exception_test(outer, [&] {
    void* a = outer.allocate(8);
    inner_runs.push_back(arenastat::exception_test(inner, [&] {
      inner.deallocate(inner.allocate(4), 4);
      inner.deallocate(inner.allocate(4), 4);
    }));
    try {
      outer.deallocate(outer.allocate(8), 8);
    } catch (...) {
      outer.deallocate(a, 8);
      throw;
    }
    outer.deallocate(a, 8);
  });
  CHECK(runs == 2);
  CHECK(inner_runs == std::vector<std::int64_t>{2, 2});  // runs 1 and 2 of the outer test reach the inner one
}

// Takes a block of `leaked_on` and then a second one; when the second is
// refused the first is left behind. One allocation of `other` first.
static void leaks_on_its_second_refusal(arenastat::test_resource& leaked_on, arenastat::test_resource& other) {
  other.deallocate(other.allocate(8), 8);
  void* x = leaked_on.allocate(8);
  void* y = leaked_on.allocate(8);  // refused: x is lost
  leaked_on.deallocate(y, 8);
  leaked_on.deallocate(x, 8);
}

// The failure exception_test reports for leaks_on_its_second_refusal on the
// resource `name`: at its limit 1 the run's second allocation throws, and its
// first block (#1, 8 bytes: no earlier run made one) is left.
static std::string second_refusal_leak(const std::string& name) {
  return "arenastat::exception_test: test_resource '" + name + "': after the exception at allocation 2 of the run "
         "(limit 1), 1 block (8 bytes) in use, 0 blocks (0 bytes) before the run; left by the run: #1 (8 bytes)";
}

TEST_CASE("exception_test: a refusal by the outer resource's limit reaches the outer test through an inner one",
          "[exception_test]") {
  arenastat::test_resource r1{"testing/nested-leak-1", {.quiet = true}}, r2{"testing/nested-leak-2", {.quiet = true}};
  // Outer on r1, inner on r2. Outer limit 0: r1's first allocation is refused
  // (nothing held, a clean run); limit 1: its second, leaving block #1 (8
  // bytes, the outer run's first serial) behind. The inner test must not
  // take r1's refusal for one of r2's.
  CHECK_THROWS_WITH(arenastat::exception_test(r1, [&] { arenastat::exception_test(r2, [&] { leaks_on_its_second_refusal(r1, r2); }); }),
                    second_refusal_leak("testing/nested-leak-1"));
  CHECK(r2.allocation_limit() == -1);  // the inner test left no limit behind
  CHECK(r1.blocks_in_use() == 1);
}

TEST_CASE("exception_test: the inner test on the leaking resource reports the same leak", "[exception_test]") {
  arenastat::test_resource r1{"testing/nested-leak-3", {.quiet = true}}, r2{"testing/nested-leak-4", {.quiet = true}};
  // Outer on r2, inner on r1: the inner test finds it (r1's serials start at
  // 1 in its first run; the leak is at its limit 1, the run's second allocation).
  CHECK_THROWS_WITH(arenastat::exception_test(r2, [&] { arenastat::exception_test(r1, [&] { leaks_on_its_second_refusal(r1, r2); }); }),
                    second_refusal_leak("testing/nested-leak-3"));
}

TEST_CASE("exception_test: the inner test reports what the outer resource's refusal made its own resource leave",
          "[exception_test]") {
  arenastat::test_resource r1{"testing/nested-other-1", {.quiet = true}}, r2{"testing/nested-other-2", {.quiet = true}};
  // Outer on r1, inner on r2; the inner f takes a block of r2, then one of
  // r1. Outer limit 0: the inner run at limit 0 has r2 refuse (clean); at
  // inner limit 1 r2 gives block #1 (run 0 made none) and r1 refuses, ending
  // the inner run with block #1 lost: the inner test says so.
  const std::string expected =
      "arenastat::exception_test: test_resource 'testing/nested-other-2': after another test_resource's refusal ended "
      "the run (limit 1), 1 block (8 bytes) in use, 0 blocks (0 bytes) before the run; left by the run: #1 (8 bytes)";
  CHECK_THROWS_WITH(arenastat::exception_test(r1, [&] {
    arenastat::exception_test(r2, [&] {
      void* a = r2.allocate(8);
      void* b = r1.allocate(8);  // refused at the outer limit 0: a is lost
      r1.deallocate(b, 8);
      r2.deallocate(a, 8);
    });
  }), expected);
}

TEST_CASE("exception_test: a refusal made by other code (no source) ends the test", "[exception_test]") {
  arenastat::test_resource r{"testing/foreign-refusal"};
  CHECK_THROWS_AS(arenastat::exception_test(r, [] { throw arenastat::allocation_limit_reached("elsewhere"); }),
                  arenastat::allocation_limit_reached);
  CHECK(r.allocation_limit() == -1);
}

TEST_CASE("test_resource: zero-byte blocks without guards each get an address, even from an arena", "[test_resource]") {
  arenastat::arena_resource arena{"testing/zero-arena", std::pmr::new_delete_resource()};
  arenastat::test_resource r{"testing/zero", {.guard_bytes = 0}, &arena};
  void* a = r.allocate(0, 1);
  void* b = r.allocate(0, 1);
  CHECK(a != b);
  CHECK(r.blocks_in_use() == 2);
  CHECK(r.leak_report() == "arenastat::test_resource 'testing/zero' has 2 blocks (0 bytes) in use: #1 (0 bytes), #2 (0 bytes)");
  r.deallocate(b, 0, 1);
  r.deallocate(a, 0, 1);
  CHECK(r.blocks_in_use() == 0);
  CHECK(r.misuses() == 0);
}

namespace {

// An upstream that hands out one buffer for every request: broken.
struct same_address_resource final : std::pmr::memory_resource {
  alignas(16) unsigned char buffer[64];
  void* do_allocate(std::size_t, std::size_t) override { return buffer; }
  void do_deallocate(void*, std::size_t, std::size_t) override {}
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }
};

}  // namespace

TEST_CASE("test_resource: an upstream handing out a block in use again is named, and counted nowhere",
          "[test_resource][misuse]") {
  same_address_resource broken;
  arenastat::test_resource r{"testing/broken-upstream", {.guard_bytes = 0}, &broken};
  void* a = r.allocate(8);
  CHECK_THROWS_WITH(r.allocate(8), "arenastat::test_resource 'testing/broken-upstream': allocate(8, " +
                                       std::to_string(alignof(std::max_align_t)) + "): the upstream returned " +
                                       ptr(broken.buffer) + " again while block #1 there is in use (a broken upstream)");
  CHECK(r.blocks_in_use() == 1);
  CHECK(r.total_blocks() == 1);
  CHECK(r.misuses() == 1);
  CHECK(arenastat::account::get("testing/broken-upstream").live_bytes() == 8);
  r.deallocate(a, 8);
  // Freed, #1 is held back (quarantine): the same address again is refused too.
  CHECK_THROWS_WITH(r.allocate(8), "arenastat::test_resource 'testing/broken-upstream': allocate(8, " +
                                       std::to_string(alignof(std::max_align_t)) + "): the upstream returned " +
                                       ptr(broken.buffer) +
                                       " again while block #1 there is held back after its free (a broken upstream)");
  CHECK(r.blocks_in_use() == 0);
  CHECK(r.misuses() == 2);
}

TEST_CASE("test_resource: a name with control characters is escaped in its messages", "[test_resource][misuse]") {
  arenastat::test_resource r{"testing/odd\nname\x1b[2J"};
  r.set_allocation_limit(0);
  CHECK_THROWS_WITH(r.allocate(5), "arenastat::test_resource 'testing/odd\\x0aname\\x1b[2J': allocation limit "
                                   "reached (allocation #1 of 5 bytes refused)");
  CHECK(r.description() == "arenastat::test_resource 'testing/odd\\x0aname\\x1b[2J'");
}

TEST_CASE("default_resource_guard: fails when the default resource was used", "[default_guard]") {
  std::pmr::memory_resource* before = std::pmr::get_default_resource();
  {
    arenastat::default_resource_guard guard;
    CHECK(guard.message().empty());
    CHECK_NOTHROW(guard.check());
    std::pmr::vector<int> v;  // the default resource
    v.reserve(10);
    CHECK(guard.allocations() == 1);
    CHECK(guard.bytes() == 40);
    CHECK(guard.message() ==
          "arenastat::default_resource_guard: 1 allocation (40 bytes) went through the default resource while it "
          "was guarded");
    CHECK_THROWS_AS(guard.check(), arenastat::default_resource_used);
  }
  CHECK(std::pmr::get_default_resource() == before);
}

TEST_CASE("default_resource_guard: guards ended out of order restore the default of before the first",
          "[default_guard]") {
  std::pmr::memory_resource* before = std::pmr::get_default_resource();
  auto a = std::make_unique<arenastat::default_resource_guard>();
  std::pmr::memory_resource* a_counter = std::pmr::get_default_resource();
  auto b = std::make_unique<arenastat::default_resource_guard>();
  auto c = std::make_unique<arenastat::default_resource_guard>();
  std::pmr::memory_resource* c_counter = std::pmr::get_default_resource();
  b.reset();  // ends under c: the default stays c's counter
  CHECK(std::pmr::get_default_resource() == c_counter);
  std::pmr::vector<int> v;
  v.reserve(4);  // counted by c, and by b's and a's counters it forwards through
  CHECK(c->allocations() == 1);
  CHECK(a->allocations() == 1);
  c.reset();  // hands back what b replaced: a's counter
  CHECK(std::pmr::get_default_resource() == a_counter);
  a.reset();
  CHECK(std::pmr::get_default_resource() == before);
}

TEST_CASE("default_resource_guard: the first guard ending first still leaves the old default at the end",
          "[default_guard]") {
  std::pmr::memory_resource* before = std::pmr::get_default_resource();
  auto a = std::make_unique<arenastat::default_resource_guard>();
  auto b = std::make_unique<arenastat::default_resource_guard>();
  a.reset();
  b.reset();
  CHECK(std::pmr::get_default_resource() == before);
}

TEST_CASE("default_resource_guard: a default set by someone else meanwhile is kept", "[default_guard]") {
  std::pmr::memory_resource* before = std::pmr::get_default_resource();
  std::pmr::monotonic_buffer_resource other;
  {
    arenastat::default_resource_guard guard;
    std::pmr::set_default_resource(&other);
  }
  CHECK(std::pmr::get_default_resource() == &other);
  std::pmr::set_default_resource(before);
}

TEST_CASE("catch2 helpers: a clean block passes", "[catch2]") {
  ARENASTAT_CHECKED_RESOURCE(mem);
  CHECK(mem.name() == "catch2 helpers: a clean block passes/mem");
  std::pmr::vector<int> v{&mem};
  v.assign({1, 2, 3});
  ARENASTAT_CHECK_EXCEPTION_SAFE(mem, [&] { growing_vector<true> g{&mem}; g.push_back(1); });
}

TEST_CASE("catch2 helpers: a resource name that would pass max_name_bytes is cut in the test's name", "[catch2]") {
  using arenastat::testing::checked_resource_name;
  const std::string ellipsis = "\xe2\x80\xa6";  // U+2026
  CHECK(checked_resource_name("t", "mem") == "t/mem");
  const std::string fits(arenastat::max_name_bytes - 4, 'a');  // with "/mem": exactly 1024 bytes
  CHECK(checked_resource_name(fits, "mem") == fits + "/mem");
  const std::string over = fits + "b";
  const std::string cut = checked_resource_name(over, "mem");
  CHECK(cut == std::string(arenastat::max_name_bytes - 4 - 3, 'a') + ellipsis + "/mem");
  CHECK(cut.size() == arenastat::max_name_bytes);
  // The cut would fall after the first byte of the two-byte "é": the whole character goes.
  std::string accented(1016, 'a');
  accented += "\xc3\xa9";  // built by +=: GCC 12 warns (-Warray-bounds) about string(n, c) + "literal"
  accented += std::string(10, 'b');
  CHECK(checked_resource_name(accented, "mem") == std::string(1016, 'a') + ellipsis + "/mem");
  CHECK_NOTHROW(arenastat::test_resource{cut});
}

TEST_CASE("catch2 helpers: a leak fails the test", "[catch2][!shouldfail]") {
  ARENASTAT_CHECKED_RESOURCE(mem);
  (void)mem.allocate(8);
}

TEST_CASE("catch2 helpers: default resource use fails the test", "[catch2][!shouldfail]") {
  ARENASTAT_NO_DEFAULT_RESOURCE(); ARENASTAT_NO_DEFAULT_RESOURCE();  // two on one line: names of their own
  std::pmr::vector<int> v{1, 2, 3};
}

TEST_CASE("catch2 helpers: an unsafe container fails the test", "[catch2][!shouldfail]") {
  arenastat::test_resource mem{"testing/catch2-unsafe", {.quiet = true}};
  ARENASTAT_CHECK_EXCEPTION_SAFE(mem, [&] { growing_vector<false> g{&mem}; g.push_back(1); g.push_back(2); g.push_back(3); });
}

TEST_CASE("test_resource: a refused request does not use up the allocation limit", "[test_resource]") {
  arenastat::test_resource r{"testing/limit-refused"};
  r.set_allocation_limit(1);
  CHECK_THROWS_AS(r.allocate(SIZE_MAX, 8), std::bad_alloc);
  CHECK_THROWS_AS(r.allocate(8, 3), arenastat::test_resource_error);
  CHECK(r.allocation_limit() == 1);
  void* p = r.allocate(8);  // the one allowed
  CHECK_THROWS_AS(r.allocate(8), arenastat::allocation_limit_reached);
  r.deallocate(p, 8);
}

TEST_CASE("test_resource: a scope's limit refusing a request does not use up the allocation limit",
          "[test_resource]") {
  arenastat::test_resource r{"testing/limit-scope-refused"};
  arenastat::scope s{"testing/limit-scope-refused/scope", {.limit_bytes = 100}};
  r.set_allocation_limit(1);
  CHECK_THROWS_AS(r.allocate(200), arenastat::limit_exceeded);  // 200 > 100: the scope refuses
  CHECK(r.allocation_limit() == 1);
  CHECK(r.total_blocks() == 0);
  void* p = r.allocate(8);  // the one allowed
  CHECK(r.allocation_limit() == 0);
  CHECK_THROWS_AS(r.allocate(8), arenastat::allocation_limit_reached);
  r.deallocate(p, 8);
}

TEST_CASE("test_resource: an upstream's bad_alloc does not use up the allocation limit", "[test_resource]") {
  arenastat::test_resource r{"testing/limit-upstream-refused", std::pmr::null_memory_resource()};
  r.set_allocation_limit(2);
  CHECK_THROWS_AS(r.allocate(8), std::bad_alloc);
  CHECK_THROWS_AS(r.allocate(8), std::bad_alloc);
  CHECK(r.allocation_limit() == 2);
  CHECK(r.total_blocks() == 0);
}

TEST_CASE("test_resource: a null upstream is refused before its account is made", "[test_resource]") {
  const std::size_t accounts = arenastat::account_entry_count();
  CHECK_THROWS_WITH(arenastat::test_resource("testing/null-upstream", nullptr),
                    "arenastat::test_resource: upstream resource is null");
  CHECK(arenastat::account_entry_count() == accounts);
}
