#!/usr/bin/env bash
# One drain run on the live API server, from a fresh server to compare.py's table (README.md):
#   server up (fresh) -> CRDs -> populate -> tidal's RBAC and token -> kubelet stand-in + sampler -> zones
#   closing $LEAD minutes ahead -> `tidal timeline -o json` $TIMELINE_AT minutes before the close -> `tidal run`
#   -> wait past the last close -> collect -> compare.py -> server down.
# usage: run-drain.sh [--scale S] [--leader-kill] [--restart-apiserver] [--throttle-evictions] [--lead MIN]
#                     [--timeline-at MIN] [--keep] [--out DIR]
#   --leader-kill  two replicas with leader election; the leader gets SIGKILL $KILL_AFTER (180) seconds
#                  after rz3's drain started, and the other takes over
#   --restart-apiserver   kube-apiserver stopped and started again on the same etcd $RESTART_AFTER (90)
#                  seconds after rz1's drain started
#   --throttle-evictions  evictions answered 429 by API Priority and Fairness (throttle-evictions.yaml)
#                  from $THROTTLE_AFTER (210) seconds after rz1's drain started, for $THROTTLE_FOR (60) seconds
#   --keep         leave the server up afterwards (server.sh down stops it)
# env: TIDAL (default <repo>/target/release/tidal), LIVE (/tmp/tidal-live), KILL_AFTER, SETTLE (60 s after
# the last close before collecting), PORT_BASE (18480: metrics and health ports of the replicas),
# SERVER_NICE (19: the servers' niceness while tidal runs; they populate at 0).
set -euo pipefail
# All in one function, read whole before it runs: bash reads a script as it goes, so editing this file
# during a run would otherwise change the run, or break it, at its collection step.
main() {
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
export LIVE=${LIVE:-/tmp/tidal-live}
TIDAL=${TIDAL:-$REPO/target/release/tidal}
SCALE=1 VARIANT=single LEAD=24 TIMELINE_AT=23 KEEP=0 OUT= RESTART=0 THROTTLE=0
KILL_AFTER=${KILL_AFTER:-180}
RESTART_AFTER=${RESTART_AFTER:-90}
THROTTLE_AFTER=${THROTTLE_AFTER:-210}
THROTTLE_FOR=${THROTTLE_FOR:-60}
SETTLE=${SETTLE:-60}
PORT_BASE=${PORT_BASE:-18480}
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) SCALE=$2; shift 2 ;;
    --leader-kill) VARIANT=leader-kill; shift ;;
    --restart-apiserver) RESTART=1; shift ;;
    --throttle-evictions) THROTTLE=1; shift ;;
    --lead) LEAD=$2; shift 2 ;;
    --timeline-at) TIMELINE_AT=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
[ -x "$TIDAL" ] || { echo "no tidal binary at $TIDAL (cargo build --release --locked)" >&2; exit 1; }
[ "$TIMELINE_AT" -lt "$LEAD" ] || { echo "--timeline-at must be less than --lead" >&2; exit 2; }
NAME=$VARIANT
[ "$RESTART" = 0 ] || NAME=$NAME-restart
[ "$THROTTLE" = 0 ] || NAME=$NAME-throttle
OUT=${OUT:-$LIVE/runs/$(date -u +%Y%m%dT%H%M%SZ)-$NAME}
mkdir -p "$OUT/sampler"
unset POD_NAME POD_NAMESPACE  # tidal reads them as --identity / the lease namespace
t0=$(date +%s)
log() { echo "[run +$(( $(date +%s) - t0 ))s $(date -u +%H:%M:%S)] $*" | tee -a "$OUT/run.log"; }
pids=()
cleanup() {
  # only what this script started, by pid
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  cp "$LIVE"/cp/*.log "$OUT/" 2>/dev/null || true
  if [ "$KEEP" = 0 ]; then "$HERE/server.sh" down >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
for port in $PORT_BASE $((PORT_BASE + 1)) $((PORT_BASE + 2)) $((PORT_BASE + 3)); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "port $port is taken; set PORT_BASE" >&2; exit 1; fi
done

log "run $OUT: $NAME, scale $SCALE, tidal $("$TIDAL" --version), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$HERE/server.sh" down >/dev/null
K=$("$HERE/server.sh" up)
kc() { kubectl --kubeconfig "$K" "$@"; }
log "server up: $K"

"$TIDAL" crds | kc apply -f - >/dev/null
kc apply -f "$HERE/podgroup-crd.yaml" >/dev/null
# a CRD applied a moment ago may have no status yet, which `kubectl wait` takes for an error
for _ in $(seq 30); do
  kc wait --for condition=established --timeout 60s crd/podgroups.scheduling.volcano.sh \
    crd/revocablezones.tidal.dev crd/deschedulingpolicies.tidal.dev >/dev/null 2>&1 && break
  sleep 1
done
log "CRDs applied"

p0=$(date +%s)
"$HERE/server.sh" nice 0
python3 "$HERE/populate.py" cluster --kubeconfig "$K" --scale "$SCALE" 2>&1 | tee "$OUT/populate.log"
populate_s=$(( $(date +%s) - p0 ))
"$HERE/server.sh" nice "${SERVER_NICE:-19}"
log "populated in ${populate_s}s (servers at nice 0 meanwhile, now at ${SERVER_NICE:-19})"

kc apply -f "$HERE/rbac.yaml" >/dev/null
TK=$OUT/tidal.kubeconfig
token=$(kc create token tidal-controller -n tidal-system --duration 3h)
python3 - "$K" "$TK" "$token" <<'EOF'
import json, sys
admin, out, token = sys.argv[1:]
config = json.load(open(admin))
config["users"] = [{"name": "tidal-controller", "user": {"token": token}}]
config["contexts"][0]["context"]["user"] = "tidal-controller"
json.dump(config, open(out, "w"), indent=1)
EOF
chmod 600 "$TK"
# tidal's identity must not delete pods: the run would prove nothing if it could
[ "$(kubectl --kubeconfig "$TK" auth can-i delete pods -A)" = no ] || { echo "tidal may delete pods" >&2; exit 1; }
[ "$(kubectl --kubeconfig "$TK" auth can-i create pods --subresource eviction -A)" = yes ] || {
  echo "tidal may not evict pods" >&2; exit 1; }
log "RBAC and token for system:serviceaccount:tidal-system:tidal-controller"

python3 "$HERE/kubelet.py" --kubeconfig "$K" --log "$OUT/kubelet-deletions.csv" > "$OUT/kubelet.log" 2>&1 &
pids+=($!)
python3 "$HERE/sampler.py" --kubeconfig "$K" --out "$OUT/sampler" > "$OUT/sampler.log" 2>&1 &
pids+=($!)
for _ in $(seq 120); do [ -f "$OUT/sampler/summary.json" ] && break; sleep 1; done
[ -f "$OUT/sampler/summary.json" ] || { echo "the sampler did not list the pods" >&2; exit 1; }
log "kubelet stand-in and sampler watching: $(cat "$OUT/sampler.log")"

# the close: a whole minute $LEAD minutes ahead (rz2 two minutes later)
close_s=$(( ( $(date +%s) + LEAD * 60 + 59 ) / 60 * 60 ))
CLOSE=$(date -u -d "@$close_s" +%Y-%m-%dT%H:%M:%SZ)
python3 "$HERE/populate.py" zones --kubeconfig "$K" --scale "$SCALE" --close "$CLOSE" | tee -a "$OUT/run.log"

wait_until() { local now; now=$(date +%s); [ "$1" -le "$now" ] || sleep $(( $1 - now )); }
wait_until $(( close_s - TIMELINE_AT * 60 ))
tl0=$(date +%s.%N)
timeline_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)
"$TIDAL" timeline --kubeconfig "$TK" -o json > "$OUT/timeline.json" 2> "$OUT/timeline.err"
timeline_s=$(python3 -c "print(round($(date +%s.%N) - $tl0, 1))")
log "timeline at $timeline_at took $timeline_s s"

run_tidal() { # identity metrics-port health-port extra-flags...
  local id=$1 mp=$2 hp=$3; shift 3
  "$TIDAL" run --kubeconfig "$TK" --metrics-bind-address "127.0.0.1:$mp" --health-probe-bind-address "127.0.0.1:$hp" \
    "$@" > "$OUT/tidal-$id.log" 2>&1 &
  pids+=($!)
  echo "$!" > "$OUT/tidal-$id.pid"
}
if [ "$VARIANT" = single ]; then
  run_tidal a $PORT_BASE $((PORT_BASE + 1)) --leader-elect=false
else
  run_tidal a $PORT_BASE $((PORT_BASE + 1)) --leader-elect=true --identity tidal-a --leader-elect-resource-namespace tidal-system
  run_tidal b $((PORT_BASE + 2)) $((PORT_BASE + 3)) --leader-elect=true --identity tidal-b --leader-elect-resource-namespace tidal-system
fi
for _ in $(seq 120); do curl -sf "127.0.0.1:$((PORT_BASE + 1))/readyz" >/dev/null && break; sleep 1; done
log "tidal run started ($VARIANT), ready: $(curl -s "127.0.0.1:$((PORT_BASE + 1))/readyz" | head -c 80)"
# The same timeline as a table, for reading only (compare.py reads the JSON). Taken now rather than before
# tidal starts, which it would delay by as long again; no drain starts for minutes yet.
"$TIDAL" timeline --kubeconfig "$TK" --time-zone UTC > "$OUT/timeline.txt" 2>/dev/null &
pids+=($!)

drain_started() { # zone: waits for its status.drain.startedAt and prints it
  local started=
  while [ -z "$started" ] && [ "$(date +%s)" -lt "$close_s" ]; do
    started=$(kc get rz "$1" -o jsonpath='{.status.drain.startedAt}' 2>/dev/null || true)
    [ -n "$started" ] || sleep 2
  done
  [ -n "$started" ] || { echo "$1's drain did not start before its close" >&2; return 1; }
  echo "$started"
}

kill_json=null
if [ "$VARIANT" = leader-kill ]; then
  started=$(drain_started rz3)
  log "rz3's drain started at $started; the leader is killed ${KILL_AFTER}s later"
  wait_until $(( $(date -u -d "$started" +%s) + KILL_AFTER ))
  holder=$(kc get lease tidal-controller -n tidal-system -o jsonpath='{.spec.holderIdentity}')
  victim=${holder#tidal-}
  killed_at=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
  kill -9 "$(cat "$OUT/tidal-$victim.pid")"
  log "SIGKILL to $holder (pid $(cat "$OUT/tidal-$victim.pid")) at $killed_at"
  kill_json="{\"identity\": \"$holder\", \"at\": \"$killed_at\"}"
fi

faults_json=[]
fault() { # what detail: logged, and kept for run.json
  log "$1: $2"
  faults_json=$(python3 -c "import json, sys; f = json.loads(sys.argv[1]); f.append({'what': sys.argv[2], 'at': sys.argv[3], 'detail': sys.argv[4]}); print(json.dumps(f))" \
    "$faults_json" "$1" "$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)" "$2")
}
if [ "$RESTART" = 1 ] || [ "$THROTTLE" = 1 ]; then
  rz1_started=$(drain_started rz1)
  rz1_start_s=$(date -u -d "$rz1_started" +%s)
  log "rz1's drain started at $rz1_started"
  if [ "$RESTART" = 1 ]; then
    wait_until $(( rz1_start_s + RESTART_AFTER ))
    log "kube-apiserver restarting"
    fault "kube-apiserver restarted" "$("$HERE/server.sh" restart-apiserver 2>&1 | tail -1)"
  fi
  if [ "$THROTTLE" = 1 ]; then
    wait_until $(( rz1_start_s + THROTTLE_AFTER ))
    kc apply -f "$HERE/throttle-evictions.yaml" >/dev/null
    fault "evictions answered 429" "throttle-evictions.yaml applied for ${THROTTLE_FOR}s"
    sleep "$THROTTLE_FOR"
    kc delete -f "$HERE/throttle-evictions.yaml" >/dev/null
    fault "evictions admitted again" "throttle-evictions.yaml deleted"
  fi
fi

wait_until $(( close_s + 120 + 1 + SETTLE ))
log "collecting"
kc get rz -o yaml > "$OUT/zones.yaml"
kc get rz -o json > "$OUT/zones.json"
kc get rz > "$OUT/zones.txt"
kc get events.events.k8s.io -n default -o json > "$OUT/events.json"
kc get dsp tdm -o yaml > "$OUT/policy.yaml"
cp "$LIVE/cp/audit.log" "$OUT/audit.log" 2>/dev/null || true
for id in a b; do
  [ -f "$OUT/tidal-$id.pid" ] || continue
  mp=$PORT_BASE; [ "$id" = b ] && mp=$((PORT_BASE + 2))
  curl -s "127.0.0.1:$mp/metrics" > "$OUT/metrics-$id.txt" 2>/dev/null || true
done
if [ "$VARIANT" = leader-kill ]; then
  kc get lease tidal-controller -n tidal-system -o json > "$OUT/lease.json"
  kill_json=$(python3 -c "
import json, sys
k = json.loads(sys.argv[1]); l = json.load(open(sys.argv[2]))['spec']
k.update(holderAfter=l.get('holderIdentity'), acquiredAfter=l.get('acquireTime'), transitions=l.get('leaseTransitions'))
print(json.dumps(k))" "$kill_json" "$OUT/lease.json")
fi
python3 - "$HERE" "$OUT/run.json" "$SCALE" "$NAME" "$CLOSE" "$("$TIDAL" --version)" \
  "$(git -C "$REPO" rev-parse --short HEAD)" "$populate_s" "$timeline_at" "$timeline_s" "$kill_json" "$faults_json" <<'EOF'
import json, sys
here, path, scale, variant, close, version, commit, populate_s, timeline_at, timeline_s, kill, faults = sys.argv[1:]
sys.path.insert(0, here)
from kubeclient import parse_time, rfc3339
from shape import shape
minute = parse_time(close)
# a window ending at the minute is open through that minute's first second: the zone is closed one second later
zones = [{"name": z["name"], "drainBefore": z["drainBefore"], "close": rfc3339(minute + z["closeOffset"] + 1)}
         for z in shape(float(scale))["zones"]]
json.dump({"scale": float(scale), "variant": variant, "closeMinute": close, "zones": zones, "tidalVersion": version,
           "commit": commit, "populateSeconds": int(populate_s), "timelineAt": timeline_at,
           "timelineSeconds": float(timeline_s), "kill": json.loads(kill), "faults": json.loads(faults)},
          open(path, "w"), indent=1)
EOF
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
pids=()
python3 "$HERE/compare.py" "$OUT" | tee "$OUT/compare.txt"
log "done in $(( ($(date +%s) - t0) / 60 )) min; results in $OUT"
}
main "$@"; exit
