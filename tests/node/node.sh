#!/usr/bin/env bash
# The real node the tests in this folder run on: a single-node Kubernetes 1.36 cluster on this machine
# (containerd, runc, bridge CNI, kubelet, kube-proxy in iptables mode, a local control plane), started by
# the harness scripts in harness/. State lives under $RN (default /tmp/realnode).
#
#   tests/node/node.sh check          exit 0 when everything the node needs is installed, else say what is not
#   tests/node/node.sh up             start the node (and the control plane), wait until it is Ready
#   tests/node/node.sh image BINARY   build the tidal image from BINARY and load it into the node's containerd
#   tests/node/node.sh down           stop everything the node started and remove what it left on the host
#
# What it needs (tests/node/README.md): Kubernetes 1.36 server binaries in $RN/bin, containerd 1.7, runc
# and the CNI plugins in $RN/root, etcd 3.5 ($ETCD_BIN), iptables, root, and the pause and busybox images
# in $RN/images: what shared/realnode/setup.sh beside this repository installs and builds.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export RN=${RN:-/tmp/realnode}
export ETCD_BIN=${ETCD_BIN:-/tmp/etcd35/usr/bin/etcd}
export PATH=$RN/root/usr/bin:$RN/root/usr/sbin:$PATH
IMAGE=${TIDAL_NODE_IMAGE:-localhost/tidal:node}

missing() {
  local m=()
  [ "$(id -u)" = 0 ] || m+=("root")
  for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do
    [ -x "$RN/bin/$b" ] || m+=("$RN/bin/$b")
  done
  for b in usr/bin/containerd usr/sbin/runc usr/lib/cni/bridge; do [ -x "$RN/root/$b" ] || m+=("$RN/root/$b"); done
  [ -x "$ETCD_BIN" ] || m+=("etcd ($ETCD_BIN)")
  for i in pause busybox; do [ -f "$RN/images/$i.tar" ] || m+=("$RN/images/$i.tar"); done
  for c in iptables kubectl openssl unshare nsenter ip; do command -v "$c" >/dev/null || m+=("$c"); done
  printf '%s\n' "${m[@]+"${m[@]}"}"
}

case "${1:-}" in
  check)
    m=$(missing)
    if [ -n "$m" ]; then echo "the real node cannot start here; missing:"; echo "$m" | sed 's/^/  /'; exit 1; fi
    echo "the real node can start (state in $RN)" ;;
  up)
    m=$(missing); if [ -n "$m" ]; then echo "missing: $m" >&2; exit 1; fi
    # Every component keeps its own log under $RN; the summary goes to $RN/up.log.
    "$HERE/harness/up.sh" > "$RN/up.log" 2>&1 || { tail -20 "$RN/up.log"; exit 1; }
    tail -3 "$RN/up.log" ;;
  image)
    bin=${2:?usage: node.sh image BINARY}
    root=$RN/images/tidal-node-root; rm -rf "$root"
    # FROM scratch: the binary (stripped, as the Dockerfile's build stage does), the shared libraries ldd
    # names, the CA bundle, passwd and group entries for 65532 (the chart's user) and an empty /tmp (the
    # chart mounts an emptyDir there: the root file system is read-only).
    mkdir -p "$root/usr/local/bin" "$root/etc/ssl/certs" "$root/tmp"; chmod 1777 "$root/tmp"
    cp "$bin" "$root/usr/local/bin/tidal"; strip "$root/usr/local/bin/tidal"
    for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do mkdir -p "$root$(dirname "$lib")"; cp -L "$lib" "$root$lib"; done
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$root/etc/passwd"
    printf 'root:x:0:\nnonroot:x:65532:\n' > "$root/etc/group"
    cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
    chroot "$root" /usr/local/bin/tidal --version
    # Not under $RN/images: up.sh imports every tar there, and this one is imported here, fresh each run.
    python3 "$HERE/harness/mkimage.py" "$root" "$IMAGE" "$RN/tidal-node.tar" \
      --entrypoint '["/usr/local/bin/tidal"]' --cmd '["--help"]' --user 65532:65532
    ctr --address "$RN/containerd/containerd.sock" -n k8s.io images import "$RN/tidal-node.tar" >/dev/null
    echo "image $IMAGE: $(du -sb "$root" | cut -f1) bytes unpacked ($(du -sh "$root" | cut -f1)), files:"
    (cd "$root" && find . -type f -printf '  %p %s\n' | sort) ;;
  down)
    "$HERE/harness/down.sh" ;;
  *)
    sed -n '2,14p' "$0"; exit 2 ;;
esac
