#!/usr/bin/env bash
# Shoal's whole test suite. Installs what the tests need (Debian packages with
# apt-get; the Kubernetes control plane's binaries built from the Go module
# proxy into $HOME/.cache/shoal/bin), then checks formatting, vet and module
# tidiness, and runs every test. Safe to run again: installs only what is
# missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the tests use: headless Chromium renders the HTML reports;
# Prometheus scrapes the proxy's admin endpoint; nginx, HAProxy and wrk are
# the proxy's peers in the side-by-side tests; PostgreSQL is the run store's
# second back end (store/pgtest starts a server from its binaries); podman
# and runc build and run Shoal's image.
need=()
if ! command -v chromium-headless-shell >/dev/null && ! command -v chromium >/dev/null; then
  need+=(chromium-headless-shell)
fi
command -v prometheus >/dev/null || need+=(prometheus)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || need+=(haproxy)
command -v wrk >/dev/null || need+=(wrk)
# podman and runc run the image (scripts/image.sh) in the container tests.
command -v podman >/dev/null || need+=(podman)
command -v runc >/dev/null || [ -x /usr/sbin/runc ] || need+=(runc)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || [ -x "$(pg_config --bindir 2>/dev/null)/initdb" ] ||
  need+=(postgresql)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "== installing ${need[*]}"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
echo "== go vet"
go vet ./...
echo "== go mod tidy"
go mod tidy -diff
echo "== Kubernetes binaries (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, KWOK, helm)"
SHOAL_KUBE_BIN=$(bash scripts/kube-bins.sh)
export SHOAL_KUBE_BIN
echo "== go test"
# cmd/shoal runs last and alone: its end-to-end tests put real traffic
# through real processes (a proxy, backends, Prometheus, a control plane)
# and time out under the CPU that other packages' tests take at once.
go test -count=1 -timeout 40m $(go list ./... | grep -v '/cmd/shoal$')
go test -count=1 -timeout 40m ./cmd/shoal
