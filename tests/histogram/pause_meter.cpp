// arenastat::pause_meter: start/stop, argument checks, sample counts against
// elapsed time, thread-safe snapshots.
#include <catch2/catch.hpp>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "arenastat/pause_meter.hpp"

using namespace std::chrono_literals;
using arenastat::pause_meter;

TEST_CASE("pause_meter rejects intervals outside 1 us .. 1 h", "[pause_meter]") {
  CHECK_THROWS_WITH(pause_meter(0ns), Catch::Contains("interval"));
  CHECK_THROWS_AS(pause_meter(999ns), std::invalid_argument);
  CHECK_THROWS_AS(pause_meter(std::chrono::hours(2)), std::invalid_argument);
  CHECK_NOTHROW(pause_meter(1us));
  CHECK(pause_meter().interval() == 1ms);
}

TEST_CASE("pause_meter starts, stops, restarts and refuses a double start", "[pause_meter][threads]") {
  pause_meter meter(200us);
  CHECK_FALSE(meter.running());
  meter.start();
  CHECK(meter.running());
  CHECK_THROWS_AS(meter.start(), std::logic_error);
  meter.stop();
  CHECK_FALSE(meter.running());
  meter.stop();  // no-op
  meter.start();
  CHECK(meter.running());
}  // the destructor stops the running thread

TEST_CASE("pause_meter records about elapsed / interval samples", "[pause_meter][threads]") {
  // With the coordinated-omission fill, a wake-up delay d adds floor(d/interval)
  // samples for interval + d of time, so the count never exceeds elapsed/interval
  // and stays above a third of it (worst case d just below 2 intervals).
  // The time before the meter's first wait and after its last wake-up is
  // not counted: a second of running keeps a starved start or end a small
  // part of the whole. Slept in slices until the clock says a second passed.
  const auto interval = 1ms;
  pause_meter meter(interval);
  const auto before = std::chrono::steady_clock::now();
  meter.start();
  while (std::chrono::steady_clock::now() - before < 1s) std::this_thread::sleep_for(10ms);
  meter.stop();
  const auto elapsed = std::chrono::steady_clock::now() - before;
  const auto expected = static_cast<std::uint64_t>(elapsed / interval);
  const auto count = meter.snapshot().count();
  INFO("elapsed intervals " << expected << ", samples " << count);
  CHECK(count <= expected);
  CHECK(count >= expected / 4);
  const auto after_stop = meter.snapshot().count();
  std::this_thread::sleep_for(20ms);
  CHECK(meter.snapshot().count() == after_stop);  // nothing recorded once stopped
}

TEST_CASE("pause_meter snapshots grow while running", "[pause_meter][threads]") {
  pause_meter meter(100us);
  meter.start();
  std::uint64_t last = 0;
  bool grew = false;
  for (int i = 0; i < 200 && !grew; ++i) {
    std::this_thread::sleep_for(2ms);
    const auto now = meter.snapshot().count();
    CHECK(now >= last);
    grew = now > last && last > 0;
    last = now;
  }
  CHECK(grew);
}

TEST_CASE("pause_meter reset while running forgets what was recorded before it", "[pause_meter][threads]") {
  // Each wake-up records 1 + floor(d / interval) samples for interval + d of
  // time, and wake-ups cover disjoint stretches of time, so every sample ever
  // recorded between start and stop fits in elapsed / interval. The samples
  // seen before the reset and those left after it are disjoint sets, so their
  // sum must fit too; a reset that forgot nothing would count the first set
  // twice. No bound on scheduling delays is assumed.
  const auto interval = 100us;
  pause_meter meter(interval);
  const auto begin = std::chrono::steady_clock::now();
  meter.start();
  std::uint64_t before_reset = 0;
  for (int i = 0; i < 500 && before_reset < 100; ++i) {
    std::this_thread::sleep_for(1ms);
    before_reset = meter.snapshot().count();
  }
  REQUIRE(before_reset >= 100);
  meter.reset();
  std::this_thread::sleep_for(1ms);
  meter.stop();
  const auto elapsed = std::chrono::steady_clock::now() - begin;
  const auto intervals = static_cast<std::uint64_t>(elapsed / interval);
  const auto after_reset = meter.snapshot().count();
  INFO("elapsed intervals " << intervals << ", before reset " << before_reset << ", after " << after_reset);
  CHECK(before_reset + after_reset <= intervals);
}

TEST_CASE("pause_meter reset once stopped leaves no samples", "[pause_meter][threads]") {
  pause_meter meter(200us);
  meter.start();
  std::this_thread::sleep_for(5ms);
  meter.stop();
  meter.reset();
  CHECK(meter.snapshot().count() == 0);
}

TEST_CASE("pause_meter summary names the percentiles and the interval", "[pause_meter][threads]") {
  pause_meter meter(500us);
  meter.start();
  std::this_thread::sleep_for(20ms);
  meter.stop();
  const std::string line = meter.summary();
  CHECK(line.rfind("pauses: ", 0) == 0);
  CHECK(line.find("(500 us interval)") != std::string::npos);
  CHECK(line.find(" p50=") != std::string::npos);
  CHECK(line.find(" p99=") != std::string::npos);
  CHECK(line.find(" p99.9=") != std::string::npos);
  CHECK(line.find(" max=") != std::string::npos);
  CHECK(line.find('\n') == std::string::npos);
}

TEST_CASE("pause_summary formats a known histogram exactly", "[pause_meter]") {
  arenastat::histogram h;
  for (std::uint64_t v = 1; v <= 1000; ++v) h.record(v * 1000);  // 1 us .. 1 ms
  // p50 = 500 us, p99 = 990 us, p99.9 = 999 us (their sub-buckets start there;
  // 500000 lies in a 256-wide sub-bucket [499968, 500223]).
  CHECK(arenastat::pause_summary(h, 1ms) ==
        "pauses: 1000 samples (1 ms interval) p50=0.500 ms p99=0.990 ms p99.9=0.999 ms max=1.000 ms");
}
