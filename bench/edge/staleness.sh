#!/bin/bash
# Where greedy can lose (issue 51): greedy, greedy-tracked and softmin at
# every age of the platform's view of the queues and every load, on the
# validation windows (days 0 and 14, hours 3, 9, 15 and 21, world seeds
# 500-503). Prints each run's rows; about 4 s a run, 30 runs.
#   bash bench/edge/staleness.sh [SHOAL]
set -euo pipefail
shoal=${1:-shoal}
for day in 0 14; do
  for load in 1 1.3 1.6; do
    for age in 0s 500ms 1s 2s 5s; do
      echo "== day $day load $load staleness $age"
      "$shoal" edge evaluate --day "$day" --hours 3,9,15,21 --seed 500 --engine random \
        --staleness "$age" --load "$load" --softmin 0.02,0.05,0.1,0.2,0.4 | grep -E "greedy|softmin"
    done
  done
done
