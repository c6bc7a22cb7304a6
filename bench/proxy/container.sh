#!/usr/bin/env bash
# The containerised proxy next to the process, on the same loopback load:
# 'shoal proxy' from scripts/image.sh's image (podman, host network, a
# read-only root filesystem and no capabilities, as the manifests declare)
# and the same binary as a process, each in front of one fast backend
# (nginx returning a 3-byte body). Closed-loop load from wrk at fixed
# concurrency; requests per second and p99 of each, and the ratio.
#
# Usage (from the repository root):  bash bench/proxy/container.sh
# Environment: DURATION (wrk seconds per run, default 10), CONNS (wrk
# connections, default "32 4"), ROUNDS (runs of each, interleaved; the
# median is reported; default 3).
#
# CPU pinning, as bench/proxy/overhead.sh: the proxy under test on CPU 0
# with GOMAXPROCS=1 (the container by --cpuset-cpus 0), the backend and wrk
# on CPU 1.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/proxy/lib.sh

DURATION=${DURATION:-10}
CONNS=${CONNS:-"32 4"}
ROUNDS=${ROUNDS:-3}
PATH=$PATH:/usr/sbin
for bin in nginx wrk taskset podman; do
	command -v "$bin" >/dev/null || { echo "container.sh: $bin not found: install the Debian packages nginx-light, wrk and podman (scripts/test.sh does)" >&2; exit 2; }
done
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/scripts/containers.conf}"

work=$(mktemp -d)
chmod 755 "$work"
pids=()
name=shoal-bench-proxy-$$
cleanup() {
	podman rm -f -t 0 "$name" >/dev/null 2>&1 || true
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

image=localhost/shoal:bench
bash scripts/image.sh -o "$work/image.tar" -t "$image" >/dev/null
# The binary in the image, for the process.
id=$(podman create "$image")
podman cp "$id:/shoal" "$work/shoal" >/dev/null
podman rm "$id" >/dev/null

BACKEND=127.0.0.1:18191
PROCESS=127.0.0.1:18190
CONTAINER=127.0.0.1:18192
nginx_conf backend "server { listen $BACKEND; location / { return 200 \"ok\n\"; } }"
for who in process container; do
	addr=$PROCESS
	[ $who = process ] || addr=$CONTAINER
	printf 'listen: %s\npolicy: rr\nbackends: [{url: "http://%s"}]\n' "$addr" "$BACKEND" >"$work/$who.yaml"
	chmod 644 "$work/$who.yaml"
done

taskset -c 1 nginx -c "$work/backend/nginx.conf" & pids+=($!)
GOMAXPROCS=1 taskset -c 0 "$work/shoal" proxy -c "$work/process.yaml" --log-level warn & pids+=($!)
podman run -d --name "$name" --network host --cpuset-cpus 0 -e GOMAXPROCS=1 --read-only --cap-drop ALL \
	--security-opt no-new-privileges -v "$work:/etc/shoal:ro" "$image" proxy -c /etc/shoal/container.yaml --log-level warn >/dev/null
wait_answer $BACKEND $PROCESS $CONTAINER

measure() { # $1 addr, $2 conns -> "rps p99"
	local out
	out=$(taskset -c 1 wrk -t1 -c"$2" -d"${DURATION}s" --latency "http://$1/")
	echo "$(awk '/^Requests\/sec:/ {print $2}' <<<"$out") $(awk '$1=="99%" {print $2}' <<<"$out" | to_ms)"
}

echo "# shoal proxy as a container (podman $(podman --version | awk '{print $3}'), runc) vs as a process; wrk -t1, ${DURATION}s per run, median of $ROUNDS interleaved rounds"
echo "# the proxy on CPU 0 (GOMAXPROCS=1), backend and wrk on CPU 1; $(date -u +%Y-%m-%dT%H:%MZ), $(uname -m), $(nproc) CPUs"
for c in $CONNS; do
	for a in $PROCESS $CONTAINER; do taskset -c 1 wrk -t1 -c"$c" -d2s "http://$a/" >/dev/null; done # warm up
	declare -A rps=() p99=()
	for r in $(seq "$ROUNDS"); do
		for who in process container; do
			a=$PROCESS
			[ $who = process ] || a=$CONTAINER
			read -r x z < <(measure "$a" "$c")
			rps[$who]+="$x "; p99[$who]+="$z "
		done
	done
	printf '\n%-10s %5s %12s %9s %14s\n' proxy conns "req/s" "p99 ms" "x process"
	base=$(tr ' ' '\n' <<<"${rps[process]}" | grep . | median)
	for who in process container; do
		R=$(tr ' ' '\n' <<<"${rps[$who]}" | grep . | median)
		P=$(tr ' ' '\n' <<<"${p99[$who]}" | grep . | median)
		awk -v n="$who" -v c="$c" -v r="$R" -v p="$P" -v b="$base" 'BEGIN { printf "%-10s %5d %12.0f %9.3f %13.3fx\n", n, c, r, p, r/b }'
	done
	unset rps p99
done
