// Debian's libbenchmark 1.7.1 does not export MemoryManager::TombstoneValue
// (the shared library hides it), yet Result's inline constructor names it; a
// test that constructs a Result itself needs a definition. The value is the
// library's own (INT64_MAX). A library that does export it is overridden by
// this definition for this test binary only, with the same value.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <limits>

const int64_t benchmark::MemoryManager::TombstoneValue = std::numeric_limits<int64_t>::max();
