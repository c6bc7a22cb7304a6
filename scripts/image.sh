#!/usr/bin/env bash
# Builds Shoal's container image without a registry, with podman: the
# static binary from this machine's Go toolchain (the Dockerfile's build
# command), then the Dockerfile's last stage on it: scratch, CA
# certificates from this machine, the non-root user 65532, OCI labels with
# the version and revision the binary's build info holds. Saves it as an
# OCI archive that 'podman load' and 'docker load' take.
#
#   scripts/image.sh [-o ARCHIVE] [-t NAME]
#
# ARCHIVE defaults to out/shoal-image.tar, NAME to localhost/shoal:VERSION.
# It prints the image name, then the archive's path and size.
set -euo pipefail
cd "$(dirname "$0")/.."

archive=out/shoal-image.tar
name=""
while [ $# -gt 0 ]; do
  case "$1" in
    -o) archive="$2"; shift 2 ;;
    -t) name="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "image.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
command -v podman >/dev/null || { echo "image.sh: podman is missing (apt-get install podman runc)" >&2; exit 1; }
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/scripts/containers.conf}"

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
# The Dockerfile's build command, read from it so that the two cannot differ.
build=$(sed -n 's/^RUN \(CGO_ENABLED=0 go build .*\) -o \/out\/shoal \(.*\)$/\1 -o "$ctx\/out\/shoal" \2/p' Dockerfile)
[ -n "$build" ] || { echo "image.sh: no build command in the Dockerfile" >&2; exit 1; }
mkdir -p "$ctx/out" "$ctx/etc/ssl/certs" "$ctx/deploy/image"
eval "$build"
cp /etc/ssl/certs/ca-certificates.crt "$ctx/etc/ssl/certs/"
cp -r deploy/image/etc "$ctx/deploy/image/"
# The last stage, each "COPY --from=build /X" taken from X in the context.
awk '/^FROM /{stage=""} {stage=stage $0 "\n"} END{printf "%s", stage}' Dockerfile |
  sed 's#^COPY --from=build /#COPY #' >"$ctx/Containerfile"

info=$(go version -m "$ctx/out/shoal")
version=$(awk '$1=="mod"{print $3}' <<<"$info")
revision=$(awk '$1=="build" && $2 ~ /^vcs.revision=/{sub(/^vcs.revision=/, "", $2); print $2}' <<<"$info")
name=${name:-localhost/shoal:${version//+/-}}
podman build -q --build-arg VERSION="$version" --build-arg REVISION="${revision:-unknown}" -t "$name" -f "$ctx/Containerfile" "$ctx" >/dev/null
mkdir -p "$(dirname "$archive")"
rm -f "$archive"
podman save -q --format oci-archive -o "$archive" "$name"
echo "$name"
echo "$archive $(stat -c %s "$archive") bytes"
