#!/usr/bin/env bash
# ctest "prometheus: ...rules...": the example rules load and pass their unit tests.
# Fails (never skips) when promtool is missing: scripts/setup.sh installs it.
set -euo pipefail
dir=$1
command -v promtool >/dev/null || { echo "FAIL: promtool not found (Debian package prometheus): run scripts/setup.sh" >&2; exit 1; }
cd "$dir"
promtool check rules arenastat.rules.yml
promtool test rules arenastat.rules.test.yml
