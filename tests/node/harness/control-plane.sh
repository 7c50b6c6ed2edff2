#!/usr/bin/env bash
# Copied from the realnode harness (shared/realnode/control-plane.sh beside this repository), unchanged but for this note.
# Start (or stop) a local control plane: etcd (Debian's etcd-server), kube-apiserver,
# kube-controller-manager and kube-scheduler, with fresh PKI and a kubeconfig. The Kubernetes binaries are not
# part of any repo: point KUBE_BIN at a folder holding kube-apiserver, kube-controller-manager, kube-scheduler.
# usage: control-plane.sh start|stop   (state in $CP_DIR, default ./cp; etcd data in $CP_DIR/etcd or tmpfs)
# realnode copy of ../control-plane.sh: the apiserver binds $API_BIND (default 127.0.0.1; up.sh uses the cni0 bridge
# address so pods reach it), its certificate also names 10.96.0.1/kubernetes.default.svc, it authenticates to the
# kubelet with the admin cert, and kube-controller-manager runs garbage collection and node lifecycle (real node).
set -euo pipefail
CP_DIR=${CP_DIR:-$PWD/cp}
KUBE_BIN=${KUBE_BIN:?set KUBE_BIN to the folder with the Kubernetes binaries}
ETCD_DATA=${ETCD_DATA:-$CP_DIR/etcd}
cmd=${1:-start}
# ports (override to run a second control plane beside the first)
API_BIND=${API_BIND:-127.0.0.1}; API_PORT=${API_PORT:-16443}; ETCD_PORT=${ETCD_PORT:-23790}; ETCD_PEER_PORT=${ETCD_PEER_PORT:-23800}
KCM_PORT=${KCM_PORT:-10257}; SCHED_PORT=${SCHED_PORT:-10259}
mkdir -p "$CP_DIR/pki"
cd "$CP_DIR"
if [ "$cmd" = stop ]; then
  # In order, etcd last: this (OpenShift-fork) kube-apiserver, SIGTERMed together with etcd, spent >4 minutes in its
  # graceful shutdown and ignores a second SIGTERM, so each one gets $STOP_TIMEOUT seconds (10) and then SIGKILL.
  for n in scheduler kcm apiserver etcd; do
    [ -f $n.pid ] || continue; p=$(cat $n.pid)
    if kill "$p" 2>/dev/null; then
      for _ in $(seq "${STOP_TIMEOUT:-10}"); do kill -0 "$p" 2>/dev/null || break; sleep 1; done
      kill -9 "$p" 2>/dev/null || true
    fi
    rm -f $n.pid
  done
  exit 0
fi
if [ ! -f pki/ca.crt ]; then
  ( cd pki
    openssl genrsa -out ca.key 2048 2>/dev/null
    openssl req -x509 -new -key ca.key -subj "/CN=local-ca" -days 3650 -out ca.crt 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null; openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    openssl genrsa -out admin.key 2048 2>/dev/null
    openssl req -new -key admin.key -subj "/CN=admin/O=system:masters" -out admin.csr 2>/dev/null
    # an X.509 v3 client certificate (rustls refuses v1 certificates, which `x509 -req` makes without extensions)
    printf '[ext]\nextendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n' > client.cnf
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -extfile client.cnf -extensions ext -out admin.crt 2>/dev/null
    printf "[req]\ndistinguished_name=dn\n[dn]\n[ext]\nsubjectAltName=IP:127.0.0.1,IP:$API_BIND,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n" > san.cnf
    openssl genrsa -out apiserver.key 2048 2>/dev/null
    openssl req -new -key apiserver.key -subj "/CN=kube-apiserver" -out apiserver.csr 2>/dev/null
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -extfile san.cnf -extensions ext -out apiserver.crt 2>/dev/null )
fi
cat > kubeconfig <<KC
apiVersion: v1
kind: Config
clusters: [{name: acc, cluster: {server: "https://$API_BIND:$API_PORT", certificate-authority: $CP_DIR/pki/ca.crt}}]
users: [{name: admin, user: {client-certificate: $CP_DIR/pki/admin.crt, client-key: $CP_DIR/pki/admin.key}}]
contexts: [{name: acc, context: {cluster: acc, user: admin}}]
current-context: acc
KC
mkdir -p "$ETCD_DATA"
"${ETCD_BIN:-etcd}" --data-dir "$ETCD_DATA" --listen-client-urls http://127.0.0.1:$ETCD_PORT --advertise-client-urls http://127.0.0.1:$ETCD_PORT \
  --listen-peer-urls http://127.0.0.1:$ETCD_PEER_PORT --quota-backend-bytes 8589934592 > etcd.log 2>&1 & echo $! > etcd.pid
sleep 2
"$KUBE_BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:$ETCD_PORT --bind-address=$API_BIND --secure-port=$API_PORT \
  --tls-cert-file=pki/apiserver.crt --tls-private-key-file=pki/apiserver.key --client-ca-file=pki/ca.crt \
  --service-account-issuer=https://kubernetes.default.svc --service-account-key-file=pki/sa.pub \
  --service-account-signing-key-file=pki/sa.key --authorization-mode=Node,RBAC --service-cluster-ip-range=10.96.0.0/16 \
  --advertise-address=$API_BIND --allow-privileged=true --kubelet-client-certificate=pki/admin.crt --kubelet-client-key=pki/admin.key \
  --kubelet-preferred-address-types=InternalIP --enable-admission-plugins=NodeRestriction ${EXTRA_APISERVER_FLAGS:-} > apiserver.log 2>&1 & echo $! > apiserver.pid
for i in $(seq 60); do KUBECONFIG=kubeconfig kubectl get --raw /readyz >/dev/null 2>&1 && break; sleep 1; done
if [ -n "${NO_CONTROLLERS:-}" ]; then echo "control plane up (etcd + kube-apiserver only): KUBECONFIG=$CP_DIR/kubeconfig"; exit 0; fi
common="--kubeconfig=$CP_DIR/kubeconfig --authentication-kubeconfig=$CP_DIR/kubeconfig --authorization-kubeconfig=$CP_DIR/kubeconfig --bind-address=127.0.0.1 --leader-elect=false"
# a real node: garbage collector and node lifecycle on; no node IPAM (the CNI config owns the pod subnet), no cloud
"$KUBE_BIN/kube-controller-manager" $common --secure-port=$KCM_PORT \
  --controllers='*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-route' \
  --service-account-private-key-file=pki/sa.key --root-ca-file=pki/ca.crt \
  --cluster-signing-cert-file=pki/ca.crt --cluster-signing-key-file=pki/ca.key > kcm.log 2>&1 & echo $! > kcm.pid
"$KUBE_BIN/kube-scheduler" $common --secure-port=$SCHED_PORT > scheduler.log 2>&1 & echo $! > scheduler.pid
echo "control plane up: KUBECONFIG=$CP_DIR/kubeconfig"
