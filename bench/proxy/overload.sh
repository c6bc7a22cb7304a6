#!/usr/bin/env bash
# Overload and recovery of 'shoal proxy' against HAProxy and nginx (issue 53).
#
# Two 'shoal backend --cores 1 --cpu exp:0.01' (10 ms mean exponential CPU
# demand on one core each: 200 requests per second together) behind each load
# balancer in turn, with least-request selection:
#   shoal          'shoal proxy', least-request, admission max_requests 16,
#                  queue_timeout 1s (max_pending its default, 64)
#   shoal-default  'shoal proxy', least-request, admission all defaults
#                  (max_requests 32, max_pending 64, queue_timeout 1s)
#   haproxy        balance leastconn, maxconn 16 per server, timeout queue 1s
#   nginx          least_conn, max_conns=16 per server (nginx has no queue
#                  without its commercial edition: the excess is refused, 502)
# 'shoal load' sends open-loop Poisson load in three phases: 0.75 of capacity
# (150/s) for BEFORE seconds, 3x capacity (RATE, 600/s) for OVERLOAD seconds, then
# 0.5 (100/s) for AFTER seconds, reporting outcomes by scheduled time in 1 s
# windows. Printed side by side, for each balancer:
#   goodput      requests completed successfully per second during the
#                overload (by the time they ended), and as a share of the
#                capacity (200/s)
#   shed         share of the overload's requests refused (503, or nginx's 502)
#   timed out    requests that got no answer (transport errors: the client's
#                30 s timeout or a reset)
#   p99 served   p99 of the overload's completed requests
#   p99 0.75     p99 of the first phase
#   recovery     seconds from the end of the overload until every later 1 s
#                window's p99 is within 1.2 times the first phase's
#   RSS          the balancer's largest resident set in the first phase and
#                over the whole run (MB), sampled every 0.5 s
#
# Usage (from the repository root):  bash bench/proxy/overload.sh
# Environment: BEFORE (default 10), OVERLOAD (default 60), AFTER (default 10),
# RATE (the overload's requests per second, default 600: 3x capacity),
# SEED (load schedule and backend demand seed, default 1), PROXIES (default
# "shoal shoal-default haproxy nginx"), OUT (the JSON of each run is kept
# there, default out/proxy-overload).
#
# CPU pinning: the balancer under test runs on CPU 0 (one worker thread:
# GOMAXPROCS=1, nbthread 1, worker_processes 1); the backends and the load
# generator share CPU 1.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/proxy/lib.sh

BEFORE=${BEFORE:-10}
OVERLOAD=${OVERLOAD:-60}
RATE=${RATE:-600}
AFTER=${AFTER:-10}
SEED=${SEED:-1}
PROXIES=${PROXIES:-"shoal shoal-default haproxy nginx"}
OUT=${OUT:-out/proxy-overload}

PATH=$PATH:/usr/sbin
for bin in nginx haproxy python3 taskset curl; do
	if ! command -v "$bin" >/dev/null; then
		echo "overload.sh: $bin not found: install the Debian packages nginx-light, haproxy, python3 and curl (scripts/test.sh does)" >&2
		exit 2
	fi
done
if [ "$(nproc)" -lt 2 ]; then
	echo "overload.sh: needs 2 CPUs for the pinning, found $(nproc)" >&2
	exit 2
fi
mkdir -p "$OUT"
start_work

B1=127.0.0.1:18281
B2=127.0.0.1:18282
LB=127.0.0.1:18280
ADMIN=127.0.0.1:18290

start_backends() {
	taskset -c 1 "$work/shoal" backend --listen $B1 --cores 1 --cpu exp:0.01 --seed "$SEED" >"$work/b1.log" 2>&1 &
	bpids=($!)
	taskset -c 1 "$work/shoal" backend --listen $B2 --cores 1 --cpu exp:0.01 --seed "$((SEED + 1))" >"$work/b2.log" 2>&1 &
	bpids+=($!)
	pids+=("${bpids[@]}")
	wait_answer $B1/healthz $B2/healthz
}

start_proxy() { # $1 name; sets ppid
	case $1 in
	shoal | shoal-default)
		{
			echo "listen: $LB"
			echo "admin: $ADMIN"
			echo "policy: least-request"
			echo "backends: [{url: http://$B1}, {url: http://$B2}]"
			[ "$1" = shoal ] && echo "admission: {max_requests: 16, queue_timeout: 1s}"
		} >"$work/proxy.yaml"
		GOMAXPROCS=1 taskset -c 0 "$work/shoal" proxy -c "$work/proxy.yaml" --log-level warn >"$OUT/$1.log" 2>&1 &
		ppid=$!
		;;
	haproxy)
		cat >"$work/haproxy.cfg" <<EOF
global
  nbthread 1
  maxconn 4096
defaults
  mode http
  timeout connect 2s
  timeout client 60s
  timeout server 60s
  timeout queue 1s
frontend f
  bind $LB
  default_backend b
backend b
  balance leastconn
  http-reuse always
  server s1 $B1 maxconn 16
  server s2 $B2 maxconn 16
EOF
		taskset -c 0 haproxy -db -f "$work/haproxy.cfg" >"$OUT/$1.log" 2>&1 &
		ppid=$!
		;;
	nginx)
		nginx_conf nginx "upstream b { least_conn; server $B1 max_conns=16; server $B2 max_conns=16; keepalive 64; }
  server { listen $LB; location / { proxy_pass http://b; proxy_http_version 1.1; proxy_set_header Connection \"\"; } }"
		taskset -c 0 nginx -c "$work/nginx/nginx.conf" >"$OUT/$1.log" 2>&1 &
		ppid=$!
		;;
	*)
		echo "overload.sh: unknown proxy $1 (want shoal, shoal-default, haproxy or nginx)" >&2
		exit 2
		;;
	esac
	pids+=("$ppid")
	wait_answer $LB
}

# rss_sampler PID FILE: appends "seconds rss_kB" every 0.5 s (the process
# and its children: nginx's worker) until killed.
rss_sampler() {
	local t0
	t0=$(date +%s.%N)
	while true; do
		local kb=0 p
		for p in $1 $(pgrep -P "$1" || true); do
			kb=$((kb + $(awk '/VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)))
		done
		echo "$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }') $kb" >>"$2"
		sleep 0.5
	done
}

phases="150:${BEFORE}s,$RATE:${OVERLOAD}s,100:${AFTER}s"
echo "phases $phases, seed $SEED, commit $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes'), $(date -u +%Y-%m-%d)"
for px in $PROXIES; do
	start_backends
	start_proxy "$px"
	: >"$OUT/$px.rss"
	rss_sampler "$ppid" "$OUT/$px.rss" &
	spid=$!
	taskset -c 1 "$work/shoal" load "http://$LB/" --phases "$phases" --window 1s --seed "$SEED" --json >"$OUT/$px.json"
	case $px in shoal*) curl -fsS "http://$ADMIN/metrics" | grep -E '^shoal_proxy_(shed_total|queued_total)' >"$OUT/$px.metrics" ;; esac
	kill "$spid" "$ppid" "${bpids[@]}" 2>/dev/null || true
	wait "$spid" "$ppid" "${bpids[@]}" 2>/dev/null || true
	sleep 0.5
done

python3 - "$OUT" "$BEFORE" "$OVERLOAD" $PROXIES <<'EOF'
import json, sys
out, before, overload = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
capacity = 200.0
print("| balancer | goodput (req/s) | of capacity | shed | timed out | p99 served | p99 at 0.75 | recovery | RSS at 0.75 | RSS max |")
print("|---|---|---|---|---|---|---|---|---|---|")
for px in sys.argv[4:]:
    r = json.load(open(f"{out}/{px}.json"))
    p1, p2, p3 = r["phases"]
    timed_out = r["failed"].get("transport", 0)
    shed = p2["failed"] - p2["transport"]  # answered 503 (nginx: 502)
    goodput = sum(w["finished"] for w in r["windows"] if before <= w["start"] < before + overload) / overload
    ref = p1["p99"]
    after = [w for w in r["windows"] if w["start"] >= before + overload and w["scheduled"] > 0]
    recovery = 0.0
    for w in after:
        if w["completed"] == 0 or w["p99"] > 1.2 * ref:
            recovery = w["end"] - (before + overload)
    rss = [tuple(map(float, l.split())) for l in open(f"{out}/{px}.rss") if l.strip()]
    rss75 = max((kb for t, kb in rss if t < before), default=0) / 1024
    rssmax = max((kb for t, kb in rss), default=0) / 1024
    shed_by = ""
    try:
        m = dict(l.rsplit(" ", 1) for l in open(f"{out}/{px}.metrics") if l.strip())
        shed_by = " (whole run: %d at once, %d after the queue timeout)" % (
            float(m.get('shoal_proxy_shed_total{reason="queue_full"}', 0)), float(m.get('shoal_proxy_shed_total{reason="queue_timeout"}', 0)))
    except OSError:
        pass
    print(f"| {px} | {goodput:.1f} | {goodput / capacity:.0%} | {shed / max(p2['scheduled'], 1):.1%}{shed_by} | {timed_out} | "
          f"{p2['p99']:.3f} s | {ref:.3f} s | {recovery:.0f} s | {rss75:.0f} MB | {rssmax:.0f} MB |")
EOF
