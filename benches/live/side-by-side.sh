#!/usr/bin/env bash
# tidal beside the Kubernetes descheduler on the same real kube-apiserver: cold start, peak memory, steady
# cycle and memory once synced, and the floor under any cold start (benches/list_floor.rs).
#   side-by-side.sh                 a fresh server, populated (shape.py, --scale 1), then the measurements
#   side-by-side.sh --reuse         the server that is up (server.sh up; populated), measurements only
#   side-by-side.sh --pairs 5 --steady 90 --scale 0.1
# Cold start is one process from its start to its exit: `descheduler --descheduling-interval 0` (list
# everything through its informers, run the profile once, exit) and `tidal report --kubeconfig` (list
# everything through the watches `tidal run` uses, plan once, print, exit), interleaved in pairs whose
# order alternates, each followed by the floor. Steady: each as a long-running process for --steady
# seconds, one after the other, then its loop (descheduler_loop_duration_seconds) or its cycle and plan
# (tidal_cycle_duration_seconds, tidal_plan_duration_seconds) mean from its metrics and its RSS.
# Both run the same lowNodeUtilization (thresholds 20%, targets 50%, requests) with the admin identity;
# the descheduler in its real mode with an eviction limit of 0 (its --dry-run copies the cluster into a
# fake client every loop), tidal with the policy in DryRun. Output: $LIVE/runs/<UTC time>-side-by-side/,
# its table in compare.txt (side_by_side.py).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
export LIVE=${LIVE:-/tmp/tidal-live}
TIDAL=${TIDAL:-$REPO/target/release/tidal}
DESCHEDULER=${DESCHEDULER:-$LIVE/bin/descheduler}
PAIRS=5 STEADY=90 REUSE=0 SCALE=1 OUT=
PORT_BASE=${PORT_BASE:-18490}
while [ $# -gt 0 ]; do
  case "$1" in
    --reuse) REUSE=1; shift ;;
    --pairs) PAIRS=$2; shift 2 ;;
    --steady) STEADY=$2; shift 2 ;;
    --scale) SCALE=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
[ -x "$TIDAL" ] || { echo "no tidal binary at $TIDAL (cargo build --release --locked)" >&2; exit 1; }
[ -x "$DESCHEDULER" ] || { echo "no descheduler at $DESCHEDULER (setup.sh builds it)" >&2; exit 1; }
# the floor: the bench binary that reads the same watch-lists and decodes nothing
FLOOR=${FLOOR:-$(cd "$REPO" && cargo bench --locked --no-run --bench list_floor --message-format=json 2>/dev/null |
  python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "list_floor" and m.get("executable"):
        print(m["executable"])')}
[ -x "$FLOOR" ] || { echo "could not build the floor (cargo bench --no-run --bench list_floor)" >&2; exit 1; }
OUT=${OUT:-$LIVE/runs/$(date -u +%Y%m%dT%H%M%SZ)-side-by-side}
mkdir -p "$OUT"
unset POD_NAME POD_NAMESPACE
t0=$(date +%s)
log() { echo "[side-by-side +$(( $(date +%s) - t0 ))s $(date -u +%H:%M:%S)] $*" | tee -a "$OUT/run.log"; }
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

if [ "$REUSE" = 1 ]; then
  K=$LIVE/cp/admin.kubeconfig
  "$HERE/server.sh" status | grep -q ready || { echo "no server is up (server.sh up, or run without --reuse)" >&2; exit 1; }
else
  "$HERE/server.sh" down >/dev/null
  K=$(SERVER_NICE=0 "$HERE/server.sh" up)
  "$TIDAL" crds | kubectl --kubeconfig "$K" apply -f - >/dev/null
  kubectl --kubeconfig "$K" apply -f "$HERE/podgroup-crd.yaml" >/dev/null
  python3 "$HERE/populate.py" cluster --kubeconfig "$K" --scale "$SCALE" 2>&1 | tee "$OUT/populate.log"
fi
"$HERE/server.sh" nice "${SERVER_NICE:-19}"
kubectl --kubeconfig "$K" wait --for condition=established --timeout 60s crd/deschedulingpolicies.tidal.dev >/dev/null

kubectl --kubeconfig "$K" apply -f - >/dev/null <<'EOF'
apiVersion: tidal.dev/v1alpha1
kind: DeschedulingPolicy
metadata:
  name: side-by-side
spec:
  mode: DryRun
  interval: 10s
  strategies:
    lowNodeUtilization:
      thresholds: {cpu: 20, memory: 20, pods: 20}
      targetThresholds: {cpu: 50, memory: 50, pods: 50}
      usage: {source: Requests}
EOF
cat > "$OUT/descheduler-policy.yaml" <<'EOF'
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
maxNoOfPodsToEvictTotal: 0
profiles:
  - name: side-by-side
    pluginConfig:
      - name: DefaultEvictor
      - name: LowNodeUtilization
        args:
          thresholds: {cpu: 20, memory: 20, pods: 20}
          targetThresholds: {cpu: 50, memory: 50, pods: 50}
    plugins:
      balance:
        enabled: [LowNodeUtilization]
EOF
log "tidal $("$TIDAL" --version); descheduler $("$DESCHEDULER" version 2>/dev/null | head -1); $(kubectl --kubeconfig "$K" get --raw /api/v1/pods?limit=1 >/dev/null && echo server ready); load $(cut -d' ' -f1-3 /proc/loadavg)"

echo "pair,who,seconds,peak_kb" > "$OUT/cold.csv"
timed() { # pair who command...: one cold start, its wall time and peak RSS appended to cold.csv
  local pair=$1 who=$2; shift 2
  /usr/bin/time -f "%e %M" -o "$OUT/time.tmp" "$@" > "$OUT/$who-$pair.out" 2> "$OUT/$who-$pair.err" ||
    { echo "$who failed, see $OUT/$who-$pair.err" >&2; exit 1; }
  read -r seconds kb < "$OUT/time.tmp"
  echo "$pair,$who,$seconds,$kb" >> "$OUT/cold.csv"
  log "pair $pair: $who ${seconds}s, peak $((kb / 1024)) MiB"
}
descheduler_once() { timed "$1" descheduler "$DESCHEDULER" --kubeconfig "$K" --policy-config-file "$OUT/descheduler-policy.yaml" \
  --descheduling-interval 0 --disable-metrics --v 1; }
tidal_once() { timed "$1" tidal "$TIDAL" report --kubeconfig "$K" --policy side-by-side --timeout 10m; }
for pair in $(seq "$PAIRS"); do
  if [ $((pair % 2)) = 1 ]; then descheduler_once "$pair"; tidal_once "$pair"
  else tidal_once "$pair"; descheduler_once "$pair"; fi
  timed "$pair" floor env TIDAL_FLOOR_KUBECONFIG="$K" "$FLOOR"
done

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
log "steady: the descheduler every 10s for ${STEADY}s"
"$DESCHEDULER" --kubeconfig "$K" --policy-config-file "$OUT/descheduler-policy.yaml" --descheduling-interval 10s \
  --bind-address 127.0.0.1 --secure-port "$PORT_BASE" --cert-dir "$OUT/descheduler-certs" --v 1 \
  > "$OUT/descheduler-steady.log" 2>&1 &
pid=$!; pids+=("$pid")
sleep "$STEADY"
curl -sk "https://127.0.0.1:$PORT_BASE/metrics" > "$OUT/descheduler.metrics"
echo "descheduler $(rss_kb "$pid")" > "$OUT/steady-rss.txt"
kill "$pid"; wait "$pid" 2>/dev/null || true

log "steady: tidal run, the policy every 10s, for ${STEADY}s"
"$TIDAL" run --kubeconfig "$K" --leader-elect=false --metrics-bind-address "127.0.0.1:$((PORT_BASE + 1))" \
  --health-probe-bind-address "127.0.0.1:$((PORT_BASE + 2))" > "$OUT/tidal-steady.log" 2>&1 &
pid=$!; pids+=("$pid")
sleep "$STEADY"
curl -s "http://127.0.0.1:$((PORT_BASE + 1))/metrics" > "$OUT/tidal.metrics"
echo "tidal $(rss_kb "$pid")" >> "$OUT/steady-rss.txt"
kill "$pid"; wait "$pid" 2>/dev/null || true

python3 "$HERE/side_by_side.py" "$OUT" | tee "$OUT/compare.txt"
