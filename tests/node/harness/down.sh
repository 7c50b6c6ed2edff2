#!/usr/bin/env bash
# Copied from the realnode harness (shared/realnode/down.sh beside this repository), unchanged but for this note.
# Stop what up.sh started (kube-proxy, kubelet, every container, containerd, the mount-namespace holder, the control
# plane unless STOP_CP=0), remove kube-proxy's iptables rules, the cni0 bridge, the kubepods cgroups and the host
# paths the node created, and restore net.ipv4.ip_forward. Only pids recorded under $RN/state are signalled.
# PURGE=1 also deletes $RN/{containerd,kubelet,cni/ipam,state} and the etcd data (images must be re-imported).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RN=${RN:-/tmp/realnode}
export CP_DIR=${CP_DIR:-$RN/cp} ETCD_DATA=${ETCD_DATA:-/dev/shm/etcd-realnode} KUBE_BIN=${KUBE_BIN:-$RN/bin}
export PATH=$RN/root/usr/bin:$RN/root/usr/sbin:$PATH
cd "$RN" || exit 0
stop() { # name: SIGTERM the recorded pid, wait up to 30s, then SIGKILL
  local f=state/$1.pid p
  [ -f "$f" ] || return 0
  p=$(cat "$f")
  if kill -0 "$p" 2>/dev/null; then
    kill "$p"; for _ in $(seq 30); do kill -0 "$p" 2>/dev/null || break; sleep 1; done
    kill -0 "$p" 2>/dev/null && kill -9 "$p"
  fi
  rm -f "$f"
}
# the pods' host-side veths (cni0 ports); a pod netns can outlive its processes for a while (orphaned sockets),
# so whatever is still there after the namespace holder is gone is deleted explicitly below
veths=$(ip -o link show master cni0 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1)
stop kube-proxy
[ -x bin/kube-proxy ] && bin/kube-proxy --cleanup >/dev/null 2>&1
stop kubelet
for ipt in iptables ip6tables; do # the kubelet's own chains (localnet firewall, canary)
  $ipt -D INPUT -j KUBE-FIREWALL 2>/dev/null; $ipt -D OUTPUT -j KUBE-FIREWALL 2>/dev/null
  $ipt -F KUBE-FIREWALL 2>/dev/null; $ipt -X KUBE-FIREWALL 2>/dev/null
  for t in filter nat mangle; do for c in KUBE-KUBELET-CANARY KUBE-IPTABLES-HINT; do $ipt -t $t -F $c 2>/dev/null; $ipt -t $t -X $c 2>/dev/null; done; done
done
if [ -S containerd/containerd.sock ] && [ -f state/containerd.pid ]; then
  CTR="ctr --address $RN/containerd/containerd.sock -n k8s.io"
  for t in $($CTR tasks ls -q 2>/dev/null); do $CTR tasks kill -s SIGKILL "$t" >/dev/null 2>&1; done
  sleep 2
  for t in $($CTR tasks ls -q 2>/dev/null); do $CTR tasks delete -f "$t" >/dev/null 2>&1; done
  for c in $($CTR containers ls -q 2>/dev/null); do $CTR containers delete "$c" >/dev/null 2>&1; done
fi
stop containerd
stop ns   # the mount namespace goes, and with it the pinned pod network namespaces and their veths
[ "${STOP_CP:-1}" = 1 ] && "$HERE/control-plane.sh" stop
for v in $veths; do ip link del "$v" 2>/dev/null; done
ip link del cni0 2>/dev/null
[ -f state/ip_forward.orig ] && cat state/ip_forward.orig > /proc/sys/net/ipv4/ip_forward
for h in /sys/fs/cgroup/*/; do # kubepods cgroups, leaves first
  [ -d "$h/kubepods" ] && find "$h/kubepods" -depth -type d -exec rmdir {} \; 2>/dev/null
done
if [ -f state/host-created ]; then
  while read -r p; do rm -rf -- "$p"; done < state/host-created
fi
rm -rf cni/ipam/*
if [ "${PURGE:-0}" = 1 ]; then
  rm -rf containerd kubelet cni/ipam state kube-proxy
  [ "${STOP_CP:-1}" = 1 ] && rm -rf "$ETCD_DATA"
fi
echo "realnode down"
