#!/usr/bin/env bash
# hack/envtest-bin/build.sh: build the real control plane that the
# Kubernetes tests drive through envtest (internal/peer/kubetest):
# etcd v3.7.3 and kube-apiserver v1.37.2, from source through the Go module
# proxy, in two nested wrapper modules (./etcd, ./kube-apiserver) so that the
# main go.mod carries none of kubernetes' replaces.
#
# The binaries are cached by version in $KBIN (default
# $HOME/.cache/envtest-bin/v1.37.2): a cold build takes 4-10 min on two
# shared cores, later runs cost nothing. The build uses a throwaway GOCACHE
# (~3 GB) that is deleted afterwards, since the binaries are what is kept.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
K8S=v1.37.2
KBIN=${KBIN:-$HOME/.cache/envtest-bin/$K8S}
mkdir -p "$KBIN"
if [ -x "$KBIN/etcd" ] && [ -x "$KBIN/kube-apiserver" ] &&
  "$KBIN/kube-apiserver" --version 2>/dev/null | grep -qx "Kubernetes $K8S"; then
  echo "envtest binaries already in $KBIN" >&2
  exit 0
fi
echo "building etcd and kube-apiserver $K8S into $KBIN (4-10 min cold)" >&2
GC=$(mktemp -d "${TMPDIR:-/tmp}/envtest-gocache.XXXXXX")
trap 'rm -rf "$GC" "$KBIN/etcd.tmp" "$KBIN/kube-apiserver.tmp"' EXIT
LD="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LD="$LD -X $p.gitVersion=$K8S -X $p.gitMajor=1 -X $p.gitMinor=37 -X $p.gitTreeState=clean"
done
export GOCACHE="$GC" GOFLAGS="-mod=readonly -buildvcs=false" GOWORK=off
go build -C "$HERE/etcd" -trimpath -ldflags="-s -w" -o "$KBIN/etcd.tmp" go.etcd.io/etcd/server/v3
go build -C "$HERE/kube-apiserver" -trimpath -ldflags="$LD" -o "$KBIN/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
mv "$KBIN/etcd.tmp" "$KBIN/etcd"
mv "$KBIN/kube-apiserver.tmp" "$KBIN/kube-apiserver"
echo "envtest binaries built in $KBIN" >&2
