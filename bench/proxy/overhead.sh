#!/usr/bin/env bash
# Side-by-side overhead of 'shoal proxy' against nginx and HAProxy (Debian
# packages) in front of one fast backend, all on 127.0.0.1: closed-loop load
# from wrk at fixed concurrency, requests per second and latency percentiles
# of each, the ratios to nginx, and the p99 added over going to the backend
# directly.
#
# Usage (from the repository root):  bash bench/proxy/overhead.sh
# Environment: DURATION (wrk seconds per run, default 10), CONNS (wrk
# connections, default "32 4"), ROUNDS (runs per proxy and concurrency,
# interleaved; the median is reported; default 3).
#
# CPU pinning: the proxy under test (each in turn) runs alone on CPU 0 with
# one worker (nginx worker_processes 1, HAProxy nbthread 1, GOMAXPROCS=1);
# the backend (nginx returning a 3-byte body) and wrk (one thread) share
# CPU 1. Every proxy keeps connections to the backend alive. Access logs off.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/proxy/lib.sh

DURATION=${DURATION:-10}
CONNS=${CONNS:-"32 4"}
ROUNDS=${ROUNDS:-3}

for bin in nginx haproxy wrk taskset; do
	if ! command -v "$bin" >/dev/null && [ ! -x "/usr/sbin/$bin" ]; then
		echo "overhead.sh: $bin not found: install the Debian packages nginx-light, haproxy and wrk (scripts/test.sh does)" >&2
		exit 2
	fi
done
PATH=$PATH:/usr/sbin
if [ "$(nproc)" -lt 2 ]; then
	echo "overhead.sh: needs 2 CPUs for the pinning, found $(nproc)" >&2
	exit 2
fi

start_work

BACKEND=127.0.0.1:18181
SHOAL=127.0.0.1:18180
NGINX=127.0.0.1:18182
HAPROXY=127.0.0.1:18183

nginx_conf backend "server { listen $BACKEND; location / { return 200 \"ok\n\"; } }"
nginx_conf nginx "upstream b { server $BACKEND; keepalive 64; }
  server { listen $NGINX; location / { proxy_pass http://b; proxy_http_version 1.1; proxy_set_header Connection \"\"; } }"
cat >"$work/haproxy.cfg" <<EOF
global
  nbthread 1
  maxconn 4096
defaults
  mode http
  timeout connect 2s
  timeout client 60s
  timeout server 60s
  http-reuse always
frontend f
  bind $HAPROXY
  default_backend b
backend b
  server s1 $BACKEND
EOF
cat >"$work/shoal.yaml" <<EOF
listen: $SHOAL
policy: rr
backends: [{url: "http://$BACKEND"}]
EOF

taskset -c 1 nginx -c "$work/backend/nginx.conf" & pids+=($!)
taskset -c 0 nginx -c "$work/nginx/nginx.conf" & pids+=($!)
taskset -c 0 haproxy -f "$work/haproxy.cfg" -db & pids+=($!)
GOMAXPROCS=1 taskset -c 0 "$work/shoal" proxy -c "$work/shoal.yaml" --log-level warn & pids+=($!)
wait_answer $BACKEND $NGINX $HAPROXY $SHOAL

measure() { # $1 addr, $2 conns -> "rps p50 p99"
	local out
	out=$(taskset -c 1 wrk -t1 -c"$2" -d"${DURATION}s" --latency "http://$1/")
	local rps p50 p99
	rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
	p50=$(awk '$1=="50%" {print $2}' <<<"$out" | to_ms)
	p99=$(awk '$1=="99%" {print $2}' <<<"$out" | to_ms)
	echo "$rps $p50 $p99"
}

echo "# shoal proxy vs nginx $(nginx -v 2>&1 | sed 's/.*\///') vs HAProxy $(haproxy -v | awk 'NR==1{print $3}'); wrk -t1, ${DURATION}s per run, median of $ROUNDS interleaved rounds"
echo "# proxies on CPU 0 (one worker each), backend and wrk on CPU 1; $(date -u +%Y-%m-%dT%H:%MZ), $(uname -m), $(nproc) CPUs"
for c in $CONNS; do
	taskset -c 1 wrk -t1 -c"$c" -d2s "http://$SHOAL/" >/dev/null # warm connections and code
	declare -A rps=() p50=() p99=()
	for r in $(seq "$ROUNDS"); do
		for name in direct nginx haproxy shoal; do
			case $name in direct) a=$BACKEND ;; nginx) a=$NGINX ;; haproxy) a=$HAPROXY ;; shoal) a=$SHOAL ;; esac
			read -r x y z < <(measure "$a" "$c")
			rps[$name]+="$x "; p50[$name]+="$y "; p99[$name]+="$z "
		done
	done
	printf '\n%-8s %4s %12s %9s %9s %12s %14s\n' proxy conns "req/s" "p50 ms" "p99 ms" "x nginx" "p99 - direct"
	nginx_rps=$(tr ' ' '\n' <<<"${rps[nginx]}" | grep . | median)
	direct_p99=$(tr ' ' '\n' <<<"${p99[direct]}" | grep . | median)
	for name in direct nginx haproxy shoal; do
		R=$(tr ' ' '\n' <<<"${rps[$name]}" | grep . | median)
		P50=$(tr ' ' '\n' <<<"${p50[$name]}" | grep . | median)
		P99=$(tr ' ' '\n' <<<"${p99[$name]}" | grep . | median)
		awk -v n="$name" -v c="$c" -v r="$R" -v a="$P50" -v b="$P99" -v nr="$nginx_rps" -v d="$direct_p99" \
			'BEGIN { printf "%-8s %4d %12.0f %9.3f %9.3f %11.2fx %11.3f ms\n", n, c, r, a, b, r/nr, b-d }'
	done
	unset rps p50 p99
done
