// The host issue-rate probe printed beside the benchmarks' ratios (bench/host_rate.hpp).
#include "host_rate.hpp"

#include <catch2/catch.hpp>

#include <string>

using arenastat::bench::issue_rate;
using arenastat::bench::issue_rate_line;
using arenastat::bench::measure_issue_rate;

TEST_CASE("the issue-rate probe reports its samples, the best at least the median", "[host_rate]") {
  if (!arenastat::bench::issue_rate_available) {
    CHECK_FALSE(measure_issue_rate(5).measured);
    return;
  }
  const issue_rate r = measure_issue_rate(5);
  REQUIRE(r.measured);
  CHECK(r.samples == 5);
  CHECK(r.median > 0);
  CHECK(r.best >= r.median);
  // A core issues a bounded number of instructions per cycle at a bounded
  // clock: 8 per cycle at 10 GHz is far beyond any x86-64 part.
  CHECK(r.best < 80);
}

TEST_CASE("the issue-rate probe asked for no sample measures nothing", "[host_rate]") {
  const issue_rate r = measure_issue_rate(0);
  CHECK_FALSE(r.measured);
  CHECK(r.samples == 0);
}

TEST_CASE("the issue-rate line gives both figures, or says it has none", "[host_rate]") {
  issue_rate r;
  r.best = 12.34;
  r.median = 8.06;
  r.samples = 15;
  r.measured = true;
  CHECK(issue_rate_line("before", r) ==
        "host issue rate before: 12.3 instructions/ns best, 8.1 median (15 samples of 2M instructions, "
        "independent adds; context, not a goal)\n");
  CHECK(issue_rate_line("after", issue_rate{}) == "host issue rate after: n/a (not an x86-64 build)\n");
}
