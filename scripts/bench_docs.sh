#!/usr/bin/env bash
# Regenerates docs/benchmarks.md and its plots (docs/img/*.png) from benchmarks
# run now, on this machine.
#
#   scripts/bench_docs.sh [BUILD_DIR]        (default: build-docs, Release)
#
# Environment: BUILD_TYPE (default Release), JOBS (build parallelism, default 2), REPS (repetitions of each
# benchmark, default 5), MIN_TIME (seconds per repetition, default 0.2),
# and for bench_cache (run only when the tree has it; its plots need jq):
# BENCH_CACHE_ARGS (default "--json": the full recipe, 1M entries, minutes),
# BENCH_CACHE_BUDGETS (default "1m 2m 4m 8m 16m": one run per budget, "" skips
# the sweep) with BENCH_CACHE_BUDGET_ARGS (default "--json --capacity=100000
# --threads=1").
# Needs: cmake, a C++ compiler, libbenchmark-dev, gnuplot (gnuplot-nox).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-docs}
jobs=${JOBS:-2}
reps=${REPS:-5}
min_time=${MIN_TIME:-0.2}
docs=$root/docs
img=$docs/img
mkdir -p "$img"
command -v gnuplot >/dev/null || { echo "bench_docs: gnuplot is missing (apt-get install gnuplot-nox)" >&2; exit 1; }

have_cache=0
targets=(bench_alloc)
if grep -q 'bench_cache' "$root/bench/CMakeLists.txt"; then
  targets+=(bench_cache)
  have_cache=1
fi

echo "bench_docs: building ${targets[*]} in $build"
build_type=${BUILD_TYPE:-Release}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="$build_type" >/dev/null
cmake --build "$build" -j"$jobs" --target "${targets[@]}" >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

echo "bench_docs: running bench_alloc ($reps interleaved repetitions of ${min_time}s)"
"$build/bench/bench_alloc" --tsv="$work/alloc.tsv" --pauses="$work/pauses.txt" \
  --benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true \
  --benchmark_min_time="$min_time" \
  --benchmark_color=false >"$work/alloc.out" 2>"$work/alloc.err"
# Rows in a fixed order (interleaved repetitions report in random order).
order="arena/32B std_monotonic/32B boost_monotonic/32B bump/32B arena_direct/32B virtual_floor/32B arena/mixed std_monotonic/mixed
boost_monotonic/mixed bump/mixed new_delete/pair/threads:1 forwarding/pair plain_new/pair
tracking/pair/threads:1 new_delete/pair/threads:2
tracking/pair/threads:2 pool_on_new_delete/pair pool_on_tracking/pair
scope/enter_exit scope/floor scope/enter_arena_exit histogram/record"
order=$(echo $order)  # one line: awk -v takes no newline
grep -v '^#' "$work/alloc.tsv" | awk -F'\t' -v order="$order" '
  BEGIN { n = split(order, names, / +/); for (i = 1; i <= n; ++i) rank[names[i]] = i }
  { printf "%d\t%s\n", ($1 in rank) ? rank[$1] : 1000 + NR, $0 }' |
  sort -n -k1,1 | cut -f2- >"$work/alloc_sorted.tsv"
# The pause summary (stderr) may follow a terminal reset sequence: strip escapes.
sed -i 's/\x1b\[[0-9;]*m//g' "$work/alloc.out" "$work/alloc.err"

cache_rows=0
if [ "$have_cache" = 1 ] && [ -x "$build/bench/bench_cache" ]; then
  if command -v jq >/dev/null; then
    echo "bench_docs: running bench_cache ${BENCH_CACHE_ARGS:---json}"
    # shellcheck disable=SC2086
    "$build/bench/bench_cache" ${BENCH_CACHE_ARGS:---json} >"$work/cache.json" 2>"$work/cache.err"
    jq -r '.results[] | [.cache + " t" + (.threads|tostring) + (if .penalty_ns > 0 then " penalty" else "" end),
           .bytes_per_entry,
           .ops_per_s, .hit_rate, .peak_bytes, .alloc_bytes_per_op, .vm_hwm_bytes,
           .latency_ns.p50, .latency_ns.p99, .latency_ns.p999, .latency_ns.max] | @tsv' \
      "$work/cache.json" >"$work/cache.tsv"
    jq -r '.results[] | select(.threads == 1 and .penalty_ns == 0) |
           [.cache, .bytes_per_entry, .ops_per_s] | @tsv' "$work/cache.json" >"$work/cache_t1.tsv"
    cache_rows=$(wc -l <"$work/cache.tsv")
    budget_args=${BENCH_CACHE_BUDGET_ARGS:---json --capacity=100000 --threads=1}
    : >"$work/budget.tsv"
    for budget in ${BENCH_CACHE_BUDGETS-1m 2m 4m 8m 16m}; do
      echo "bench_docs: running bench_cache $budget_args --budget=$budget"
      # shellcheck disable=SC2086
      "$build/bench/bench_cache" $budget_args --budget="$budget" 2>/dev/null |
        jq -r '.config.budget_bytes as $b | .results[] | select(.threads == 1 and .penalty_ns == 0) |
               [.cache, $b, .hit_rate] | @tsv' >>"$work/budget.tsv"
    done
    sort -k1,1 -k2,2n -o "$work/budget.tsv" "$work/budget.tsv"
  else
    echo "bench_docs: jq missing: cache plots skipped" >&2
  fi
fi
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- plots ---------------------------------------------------------------
# Allocator ns per request (allocation benchmarks only, in report order).
grep -Ev '^(scope|histogram)/' "$work/alloc_sorted.tsv" |
  awk -F'\t' '{ printf "\"%s\"\t%.3f\n", $1, $2 }' >"$work/alloc_plot.tsv"
gnuplot <<EOF
set terminal pngcairo size 900,460 font ",9" noenhanced
set output "$img/alloc_ns.png"
set title "Allocator cost per request (CPU ns, median of $reps; lower is better)"
set style fill solid 0.8 border -1
set boxwidth 0.7
set ylabel "ns per request"
set xtics rotate by -40 left nomirror
set grid ytics
set yrange [0:*]
set key off
set bmargin 10
set rmargin 10
plot "$work/alloc_plot.tsv" using 0:2:xtic(1) with boxes lc rgb "#4a7ab5", \
     "" using 0:2:(sprintf("%.1f", \$2)) with labels offset 0,0.7
EOF

# Pause meter: latency by percentile, x = 1/(1-p) in log scale.
gnuplot <<EOF
set terminal pngcairo size 800,420 font ",9" noenhanced
set output "$img/pauses.png"
set title "Pause meter during bench_alloc (1 ms interval, coordinated omission corrected)"
set logscale x
set logscale y
set xlabel "percentile"
set ylabel "wake-up delay (us)"
set xtics ("0%%" 1, "90%%" 10, "99%%" 100, "99.9%%" 1000, "99.99%%" 10000, "99.999%%" 100000)
set grid
set key off
plot "$work/pauses.txt" using 4:(\$1 > 0 ? \$1 : 0.001) with steps lw 2 lc rgb "#b5584a"
EOF

if [ "$cache_rows" -gt 0 ]; then
  gnuplot <<EOF
set terminal pngcairo size 800,460 font ",9" noenhanced
set output "$img/cache_throughput_vs_bytes.png"
set title "bench_cache: throughput (1 thread, no loader penalty) vs bytes per entry"
set xlabel "bytes per entry"
set ylabel "million operations per second"
set grid
set key off
set yrange [0:*]
set xrange [0:*]
plot "$work/cache_t1.tsv" using 2:(\$3/1e6) with points pt 7 ps 1.2, \
     "" using 2:(\$3/1e6):1 with labels offset 0,1 font ",8"
EOF
fi
if [ -s "$work/budget.tsv" ]; then
  gnuplot <<EOF
set terminal pngcairo size 800,460 font ",9" noenhanced
set output "$img/cache_hit_rate_vs_budget.png"
set title "bench_cache: hit rate reached within the same memory budget"
set xlabel "budget (MiB)"
set ylabel "hit rate"
set grid
set key bottom right
contenders = system("cut -f1 $work/budget.tsv | sort -u | tr '\n' ' '")
plot for [c in contenders] "< grep '^".c."\t' $work/budget.tsv" using (\$2/1048576):3 with linespoints title c
EOF
fi

# ---- markdown ------------------------------------------------------------
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
mem=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
compiler=$(c++ --version | head -1)
gbench=$(dpkg-query -W -f='${Version}' libbenchmark-dev 2>/dev/null || echo unknown)
pause_line=$(grep "pauses: " "$work/alloc.err" || true)

{
  echo "# Benchmarks"
  echo
  echo "Generated by \`scripts/bench_docs.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'); do not edit by hand,"
  echo "run the script again. Figures are from one run on the machine below."
  echo
  echo "## Machine"
  echo
  echo "| | |"
  echo "|---|---|"
  echo "| CPU | $cpu |"
  echo "| cores (nproc) | $(nproc) |"
  echo "| memory | $mem |"
  echo "| kernel | $(uname -r) |"
  echo "| compiler | $compiler, CMAKE_BUILD_TYPE=$build_type |"
  echo "| Google Benchmark | $gbench |"
  echo "| load average before / after | $load_before / $load_after |"
  echo
  echo "A load average above the core count means other processes shared the cores"
  echo "during the run; CPU time per request (what the tables show) is less affected"
  echo "by that than wall time, but caches and frequency are shared too."
  echo
  echo "## Method"
  echo
  echo "\`bench_alloc\` (bench/bench_alloc.cpp) calls every resource through a"
  echo "\`std::pmr::memory_resource*\` the compiler cannot devirtualise; the inline"
  echo "bump pointer (no bounds check, inlined into the loop) is the floor of any allocator,"
  echo "and \`virtual_floor\` (a resource whose do_allocate only returns a pointer) the floor"
  echo "of any resource reached through \`memory_resource*\`; \`arena_direct\` calls the arena"
  echo "through its own final type, so its bump fast path is inlined. Bump-style resources serve batches of 4096 requests"
  echo "and are then released, so the cost per request includes the amortised release"
  echo "and chunk refills. Pairs are allocate + deallocate of 32 bytes. Each figure is"
  echo "the median over $reps randomly interleaved repetitions of CPU time per"
  echo "request (for two threads: CPU time of both threads over the requests of both)."
  echo "glibc's mmap and trim thresholds are pinned at 64 MiB for the run (see the"
  echo "comment at the top of bench_alloc.cpp for why: with glibc's dynamic threshold an arena"
  echo "cycling a 128 KiB chunk gets it from mmap and gives it back on every release, 4.1 instead"
  echo "of 2.3 ns per 32-byte request when measured; \`--glibc_default_mmap=1\` shows it). The memory columns come from"
  echo "\`arenastat::bench::memory_manager\` (bench/include/arenastat/bench/memory_manager.hpp):"
  echo "tracked allocations per iteration (accounts) and the tracked peak (a scope) of"
  echo "Google Benchmark's extra memory run (at most 16 iterations, one thread)."
  echo "The jemalloc pair (\`jemalloc_resource\` vs \`mallocx\`/\`sdallocx\`) is measured by"
  echo "\`bench_jemalloc\`, which links jemalloc as the process allocator."
  echo "Both print Google Benchmark's report on stdout, in the format its flags ask for"
  echo "(\`--benchmark_format=json\` gives JSON alone), and their goal and ratio lines on stderr."
  echo
  echo "The ratio goals (all but the scope's, which is in nanoseconds) are read from the"
  echo "\`alt/\` benchmarks, not from the table's separate runs: each runs the contender and"
  echo "its peer in turns, blocks of 16,384 requests (8,192 pairs) in the order a b b a,"
  echo "each block timed by the steady clock, with two threads meeting between blocks so both"
  echo "run the same side at once; a ratio is the median over the repetitions. The blocks call"
  echo "the same out-of-line loops as the separate runs. This host's speed changes with the"
  echo "minute, and separate runs seconds apart then compare different minutes:"
  echo "tracking/new_delete read 1.12 and 0.70 from separate runs of one build (the alternating"
  echo "blocks 0.97 and 1.00). The separate runs' ratios are printed too, without a goal."
  echo
  echo "## Goals of the allocation core, measured in this run"
  echo
  echo '```'
  grep -E '^(host issue rate|ratio|scope enter|goals failed)' "$work/alloc.err"
  echo '```'
  echo
  echo "## Allocators"
  echo
  echo "| benchmark | ns per request | tracked allocations per iteration | tracked peak bytes |"
  echo "|---|---:|---:|---:|"
  awk -F'\t' '{ printf "| %s | %.2f | %g | %d |\n", $1, $2, $3, $4 }' "$work/alloc_sorted.tsv"
  echo
  echo "![allocator ns per request](img/alloc_ns.png)"
  echo
  echo "## Pauses"
  echo
  echo "An \`arenastat::pause_meter\` (bench/measure/include/arenastat/pause_meter.hpp) ran beside"
  echo "the benchmarks: a thread that waits 1 ms and records how much later it woke,"
  echo "with the coordinated-omission correction. The plot reads: the share of"
  echo "operations running at that rate which would have seen at least that stall."
  echo
  echo '```'
  echo "$pause_line"
  echo '```'
  echo
  echo "![pause percentiles](img/pauses.png)"
  echo
  echo "## Caches"
  echo
  if [ "$cache_rows" -gt 0 ]; then
    echo "From \`bench_cache ${BENCH_CACHE_ARGS:---json}\` (recipe and column meanings: [cache.md](cache.md));"
    echo "\"t1\" is one thread, \"penalty\" the run whose loader burns CPU on every miss."
    echo
    echo "| contender | bytes/entry | ops/s | hit rate | peak bytes | alloc B/op | VmHWM | p50 ns | p99 ns | p99.9 ns | max ns |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    awk -F'\t' '{ printf "| %s | %.1f | %.0f | %.4f | %d | %.1f | %d | %d | %d | %d | %d |\n",
                  $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11 }' "$work/cache.tsv"
    echo
    echo "Goals and ratios of this run. The throughput goals are read from the alternating"
    echo "pairs: tinylfu's and std_lru's one-thread segments, and each sharded cache's one- and"
    echo "two-thread segments, seconds apart in one process"
    echo "([cache.md](cache.md#the-zipfian-benchmark-bench_cache)); the ratios of the separate runs"
    echo "above are printed too:"
    echo
    echo '```'
    grep -E '^(host issue rate|ratio|bytes/entry|hit rate:|pairs )' "$work/cache.err" || true
    echo '```'
    if [ "$(jq '.versus | length' "$work/cache.json")" -gt 0 ]; then
      echo
      echo "| contender / peer | pair | contender Mops/s | peer Mops/s | ratio |"
      echo "|---|---:|---:|---:|---:|"
      jq -r '.versus[] | (.cache + " / " + .peer) as $c | range(0; .pairs) as $p |
             [$c, $p + 1, .ops_per_s[$p], .peer_ops_per_s[$p]] | @tsv' "$work/cache.json" |
        awk -F'\t' '{ printf "| %s | %d | %.2f | %.2f | %.2f |\n", $1, $2, $3 / 1e6, $4 / 1e6, $3 / $4 }'
      jq -r '.versus[] | [.cache + " / " + .peer, .median_ratio] | @tsv' "$work/cache.json" |
        awk -F'\t' '{ printf "| %s | median | | | %.2f |\n", $1, $2 }'
    fi
    if [ "$(jq '.scaling | length' "$work/cache.json")" -gt 0 ]; then
      echo
      echo "| sharded cache | pair | 1 thread Mops/s | 2 threads Mops/s | 2T / 1T |"
      echo "|---|---:|---:|---:|---:|"
      jq -r '.scaling[] | .cache as $c | range(0; .pairs) as $p |
             [$c, $p + 1, .ops_per_s_1t[$p], .ops_per_s_2t[$p]] | @tsv' "$work/cache.json" |
        awk -F'\t' '{ printf "| %s | %d | %.2f | %.2f | %.2f |\n", $1, $2, $3 / 1e6, $4 / 1e6, $4 / $3 }'
      jq -r '.scaling[] | [.cache, .median_ratio] | @tsv' "$work/cache.json" |
        awk -F'\t' '{ printf "| %s | median | | | %.2f |\n", $1, $2 }'
    fi
    echo
    echo "![throughput vs bytes per entry](img/cache_throughput_vs_bytes.png)"
    if [ -s "$work/budget.tsv" ]; then
      echo
      echo "Hit rate each contender reaches when every one gets the same memory budget"
      echo "(\`bench_cache ${BENCH_CACHE_BUDGET_ARGS:---json --capacity=100000 --threads=1} --budget=B\`"
      echo "for B in ${BENCH_CACHE_BUDGETS-1m 2m 4m 8m 16m}):"
      echo
      echo "| contender | budget bytes | hit rate |"
      echo "|---|---:|---:|"
      awk -F'\t' '{ printf "| %s | %d | %.4f |\n", $1, $2, $3 }' "$work/budget.tsv"
      echo
      echo "![hit rate vs budget](img/cache_hit_rate_vs_budget.png)"
    fi
  else
    echo "\`bench_cache\` was not part of this tree (or jq was missing) when this page"
    echo "was generated; the script adds its table and plots when it is."
  fi
} >"$docs/benchmarks.md"

echo "bench_docs: wrote $docs/benchmarks.md and $(ls "$img" | wc -l) plot(s) in $img"
