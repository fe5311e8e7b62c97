#!/usr/bin/env bash
# Builds the libFuzzer target for the control socket's request parser with
# clang++-14 and runs it for a bounded time.
#   scripts/fuzz.sh [SECONDS]   (default 30; corpus and crashes in build-fuzz/)
# Exit status: 0 when no input crashed or broke an invariant, non-zero otherwise.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-30}
out=${ARENASTAT_FUZZ_DIR:-$root/build-fuzz}
mkdir -p "$out/corpus" "$out/crashes"

clang++-14 -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -I"$root/stats/control/src" \
  "$root/tests/fuzz/control_request_fuzz.cpp" "$root/stats/control/src/control_request.cpp" \
  -o "$out/control_request_fuzz"

# Seeds: every command, with and without options.
for c in help info "stats -s=10m -H --sort=peak --top=5 --json" baseline "diff --json" reset "process -H" "dump /tmp/x.txt"; do
  printf '%s\n' "$c" > "$out/corpus/seed-${c%% *}"
done

"$out/control_request_fuzz" "$out/corpus" -max_total_time="$seconds" -max_len=8192 \
  -artifact_prefix="$out/crashes/" -print_final_stats=1
