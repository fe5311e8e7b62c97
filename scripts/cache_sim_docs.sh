#!/usr/bin/env bash
# cache_sim_docs.sh: replays the workloads of docs/cache.md ("Trace-driven
# simulation") through cache_sim, prints the Markdown table and draws
# docs/img/cache_hit_rates.png (the middle size of each workload).
#
#   scripts/cache_sim_docs.sh BUILD_DIR TRACE_DIR
#
# TRACE_DIR holds the public traces (not in this repository): from Caffeine's
# simulator resources (github.com/ben-manes/caffeine, simulator/src/main/
# resources/.../parser/) lirs/{loop,cs,gli,sprite,multi2,ps}.trace.gz and
# scarab/scarab-recs.trace.xz; from libCacheSim (github.com/1a1a11a/libCacheSim)
# data/cloudPhysicsIO.txt. Needs python3 and gnuplot.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: cache_sim_docs.sh BUILD_DIR TRACE_DIR}
traces=${2:?usage: cache_sim_docs.sh BUILD_DIR TRACE_DIR}
sim=$build/bench/cache_sim
out=${OUT:-$build/cache_sim_docs.json}
policies=ref_lru,arc,lirs,caffeine,opt,lru,tinylfu_fixed,tinylfu_w99,tinylfu

"$sim" --json --policies=$policies \
  --sizes=250,500,1000 lirs:"$traces"/loop.trace.gz lirs:"$traces"/cs.trace.gz lirs:"$traces"/gli.trace.gz \
  lirs:"$traces"/sprite.trace.gz lirs:"$traces"/multi2.trace.gz lirs:"$traces"/ps.trace.gz \
  --sizes=256,512,1024 plain:"$traces"/cloudPhysicsIO.txt \
  --sizes=25000,50000,100000 longs:"$traces"/scarab-recs.trace.xz \
  --sizes=1000,2500,4500 loop:keys=5000,length=1000000 \
  --sizes=1000,5000,20000 zipf:keys=100000,length=2000000 zipf-phase:keys=100000,length=2000000 \
  scan:keys=20000,scan=5000,every=20000,length=2000000 recency:length=2000000 >"$out"

python3 - "$out" "$build/cache_sim_docs.dat" <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))["results"]
names = ["ref_lru", "arc", "lirs", "caffeine", "opt", "lru", "tinylfu_fixed", "tinylfu_w99", "tinylfu"]
table = {}
for r in rows:
    table.setdefault((r["trace"], r["size"]), {})[r["policy"]] = 100 * r["hit_rate"]
def short(t):
    return t.split("/")[-1] if ":" in t and "/" in t else t
print("| workload | size | " + " | ".join(names) + " | tinylfu - LRU | tinylfu - best of LRU/ARC/LIRS/caffeine |")
print("|---|---|" + "---|" * (len(names) + 2))
traces = []
for (t, n), h in table.items():
    if t not in traces: traces.append(t)
    best = max(h["ref_lru"], h["arc"], h["lirs"], h["caffeine"])
    cells = " | ".join("%.2f" % h[p] for p in names)
    print("| %s | %d | %s | %+.2f | %+.2f |" % (short(t), n, cells, h["tinylfu"] - h["ref_lru"], h["tinylfu"] - best))
with open(sys.argv[2], "w") as f:
    f.write("workload " + " ".join(names) + "\n")
    for t in traces:
        sizes = sorted(n for (u, n) in table if u == t)
        h = table[(t, sizes[len(sizes) // 2])]
        f.write('"%s@%d" %s\n' % (short(t).split(":")[0] if "=" in t else short(t), sizes[len(sizes) // 2],
                                  " ".join("%.2f" % h[p] for p in names)))
EOF

gnuplot <<EOF
set terminal pngcairo size 1100,480 font ",9" noenhanced
set output "$root/docs/img/cache_hit_rates.png"
set title "Hit rate per workload and policy (cache_sim, middle size of each workload; higher is better)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set ylabel "hit rate %"
set yrange [0:100]
set grid ytics
set xtics rotate by -30 left nomirror
set key top left horizontal
set bmargin 6
# One colour per policy (gnuplot's default set repeats after 8); tinylfu black.
set linetype 1 lc rgb "#9467bd"
set linetype 2 lc rgb "#2ca02c"
set linetype 3 lc rgb "#56b4e9"
set linetype 4 lc rgb "#e69f00"
set linetype 5 lc rgb "#f0e442"
set linetype 6 lc rgb "#0072b2"
set linetype 7 lc rgb "#e41a1c"
set linetype 8 lc rgb "#bbbbbb"
set linetype 9 lc rgb "#000000"
plot for [i=2:10] "$build/cache_sim_docs.dat" using i:xtic(1) title columnheader(i)
EOF
echo "cache_sim_docs: $out, docs/img/cache_hit_rates.png" >&2
