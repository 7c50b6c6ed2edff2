#!/usr/bin/env bash
# etcd 3.5 + kube-apiserver 1.36 on loopback, nothing else: no scheduler, no controller-manager (an evicted pod
# is not replaced, and nothing but the kubelet stand-in finishes a deletion), no kubelet.
#   server.sh up     start (or find running) and print the admin kubeconfig's path
#   server.sh down   stop what `up` started and delete the state (PKI, etcd data, logs)
#   server.sh nice N re-nice both servers (run-drain.sh populates at 0, then measures at $SERVER_NICE)
#   server.sh restart-apiserver
#                    SIGTERM to kube-apiserver (SIGKILL after $STOP_TIMEOUT s) and start it again on the same
#                    etcd; prints how long it was not ready
#   server.sh status
# TLS with a fresh CA, bearer-token authentication (a static token for the admin, ServiceAccount tokens for
# tidal), RBAC. Kubeconfigs are written as JSON (valid YAML) so that the Python scripts need no YAML parser.
# The binaries come from setup.sh ($LIVE_BIN). Both servers run under `nice -n 19`, as in the measurements of
# docs/performance.md, so that the client side (tidal) is not starved by them.
set -euo pipefail
LIVE=${LIVE:-/tmp/tidal-live}
LIVE_BIN=${LIVE_BIN:-$LIVE/bin}
CP=${CP:-$LIVE/cp}
ETCD_DATA=${ETCD_DATA:-$CP/etcd}
# Away from the realnode control plane's ports (36443, 43790/43800), so both can run on one machine.
API_PORT=${API_PORT:-46443}
ETCD_PORT=${ETCD_PORT:-44790}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-44800}
STOP_TIMEOUT=${STOP_TIMEOUT:-10}
SERVER_NICE=${SERVER_NICE:-19}
cmd=${1:-}

alive() { # name: the process we started under that name still runs (pid file and executable both match)
  local f=$CP/$1.pid p
  [ -f "$f" ] || return 1
  p=$(cat "$f")
  [ -d "/proc/$p" ] && [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$(readlink -f "$LIVE_BIN/$1")" ]
}

ready() { curl -sf --max-time 2 --cacert "$CP/pki/ca.crt" -H "Authorization: Bearer $(cat "$CP/admin.token")" \
  "https://127.0.0.1:$API_PORT/readyz" >/dev/null 2>&1; }

stop() {
  # apiserver first, etcd last: the apiserver may take minutes over a graceful shutdown (the realnode
  # scripts saw >4 min), so each gets $STOP_TIMEOUT seconds after SIGTERM, then SIGKILL.
  for n in kube-apiserver etcd; do stop_one $n; done
}

stop_one() { # name
  if alive "$1"; then
    local p; p=$(cat "$CP/$1.pid"); kill "$p" 2>/dev/null || true
    for _ in $(seq "$STOP_TIMEOUT"); do alive "$1" || break; sleep 1; done
    alive "$1" && kill -9 "$p" 2>/dev/null || true
    for _ in $(seq 10); do alive "$1" || break; sleep 0.5; done
  fi
  rm -f "$CP/$1.pid"
}

pki() {
  mkdir -p "$CP/pki"; cd "$CP/pki"
  openssl genrsa -out ca.key 2048 2>/dev/null
  openssl req -x509 -new -key ca.key -subj "/CN=tidal-live-ca" -days 365 -out ca.crt 2>/dev/null
  openssl genrsa -out sa.key 2048 2>/dev/null; openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  # X.509 v3 with SANs: rustls (tidal) refuses v1 certificates and names without a SAN
  printf '[ext]\nsubjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n' > san.cnf
  openssl genrsa -out apiserver.key 2048 2>/dev/null
  openssl req -new -key apiserver.key -subj "/CN=kube-apiserver" -out apiserver.csr 2>/dev/null
  openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 \
    -extfile san.cnf -extensions ext -out apiserver.crt 2>/dev/null
  cd - >/dev/null
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$CP/admin.token"
  printf '%s,admin,admin-uid,system:masters\n' "$(cat "$CP/admin.token")" > "$CP/tokens.csv"
  chmod 600 "$CP/admin.token" "$CP/tokens.csv" "$CP/pki/"*.key
}

kubeconfig() { # path user token
  cat > "$1" <<EOF
{"apiVersion": "v1", "kind": "Config", "current-context": "live",
 "clusters": [{"name": "live", "cluster": {"server": "https://127.0.0.1:$API_PORT", "certificate-authority": "$CP/pki/ca.crt"}}],
 "users": [{"name": "$2", "user": {"token": "$3"}}],
 "contexts": [{"name": "live", "context": {"cluster": "live", "user": "$2"}}]}
EOF
  chmod 600 "$1"
}

up() {
  for b in etcd kube-apiserver; do
    [ -x "$LIVE_BIN/$b" ] || { echo "no $LIVE_BIN/$b: run setup.sh first (README.md)" >&2; exit 1; }
  done
  mkdir -p "$CP"
  if alive kube-apiserver && alive etcd; then
    for _ in $(seq 120); do ready && break; sleep 1; done
    if ready; then echo "$CP/admin.kubeconfig"; return; fi
  fi
  stop
  [ -f "$CP/pki/ca.crt" ] || pki
  kubeconfig "$CP/admin.kubeconfig" admin "$(cat "$CP/admin.token")"
  mkdir -p "$ETCD_DATA"
  # 8 GiB quota: 150,000 pods written twice (create, status) plus their deletions stay far below it
  nice -n "$SERVER_NICE" "$LIVE_BIN/etcd" --name live --data-dir "$ETCD_DATA" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "live=http://127.0.0.1:$ETCD_PEER_PORT" \
    --quota-backend-bytes 8589934592 > "$CP/etcd.log" 2>&1 &
  echo $! > "$CP/etcd.pid"
  for _ in $(seq 120); do curl -sf --max-time 1 "http://127.0.0.1:$ETCD_PORT/health" >/dev/null 2>&1 && break; sleep 0.5; done
  if ! curl -sf --max-time 1 "http://127.0.0.1:$ETCD_PORT/health" >/dev/null 2>&1; then
    echo "etcd did not become healthy; see $CP/etcd.log" >&2; tail -5 "$CP/etcd.log" >&2; exit 1
  fi
  start_apiserver
  echo "$CP/admin.kubeconfig"
}

start_apiserver() {
  # Every eviction and its answer, in the audit log (audit.log): how many were sent per pod, and how many
  # were answered 429. Nothing else is audited.
  cat > "$CP/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    verbs: ["create"]
    resources: [{group: "", resources: ["pods/eviction"]}]
  - level: None
EOF
  # Default in-flight limits (400 / 200): the populator's 32 connections stay below them.
  # The service-account flags serve the TokenRequest API tidal's kubeconfig token comes from.
  nice -n "$SERVER_NICE" "$LIVE_BIN/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
    --tls-cert-file="$CP/pki/apiserver.crt" --tls-private-key-file="$CP/pki/apiserver.key" \
    --client-ca-file="$CP/pki/ca.crt" --token-auth-file="$CP/tokens.csv" \
    --authorization-mode=RBAC \
    --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$CP/pki/sa.pub" \
    --service-account-signing-key-file="$CP/pki/sa.key" --api-audiences=https://kubernetes.default.svc \
    --service-cluster-ip-range=10.96.0.0/16 --allow-privileged=true \
    --audit-policy-file="$CP/audit-policy.yaml" --audit-log-path="$CP/audit.log" --audit-log-maxsize=0 \
    ${EXTRA_APISERVER_FLAGS:-} > "$CP/apiserver.log" 2>&1 &
  echo $! > "$CP/kube-apiserver.pid"
  # a restart on 150,000 pods fills the watch cache first: minutes on a loaded machine
  for _ in $(seq 600); do ready && break; kill -0 "$(cat "$CP/kube-apiserver.pid")" 2>/dev/null || break; sleep 1; done
  if ! ready; then echo "kube-apiserver did not become ready; see $CP/apiserver.log" >&2; tail -20 "$CP/apiserver.log" >&2; exit 1; fi
}

case "$cmd" in
  up) up ;;
  down)
    stop
    # only what `up` wrote: the state directory and the etcd data
    rm -rf "$ETCD_DATA" "$CP"
    ;;
  restart-apiserver)
    alive etcd || { echo "etcd is not running: server.sh up" >&2; exit 1; }
    t0=$(date +%s.%N)
    # the log of the first run is kept beside the new one
    stop_one kube-apiserver
    [ -f "$CP/apiserver.log" ] && mv "$CP/apiserver.log" "$CP/apiserver-$(date -u +%H%M%S).log"
    start_apiserver
    python3 -c "print('kube-apiserver not ready for', round($(date +%s.%N) - $t0, 1), 's')" ;;
  nice)
    # the populator wants the servers at full speed on a shared machine; the measured run at $SERVER_NICE
    for n in etcd kube-apiserver; do alive $n && renice -n "${2:?nice N}" -p "$(cat "$CP/$n.pid")" >/dev/null; done ;;
  status)
    for n in etcd kube-apiserver; do if alive $n; then echo "$n: running (pid $(cat "$CP/$n.pid"))"; else echo "$n: stopped"; fi; done
    if [ -f "$CP/admin.token" ] && ready; then echo "ready: KUBECONFIG=$CP/admin.kubeconfig"; fi ;;
  *) echo "usage: $0 up|down|nice N|restart-apiserver|status" >&2; exit 2 ;;
esac
