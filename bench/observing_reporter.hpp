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

#include <vector>

namespace arenastat_bench {

class observing_reporter : public benchmark::BenchmarkReporter {
 public:
  // Google Benchmark keeps the reporter it creates here for the whole process.
  observing_reporter() : shown_(benchmark::CreateDefaultDisplayReporter()) {}

  bool ReportContext(const Context& context) override { return shown_->ReportContext(context); }
  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<Run> copy = runs;
    observe(copy);
    shown_->ReportRuns(copy);
  }
  void Finalize() override { shown_->Finalize(); }

 protected:
  // Sees each batch of runs (it may add counters to them) before it is shown.
  virtual void observe(std::vector<Run>& runs) = 0;

 private:
  benchmark::BenchmarkReporter* shown_;
};

}  // namespace arenastat_bench
