// docs/jemalloc-and-boost.md, "Boost.Container": a Boost pmr vector of Boost
// pmr strings charged to one account through boost_adapter, compiled and run
// by ctest (tests/examples).
#include <arenastat/boost_adapter.hpp>
#include <arenastat/tracking_resource.hpp>

#include <boost/container/pmr/string.hpp>
#include <boost/container/pmr/vector.hpp>
#include <cstdio>

int main() {
  arenastat::tracking_resource tracked{"parser"};
  arenastat::boost_adapter to_boost{&tracked};
  {
    boost::container::pmr::vector<boost::container::pmr::string> v{&to_boost};
    v.reserve(10);
    for (int i = 0; i < 10; ++i) v.emplace_back(200, 'x');  // each string's buffer from the vector's resource
    // the vector's buffer and every string's buffer are charged to "parser"
    // (a string converted from a std::string would be built with Boost's
    // default resource first: docs/jemalloc-and-boost.md)
    std::printf("parser: %lld bytes live in %llu allocations\n",
                static_cast<long long>(tracked.tracked_account().totals().live_bytes),
                static_cast<unsigned long long>(tracked.tracked_account().totals().allocations));
  }
  return tracked.tracked_account().totals().live_bytes == 0 ? 0 : 1;
}
