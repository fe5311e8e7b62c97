// observing_reporter: the display reporter Google Benchmark would have made
// itself from its flags (--benchmark_format, --benchmark_color,
// --benchmark_counters_tabular), with a look at every batch of runs before it
// is shown. Our benchmarks keep the figures they compare this way, so Google
// Benchmark's flags mean what they mean in any other benchmark program:
// --benchmark_format=json prints JSON, and only JSON, on stdout. What a
// benchmark prints besides (goal and ratio lines) goes to stderr.
//
// Create it after benchmark::Initialize (which reads the flags).
#pragma once

#include <benchmark/benchmark.h>

#include <deque>
#include <vector>

namespace arenastat_bench {

class observing_reporter : public benchmark::BenchmarkReporter {
 public:
  // Google Benchmark keeps the reporter it creates here for the whole process.
  observing_reporter() : shown_(benchmark::CreateDefaultDisplayReporter()) {}

  bool ReportContext(const Context& context) override { return shown_->ReportContext(context); }
  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<Run> copy = runs;
    keep_memory_results(copy);
    observe(copy);
    shown_->ReportRuns(copy);
  }
  void Finalize() override { shown_->Finalize(); }

 protected:
  // Sees each batch of runs (it may add counters to them) before it is shown.
  virtual void observe(std::vector<Run>& runs) = 0;

 private:
  // Google Benchmark 1.7.1 (Debian 12) points each repetition's
  // memory_result into a vector that later repetitions of the benchmark grow,
  // so with --benchmark_repetitions every pointer but the last may dangle
  // (the first repetitions read 5.3e18 and 9 bytes of peak, the last 258,048).
  // A batch holds one benchmark's repetitions: each gets a copy, kept here,
  // of the last one's result, the only one still valid (every repetition's
  // memory run is the same 16 iterations).
  void keep_memory_results(std::vector<Run>& runs) {
    const Run* last = nullptr;
    for (const Run& r : runs)
      if (r.run_type == Run::RT_Iteration && r.memory_result != nullptr) last = &r;
    if (last == nullptr) return;
    kept_.push_back(*last->memory_result);
    for (Run& r : runs)
      if (r.memory_result != nullptr) r.memory_result = &kept_.back();
  }

  benchmark::BenchmarkReporter* shown_;
  std::deque<benchmark::MemoryManager::Result> kept_;  // stable addresses
};

}  // namespace arenastat_bench
