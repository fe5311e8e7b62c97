#!/usr/bin/env bash
# The demo: set-up, build, run the compiler-like workload and print its report.
#   scripts/demo.sh [demo options, e.g. --methods=2000 --linger=30]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/release -j"$(nproc)" --target arenastat_demo arenastat_installable   # the demo, the CLI and every installed target
exec build/release/bench/arenastat_demo "$@"
