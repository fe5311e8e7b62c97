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
// A failure is reported at the line of the macro that set the check up. The
// header uses no unprefixed Catch2 macro, so it also works under
// CATCH_CONFIG_PREFIX_ALL.
#pragma once
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "arenastat/table.hpp"
#include "arenastat/test_resource.hpp"

namespace arenastat::testing {

// The running test case's name ("" outside a test case).
inline std::string current_test_name() {
  if (Catch::IResultCapture* capture = Catch::getCurrentContext().getResultCapture())
    return capture->getCurrentTestName();
  return {};
}

// The name ARENASTAT_CHECKED_RESOURCE(var) gives its resource: "<test>/var",
// with the test's name cut at a character boundary and marked with "…"
// (U+2026) when the whole would pass max_name_bytes (Catch2 allows test names
// of any length; names are at most max_name_bytes).
inline std::string checked_resource_name(std::string test, std::string_view var) {
  constexpr std::string_view ellipsis = "\xe2\x80\xa6";
  if (test.size() + 1 + var.size() > max_name_bytes && var.size() + 1 + ellipsis.size() < max_name_bytes) {
    std::size_t keep = max_name_bytes - var.size() - 1 - ellipsis.size();
    while (keep > 0 && (static_cast<unsigned char>(test[keep]) & 0xC0) == 0x80) --keep;  // not inside a character
    test.resize(keep);
    test += ellipsis;
  }
  test += '/';
  test += var;
  return test;
}

// One failed check (as FAIL_CHECK) reported at `where`.
inline void fail_check_at(const Catch::SourceLineInfo& where, const std::string& message) {
  Catch::AssertionHandler handler(Catch::StringRef("FAIL_CHECK"), where, Catch::StringRef(),
                                  Catch::ResultDisposition::ContinueOnFailure);
  handler.handleMessage(Catch::ResultWas::ExplicitFailure, message);
  handler.complete();
}

// Runs a destructor's checks, which report with fail_check_at. Nothing may
// leave a destructor: once Catch is ending the run (-a, -x N: a failure
// reached the limit), complete() throws to leave the test case (the failure
// is recorded already, and Catch stops before the next test case); and
// building a message may throw bad_alloc (that failure then goes unreported).
template <class Checks>
void run_checks_in_destructor(Checks&& checks) noexcept {
  try {
    checks();
  } catch (...) {
  }
}

// "1 block (40 bytes)", "2 blocks (56 bytes)".
inline std::string blocks_text(std::int64_t blocks, std::int64_t bytes) {
  return std::to_string(blocks) + (blocks == 1 ? " block (" : " blocks (") + std::to_string(bytes) +
         (bytes == 1 ? " byte)" : " bytes)");
}

// For the rest of the enclosing block: nothing may go through the default
// resource, and `resource` must end the block holding what it held at its start.
// Each violation is one failed check whose message says what, reported at `where`.
class checked_block {
 public:
  // `where`: the line failures are reported at (CATCH_INTERNAL_LINEINFO there).
  checked_block(test_resource& resource, const Catch::SourceLineInfo& where)
      : resource_(resource), blocks_(resource.blocks_in_use()), bytes_(resource.bytes_in_use()),
        misuses_(resource.misuses()), first_(resource.next_serial()), where_(where) {}
  ~checked_block() {
    run_checks_in_destructor([this] {
      if (resource_.blocks_in_use() != blocks_ || resource_.bytes_in_use() != bytes_) {
        resource_.set_quiet(true);  // said once, here: with the guard damage the destructor would print
        const std::string damage = resource_.damage_report();
        fail_check_at(where_, resource_.description() + " has " +
                                  blocks_text(resource_.blocks_in_use(), resource_.bytes_in_use()) +
                                  " in use at the end of the block, " + blocks_text(blocks_, bytes_) +
                                  " at its start; left by the block: " + resource_.blocks_since(first_) +
                                  (damage.empty() ? std::string() : "\n" + damage));
      }
      // A misuse is a failure even when the code under test caught its
      // exception (a double free in a destructor that swallows, say).
      if (const std::int64_t n = resource_.misuses() - misuses_; n > 0)
        fail_check_at(where_, resource_.description() + " reported " + std::to_string(n) +
                                  (n == 1 ? " misuse" : " misuses") + " in the block; the last: " +
                                  resource_.last_misuse());
      if (const std::string m = guard_.message(); !m.empty()) fail_check_at(where_, m);
    });
  }
  checked_block(const checked_block&) = delete;
  checked_block& operator=(const checked_block&) = delete;

 private:
  test_resource& resource_;
  std::int64_t blocks_;
  std::int64_t bytes_;
  std::int64_t misuses_;
  std::uint64_t first_;
  Catch::SourceLineInfo where_;
  default_resource_guard guard_;
};

// For the rest of the enclosing block nothing may go through the default
// resource (one failed check saying how much did).
class no_default_resource {
 public:
  explicit no_default_resource(const Catch::SourceLineInfo& where) : where_(where) {}
  ~no_default_resource() {
    run_checks_in_destructor([this] {
      if (const std::string m = guard_.message(); !m.empty()) fail_check_at(where_, m);
    });
  }
  no_default_resource(const no_default_resource&) = delete;
  no_default_resource& operator=(const no_default_resource&) = delete;

 private:
  Catch::SourceLineInfo where_;
  default_resource_guard guard_;
};

}  // namespace arenastat::testing

#define ARENASTAT_TESTING_CAT2(a, b) a##b
#define ARENASTAT_TESTING_CAT(a, b) ARENASTAT_TESTING_CAT2(a, b)

// Declares `arenastat::test_resource var` named "<test case>/var"
// (checked_resource_name) and checks,
// when the enclosing block ends, that it holds nothing and that the default
// resource was not used.
#define ARENASTAT_CHECKED_RESOURCE(var)                                                           \
  ::arenastat::test_resource var{::arenastat::testing::checked_resource_name(                    \
      ::arenastat::testing::current_test_name(), #var)};                                           \
  ::arenastat::testing::checked_block arenastat_checked_block_##var { var, CATCH_INTERNAL_LINEINFO }

// Checks that `f` is exception-safe on `resource` (arenastat::exception_test):
// on failure the message names the run and the blocks it left.
#define ARENASTAT_CHECK_EXCEPTION_SAFE(resource, ...) \
  INTERNAL_CATCH_NO_THROW("CHECK_NOTHROW", Catch::ResultDisposition::ContinueOnFailure, \
                          ::arenastat::exception_test(resource, __VA_ARGS__))

// Checks that nothing in the rest of the enclosing block uses the default resource.
#define ARENASTAT_NO_DEFAULT_RESOURCE() \
  ::arenastat::testing::no_default_resource ARENASTAT_TESTING_CAT(arenastat_no_default_, __COUNTER__) { \
    CATCH_INTERNAL_LINEINFO                                                                         \
  }
