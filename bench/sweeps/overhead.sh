#!/usr/bin/env bash
# The run store's cost: the write rate (runs/s) of store.Record on SQLite and
# PostgreSQL (BenchmarkRecord, a run of 46 statistics, one transaction each),
# and a sweep's overhead per run: a sweep of many short simulations run with
# one worker, whose wall time less the runs' own times (from the store) is
# what planning, resuming and recording cost.
#
# Usage (from the repository root):  bash bench/sweeps/overhead.sh
# Environment: DB (the sweep's store: a SQLite file or a postgres:// URL;
# default a fresh SQLite file), BENCH=0 (skip the benchmark, which starts its
# own PostgreSQL).
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
DB=${DB:-$tmp/runs.db}
go build -o "$tmp/shoal" ./cmd/shoal

if [ "${BENCH:-1}" != 0 ]; then
	echo "== store.Record: runs/s"
	go test ./store -run '^$' -bench Record -benchmem -count 3 | grep -E '^Benchmark'
fi

# 32 runs of about 10 ms each (2 scenarios x 4 loads x 4 policies, 2 seeds a run).
cat > "$tmp/sweep.yaml" <<'YAML'
name: overhead
scenarios: [lb-moderate-cpu, lb-drift]
loads: [0.5, 0.7, 0.85, 0.95]
policies: [sed, lsq, c3, probing-sed]
seed: 1001
seeds: 2
horizon: 30s
YAML
id="overhead-$(date +%s%N)"
start=$(date +%s.%N)
"$tmp/shoal" sweep "$tmp/sweep.yaml" --id "$id" --db "$DB" --workers 1 --quiet
end=$(date +%s.%N)
"$tmp/shoal" runs export --sweep "$id" --db "$DB" > "$tmp/runs.json"
python3 - "$tmp/runs.json" "$start" "$end" <<'PY'
import json, sys
from datetime import datetime
runs = json.load(open(sys.argv[1]))
wall = float(sys.argv[3]) - float(sys.argv[2])
def t(s):  # RFC 3339 in UTC with up to nanoseconds: keep microseconds
    head, _, frac = s.rstrip("Z").partition(".")
    return datetime.fromisoformat(f"{head}.{frac[:6].ljust(6, '0')}+00:00")
own = sum((t(r["finished"]) - t(r["started"])).total_seconds() for r in runs)
n = len(runs)
print(f"== sweep of {n} runs, one worker: wall {wall:.2f} s, the runs' own {own:.2f} s")
print(f"overhead per run: {(wall - own) / n * 1000:.1f} ms (process start, store open, planning, resume check, recording)")
PY
