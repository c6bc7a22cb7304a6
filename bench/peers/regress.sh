#!/usr/bin/env bash
# Regression check of the simulator's speed: builds bench/peers/shoalpeer at a
# reference commit and at the working tree, runs the two builds in turn on the
# same core (GOMAXPROCS=1, taskset -c 0 when available), PAIRS times per
# model, and prints each pair's CPU seconds and their ratio (working tree /
# reference), then the median ratio per model. A ratio above 1 means the
# working tree is slower. Not run in CI: it measures time.
#
# Usage (from the repository root):  bash bench/peers/regress.sh REF
# Environment: PAIRS (default 7), MM1_HORIZON (s, 10000), MM1_SEEDS (60),
# LB_HORIZON (5400), LB_SEEDS (12).
#
# Both builds must report the same simulated requests (same seeds, same
# models): the script fails if they do not, since the ratio would then compare
# different work.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ $# -ne 1 ]; then
	echo "usage: bash bench/peers/regress.sh REF   (a commit, tag or branch)" >&2
	exit 2
fi
REF=$1
PAIRS=${PAIRS:-7}
MM1_HORIZON=${MM1_HORIZON:-10000}
MM1_SEEDS=${MM1_SEEDS:-60}
LB_HORIZON=${LB_HORIZON:-5400}
LB_SEEDS=${LB_SEEDS:-12}

rev=$(git rev-parse --verify --quiet "$REF^{commit}") || {
	echo "regress.sh: $REF is not a commit in this repository" >&2
	exit 2
}
tmp=$(mktemp -d)
cleanup() {
	git worktree remove --force "$tmp/ref" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT

git worktree add --detach --quiet "$tmp/ref" "$rev"
(cd "$tmp/ref" && go build -o "$tmp/peer-ref" ./bench/peers/shoalpeer)
go build -o "$tmp/peer-new" ./bench/peers/shoalpeer

PIN=()
if command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then PIN=(taskset -c 0); fi
export GOMAXPROCS=1

# field prints one JSON field of a shoalpeer report.
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }

echo "reference ${rev:0:7} ($REF) against the working tree ($(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ', with changes')); $PAIRS pairs per model, pinned: ${PIN[*]:-no} GOMAXPROCS=1"
for model in mm1 lb2x7; do
	if [ "$model" = mm1 ]; then args=(-model mm1 -horizon "${MM1_HORIZON}s" -seeds "$MM1_SEEDS"); else args=(-model lb2x7 -horizon "${LB_HORIZON}s" -seeds "$LB_SEEDS"); fi
	echo "$model (${args[*]}):"
	ratios=()
	for i in $(seq 1 "$PAIRS"); do
		"${PIN[@]}" "$tmp/peer-ref" "${args[@]}" >"$tmp/ref.json"
		"${PIN[@]}" "$tmp/peer-new" "${args[@]}" >"$tmp/new.json"
		rq=$(field "$tmp/ref.json" requests) nq=$(field "$tmp/new.json" requests)
		if [ "$rq" != "$nq" ]; then
			echo "regress.sh: the builds simulated different work ($rq against $nq requests)" >&2
			exit 1
		fi
		rc=$(field "$tmp/ref.json" cpu_s) nc=$(field "$tmp/new.json" cpu_s)
		r=$(python3 -c "print(f'{$nc/$rc:.3f}')")
		ratios+=("$r")
		printf '  pair %d: reference %.3f s, working tree %.3f s CPU: %sx\n' "$i" "$rc" "$nc" "$r"
	done
	med=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
	echo "  median: ${med}x the reference's CPU ($nq requests per run set)"
done
