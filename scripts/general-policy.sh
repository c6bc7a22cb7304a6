#!/usr/bin/env bash
# Trains the general Distr-LB policy that Shoal ships (control/lb/general.slb)
# again, with the command its provenance records, and checks that the file
# is the same, byte for byte. About 3 minutes on 2 cores (300 generations,
# 11,040 simulated episodes). With -w, writes the new file over the shipped
# one instead (after a change that is meant to change the policy).
#
#   bash scripts/general-policy.sh        # check
#   bash scripts/general-policy.sh -w     # retrain and replace
set -euo pipefail
cd "$(dirname "$0")/.."
shipped=control/lb/general.slb
write=false
[ "${1:-}" = "-w" ] && write=true

# The command is in the file's JSON header: {"provenance":{"command":"shoal train ..."}}.
command=$(head -n 1 "$shipped" | sed -n 's/.*"command":"\([^"]*\)".*/\1/p')
if [ -z "$command" ]; then
  echo "general-policy.sh: $shipped records no command in its provenance" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/shoal" ./cmd/shoal
echo "== $command"
# shellcheck disable=SC2086 # the recorded command is split into its words
"$tmp/${command%% *}" ${command#* } -o "$tmp/general.slb" --no-record
if $write; then
  cp "$tmp/general.slb" "$shipped"
  echo "wrote $shipped"
elif cmp -s "$tmp/general.slb" "$shipped"; then
  echo "the same, byte for byte: $shipped ($(wc -c <"$shipped") bytes, sha256 $(sha256sum "$shipped" | cut -c1-16))"
else
  echo "general-policy.sh: retraining wrote a different file than $shipped:" >&2
  cmp "$tmp/general.slb" "$shipped" >&2 || true
  exit 1
fi
