#!/usr/bin/env bash
# Builds the libFuzzer targets with clang++-14 (ASan+UBSan, the whole library
# instrumented) and runs each for a bounded time:
#   control_request_fuzz  the control socket's request grammar and line framing
#   resource_fuzz         the memory resources: stacks of arena, tracking and
#                         std pool resources driven by allocate/deallocate/
#                         release/scope sequences, checked against shadow counts
#   trace_fuzz            cache_sim's trace readers (lirs, plain, csv, arc, longs)
#                         on arbitrary bytes: keys, or an error naming a line
#   cache_fuzz            the caches (lru, tinylfu, sharded) under operation
#                         sequences with failing allocations, throwing user
#                         functions and re-entrant loaders, against a reference LRU
#   scripts/fuzz.sh [SECONDS]   (default 30 each; corpora and crashes in build-fuzz/)
# Exit status: 0 when no input crashed or broke an invariant, non-zero otherwise.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-30}
out=${ARENASTAT_FUZZ_DIR:-$root/build-fuzz}
mkdir -p "$out/corpus/control" "$out/corpus/resource" "$out/crashes"

cmake -S "$root" -B "$out/build" -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DARENASTAT_SANITIZE=address,undefined,fuzzer-no-link -DARENASTAT_BUILD_FUZZ=ON \
  -DARENASTAT_BUILD_TESTS=OFF -DARENASTAT_BUILD_BENCH=OFF -DARENASTAT_BUILD_DEMO=OFF >/dev/null
cmake --build "$out/build" -j"$(nproc)" --target control_request_fuzz resource_fuzz trace_fuzz cache_fuzz

# Seeds: every command, with and without options.
for c in help info "stats -s=10m -H --sort=peak --top=5 --json" baseline "diff --json" reset "process -H" "dump /tmp/x.txt"; do
  printf '%s\n' "$c" > "$out/corpus/control/seed-${c%% *}"
done
# Seeds: each stack shape, a few allocations, a scope with a limit, frees.
for shape in 0 1 2 3 4 5; do
  printf "\\x0$shape\\x00\\x01\\x08\\x03\\x04\\xff\\x00\\x00\\x40\\x03\\x02\\x00\\x01\\x02\\x20\\x05\\x02\\x01" \
    > "$out/corpus/resource/seed-$shape"
done

# Huge requests must come back as std::bad_alloc, not as an ASan report.
export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1
"$out/build/tests/fuzz/control_request_fuzz" "$out/corpus/control" -max_total_time="$seconds" -max_len=8192 -timeout=30 \
  -artifact_prefix="$out/crashes/control-" -print_final_stats=1
"$out/build/tests/fuzz/resource_fuzz" "$out/corpus/resource" -max_total_time="$seconds" -max_len=4096 -timeout=30 \
  -artifact_prefix="$out/crashes/resource-" -print_final_stats=1

# trace_fuzz: cache_sim's trace readers (lirs, plain, csv, arc, longs) on
# arbitrary bytes: keys or an error naming a line that exists, nothing else.
# Seeds: byte 0 the format (and csv column), byte 1 the csv delimiter and header.
mkdir -p "$out/corpus/trace"
printf '\x00\x00 7\n9\r\n*\n7\n\xef\xbb\xbf12\n' > "$out/corpus/trace/seed-lirs"
printf '\x01\x00abc\n42\n\n  42 \n-1\n18446744073709551616' > "$out/corpus/trace/seed-plain"
printf '\x0c\x06t,op,key\r\n1,r,5\n2,"w,x",abc\n3,,5\n' > "$out/corpus/trace/seed-csv"
printf '\x07\x02\t5\tx\n6\t\t7\n' > "$out/corpus/trace/seed-tsv"
printf '\x00\x00\xef\xbb\xbf12\n7\n' > "$out/corpus/trace/seed-bom"
printf '\x03\x00 10 3 0 1\n11\t2\n18446744073709551615 1\n' > "$out/corpus/trace/seed-arc"
printf '\x00\x00%4097s\n1\r\n' 7 > "$out/corpus/trace/seed-long-line"
printf '\x04\x00\x00\x00\x00\x00\x00\x00\x00\x01\xff\xff\xff\xff\xff\xff\xff\xff\x01\x02' > "$out/corpus/trace/seed-longs"
"$out/build/tests/fuzz/trace_fuzz" "$out/corpus/trace" -max_total_time="$seconds" -max_len=16384 -timeout=30 \
  -artifact_prefix="$out/crashes/trace-" -print_final_stats=1

# cache_fuzz: the caches under operation sequences with failing allocations,
# throwing hash/equality/loaders and re-entrant loaders (tests/fuzz/cache_fuzz.cpp).
mkdir -p "$out/corpus/cache"
# Seeds: each cache kind (config byte & 3; 8: by bytes), capacity 4, 8 keys,
# 2 shards, then puts, gets, a throwing and a re-entrant load, an erase, a clear.
for kind in 0 1 2 3 8 11; do
  printf "\\x$(printf %02x $kind)\\x03\\x07\\x01\\x01\\x01\\x05\\x01\\x02\\x06\\x00\\x01\\x03\\x05\\x01\\x00\\x04\\x04\\x02\\x07\\x03\\x02\\x06\\x11\\x05\\x00\\x03\\x08\\x01\\x07\\x01\\x02\\x01\\x01\\x03\\x05\\x00" \
    > "$out/corpus/cache/seed-$kind"
done
"$out/build/tests/fuzz/cache_fuzz" "$out/corpus/cache" -max_total_time="$seconds" -max_len=4096 -timeout=30 \
  -artifact_prefix="$out/crashes/cache-" -print_final_stats=1
