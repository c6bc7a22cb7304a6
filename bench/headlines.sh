#!/usr/bin/env bash
# Measures every verdict row of docs/results again, with the documented
# commands and their default flags, and prints the measured figure beside
# the stated one (bench/headlines.py reads the outputs and the pages).
# Exits 1 when a measurement falls outside the stated 95% interval (or,
# for a row stated without one, differs from it), listing those rows in
# OUT/failed. Run it before a results page changes. Not part of CI.
#
# Usage (from the repository root):  bash bench/headlines.sh [SECTION...]
# Sections (default: all, in this order), each with the pages' own run
# times on this 2-core machine:
#   lb-sim         shoal sim lb-moderate-cpu (2 seconds)
#   multicloud     shoal experiment multicloud all (7 minutes, 2026-11-28)
#   edge           shoal experiment edge generalisation (18 minutes, 2026-11-28)
#   faasconf       shoal experiment faasconf effectiveness (trains the four
#                  workflows' policies and searches the oracles first), then
#                  adaptability, then bench/faasconf/serve.sh with those
#                  policies (about 80 minutes in all)
#   lb-testbed     bench/proxy/quality.sh, the shipped general policy beside
#                  nginx, HAProxy and probing-sed, 8 seeds x 2 loads (42
#                  minutes, 2026-11-28)
#   lb-production  bench/lb/production.sh, 7 scenarios x 5 loads with the
#                  per-scenario hybrids (trained first) and the general policy
#   drpc           shoal experiment drpc pareto at the verdict's points, and the
#                  whole Alibaba half (4 trainings of 8-11 minutes, then the runs)
# Outputs already in OUT are reused: delete a section's folder to run it
# again. Environment: OUT (default out/headlines).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/headlines}
SECTIONS=${*:-"lb-sim multicloud edge faasconf lb-testbed lb-production drpc"}
mkdir -p "$OUT"
rm -f "$OUT/failed"
go build -o "$OUT/shoal" ./cmd/shoal
SHOAL=$OUT/shoal
began=$(date +%s)

for section in $SECTIONS; do
	start=$(date +%s)
	echo "== $section"
	case $section in
	lb-sim)
		"$SHOAL" sim lb-moderate-cpu --out "$OUT/lb-moderate-cpu" --no-record --quiet >/dev/null ;;
	multicloud)
		[ -f "$OUT/multicloud/egress.csv" ] || "$SHOAL" experiment multicloud all --out "$OUT/multicloud" --no-record >/dev/null ;;
	edge)
		[ -f "$OUT/edge/generalisation.csv" ] || "$SHOAL" experiment edge generalisation --out "$OUT/edge" --no-record >/dev/null ;;
	faasconf)
		# effectiveness trains the four workflows' policies (and searches the
		# oracles); adaptability and serving reuse them
		[ -f "$OUT/faasconf/effectiveness/effectiveness.json" ] ||
			"$SHOAL" experiment faasconf effectiveness --out "$OUT/faasconf" --no-record >/dev/null
		[ -f "$OUT/faasconf/adaptability/adaptability.json" ] ||
			"$SHOAL" experiment faasconf adaptability --out "$OUT/faasconf" --no-record >/dev/null
		[ -f "$OUT/faasconf/served/faas-ticket-search/summary.csv" ] ||
			SHOAL=$SHOAL POLICIES="$OUT/faasconf/policies" OUT="$OUT/faasconf/served" bash bench/faasconf/serve.sh >"$OUT/faasconf-served.log" ;;
	lb-testbed)
		[ -f "$OUT/testbed/quality.csv" ] ||
			GENERAL=control/lb/general.slb OUT="$OUT/testbed" LOADS="0.85 0.95" DURATION=35 WARMUP=10 REPEATS=8 \
				POLICIES="nginx-least_conn haproxy-leastconn shoal-probing-sed shoal-distr-lb-general" \
				bash bench/proxy/quality.sh >"$OUT/testbed.log" ;;
	lb-production)
		if [ ! -d "$OUT/production" ]; then
			STEPS=hybrids OUT="$OUT/lb-general" bash bench/lb/general.sh >"$OUT/lb-general.log"
			OUT="$OUT/production" HYBRID_DIR="$OUT/lb-general/hybrid" GENERAL=control/lb/general.slb \
				bash bench/lb/production.sh >"$OUT/production.log"
		fi ;;
	drpc)
		# The points the verdict compares, as the full study runs them (the
		# same trained policies, seeds and arrivals; every point and every
		# budget's policy is independent of the others): DRPC at budgets 45
		# and 60, the HPA at 45-75%, one setting of each other baseline.
		[ -f "$OUT/drpc/pareto/pareto.csv" ] ||
			"$SHOAL" experiment drpc pareto --workloads steady,steady-30m,surge,mixchange --budgets 45,60 \
				--hpa-targets 45,60,75 --kpa-factors 1 --slo-factors 1 --out "$OUT/drpc/pareto" --no-record >/dev/null
		if [ ! -f "$OUT/drpc/alibaba250/pareto.csv" ]; then
			# the whole held-out half, with the policies the study trained
			mkdir -p "$OUT/drpc/alibaba250"
			ln -sfn ../pareto/policies "$OUT/drpc/alibaba250/policies"
			"$SHOAL" experiment drpc pareto --workloads alibaba --alibaba-horizon 250m --budgets 60 --hpa-targets 45 \
				--kpa-factors 1 --slo-factors 1 --out "$OUT/drpc/alibaba250" --no-record >/dev/null
		fi ;;
	*) echo "headlines.sh: unknown section $section (known: lb-sim multicloud edge faasconf lb-testbed lb-production drpc)" >&2; exit 2 ;;
	esac
	python3 bench/headlines.py "$section" "$OUT"
	echo "   ($(( $(date +%s) - start )) s)"
done
echo "== all sections in $(( $(date +%s) - began )) s"
if [ -s "$OUT/failed" ]; then
	echo "measurements outside the stated intervals:"
	cat "$OUT/failed"
	exit 1
fi
