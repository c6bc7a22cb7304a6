#!/usr/bin/env bash
# FaaSConf served as `shoal sim` serves it, against each workflow's own
# configuration (static) and OpenFaaS's autoscaler: success, latency, cost
# and scaling actions, SEEDS seeds from root seed 1 (95% CIs in the tables).
# The policies are the ones `shoal experiment faasconf` trained
# (POLICIES/faasconf-WORKFLOW-seed1.policy), or trained here when missing.
# Usage: bash bench/faasconf/serve.sh [WORKFLOW...]   (default: all four)
# Env: SEEDS (3), HORIZON (30m), POLICIES (out/faasconf/policies), OUT (optional:
# each workflow's results also go to OUT/WORKFLOW, as shoal sim --out writes them).
set -euo pipefail
cd "$(dirname "$0")/../.."
SEEDS=${SEEDS:-3}
HORIZON=${HORIZON:-30m}
POLICIES=${POLICIES:-out/faasconf/policies}
workflows=("$@")
[ ${#workflows[@]} -gt 0 ] || workflows=(faas-sequential faas-parallel faas-branch faas-ticket-search)
shoal=${SHOAL:-$(mktemp -d)/shoal}
[ -x "$shoal" ] || go build -o "$shoal" ./cmd/shoal
mkdir -p "$POLICIES"
for w in "${workflows[@]}"; do
	p="$POLICIES/faasconf-$w-seed1.policy"
	[ -f "$p" ] || "$shoal" train faasconf "$w" --seed 1 --quiet -o "$p"
	echo "== $w (seeds $SEEDS from 1, horizon $HORIZON)"
	"$shoal" sim "$w" --policy "static,openfaas,faasconf:$p" --seeds "$SEEDS" --seed 1 --horizon "$HORIZON" --no-record \
		${OUT:+--out "$OUT/$w"}
done
