#!/bin/bash
# The ceiling of a learned per-task rule across the edge scenario family
# (issue 51): at each load and age of the platform's view of the queues,
# the rule trained by PPO in the real world (12 hour-long episodes on days
# 1-13, training seed 1) against greedy and greedy-tracked, on the
# validation windows (day 0 and day 14, hours 3, 9, 15 and 21, world seeds
# 500-503). Prints each run's rows; 3-6 minutes a run, 6 runs.
#   bash bench/edge/ceiling.sh [SHOAL]
set -euo pipefail
shoal=${1:-shoal}
for load in 1 1.6; do
  for age in 0s 1s 5s; do
    echo "== load $load staleness $age"
    "$shoal" edge evaluate --day 0,14 --hours 3,9,15,21 --seed 500 --engine random \
      --staleness "$age" --load "$load" --ceiling 12 | grep -E "^day|greedy|per-task"
  done
done
