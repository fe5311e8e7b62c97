// A user's Catch2 v2 test with arenastat's helpers (<arenastat/testing/catch2.hpp>).
#define CATCH_CONFIG_MAIN
#include <arenastat/arenastat.hpp>
#include <arenastat/testing/catch2.hpp>
#include <memory_resource>
#include <vector>

TEST_CASE("consumer: no leaks, no default resource, exception-safe") {
  ARENASTAT_CHECKED_RESOURCE(mem);
  std::pmr::vector<int> v{&mem};
  v.assign({1, 2, 3});
  ARENASTAT_CHECK_EXCEPTION_SAFE(mem, [&] {
    std::pmr::vector<int> w{v, &mem};
    w.push_back(4);
  });
}
