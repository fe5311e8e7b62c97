// Tools for users' unit tests, after BDE's test allocator (bslma::TestAllocator):
//
//   test_resource            a std::pmr::memory_resource tracked under a name like
//                            any account, that counts blocks and bytes (in use,
//                            max, total), checks every deallocation, puts guard
//                            bytes around every block and can be told to fail
//                            after N more allocations;
//   exception_test(r, f)     runs f with allocation limits 0, 1, 2, ... until it
//                            completes, checking after each throw that no block
//                            allocated by the run is left in use;
//   default_resource_guard   fails when anything used the default resource
//                            (std::pmr::get_default_resource()) while it lived.
//
// Catch2 v2 helpers: <arenastat/testing/catch2.hpp>. Guide: docs/testing.md.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "arenastat/account.hpp"

namespace arenastat {

// What a test_resource does when a deallocation is wrong (or, for abort, when
// it is destroyed with blocks in use): throw test_resource_error, or write the
// message on stderr and std::abort(). A throw from a deallocation inside a
// noexcept function (a destructor) ends the program by std::terminate, which
// names the error and prints its message (docs/testing.md).
enum class misuse_action { throw_error, abort };

// A wrong deallocation (unknown pointer, double free, size or alignment
// differing from the allocation's, guard bytes overwritten). what() says which,
// with both values.
class test_resource_error : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

class test_resource;

// Thrown by the allocation the limit refuses (set_allocation_limit).
// source() is the test_resource whose limit refused it (null when made by
// other code): an exception_test handles only its own resource's refusals.
class allocation_limit_reached : public std::bad_alloc {
 public:
  explicit allocation_limit_reached(std::string message, const test_resource* source = nullptr)
      : message_(std::move(message)), source_(source) {}
  const char* what() const noexcept override { return message_.c_str(); }
  const test_resource* source() const noexcept { return source_; }

 private:
  std::string message_;
  const test_resource* source_;
};

struct test_resource_options {
  misuse_action on_misuse = misuse_action::throw_error;
  std::size_t guard_bytes = 16;  // checked bytes before and after every block (0: none)
  bool quiet = false;            // no report on stderr when destroyed with blocks in use
  // Charge the scopes too, like tracking_resource (as an upstream of tracked
  // resources it charges none anyway: they hide the scopes while calling it).
  // Off: only the account is charged.
  bool charge_scopes = true;
  // Freed blocks held back (filled with 0xA5) before they go upstream, the
  // oldest given back first, so that a freed block's address is not handed
  // out again while a double free of it can still be named (at most this
  // many blocks and quarantine_max_bytes bytes, guards included; 0: give
  // each block back at once). The destructor gives them all back.
  std::size_t quarantine_blocks = 1024;
};

class test_resource;
namespace detail {
class exception_test_mark;
}  // namespace detail

class test_resource final : public std::pmr::memory_resource {
 public:
  static constexpr std::size_t quarantine_max_bytes = std::size_t{16} << 20;
  // Blocks come from `upstream` (by default new_delete_resource(), never the
  // default resource, so that a default_resource_guard does not see them).
  // Every block is charged, without its guard bytes, to the account `name`
  // with tag "heap" and (options.charge_scopes) to the active scopes, like
  // tracking_resource.
  explicit test_resource(std::string_view name,
                         std::pmr::memory_resource* upstream = std::pmr::new_delete_resource());
  test_resource(std::string_view name, const test_resource_options& options,
                std::pmr::memory_resource* upstream = std::pmr::new_delete_resource());
  // Blocks still in use are reported on stderr, and then abort mode aborts;
  // quiet: neither (no report, no abort). They are given back upstream.
  ~test_resource() override;
  test_resource(const test_resource&) = delete;
  test_resource& operator=(const test_resource&) = delete;

  std::string_view name() const noexcept;
  // The resource as its messages name it: "arenastat::test_resource 'name'",
  // the name escaped as in the text reports (docs/report.md).
  std::string description() const;
  account& tracked_account() const noexcept { return *account_; }
  std::pmr::memory_resource* upstream() const noexcept;

  // Counters, as BDE names them: in use now, the most in use at once, ever allocated.
  std::int64_t blocks_in_use() const noexcept;
  std::int64_t bytes_in_use() const noexcept;
  std::int64_t max_blocks() const noexcept;
  std::int64_t max_bytes() const noexcept;
  std::int64_t total_blocks() const noexcept;   // successful allocations
  std::int64_t total_bytes() const noexcept;
  std::int64_t deallocations() const noexcept;  // successful deallocations
  std::int64_t misuses() const noexcept;        // misuses reported (wrong deallocations, bad alignments)
  // The message of the latest misuse reported ("" when none): what was thrown
  // (or written before the abort), also when the code under test caught it.
  std::string last_misuse() const;
  // Serial number of the next block (blocks are numbered #1, #2, ... in allocation order).
  std::uint64_t next_serial() const noexcept;

  // After `n` more allocations, the next one throws allocation_limit_reached
  // (a std::bad_alloc) and the limit is off again. Negative: no limit (the default).
  // Only allocations made count: a request refused otherwise (bad alignment,
  // too large, an active scope's byte limit, the upstream's bad_alloc) leaves
  // the count as it was.
  void set_allocation_limit(std::int64_t n) noexcept;
  std::int64_t allocation_limit() const noexcept;
  // Allocations the allocation limit refused, in all (exception_test reads it
  // to know whether a run had one refused, whatever f did with the limit).
  std::int64_t limit_refusals() const noexcept;

  void set_quiet(bool quiet) noexcept;

  // "" when no block is in use; else "arenastat::test_resource 'x' has 2 blocks
  // (48 bytes) in use: #3 (16 bytes), #4 (32 bytes)" (at most 10 listed).
  std::string leak_report() const;
  // "" when no block in use has its guard bytes written over; else a line for
  // each such block (at most 10), as the destructor prints them: "  block #3
  // (8 bytes): written past the end: guard bytes at offset 8 changed".
  std::string damage_report() const;
  // The blocks in use whose serial is at least `serial`: "#3 (16 bytes), #4 (32 bytes)".
  std::string blocks_since(std::uint64_t serial) const;

 protected:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override;
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }

 private:
  friend class detail::exception_test_mark;
  struct state;
  [[noreturn]] void fail(const std::string& message);
  std::unique_ptr<state> state_;
  account* account_;
  tag_id tag_;
};

// Thrown by exception_test when a run that threw left blocks in use.
class exception_test_failure : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

namespace detail {
// How the run with a refused allocation ended: by the refusal's exception,
// normally (f having caught it), or by another test_resource's refusal.
enum class refusal { thrown, caught, other };
// Throws exception_test_failure when `r` holds other than `blocks` / `bytes`
// after the run with limit `limit` (ended `how`).
void check_exception_run(const test_resource& r, std::int64_t limit, std::int64_t blocks, std::int64_t bytes,
                         std::uint64_t first_serial, refusal how);
// Marks `r` as under exception_test while it lives. Throws std::logic_error
// when `r` already is (a nested exception_test on the same resource) or has
// an allocation limit (the caller's, which the test would lose).
class exception_test_mark {
 public:
  explicit exception_test_mark(test_resource& r);
  ~exception_test_mark();
  exception_test_mark(const exception_test_mark&) = delete;
  exception_test_mark& operator=(const exception_test_mark&) = delete;

 private:
  test_resource& r_;
};
}  // namespace detail

// Runs f() with allocation limit 0, 1, 2, ... on `r` until a run completes
// with no allocation refused; after each run ended by
// allocation_limit_reached, checks that `r` holds what it held before the
// run: as many blocks and bytes, and none of the blocks the run allocated
// (else throws exception_test_failure naming the blocks left). A run that
// caught the refusal itself and returned is checked the same way (code that
// handles a refusal must not leak either), then followed by the next limit.
// A run in which no allocation was refused ends the test, whatever f did
// with the limit (f may turn it off, as BDE tests do for their checks).
// Any other exception ends the test and propagates, a refusal by another
// test_resource's limit included (an exception_test nested on another
// resource lets the outer one's refusals through to it). Returns the number of
// runs in which an allocation was refused (the allocations f makes). Objects
// f changes must be made inside f: what outlives a run counts as held.
// `r` must have no allocation limit when it is called (exception_test sets
// it) and must not be under another exception_test: a nested exception_test
// on the same resource, or a limit the caller set, is refused with
// std::logic_error.
template <class F>
std::int64_t exception_test(test_resource& r, F&& f) {
  const detail::exception_test_mark mark(r);
  for (std::int64_t limit = 0;; ++limit) {
    const std::int64_t blocks = r.blocks_in_use();
    const std::int64_t bytes = r.bytes_in_use();
    const std::uint64_t first = r.next_serial();
    const std::int64_t refusals = r.limit_refusals();
    r.set_allocation_limit(limit);
    try {
      f();
    } catch (const allocation_limit_reached& e) {
      r.set_allocation_limit(-1);
      if (e.source() != &r) {
        // Another resource's refusal, for its own exception_test to handle;
        // what it made this run leave on `r` is this test's to report.
        detail::check_exception_run(r, limit, blocks, bytes, first, detail::refusal::other);
        throw;
      }
      detail::check_exception_run(r, limit, blocks, bytes, first, detail::refusal::thrown);
      continue;
    } catch (...) {
      r.set_allocation_limit(-1);
      throw;
    }
    r.set_allocation_limit(-1);
    if (r.limit_refusals() == refusals) return limit;  // nothing refused: every allocation of f was made
    detail::check_exception_run(r, limit, blocks, bytes, first, detail::refusal::caught);
  }
}

// Thrown by default_resource_guard::check.
class default_resource_used : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// While it lives, the default resource is a counting resource forwarding to
// the previous default; the destructor restores the previous one. The default
// is process-wide: other threads' use counts too. Memory taken through it may
// outlive the guard (the counting resource is never destroyed). Guards may
// end in any order: once every guard has ended, the default is what it was
// before the first (unless something else set it meanwhile, which is kept);
// a use while several live counts in each of them.
class default_resource_guard {
 public:
  default_resource_guard();
  ~default_resource_guard();
  default_resource_guard(const default_resource_guard&) = delete;
  default_resource_guard& operator=(const default_resource_guard&) = delete;

  std::uint64_t allocations() const noexcept;  // through the default resource since the guard began
  std::uint64_t bytes() const noexcept;
  // "" when unused; else "arenastat::default_resource_guard: 2 allocations (96
  // bytes) went through the default resource while it was guarded".
  std::string message() const;
  void check() const;  // throws default_resource_used with message()

 private:
  struct counter;
  counter* counter_;  // eternal
  std::pmr::memory_resource* previous_;
};

}  // namespace arenastat
