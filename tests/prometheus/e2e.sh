#!/usr/bin/env bash
# ctest "prometheus: ...": Debian's prometheus server scrapes a live target's
# /metrics (ARENASTAT_METRICS=127.0.0.1:<free port>) and its answers to
# /api/v1/query equal what `arenastat <pid> stats --json` says at the same
# moment, to the byte for accounts at rest; promtool validates the exposition.
#
#   e2e.sh <control_target> <arenastat CLI>
#
# Loopback only; every wait is bounded; kills what it starts. Fails (never
# skips) when prometheus, promtool, curl or jq is missing.
set -euo pipefail
target=$1 cli=$2

for tool in prometheus promtool curl jq; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool not found: run scripts/setup.sh" >&2; exit 1; }
done

work=$(mktemp -d /tmp/arenastat-prom-e2e-XXXXXX)
target_pid="" prom_pid=""
cleanup() {
  local rc=$?
  set +e
  exec 3>&-
  if [ -n "$prom_pid" ]; then kill "$prom_pid"; wait "$prom_pid"; fi 2>/dev/null
  if [ -n "$target_pid" ]; then kill "$target_pid"; wait "$target_pid"; fi 2>/dev/null
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$work/prometheus.log" ] && tail -20 "$work/prometheus.log" >&2; exit 1; }

export ARENASTAT_SOCKET_DIR=$work/sockets
mkdir -m 700 "$ARENASTAT_SOCKET_DIR"
mkfifo "$work/in"

# The target: control_target (tests/control/programs), told what to do on its stdin.
ARENASTAT_CONTROL=1 ARENASTAT_METRICS=127.0.0.1:0 "$target" <"$work/in" >"$work/target.out" 2>"$work/target.err" &
target_pid=$!
exec 3>"$work/in"
wait_lines() {  # wait_lines N: until the target printed N lines (10 s)
  for _ in $(seq 200); do [ "$(wc -l <"$work/target.out")" -ge "$1" ] && return 0; sleep 0.05; done
  fail "control_target printed $(cat "$work/target.out") (stderr: $(cat "$work/target.err"))"
}
wait_lines 1
pid=$(awk '/^ready/{print $2}' "$work/target.out")
[ "$pid" = "$target_pid" ] || fail "control_target is not ready: $(cat "$work/target.out")"
port=$("$cli" "$pid" info | awk '/^metrics_port /{print $2}')
[ -n "$port" ] && [ "$port" -gt 0 ] || fail "no /metrics endpoint: $(cat "$work/target.err")"
echo "target pid $pid serves http://127.0.0.1:$port/metrics"

# The exposition passes promtool's lint, over HTTP and over the control socket.
curl -sf "http://127.0.0.1:$port/metrics" >"$work/http.prom" || fail "GET /metrics failed"
promtool check metrics <"$work/http.prom" || fail "promtool check metrics rejects the HTTP exposition"
"$cli" "$pid" metrics >"$work/socket.prom"
promtool check metrics <"$work/socket.prom" || fail "promtool check metrics rejects 'arenastat <pid> metrics'"

# Prometheus on a free loopback port, scraping every second.
cat >"$work/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: arenastat
    static_configs:
      - targets: ['127.0.0.1:$port']
YML
started=""
for _ in 1 2 3 4 5; do
  pport=$((20000 + RANDOM % 30000))
  (exec 9<>"/dev/tcp/127.0.0.1/$pport") 2>/dev/null && continue  # taken
  prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
    --web.listen-address="127.0.0.1:$pport" --log.level=warn >"$work/prometheus.log" 2>&1 &
  prom_pid=$!
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$pport/-/ready" >/dev/null 2>&1 && { started=yes; break; }
    kill -0 "$prom_pid" 2>/dev/null || break
    sleep 0.2
  done
  [ -n "$started" ] && break
  kill "$prom_pid" 2>/dev/null; wait "$prom_pid" 2>/dev/null || true; prom_pid=""
done
[ -n "$started" ] || fail "prometheus did not start"
echo "prometheus pid $prom_pid on 127.0.0.1:$pport"

api() { curl -sf --get --data-urlencode "query=$1" "http://127.0.0.1:$pport/api/v1/query"; }
value() { api "$1" | jq -r '.data.result[0].value[1] // empty'; }
stamp() { api "$1" | jq -r '.data.result[0].value[0] // empty'; }  # evaluation time, not the sample's

# Two scrapes.
for _ in $(seq 150); do
  n=$(value 'count_over_time(up{job="arenastat"}[1m])')
  [ -n "$n" ] && [ "$n" -ge 2 ] && [ "$(value 'up{job="arenastat"}')" = 1 ] && break
  sleep 0.2
done
[ -n "$n" ] && [ "$n" -ge 2 ] || fail "fewer than two scrapes in 30 s"
echo "scraped $n times"

# Until a scrape taken after time $1 is in: the sample's own timestamp.
wait_scrape_after() {
  for _ in $(seq 150); do
    t=$(value 'timestamp(arenastat_account_live_bytes{account="cache/items"})')
    [ -n "$t" ] && awk -v a="$t" -v b="$1" 'BEGIN{exit !(a > b)}' && return 0
    sleep 0.2
  done
  fail "no scrape after $1 within 30 s"
}

# Every account and scope group: Prometheus's value equals stats --json's.
compare() {
  local json checked=0
  json=$("$cli" "$pid" stats --json)
  while IFS=$'\t' read -r name live peak allocated allocations frees; do
    for pair in "live_bytes $live" "peak_bytes $peak" "allocated_bytes_total $allocated" \
                "allocations_total $allocations" "frees_total $frees"; do
      set -- $pair
      got=$(value "arenastat_account_$1{job=\"arenastat\",account=\"$name\"}")
      [ "$got" = "$2" ] || fail "account $name: Prometheus says arenastat_account_$1 = '$got', stats --json says $2"
      checked=$((checked + 1))
    done
  done < <(jq -r '.entries[] | select(.kind=="account") |
                  [.name, .live_bytes, .peak_bytes, .allocated_bytes, .allocations, .frees] | @tsv' <<<"$json")
  # Scope groups (depth 1): the largest peak and the sum of the runs of the names under each first part.
  while IFS=$'\t' read -r group peak runs; do
    got=$(value "arenastat_scope_peak_bytes{job=\"arenastat\",scope=\"$group\"}")
    [ "$got" = "$peak" ] || fail "scope $group: Prometheus peak '$got', stats --json $peak"
    got=$(value "arenastat_scope_runs_total{job=\"arenastat\",scope=\"$group\"}")
    [ "$got" = "$runs" ] || fail "scope $group: Prometheus runs '$got', stats --json $runs"
    checked=$((checked + 2))
  done < <(jq -r '[.entries[] | select(.kind=="scope") | {g: (.name | split("/") | map(select(. != "")) | .[0]), peak: .peak_bytes, runs: .count}]
                  | group_by(.g)[] | [.[0].g, (map(.peak) | max), (map(.runs) | add)] | @tsv' <<<"$json")
  rss=$(value 'arenastat_process_rss_bytes{job="arenastat"}')
  [ -n "$rss" ] && [ "$rss" -gt 0 ] || fail "arenastat_process_rss_bytes is '$rss'"
  echo "$checked values equal"
  [ "$checked" -ge 12 ] || fail "only $checked values compared"
}

compare

# Change the target, let it come to rest, and compare again once a later scrape is in.
echo "grow 7" >&3
echo "scope task/index 5000" >&3
echo "scope build/link 7000" >&3
wait_lines 4
rest=$(date +%s.%N)
wait_scrape_after "$rest"
[ "$(value 'arenastat_account_live_bytes{account="cache/items"}')" = 17000 ] || fail "cache/items did not reach 17000"
compare
echo "PASS"
