#!/usr/bin/env bash
# Builds the binaries the Kubernetes tests need from the Go module proxy
# into $SHOAL_CACHE/bin (default $HOME/.cache/shoal/bin), each only when it
# is missing or of another version: etcd and kube-apiserver (envtest's
# control plane), kube-controller-manager and kube-scheduler (so that
# workloads make pods and pods are placed), KWOK (nodes and pod
# lifecycle without kubelets), helm (the chart's lint and install) and
# kubectl (the getting-started tutorial's commands).
# Prints the directory.
#
# etcd's and Kubernetes' modules replace their sibling modules with local
# paths, so 'go install pkg@version' refuses them: each is built in a
# throwaway module that requires it, where those replaces do not apply
# (Kubernetes' staging modules are pointed at their published releases).
set -euo pipefail

KUBE_VERSION=1.37.2   # k8s.io/kubernetes; its staging modules are v0.37.2, as go.mod's client-go
ETCD_VERSION=3.6.16
KWOK_VERSION=0.7.0
HELM_VERSION=3.22.0

cache=${SHOAL_CACHE:-$HOME/.cache/shoal}
bin=$cache/bin
mkdir -p "$bin"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
proxy=$(go env GOPROXY | cut -d, -f1)

have() { [[ -x $bin/$1 && -f $bin/$1.version && $(cat "$bin/$1.version") == "$2" ]]; }

# build VERSION MODULE@VERSION PACKAGES REPLACES: builds each package (a
# space-separated list of main packages) into $bin/<its last element>, in
# a throwaway module that requires MODULE with the replaces (lines).
build() {
  local version=$1 req=$2 pkgs=$3 replaces=$4
  echo "building $pkgs at $version into $bin" >&2
  local mod
  mod=$(mktemp -d)
  {
    echo "module shoal.local/build"
    echo "go $(go env GOVERSION | sed 's/^go//; s/\.[0-9]*$//')"
    echo "require ${req%@*} ${req#*@}"
    [[ -z $replaces ]] || sed 's/^/replace /' <<< "$replaces"
  } > "$mod/go.mod"
  for pkg in $pkgs; do
    (cd "$mod" && go get "$pkg@${req#*@}" >&2 && go build -trimpath -o "$bin/${pkg##*/}" "$pkg")
    echo "$version" > "$bin/${pkg##*/}.version"
  done
  rm -rf "$mod"
}

if ! have etcd "$ETCD_VERSION"; then
  build "$ETCD_VERSION" "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" go.etcd.io/etcd/server/v3 ""
  mv "$bin/v3" "$bin/etcd" && mv "$bin/v3.version" "$bin/etcd.version"
fi

have kwok "$KWOK_VERSION" ||
  build "$KWOK_VERSION" "sigs.k8s.io/kwok@v$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok ""

have helm "$HELM_VERSION" ||
  build "$HELM_VERSION" "helm.sh/helm/v3@v$HELM_VERSION" helm.sh/helm/v3/cmd/helm ""

missing=""
for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  have $b "$KUBE_VERSION" || missing+=" k8s.io/kubernetes/cmd/$b"
done
if [[ -n $missing ]]; then
  staging=$(curl -fsS "$proxy/k8s.io/kubernetes/@v/v$KUBE_VERSION.mod" |
    sed -n "s|^\t\(k8s.io/[a-z-]*\) => ./staging/.*|\1 => \1 v0.${KUBE_VERSION#1.}|p")
  build "$KUBE_VERSION" "k8s.io/kubernetes@v$KUBE_VERSION" "$missing" "$staging"
fi

echo "$bin"
