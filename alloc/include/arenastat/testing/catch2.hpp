// Catch2 v2 helpers for arenastat::test_resource (header-only; include it in a
// test file after linking arenastat::arenastat and Catch2::Catch2).
//
//   TEST_CASE("my stack is exception-safe") {
//     ARENASTAT_CHECKED_RESOURCE(mem);   // arenastat::test_resource mem, named after the test;
//                                        // at the end of the block: no block left in use and
//                                        // nothing went through the default resource
//     my::stack s{&mem};
//     ARENASTAT_CHECK_EXCEPTION_SAFE(mem, [&] { my::stack t{&mem}; t.push(1); t.push(2); });
//   }
//
// Objects using the resource must be declared after the macro (destroyed first).
#pragma once
#include <catch2/catch.hpp>
#include <string>
#include <string_view>

#include "arenastat/test_resource.hpp"

namespace arenastat::testing {

// The running test case's name ("" outside a test case).
inline std::string current_test_name() {
  if (Catch::IResultCapture* capture = Catch::getCurrentContext().getResultCapture())
    return capture->getCurrentTestName();
  return {};
}

// For the rest of the enclosing block: nothing may go through the default
// resource, and `resource` must end the block holding what it held at its start.
// Each violation is one failed check (FAIL_CHECK) whose message says what.
class checked_block {
 public:
  explicit checked_block(test_resource& resource)
      : resource_(resource), blocks_(resource.blocks_in_use()), bytes_(resource.bytes_in_use()),
        first_(resource.next_serial()) {}
  ~checked_block() {
    if (const std::string m = guard_.message(); !m.empty()) FAIL_CHECK(m);
    if (resource_.blocks_in_use() != blocks_ || resource_.bytes_in_use() != bytes_) {
      FAIL_CHECK("arenastat::test_resource '" << resource_.name() << "' has " << resource_.blocks_in_use()
                 << " blocks (" << resource_.bytes_in_use() << " bytes) in use at the end of the block, "
                 << blocks_ << " (" << bytes_ << " bytes) at its start; left by the block: "
                 << resource_.blocks_since(first_));
      resource_.set_quiet(true);  // said once, here
    }
  }
  checked_block(const checked_block&) = delete;
  checked_block& operator=(const checked_block&) = delete;

 private:
  test_resource& resource_;
  std::int64_t blocks_;
  std::int64_t bytes_;
  std::uint64_t first_;
  default_resource_guard guard_;
};

// For the rest of the enclosing block nothing may go through the default
// resource (one failed check saying how much did).
class no_default_resource {
 public:
  no_default_resource() = default;
  ~no_default_resource() {
    if (const std::string m = guard_.message(); !m.empty()) FAIL_CHECK(m);
  }
  no_default_resource(const no_default_resource&) = delete;
  no_default_resource& operator=(const no_default_resource&) = delete;

 private:
  default_resource_guard guard_;
};

}  // namespace arenastat::testing

#define ARENASTAT_TESTING_CAT2(a, b) a##b
#define ARENASTAT_TESTING_CAT(a, b) ARENASTAT_TESTING_CAT2(a, b)

// Declares `arenastat::test_resource var` named "<test case>/var" and checks,
// when the enclosing block ends, that it holds nothing and that the default
// resource was not used.
#define ARENASTAT_CHECKED_RESOURCE(var)                                                           \
  ::arenastat::test_resource var{::arenastat::testing::current_test_name() + "/" #var};          \
  ::arenastat::testing::checked_block arenastat_checked_block_##var { var }

// Checks that `f` is exception-safe on `resource` (arenastat::exception_test):
// on failure the message names the run and the blocks it left.
#define ARENASTAT_CHECK_EXCEPTION_SAFE(resource, ...) \
  CHECK_NOTHROW(::arenastat::exception_test(resource, __VA_ARGS__))

// Checks that nothing in the rest of the enclosing block uses the default resource.
#define ARENASTAT_NO_DEFAULT_RESOURCE() \
  ::arenastat::testing::no_default_resource ARENASTAT_TESTING_CAT(arenastat_no_default_, __LINE__)
