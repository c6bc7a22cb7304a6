#!/usr/bin/env bash
# How the simulator's cost per request grows with the cluster: one service
# of N instances {cpu: 2, speed: 1.0}, K LB points each fed by its own
# Poisson source, demand {dist: exp, mean: 0.1}, load 0.85, policies p2c
# and rr, 100 s, one seed, 'shoal sim --workers 1', for N x K = 20 x 6,
# 200 x 12 and 2000 x 24. Prints the requests, the process's CPU seconds
# (user + system), CPU per request and peak memory of each, and the ratio
# of the largest's CPU per request to 200 x 12's. Requests are the runs'
# events halved (an arrival and a completion each; the few sampling events
# are within 0.01%).
#
# Usage (from the repository root):  bash bench/peers/scale.sh
# Environment: SIZES (default "20x6 200x12 2000x24").
set -euo pipefail
cd "$(dirname "$0")/../.."

SIZES=${SIZES:-"20x6 200x12 2000x24"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/shoal" ./cmd/shoal
PIN=()
if command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then PIN=(taskset -c 0); fi

# scenario writes the N x K scenario file.
scenario() {
	local n=$1 k=$2 f=$tmp/scale-$1x$2.yaml i
	{
		printf 'name: scale-%dx%d\nseed: 1\nseeds: 1\nhorizon: 100s\nload: 0.85\npolicies: [p2c, rr]\n' "$n" "$k"
		printf 'services:\n  - name: web\n    instances:\n'
		for ((i = 0; i < n; i++)); do printf '      - {cpu: 2, speed: 1.0}\n'; done
		printf 'classes:\n  - name: task\n    call:\n      service: web\n      cpu: {dist: exp, mean: 0.1}\nlbs:\n'
		for ((i = 0; i < k; i++)); do printf '  - {name: lb%d, service: web}\n' "$i"; done
		printf 'sources:\n'
		for ((i = 0; i < k; i++)); do printf '  - {name: s%d, class: task, lb: lb%d, arrivals: {kind: poisson}}\n' "$i" "$i"; done
	} >"$f"
	echo "$f"
}

printf '%-10s %10s %8s %14s %9s\n' "N x K" requests "CPU s" "CPU/request" "peak MB"
declare -A per
for size in $SIZES; do
	f=$(scenario "${size%x*}" "${size#*x}")
	/usr/bin/time -f '%U %S %M' -o "$tmp/time" "${PIN[@]}" "$tmp/shoal" sim "$f" --workers 1 --no-record --quiet --json >"$tmp/out.json"
	read -r user sys kb <"$tmp/time"
	requests=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sum(r['events'] for p in d['policies'] for r in p['runs']) // 2)" "$tmp/out.json")
	per[$size]=$(python3 -c "print(($user + $sys) / $requests * 1e6)")
	printf '%-10s %10d %8.2f %11.2f us %9d\n' "$size" "$requests" "$(python3 -c "print($user + $sys)")" "${per[$size]}" $((kb / 1024))
done
if [ -n "${per[200x12]:-}" ] && [ -n "${per[2000x24]:-}" ]; then
	python3 -c "print(f'2000 x 24 against 200 x 12, CPU per request: {${per[2000x24]} / ${per[200x12]}:.2f}x')"
fi
