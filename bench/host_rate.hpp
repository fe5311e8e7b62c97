// host_rate: how many instructions per nanosecond this thread issues right
// now, on a loop bound by issue width alone (eight independent adds and the
// loop's decrement and branch: no loads, no dependent chain longer than one
// add per iteration). Printed beside a run's ratios so that they can be read
// with the host's state: on the AMD EPYC VM the goals are measured on, code
// bound by its instruction count ran at half its usual rate in some periods
// while latency-bound loops (the bump pointer, std_lru's pointer chasing) did
// not change, which moves every ratio between the two kinds (docs/concepts.md,
// "Session 11"). Not a goal: context for the goals.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace arenastat::bench {

struct issue_rate {
  double best = 0;    // instructions per ns, the fastest sample
  double median = 0;  // instructions per ns, the median sample
  unsigned samples = 0;
  bool measured = false;
};

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// `iterations` passes of 10 instructions: 8 independent adds, a decrement and
// a conditional branch (the count objdump shows).
[[gnu::noinline]] inline void issue_loop(std::uint64_t iterations) noexcept {
  if (iterations == 0) return;
  std::uint64_t a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0;
  asm volatile(
      ".p2align 6\n"
      "1:\n\t"
      "add $1, %1\n\t"
      "add $1, %2\n\t"
      "add $1, %3\n\t"
      "add $1, %4\n\t"
      "add $1, %5\n\t"
      "add $1, %6\n\t"
      "add $1, %7\n\t"
      "add $1, %8\n\t"
      "dec %0\n\t"
      "jnz 1b\n"
      : "+r"(iterations), "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f), "+r"(g), "+r"(h)
      :
      : "cc");
}
inline constexpr bool issue_rate_available = true;
#else
inline void issue_loop(std::uint64_t) noexcept {}
inline constexpr bool issue_rate_available = false;
#endif

// Samples of 200,000 iterations (2M instructions, a fraction of a millisecond);
// `samples` of them, at least 1.
inline issue_rate measure_issue_rate(unsigned samples = 15) {
  issue_rate r;
  if (!issue_rate_available || samples == 0) return r;
  constexpr std::uint64_t iterations = 200'000;
  constexpr double instructions = 10.0 * iterations;
  issue_loop(iterations);  // warm the code and the clock
  std::vector<double> rates;
  rates.reserve(samples);
  for (unsigned i = 0; i < samples; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    issue_loop(iterations);
    const auto t1 = std::chrono::steady_clock::now();
    const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
    if (ns > 0) rates.push_back(instructions / ns);
  }
  if (rates.empty()) return r;
  std::sort(rates.begin(), rates.end());
  r.best = rates.back();
  r.median = rates[rates.size() / 2];
  r.samples = static_cast<unsigned>(rates.size());
  r.measured = true;
  return r;
}

// One line: "host issue rate WHEN: B instructions/ns (best), M (median) ...".
inline std::string issue_rate_line(const char* when, const issue_rate& r) {
  char buf[256];
  if (!r.measured)
    std::snprintf(buf, sizeof buf, "host issue rate %s: n/a (not an x86-64 build)\n", when);
  else
    std::snprintf(buf, sizeof buf,
                  "host issue rate %s: %.1f instructions/ns best, %.1f median (%u samples of 2M instructions, "
                  "independent adds; context, not a goal)\n",
                  when, r.best, r.median, r.samples);
  return buf;
}

}  // namespace arenastat::bench
