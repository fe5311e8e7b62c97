// The Catch2 helpers under CATCH_CONFIG_PREFIX_ALL (only CATCH_-prefixed
// macros exist), with a leak whose failure must name this file and the line
// of ARENASTAT_CHECKED_RESOURCE, and a leaked block whose guard bytes were
// written over, named in that failure (ctest checks the output:
// tests/testing/CMakeLists.txt).
#define CATCH_CONFIG_PREFIX_ALL
#define CATCH_CONFIG_MAIN
#define CATCH_CONFIG_CONSOLE_WIDTH 400  // the message on one line for ctest's pattern
#include <arenastat/testing/catch2.hpp>

CATCH_TEST_CASE("leaky") {
  ARENASTAT_CHECKED_RESOURCE(mem);  // line 12: the failure is reported here
  (void)mem.allocate(8);
}

CATCH_TEST_CASE("exception-safe") {
  ARENASTAT_CHECKED_RESOURCE(mem);
  ARENASTAT_CHECK_EXCEPTION_SAFE(mem, [&] { mem.deallocate(mem.allocate(4), 4); });
  ARENASTAT_NO_DEFAULT_RESOURCE();
}

CATCH_TEST_CASE("leaky and overwritten") {
  ARENASTAT_CHECKED_RESOURCE(mem);
  auto* p = static_cast<unsigned char*>(mem.allocate(8));
  p[8] = 0;  // one byte past the end, into the back guard: named in the leak's failure
}
