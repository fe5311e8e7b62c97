// The Catch2 helpers when Catch ends the run at a failure (-a, -x N): their
// checks run in destructors, where Catch's "stop this test case" exception
// cannot leave; each failure is reported and Catch stops in its own way, with
// no std::terminate (ctest checks the output: tests/testing/CMakeLists.txt).
#define CATCH_CONFIG_MAIN
#define CATCH_CONFIG_CONSOLE_WIDTH 400  // each message on one line for ctest's pattern
#include <arenastat/testing/catch2.hpp>
#include <memory_resource>
#include <vector>

TEST_CASE("a leak") {
  ARENASTAT_CHECKED_RESOURCE(mem);
  (void)mem.allocate(8);
}

TEST_CASE("default resource use") {
  ARENASTAT_NO_DEFAULT_RESOURCE();
  std::pmr::vector<int> v{1, 2, 3};
}

TEST_CASE("a REQUIRE fails and the block leaks while the test case unwinds") {
  ARENASTAT_CHECKED_RESOURCE(mem);
  (void)mem.allocate(16);
  REQUIRE(mem.blocks_in_use() == 0);
}

TEST_CASE("clean") {
  ARENASTAT_CHECKED_RESOURCE(mem);
  mem.deallocate(mem.allocate(4), 4);
}

// Run by name (ctest): a double free that the code under test catches.
TEST_CASE("a caught double free") {
  ARENASTAT_CHECKED_RESOURCE(mem);
  void* p = mem.allocate(8);
  mem.deallocate(p, 8);
  try {
    mem.deallocate(p, 8);
  } catch (const arenastat::test_resource_error&) {
  }
}
