#!/usr/bin/env bash
# The production autoscalers on TrainTicket under four arrival patterns,
# every policy on the same arrivals, SEEDS seeds each (95% CIs in the tables):
#   drpc-surge  DRPC's motivation case: 200 req/s, then 800 req/s within a minute
#   nasa        NASA-HTTP 1995, ten daytime hours compressed 60x, mean 300 req/s
#   wikipedia   English Wikipedia, Jan 2016, five days of hourly totals compressed 720x
#   azure       Azure LLM inference 2023, one hour of arrivals compressed 6x
# Usage: bash bench/autoscale/traces.sh [CASE...]   (default: all four)
# Env: SEEDS (5), HORIZON (10m), POLICIES (static,hpa,kpa,keda,openfaas,vpa), OUT (out/autoscale).
set -euo pipefail
cd "$(dirname "$0")/../.."
SEEDS=${SEEDS:-5}
HORIZON=${HORIZON:-10m}
POLICIES=${POLICIES:-static,hpa,kpa,keda,openfaas,vpa}
OUT=${OUT:-out/autoscale}

surge() { # 10 s steps: 2 min at 200, +100 every 10 s to 800, then 800
	local r=() i
	for i in $(seq 12); do r+=(200); done
	for i in 300 400 500 600 700 800; do r+=("$i"); done
	for i in $(seq 42); do r+=(800); done
	local IFS=,
	echo "{kind: series, step: 10s, rates: [${r[*]}]}"
}

declare -A arrivals=(
	[drpc-surge]="$(surge)"
	[nasa]="{kind: trace, trace: nasa, rate: 300, speedup: 60, start: 102h}"
	[wikipedia]="{kind: trace, trace: wikipedia, rate: 300, speedup: 720}"
	[azure]="{kind: trace, trace: azure-llm, bin: 10s, rate: 300, speedup: 6}"
)
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(drpc-surge nasa wikipedia azure)

go build -o bin/shoal ./cmd/shoal
for c in "${cases[@]}"; do
	[ -n "${arrivals[$c]:-}" ] || { echo "unknown case $c (want drpc-surge, nasa, wikipedia, azure)" >&2; exit 2; }
	echo "== $c: --arrivals '${arrivals[$c]}'"
	./bin/shoal sim trainticket --quiet --policy "$POLICIES" --seeds "$SEEDS" --horizon "$HORIZON" \
		--arrivals "${arrivals[$c]}" --out "$OUT/$c"
	echo
done
