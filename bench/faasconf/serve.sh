#!/usr/bin/env bash
# FaaSConf served as a user gets it: trained with the guide's command and
# default flags (`shoal train faasconf WORKFLOW`), served by `shoal sim`
# beside every other method's frontier: the workflow's own configuration
# (static) at several sizes (replicas, and CPU and memory), OpenFaaS's
# autoscaler at several targets, the Jolteon-like configurator (`shoal
# train jolteon WORKFLOW`, defaults), and FaaSConf itself with a tighter and
# looser QoS. Then bench/faasconf/frontier states the targets of issue 49.
# Policies are trained once into POLICIES and reused.
# Usage: bash bench/faasconf/serve.sh [WORKFLOW...]   (default: all four)
# Env: SEEDS (3), SEED (101), HORIZON (the scenario's), POLICIES
# (out/faasconf/served), OUT (out/faasconf/served: OUT/WORKFLOW gets shoal
# sim's files and report).
set -euo pipefail
cd "$(dirname "$0")/../.."
SEEDS=${SEEDS:-3}
SEED=${SEED:-101}
POLICIES=${POLICIES:-out/faasconf/served}
OUT=${OUT:-out/faasconf/served}
workflows=("$@")
[ ${#workflows[@]} -gt 0 ] || workflows=(faas-sequential faas-parallel faas-branch faas-ticket-search)
shoal=${SHOAL:-$(mktemp -d)/shoal}
[ -x "$shoal" ] || go build -o "$shoal" ./cmd/shoal
mkdir -p "$POLICIES"
for w in "${workflows[@]}"; do
	p="$POLICIES/faasconf-$w.policy"
	j="$POLICIES/jolteon-$w.policy"
	[ -f "$p" ] || "$shoal" train faasconf "$w" --quiet -o "$p"
	[ -f "$j" ] || "$shoal" train jolteon "$w" --quiet -o "$j"
	echo "== $w (seeds $SEEDS from $SEED, horizon ${HORIZON:-of the scenario})"
	"$shoal" sim "$w" --seeds "$SEEDS" --seed "$SEED" ${HORIZON:+--horizon "$HORIZON"} --no-record --quiet --out "$OUT/$w" \
		--policy "static,static:scale=0.75..1.5/0.25,static:resources=0.8..1.2/0.1,openfaas:target=2..5/1,jolteon:$j,faasconf:$p,faasconf:file=$p:qos=0.8..1.2/0.1"
	go run ./bench/faasconf/frontier "$OUT/$w/summary.csv"
done
