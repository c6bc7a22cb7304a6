#!/usr/bin/env bash
# The general Distr-LB policy against the per-scenario ones (issue 35).
#
# 1. Trains the general policy once on the default family, if OUT/general.slb
#    is missing ('shoal train distr-lb --family', seed SEED_TRAIN).
# 2. Trains Distr-LB on each of the paper's scenarios (lb-moderate-*,
#    lb-large-*; 60 episodes, the default), and the 30-episode hybrids of
#    the production table, if missing.
# 3. Runs the production table (bench/lb/production.sh, root seed 1001, 5
#    seeds) with the hybrids and the general policy.
# 4. Compares the general policy with each paper scenario's own Distr-LB
#    policy (shoal sim SCENARIO --seed 1001 --seeds 5), on mean and p99.
#
# Usage (from the repository root):  bash bench/lb/general.sh
# Environment: OUT (default out/lb-general), SEED_TRAIN (default 1), STEPS
# ("train", "hybrids", "production", "paper", or all of them, the default;
# "train" trains the general and the paper scenarios' policies, "hybrids" the
# production table's 30-episode hybrids).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-out/lb-general}
SEED_TRAIN=${SEED_TRAIN:-1}
STEPS=${STEPS:-"train hybrids production paper"}
PAPER="lb-moderate-cpu lb-moderate-50cpu lb-moderate-75cpu lb-moderate-misconfigured lb-large-poisson lb-large-wiki"
PRODUCTION="lb-stale-views lb-heavy-tail lb-fanout lb-drift lb-slowdown lb-large-poisson lb-moderate-cpu"
mkdir -p "$OUT/distr-lb" "$OUT/hybrid"
go build -o "$OUT/shoal" ./cmd/shoal
SHOAL=$OUT/shoal

if [[ " $STEPS " == *" train "* ]]; then
	if [ ! -f "$OUT/general.slb" ]; then
		echo "== training the general policy (seed $SEED_TRAIN)"
		/usr/bin/time -f "general policy: %e s wall, %U s user" \
			"$SHOAL" train distr-lb --family -o "$OUT/general.slb" --seed "$SEED_TRAIN" --checkpoint "$OUT/general.ckpt" --no-record
	fi
	for sc in $PAPER; do
		[ -f "$OUT/distr-lb/$sc.slb" ] && continue
		echo "== training Distr-LB on $sc (seed $SEED_TRAIN, 60 episodes)"
		"$SHOAL" train distr-lb "$sc" -o "$OUT/distr-lb/$sc.slb" --seed "$SEED_TRAIN" --quiet --no-record
	done
fi

if [[ " $STEPS " == *" hybrids "* ]]; then
	for sc in $PRODUCTION; do
		[ -f "$OUT/hybrid/$sc.slb" ] && continue
		echo "== training the hybrid's Distr-LB on $sc (seed $SEED_TRAIN, 30 episodes)"
		"$SHOAL" train distr-lb "$sc" -o "$OUT/hybrid/$sc.slb" --seed "$SEED_TRAIN" --episodes 30 --quiet --no-record
	done
fi

if [[ " $STEPS " == *" production "* ]]; then
	OUT=$OUT/production HYBRID_DIR=$OUT/hybrid GENERAL=$OUT/general.slb bash bench/lb/production.sh
fi

if [[ " $STEPS " == *" paper "* ]]; then
	for sc in $PAPER; do
		"$SHOAL" sim "$sc" --seed 1001 --seeds 5 --quiet --json --no-record \
			--policy "sed,probing-sed,distr-lb:$OUT/distr-lb/$sc.slb,distr-lb-general:$OUT/general.slb" >"$OUT/paper-$sc.json"
	done
	python3 - "$OUT" $PAPER <<'PY'
import json, sys
out, scenarios = sys.argv[1], sys.argv[2:]
print("\nthe paper's scenarios, root seed 1001, 5 seeds: mean and p99 (s) ± 95% interval")
print("scenario                   policy             mean                p99                 general / distr-lb (mean, p99)")
for sc in scenarios:
    d = json.load(open(f"{out}/paper-{sc}.json"))
    st = {p["policy"]: p["summary"] for p in d["policies"]}
    for name, s in st.items():
        extra = ""
        if name == "distr-lb-general":
            g, t = s, st["distr-lb"]
            extra = f"{g['mean']['mean'] / t['mean']['mean']:.3f}, {g['p99']['mean'] / t['p99']['mean']:.3f}"
        print(f"{sc:26s} {name:18s} {s['mean']['mean']:.4g} ± {s['mean']['ci95']:<9.2g} {s['p99']['mean']:.4g} ± {s['p99']['ci95']:<9.2g} {extra}")
PY
fi
