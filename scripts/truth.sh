#!/usr/bin/env bash
# The side-by-side proof (docs/truth.md): builds bench_truth in
# Release, runs it tracked (its own checks: jemalloc per-arena statistics,
# RSS, self-count), times plain and tracked runs interleaved, runs it under
# heaptrack (whole workload for the time; each heap component alone for the
# peaks: heaptrack's per-site "peak" is the site's bytes at the moment of the
# process's highest total, which is the component's own peak only when it runs
# alone), and prints one table.
#
#   scripts/truth.sh [--scale=F] [--reps=N] [--no-setup]
# Environment: BUILD_DIR (default build/truth). Exit status 1 when a goal is
# not met, 2 on a tool or parse error.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

scale=1
reps=5
setup=1
for a in "$@"; do
  case "$a" in
    --scale=*) scale=${a#--scale=} ;;
    --reps=*) reps=${a#--reps=} ;;
    --no-setup) setup=0 ;;
    *) echo "truth.sh: unknown option '$a' (expected --scale=F, --reps=N, --no-setup)" >&2; exit 2 ;;
  esac
done
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "truth.sh: --reps must be a positive integer, got '$reps'" >&2; exit 2; }

die() { echo "truth.sh: $*" >&2; exit 2; }
commas() { echo "$1" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta'; }
secs() { awk -v v="$1" 'BEGIN { printf "%.3f", v }'; }

[ "$setup" = 1 ] && bash scripts/setup.sh
for tool in heaptrack heaptrack_print jq; do
  command -v "$tool" >/dev/null || die "$tool not found (scripts/setup.sh installs it)"
done

build=${BUILD_DIR:-build/truth}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j2 --target bench_truth >/dev/null
bin=$build/bench/bench_truth
[ -x "$bin" ] || die "no binary at $bin after the build"
work=$(mktemp -d /tmp/truth.XXXXXX)
trap 'rm -rf "$work"' EXIT

# Runs the bench with --json into $work/$1.json (exit status 1 = a check failed: kept).
run_json() {
  local out=$1; shift
  local rc=0
  "$@" --json="$work/$out.json" >"$work/$out.txt" || rc=$?
  [ $rc -le 1 ] || die "'$*' failed with status $rc"
  jq -e '.workload_seconds' "$work/$out.json" >/dev/null || die "'$*' printed no workload_seconds"
}

echo "truth.sh: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); scale $scale, $reps repetitions" >&2

# 1. The bench's own checks, tracked.
run_json checks "$bin" --scale="$scale"

# 2. Time: plain and tracked, interleaved.
for r in $(seq 1 "$reps"); do
  run_json "plain$r" "$bin" --scale="$scale" --mode=plain
  run_json "tracked$r" "$bin" --scale="$scale" --mode=tracked
done
median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
field_median() {  # prefix field
  for r in $(seq 1 "$reps"); do jq -r ".$2" "$work/$1$r.json"; done | median
}
plain_wall=$(field_median plain workload_seconds)
plain_cpu=$(field_median plain cpu_seconds)
tracked_wall=$(field_median tracked workload_seconds)
tracked_cpu=$(field_median tracked cpu_seconds)

# 3. heaptrack: the whole workload (time), then each heap component alone (peaks).
heaptrack_run() {  # name, bench args...
  local name=$1; shift
  local rc=0
  heaptrack -o "$work/$name" "$bin" "$@" --json="$work/$name.json" >"$work/$name.log" 2>&1 || rc=$?
  [ $rc -le 1 ] || die "heaptrack run '$name' failed with status $rc (log: $(tail -3 "$work/$name.log"))"
  jq -e '.workload_seconds' "$work/$name.json" >/dev/null || die "the bench under heaptrack ('$name') wrote no JSON"
  local data
  data=$(ls "$work/$name".*zst "$work/$name".*gz 2>/dev/null | head -1 || true)
  [ -n "$data" ] || die "heaptrack wrote no data file for '$name' (log: $(tail -3 "$work/$name.log"))"
  heaptrack_print -f "$data" --print-peaks --peak-limit=50 --print-allocators=0 --print-temporary=0 \
    --print-leaks=0 >"$work/$name.txt" 2>"$work/$name.print.log" ||
    die "heaptrack_print failed on $data: $(tail -3 "$work/$name.print.log")"
  grep -q '^PEAK MEMORY CONSUMERS' "$work/$name.txt" || die "heaptrack_print output for '$name' has no PEAK MEMORY CONSUMERS section"
  grep -q '^peak heap memory consumption:' "$work/$name.txt" || die "heaptrack_print output for '$name' has no 'peak heap memory consumption' line"
}
# heaptrack's sizes: 1000-based, e.g. 20.97M, 72.70K, 256B.
to_bytes() {
  awk -v s="$1" 'BEGIN {
    if (match(s, /^[0-9]+(\.[0-9]+)?/) == 0) { print "bad"; exit }
    n = substr(s, 1, RLENGTH); u = substr(s, RLENGTH + 1)
    m = (u == "" || u == "B") ? 1 : (u == "K") ? 1e3 : (u == "M") ? 1e6 : (u == "G") ? 1e9 : (u == "T") ? 1e12 : -1
    if (m < 0) { print "bad"; exit }
    printf "%.0f\n", n * m }'
}
# The peak heaptrack attributes to a site function (sum of its merged entries).
site_peak() {  # file, function name
  local raw
  raw=$(awk -v fn="$2" '
    /^PEAK MEMORY CONSUMERS/ { on = 1; next }
    on && /^[A-Z ]+$/ { on = 0 }
    on && / peak memory consumed over [0-9]+ calls from$/ { size = $1; getline loc; if (index(loc, fn "(") > 0) print size }
  ' "$1")
  [ -n "$raw" ] || die "heaptrack_print output $1 has no peak entry for $2 (is the site inlined or folded?)"
  local total=0 b
  for s in $raw; do
    b=$(to_bytes "$s"); [ "$b" != bad ] || die "cannot parse heaptrack size '$s' in $1"
    total=$((total + b))
  done
  echo "$total"
}
peak_total() {
  local s
  s=$(sed -n 's/^peak heap memory consumption: //p' "$1" | head -1)
  local b; b=$(to_bytes "$s"); [ "$b" != bad ] || die "cannot parse heaptrack's peak heap memory consumption '$s' in $1"
  echo "$b"
}

heaptrack_run ht_all --scale="$scale"
ht_wall=$(jq -r .workload_seconds "$work/ht_all.json")
ht_cpu=$(jq -r .cpu_seconds "$work/ht_all.json")

rows=$work/rows.tsv
: >"$rows"
failed=0
row() {  # check measured goal met
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$rows"
  [ "$4" != "**no**" ] || failed=$((failed + 1))
}
# The bench's own rows.
jq -r '.checks[] | [.check, .measured, .goal, (if .met == null then "n/a" elif .met then "yes" else "**no**" end)] | @tsv' \
  "$work/checks.json" >"$work/bench_rows.tsv"
while IFS=$'\t' read -r c m g t; do row "$c" "$m" "$g" "$t"; done <"$work/bench_rows.tsv"

for comp in compiler:compiler_heap_alloc symbols:symbols_heap_alloc cache:cache_heap_alloc; do
  name=${comp%%:*}; site=${comp#*:}
  heaptrack_run "ht_$name" --scale="$scale" --only="$name"
  ht=$(site_peak "$work/ht_$name.txt" "$site")
  ours=$(jq -r ".components.$name.account_peak" "$work/ht_$name.json")
  [[ "$ours" =~ ^[0-9]+$ ]] || die "the bench's JSON for '$name' has no components.$name.account_peak"
  pct=$(awk -v a="$ours" -v b="$ht" 'BEGIN { printf "%+.3f", (a - b) * 100 / b }')
  met=$(awk -v a="$ours" -v b="$ht" 'BEGIN { d = (a - b) / b; if (d < 0) d = -d; print (d <= 0.02) ? "yes" : "**no**" }')
  row "heaptrack: $name peak, account '$name' vs $site (run alone)" \
      "$(commas "$ours") vs $(commas "$ht") ($pct%)" "within 2%" "$met"
done
q_total=$(peak_total "$work/ht_all.txt")
row "heaptrack: queue (jemalloc_resource arena)" "not attributable: mallocx is not intercepted by heaptrack" "where attributable" "n/a"

overhead=$(awk -v t="$tracked_wall" -v p="$plain_wall" 'BEGIN { printf "%+.1f", (t / p - 1) * 100 }')
overhead_cpu=$(awk -v t="$tracked_cpu" -v p="$plain_cpu" 'BEGIN { printf "%+.1f", (t / p - 1) * 100 }')
met_wall=$(awk -v t="$tracked_wall" -v p="$plain_wall" 'BEGIN { print (t / p - 1 <= 0.03) ? "yes" : "**no**" }')
met_cpu=$(awk -v t="$tracked_cpu" -v p="$plain_cpu" 'BEGIN { print (t / p - 1 <= 0.03) ? "yes" : "**no**" }')
ht_ratio=$(awk -v t="$ht_wall" -v p="$plain_wall" 'BEGIN { printf "%.2fx", t / p }')
ht_ratio_cpu=$(awk -v t="$ht_cpu" -v p="$plain_cpu" 'BEGIN { printf "%.2fx", t / p }')
row "time, wall (median of $reps): plain vs arenastat tracking" "$(secs "$plain_wall") s vs $(secs "$tracked_wall") s ($overhead%)" "overhead <= 3%" "$met_wall"
row "time, CPU (median of $reps): plain vs arenastat tracking" "$(secs "$plain_cpu") s vs $(secs "$tracked_cpu") s ($overhead_cpu%)" "overhead <= 3%" "$met_cpu"
row "time under heaptrack (1 run): wall, CPU" "$(secs "$ht_wall") s ($ht_ratio plain), $(secs "$ht_cpu") s ($ht_ratio_cpu plain); heaptrack's peak heap $(commas "$q_total")" "printed beside it" "n/a"

echo
echo "bench_truth --scale=$scale on $(lscpu | sed -n 's/^Model name: *//p' | head -1) ($(nproc) CPUs), $(date -u +%Y-%m-%d)"
echo
echo "| check | measured | goal | met |"
echo "|---|---|---|---|"
while IFS=$'\t' read -r c m g t; do echo "| $c | $m | $g | $t |"; done <"$rows"
echo
jq -r '.checks[] | select(.met == false and .note != "") | "not met: \(.check): \(.note)"' "$work/checks.json"
echo "goals not met: $failed"
[ "$failed" = 0 ]
