#!/usr/bin/env bash
# Simulated comparison of Shoal's balancers with the production ones
# (issue 22): for each scenario and load, every policy runs on the same
# arrivals and demands (common random numbers) for SEEDS seeds, and the
# table gives each policy's mean and p99 with 95% intervals over seeds, then
# per scenario and load the best production balancer by p99 (of sed,
# prequal, least-request, c3, peak-ewma), the best Shoal policy
# (probing-sed, and distr-lb+probing when HYBRID names a trained policy
# file per scenario as HYBRID_DIR/SCENARIO.slb), and the p99 ratio.
#
# Usage (from the repository root):  bash bench/lb/production.sh
# Environment: SCENARIOS, LOADS (default "0.5 0.7 0.85 0.95 0.98"), SEED
# (root seed, default 1001: not the seeds the policies were designed on),
# SEEDS (default 5), OUT (default out/lb-production), HYBRID_DIR (optional),
# GENERAL (optional: one general policy file from 'shoal train distr-lb
# --family', run in every cell as distr-lb-general, with a table of its own
# against the other Shoal policies and C3), ONLY_TABLE=1 (print the tables
# from OUT's results without running).
set -euo pipefail
cd "$(dirname "$0")/../.."

SCENARIOS=${SCENARIOS:-"lb-stale-views lb-heavy-tail lb-fanout lb-drift lb-slowdown lb-large-poisson lb-moderate-cpu"}
LOADS=${LOADS:-"0.5 0.7 0.85 0.95 0.98"}
SEED=${SEED:-1001}
SEEDS=${SEEDS:-5}
OUT=${OUT:-out/lb-production}
BASELINES="sed prequal least-request c3 peak-ewma"
SHOAL="probing-sed"
mkdir -p "$OUT"
go build -o "$OUT/shoal" ./cmd/shoal

for sc in $SCENARIOS; do
	[ "${ONLY_TABLE:-0}" = 1 ] && break
	for load in $LOADS; do
		policies="lsq p2c $BASELINES $SHOAL oracle"
		if [ -n "${HYBRID_DIR:-}" ] && [ -f "$HYBRID_DIR/$sc.slb" ]; then
			policies="$policies distr-lb:$HYBRID_DIR/$sc.slb distr-lb+probing:$HYBRID_DIR/$sc.slb"
		fi
		if [ -n "${GENERAL:-}" ]; then
			policies="$policies distr-lb-general:$GENERAL"
		fi
		"$OUT/shoal" sim "$sc" --load "$load" --seed "$SEED" --seeds "$SEEDS" --quiet --json \
			--policy "$(echo $policies | tr ' ' ,)" > "$OUT/$sc-$load.json"
	done
done

python3 - "$OUT" "$SCENARIOS" "$LOADS" "$BASELINES" <<'PY'
import json, sys
out, scenarios, loads, baselines = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4].split()
print("scenario            load  policy             mean (s)            p99 (s)             probes/req")
rows = []
for sc in scenarios:
    for load in loads:
        d = json.load(open(f"{out}/{sc}-{load}.json"))
        stats = {}
        for p in d["policies"]:
            s = p["summary"]
            stats[p["policy"]] = s
            print(f"{sc:19s} {load:5s} {p['policy']:18s} {s['mean']['mean']:.4g} ± {s['mean']['ci95']:<8.2g} {s['p99']['mean']:.4g} ± {s['p99']['ci95']:<8.2g} {s['probes_per_request']['mean']:.3g}")
        base = min(baselines, key=lambda n: stats[n]["p99"]["mean"])
        shoal = min((n for n in stats if n == "probing-sed" or n.startswith("distr-lb") and n != "distr-lb-general"), key=lambda n: stats[n]["p99"]["mean"])
        b, s = stats[base], stats[shoal]
        rows.append((sc, load, base, b, shoal, s, stats))
print()
print(f"seed {json.load(open(f'{out}/{scenarios[0]}-{loads[0]}.json'))['root_seed']}; p99 ratio < 0.9 meets issue 22's simulated target when the mean is no worse")
print("scenario            load  best production  p99      mean      best Shoal        p99      mean      p99 ratio  mean ratio")
for sc, load, base, b, shoal, s, _ in rows:
    print(f"{sc:19s} {load:5s} {base:16s} {b['p99']['mean']:<8.4g} {b['mean']['mean']:<9.4g} {shoal:17s} {s['p99']['mean']:<8.4g} {s['mean']['mean']:<9.4g} {s['p99']['mean']/b['p99']['mean']:<10.3f} {s['mean']['mean']/b['mean']['mean']:.3f}")
if any("distr-lb-general" in st for *_, st in rows):
    print()
    print("the general policy (issue 35): its p99 and mean over the best other Shoal policy's (target: p99 ratio <= 1.02 at a mean ratio <= 1),")
    print("over C3's, and over the best production balancer's (target: <= 0.9 wherever the best Shoal policy meets it)")
    print("scenario            load  best Shoal        p99 ratio  mean ratio  vs c3 p99  vs best prod. p99  meets 2%")
    for sc, load, base, b, shoal, s, st in rows:
        g = st.get("distr-lb-general")
        if g is None:
            continue
        pr, mr = g["p99"]["mean"] / s["p99"]["mean"], g["mean"]["mean"] / s["mean"]["mean"]
        ok = "yes" if pr <= 1.02 and mr <= 1 else "no"
        print(f"{sc:19s} {load:5s} {shoal:17s} {pr:<10.3f} {mr:<11.3f} {g['p99']['mean'] / st['c3']['p99']['mean']:<10.3f} {g['p99']['mean'] / b['p99']['mean']:<18.3f} {ok}")
PY
