#!/usr/bin/env bash
# Copied from the realnode harness (shared/realnode/up.sh beside this repository), unchanged but for this note.
# Bring up a REAL single-node Kubernetes node "realnode" (containerd + runc + bridge CNI + kubelet + kube-proxy) against
# a local control plane, fully offline. Run setup.sh first. Everything lives under $RN (default /tmp/realnode).
#   START_CP=1 (default) also starts our own control plane (./control-plane.sh) with the ports below.
# Network: a bridge cni0 with 10.244.0.1/24 is created up front; the apiserver, the kubelet server and the node IP all
# use 10.244.0.1 (a host-local address pods can reach; nothing listens on eth0). Pods get 10.244.0.2-254, services 10.96/16.
# Host kernel settings are left alone: containerd and the kubelet run in a private mount namespace in which the sysctl
# files the kubelet insists on (vm.overcommit_memory=1, kernel.panic=10, kernel.panic_on_oops=1) are bind-mounted
# regular files holding the values it wants, so it never writes the real ones. The bridge CNI plugin does set
# net.ipv4.ip_forward=1 (isGateway); down.sh restores the value recorded here.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RN=${RN:-/tmp/realnode}
export CP_DIR=${CP_DIR:-$RN/cp} ETCD_DATA=${ETCD_DATA:-/dev/shm/etcd-realnode} ETCD_BIN=${ETCD_BIN:-/tmp/etcd35/usr/bin/etcd}
export KUBE_BIN=${KUBE_BIN:-$RN/bin} API_PORT=${API_PORT:-36443} ETCD_PORT=${ETCD_PORT:-43790}
export ETCD_PEER_PORT=${ETCD_PEER_PORT:-43800} KCM_PORT=${KCM_PORT:-20257} SCHED_PORT=${SCHED_PORT:-20259}
NODE=${NODE:-realnode}; NODE_IP=10.244.0.1; export API_BIND=$NODE_IP
KUBELET_PORT=${KUBELET_PORT:-10250}
export PATH=$RN/root/usr/bin:$RN/root/usr/sbin:$PATH
mkdir -p "$RN"/{state,containerd,cni/net.d,cni/ipam,kubelet,kube-proxy,fakesys}
cd "$RN"

# 1. network: the bridge and its gateway address exist before anything binds 10.244.0.1
[ -f state/ip_forward.orig ] || cat /proc/sys/net/ipv4/ip_forward > state/ip_forward.orig
# host paths kubelet/containerd/kube-controller-manager/libcni create whatever they are told; down.sh removes the new ones
if [ ! -f state/host-created ]; then
  for p in /var/log/containers /var/log/pods /var/lib/kubelet /usr/libexec/kubernetes /var/lib/cni /run/containerd; do
    [ -e "$p" ] || echo "$p"; done > state/host-created
fi
if ! ip link show cni0 >/dev/null 2>&1; then
  ip link add cni0 type bridge; ip addr add $NODE_IP/24 dev cni0; ip link set cni0 up
fi
cat > cni/net.d/10-realnode.conflist <<EOF
{"cniVersion": "1.0.0", "name": "realnode", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$RN/cni/ipam", "ranges": [[{"subnet": "10.244.0.0/24", "gateway": "$NODE_IP"}]],
            "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF

# 2. control plane
if [ "${START_CP:-1}" = 1 ]; then "$HERE/control-plane.sh" start; fi
export KUBECONFIG=$CP_DIR/kubeconfig
for _ in $(seq 60); do kubectl get --raw /readyz >/dev/null 2>&1 && break; sleep 1; done

# 3. client certificates for the node and kube-proxy, signed by the control plane CA
mkcert() { # name CN O
  [ -f "$RN/state/$1.crt" ] && return 0
  openssl genrsa -out "$RN/state/$1.key" 2048 2>/dev/null
  openssl req -new -key "$RN/state/$1.key" -subj "/CN=$2${3:+/O=$3}" -out "$RN/state/$1.csr" 2>/dev/null
  printf '[ext]\nextendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n' > "$RN/state/client.cnf"
  openssl x509 -req -in "$RN/state/$1.csr" -CA "$CP_DIR/pki/ca.crt" -CAkey "$CP_DIR/pki/ca.key" -CAcreateserial -days 365 \
    -extfile "$RN/state/client.cnf" -extensions ext -out "$RN/state/$1.crt" 2>/dev/null
}
mkkubeconfig() { # file certname
  cat > "$1" <<KC
apiVersion: v1
kind: Config
clusters: [{name: acc, cluster: {server: "https://$API_BIND:$API_PORT", certificate-authority: $CP_DIR/pki/ca.crt}}]
users: [{name: u, user: {client-certificate: $RN/state/$2.crt, client-key: $RN/state/$2.key}}]
contexts: [{name: acc, context: {cluster: acc, user: u}}]
current-context: acc
KC
}
mkcert node "system:node:$NODE" system:nodes; mkkubeconfig kubelet/kubeconfig node
mkcert proxy system:kube-proxy; mkkubeconfig kube-proxy/kubeconfig proxy

# 4. a private mount namespace for containerd + kubelet (see the header)
if [ ! -f state/ns.pid ] || ! kill -0 "$(cat state/ns.pid)" 2>/dev/null; then
  echo 1 > fakesys/overcommit_memory; echo 10 > fakesys/panic; echo 1 > fakesys/panic_on_oops
  unshare -m --propagation private sleep infinity > /dev/null 2>&1 & echo $! > state/ns.pid
  sleep 1
  NSP=$(cat state/ns.pid)
  nsenter -t "$NSP" -m -- sh -c "mount --bind $RN/fakesys/overcommit_memory /proc/sys/vm/overcommit_memory &&
    mount --bind $RN/fakesys/panic /proc/sys/kernel/panic && mount --bind $RN/fakesys/panic_on_oops /proc/sys/kernel/panic_on_oops"
fi
NSP=$(cat state/ns.pid)
# (nsenter execs the command, so $! below is the daemon's own pid)

# 5. containerd (CRI v1), runc from bookworm, CNI plugins, the local pause image as sandbox image
cat > containerd/config.toml <<EOF
version = 2
root = "$RN/containerd/root"
state = "$RN/containerd/state"
[grpc]
  address = "$RN/containerd/containerd.sock"
[ttrpc]
  address = "$RN/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$RN/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/pause:1"
  netns_mounts_under_state_dir = true
  # this VM withholds CAP_SYS_RESOURCE even from root: runc cannot lower oom_score_adj (pause asks for -998)
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "${RUNC_BIN:-$RN/root/usr/sbin/runc}"
        Root = "$RN/containerd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$RN/root/usr/lib/cni"
    conf_dir = "$RN/cni/net.d"
    max_conf_num = 1
EOF
if [ ! -f state/containerd.pid ] || ! kill -0 "$(cat state/containerd.pid)" 2>/dev/null; then
  nsenter -t "$NSP" -m -- env PATH="$PATH" containerd --config "$RN/containerd/config.toml" > containerd/containerd.log 2>&1 & echo $! > state/containerd.pid
  for _ in $(seq 30); do [ -S containerd/containerd.sock ] && break; sleep 1; done
fi
CTR="ctr --address $RN/containerd/containerd.sock -n k8s.io"
for img in "$RN"/images/*.tar; do $CTR images import --no-unpack=false "$img" >/dev/null; done
$CTR images ls -q

# 6. kubelet (cgroupfs driver: PID 1 is not systemd; cgroup v1 hierarchy on this VM, hence failCgroupV1: false)
DRIVER=cgroupfs
cat > kubelet/config.yaml <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${KUBELET_HEALTHZ_PORT:-20248}
cgroupDriver: $DRIVER
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$RN/containerd/containerd.sock
imageServiceEndpoint: unix://$RN/containerd/containerd.sock
authentication: {anonymous: {enabled: false}, webhook: {enabled: true}, x509: {clientCAFile: $CP_DIR/pki/ca.crt}}
authorization: {mode: Webhook}
clusterDomain: cluster.local
podLogsDir: $RN/kubelet/pod-logs
volumePluginDir: $RN/kubelet/volume-plugins
resolvConf: /etc/resolv.conf
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 2%, imagefs.available: 2%, nodefs.inodesFree: 2%}
serializeImagePulls: false
rotateCertificates: false
registerNode: true
EOF
if [ ! -f state/kubelet.pid ] || ! kill -0 "$(cat state/kubelet.pid)" 2>/dev/null; then
  nsenter -t "$NSP" -m -- env PATH="$PATH" "$RN/bin/kubelet" --config="$RN/kubelet/config.yaml" --kubeconfig="$RN/kubelet/kubeconfig" \
    --root-dir="$RN/kubelet/root" --cert-dir="$RN/kubelet/pki" --hostname-override="$NODE" --node-ip="$NODE_IP" \
    --v=${KUBELET_V:-2} > kubelet/kubelet.log 2>&1 & echo $! > state/kubelet.pid
fi

# 7. kube-proxy, iptables mode (host network namespace; leaves conntrack and route_localnet sysctls alone)
# (kube-proxy exits when its config file is rewritten, so it is written only when kube-proxy is not running)
if [ -x "$RN/bin/kube-proxy" ] && ! { [ -f state/kube-proxy.pid ] && kill -0 "$(cat state/kube-proxy.pid)" 2>/dev/null; }; then
  cat > kube-proxy/config.yaml <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $RN/kube-proxy/kubeconfig}
hostnameOverride: $NODE
mode: iptables
clusterCIDR: 10.244.0.0/24
healthzBindAddress: 127.0.0.1:${PROXY_HEALTHZ_PORT:-20256}
metricsBindAddress: 127.0.0.1:${PROXY_METRICS_PORT:-20249}
nodePortAddresses: [$NODE_IP/32]
iptables: {localhostNodePorts: false}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
  "$RN/bin/kube-proxy" --config="$RN/kube-proxy/config.yaml" --v=2 > kube-proxy/kube-proxy.log 2>&1 & echo $! > state/kube-proxy.pid
fi

for i in $(seq 120); do
  [ "$(kubectl get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ] && break
  sleep 1
done
kubectl get node -o wide
echo "node $NODE up: KUBECONFIG=$KUBECONFIG (logs under $RN/{kubelet,containerd,kube-proxy}/*.log, $CP_DIR/*.log)"
