#!/usr/bin/env bash
# Side-by-side benchmark of Shoal against SimPy 3 (Debian python3-simpy3, run
# with /usr/bin/python3): the same M/M/1 model and the same 2-LB x 7-server
# processor-sharing LSQ model, for the same simulated horizons and seeds on
# both sides. Checks that the mean response times agree within 3% and prints
# simulated requests per second of each side and the ratio.
#
# Usage (from the repository root):  bash bench/peers/run.sh
# Environment: MM1_HORIZON, MM1_SEEDS, LB_HORIZON, LB_SEEDS (simulated seconds
# per run, runs), TEXTBOOK_SEEDS, CHECK_HORIZON, CHECK_SEEDS, DEADLINE
# (seconds; the script gives up, exit 3, rather than run longer).
#
# Both sides run on one core (taskset -c 0 when available; GOMAXPROCS=1 for
# Go). Rates are per CPU second of the process (user + system), measured
# in-process around the runs only (not start-up, imports or the Go build),
# because wall time on a shared machine also counts other processes; the
# wall-clock rates are printed too.
set -euo pipefail
cd "$(dirname "$0")/../.."

MM1_HORIZON=${MM1_HORIZON:-10000}
MM1_SEEDS=${MM1_SEEDS:-40}
LB_HORIZON=${LB_HORIZON:-5400}
LB_SEEDS=${LB_SEEDS:-12}
TEXTBOOK_SEEDS=${TEXTBOOK_SEEDS:-8}
CHECK_HORIZON=${CHECK_HORIZON:-10000}
CHECK_SEEDS=${CHECK_SEEDS:-4}
DEADLINE=${DEADLINE:-170}
TOL=0.03
PY=/usr/bin/python3

if ! "$PY" -c 'import simpy' 2>/dev/null; then
	echo "installing python3-simpy3 with apt-get" >&2
	SUDO=()
	if [ "$(id -u)" != 0 ]; then SUDO=(sudo); fi
	"${SUDO[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq python3-simpy3 >/dev/null
fi
SIMPY_VERSION=$("$PY" -c 'import simpy; print(simpy.__version__)')
case "$SIMPY_VERSION" in
3.*) ;;
*) echo "run.sh: need SimPy 3, found $SIMPY_VERSION" >&2; exit 1 ;;
esac

PIN=()
if command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then PIN=(taskset -c 0); fi
export GOMAXPROCS=1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/shoalpeer" ./bench/peers/shoalpeer

# limited runs a command with what is left of the deadline.
limited() {
	local left=$((DEADLINE - SECONDS))
	if [ "$left" -le 0 ] || ! timeout "$left" "$@"; then
		if [ $((DEADLINE - SECONDS)) -le 0 ]; then
			echo "run.sh: gave up after ${DEADLINE}s (machine too busy? lower the horizons or raise DEADLINE)" >&2
			exit 3
		fi
		echo "run.sh: failed: $*" >&2
		exit 1
	fi
}

echo "SimPy $SIMPY_VERSION on Python $("$PY" -c 'import sys; print(sys.version.split()[0])'), $(go version | cut -d' ' -f3), pinned: ${PIN[*]:-no} GOMAXPROCS=1, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //')"
echo "processor-sharing server of lb2x7.py against theory:"
limited "${PIN[@]}" "$PY" bench/peers/lb2x7.py --check --horizon "$CHECK_HORIZON" --seeds "$CHECK_SEEDS"

limited "${PIN[@]}" "$PY" bench/peers/mm1.py --horizon "$MM1_HORIZON" --seeds "$MM1_SEEDS" >"$tmp/mm1-simpy.json"
limited "${PIN[@]}" "$tmp/shoalpeer" -model mm1 -horizon "${MM1_HORIZON}s" -seeds "$MM1_SEEDS" -repeat 3 >"$tmp/mm1-shoal.json"
limited "${PIN[@]}" "$PY" bench/peers/lb2x7.py --horizon "$LB_HORIZON" --seeds "$LB_SEEDS" >"$tmp/lb-simpy.json"
limited "${PIN[@]}" "$tmp/shoalpeer" -model lb2x7 -horizon "${LB_HORIZON}s" -seeds "$LB_SEEDS" -repeat 3 >"$tmp/lb-shoal.json"
limited "${PIN[@]}" "$PY" bench/peers/mm1.py --style resource --horizon "$MM1_HORIZON" --seeds "$TEXTBOOK_SEEDS" >"$tmp/mm1-textbook.json"
limited "${PIN[@]}" "$tmp/shoalpeer" -model mm1 -horizon "${MM1_HORIZON}s" -seeds "$TEXTBOOK_SEEDS" -repeat 3 >"$tmp/mm1-shoal-textbook.json"

echo
"$PY" bench/peers/table.py "$TOL" \
	"mm1:$tmp/mm1-simpy.json:$tmp/mm1-shoal.json" \
	"lb2x7:$tmp/lb-simpy.json:$tmp/lb-shoal.json" \
	--textbook "$tmp/mm1-textbook.json:$tmp/mm1-simpy.json:$tmp/mm1-shoal-textbook.json"
