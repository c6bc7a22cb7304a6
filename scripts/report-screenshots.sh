#!/usr/bin/env bash
# The report screenshots in docs/images: `shoal sim` on three embedded
# scenarios (a load balancer, microservices, a serverless workflow) with
# their own policies, seeds and horizons, each report.html rendered by
# headless Chromium 1280 px wide. (The README's picture is DRPC's frontier
# chart, drawn by 'shoal experiment drpc pareto' for its results page.) Needs
# chromium-headless-shell (or chromium), which scripts/test.sh installs.
# Runs are not recorded.
set -euo pipefail
cd "$(dirname "$0")/.."
chromium=$(command -v chromium-headless-shell || command -v chromium)
out=${OUT:-out/screenshots}
mkdir -p "$out" docs/images
go build -o "$out/shoal" ./cmd/shoal
for case in lb-moderate-cpu:1800 trainticket-surge:2300 faas-sequential:2200; do
  name=${case%%:*} height=${case##*:}
  echo "== $name"
  "$out/shoal" sim "$name" --out "$out/$name" --no-record --quiet >"$out/$name.txt"
  profile=$(mktemp -d)
  "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" --window-size=1280,"$height" --hide-scrollbars \
    --screenshot="docs/images/report-$name.png" "file://$PWD/$out/$name/report.html" 2>/dev/null
  rm -rf "$profile"
done
ls -l docs/images/
