#!/usr/bin/env bash
# Every test: set-up, then
#   1. a release build and the whole CTest suite (unit, end-to-end, install);
#   2. the whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. the threaded tests ([threads]) under ThreadSanitizer (only the test
#      binaries that have such cases are built: target threaded_tests);
#   4. the libFuzzer targets (clang 14): the control-request parser and the
#      memory resources, each for a bounded time.
# Steps can be chosen: scripts/test.sh [release] [asan] [tsan] [fuzz]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(release asan tsan fuzz)
jobs=$(nproc)
export CTEST_OUTPUT_ON_FAILURE=1
# Line tables only (-g1): enough for sanitizer reports and backtraces, and the
# builds take about a fifth less time than with full debug information.
optimised=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")

bash scripts/setup.sh

banner() { printf '\n==== %s (%s)\n' "$1" "$(date +%T)"; }

for step in "${steps[@]}"; do
  case "$step" in
    release)
      banner "release build + full suite"
      cmake -S . -B build/release "${optimised[@]}" >/dev/null
      cmake --build build/release -j"$jobs"
      ctest --test-dir build/release -j"$jobs" --timeout 300
      ;;
    asan)
      banner "ASan+UBSan build + full suite"
      # The benchmarks are not built here (their code runs in the release step).
      cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DARENASTAT_SANITIZE=address,undefined \
        -DARENASTAT_BUILD_BENCH=OFF >/dev/null
      cmake --build build/asan -j"$jobs"
      ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --test-dir build/asan -j"$jobs" --timeout 600 -LE install
      ;;
    tsan)
      banner "TSan build + threaded tests"
      cmake -S . -B build/tsan "${optimised[@]}" -DARENASTAT_SANITIZE=thread \
        -DARENASTAT_BUILD_BENCH=OFF >/dev/null
      # Only the test binaries that have [threads] cases (tests/CMakeLists.txt).
      cmake --build build/tsan -j"$jobs" --target threaded_tests
      status=0
      # The binaries CMake found [threads] cases in (one path per line); each
      # runs just those cases.
      list=build/tsan/threaded_tests.txt
      [ -s "$list" ] || { echo "TSan: $list is missing or empty" >&2; exit 1; }
      while IFS= read -r t; do
        [ -n "$t" ] || continue
        [ -x "$t" ] || { echo "TSan: $t was not built" >&2; status=1; continue; }
        echo "-- $(basename "$t") [threads]"
        TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 "$t" "[threads]" || status=1
      done <"$list"
      [ $status -eq 0 ] || { echo "TSan: failures above"; exit 1; }
      ;;
    fuzz)
      banner "fuzzing the control request parser, the memory resources, the trace readers and the caches (20 s each)"
      ARENASTAT_FUZZ_DIR=build/fuzz bash scripts/fuzz.sh "${ARENASTAT_FUZZ_SECONDS:-20}"
      ;;
    *)
      echo "scripts/test.sh: unknown step '$step' (expected release, asan, tsan or fuzz)" >&2
      exit 2
      ;;
  esac
done
banner "all steps passed: ${steps[*]}"
