#!/usr/bin/env bash
# Policy quality on an emulated testbed, and sim-to-real fidelity.
#
# Seven 'shoal backend' processes emulate the servers of bench/proxy/testbed.yaml
# (processor sharing of their cores at their true speeds; the configured
# weights are the cores, which is wrong). Two load balancers of the same kind
# each receive half of an open-loop Poisson load ('shoal load' spreads it) at
# each LOADS fraction of the total capacity, for each policy:
#   nginx least_conn, nginx weighted round robin, HAProxy leastconn, HAProxy
#   roundrobin (weights = cores), shoal proxy with lsq, sed, p2c, Envoy's
#   least-request, Linkerd's peak-ewma, Google's prequal, C3, Shoal's
#   probing-sed (Prequal's probes, SED's weights), and the
#   Distr-LB agent trained in the simulator on testbed.yaml (two independent
#   agents, lb0 and lb1), and with ONLINE set, the same agents after ONLINE
#   seconds of online training on the testbed (agent.train, at 0.85 load;
#   policy shoal-distr-lb-online, evaluated frozen like the others).
# Each run is repeated REPEATS times (seeds SEED, SEED+1, ...) for 95%
# intervals over repeats, and reports the load balancers' CPU per 1,000
# requests (user+system time of their processes over the run) and, for
# shoal proxies, the load probes sent per request.
# Then the same scenario in 'shoal sim' for the policies it has (lsq, sed,
# p2c, least-request, peak-ewma, prequal, c3, probing-sed, wrr, distr-lb)
# gives the simulated mean and p99 to compare with.
#
# Usage (from the repository root):  bash bench/proxy/quality.sh
# Environment: LOADS (default "0.7 0.85 0.95"), DURATION (seconds of load per
# run, default 75), WARMUP (seconds not measured, default 15), SEED (load
# schedule and backend demand seed, default 1), REPEATS (default 1),
# POLICIES (default all), OUT
# (default out/proxy-bench; the trained policy is kept there and reused),
# ONLINE (seconds of online training, default 0: none; the policies trained
# online are written to OUT/distr-lb-online-lb0.slb and -lb1.slb), PER_LOAD
# (1: Distr-LB runs at each load with a policy trained in the simulator at
# that load, OUT/distr-lb-load$LOAD.slb, trained if missing; default 0: the
# one policy trained at 0.85), GENERAL (a general Distr-LB policy file, from
# 'shoal train distr-lb --family': adds policy shoal-distr-lb-general, the
# same file in both proxies, unchanged).
set -euo pipefail
cd "$(dirname "$0")/../.."
PATH=$PATH:/usr/sbin

LOADS=${LOADS:-"0.7 0.85 0.95"}
DURATION=${DURATION:-75}
WARMUP=${WARMUP:-15}
SEED=${SEED:-1}
REPEATS=${REPEATS:-1}
ONLINE=${ONLINE:-0}
PER_LOAD=${PER_LOAD:-0}
POLICIES=${POLICIES:-"nginx-least_conn nginx-wrr haproxy-leastconn haproxy-roundrobin shoal-lsq shoal-sed shoal-p2c shoal-least-request shoal-peak-ewma shoal-prequal shoal-c3 shoal-probing-sed shoal-distr-lb"}
if [ "$ONLINE" != 0 ] && [[ " $POLICIES " != *" shoal-distr-lb-online "* ]]; then
	POLICIES="$POLICIES shoal-distr-lb-online"
fi
GENERAL=${GENERAL:-}
if [ -n "$GENERAL" ] && [[ " $POLICIES " != *" shoal-distr-lb-general "* ]]; then
	POLICIES="$POLICIES shoal-distr-lb-general"
fi
if [[ " $POLICIES " == *" shoal-distr-lb-general "* ]] && [ ! -f "$GENERAL" ]; then
	echo "quality.sh: shoal-distr-lb-general needs GENERAL=FILE, a policy from 'shoal train distr-lb --family'" >&2
	exit 2
fi
[ -n "$GENERAL" ] && GENERAL=$(cd "$(dirname "$GENERAL")" && pwd)/$(basename "$GENERAL")
OUT=${OUT:-out/proxy-bench}
SCENARIO=bench/proxy/testbed.yaml
CAPACITY=14.8 # cores x speed, summed over the servers
MEAN_DEMAND=0.1
CORES=(1 1 2 2 2 4 4) # the configured weights

for bin in nginx haproxy python3; do
	command -v "$bin" >/dev/null || { echo "quality.sh: $bin not found (Debian packages nginx-light, haproxy)" >&2; exit 2; }
done
mkdir -p "$OUT"
work=$(mktemp -d)
pids=()
stop_all() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	pids=()
	lbpids=()
}
trap 'stop_all; rm -rf "$work"' EXIT

go build -o "$work/shoal" ./cmd/shoal
SHOAL=$work/shoal
POLICY=$OUT/distr-lb.slb
if [ ! -f "$POLICY" ]; then
	echo "== training Distr-LB on $SCENARIO (seed 1)"
	"$SHOAL" train distr-lb "$SCENARIO" -o "$POLICY" --seed 1 --quiet
fi

wait_http() { # $1 url
	for _ in $(seq 200); do
		curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "quality.sh: nothing answers at $1" >&2
	return 1
}

BPORT=18300 # backends 18300..18306
LB0=127.0.0.1:18310
LB1=127.0.0.1:18311
ADMIN0=127.0.0.1:18320 # shoal proxies' metrics
ADMIN1=127.0.0.1:18321
lbpids=() # the load balancers' processes, for their CPU time

# cpu_seconds: user+system CPU seconds of the processes $@ and their
# children so far (nginx and HAProxy may fork workers).
cpu_seconds() {
	local total=0 p q
	for p in "$@"; do
		for q in $p $(pgrep -P "$p" 2>/dev/null); do
			[ -r "/proc/$q/stat" ] || continue
			total=$(awk -v t="$total" -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print t + ($12 + $13) / hz }' "/proc/$q/stat")
		done
	done
	echo "$total"
}

# probes: load probes the shoal proxies sent (answered or failed).
probes() {
	local n=0 a
	for a in $ADMIN0 $ADMIN1; do
		n=$((n + $(curl -fsS "http://$a/metrics" 2>/dev/null | awk '/^shoal_proxy_probes_total/ && !/dropped/ { s += $2 } END { printf "%d", s }')))
	done
	echo "$n"
}

start_backends() {
	for i in 0 1 2 3 4 5 6; do
		"$SHOAL" backend --scenario "$SCENARIO" --instance "$i" --listen "127.0.0.1:$((BPORT + i))" --seed "$((SEED * 100 + i))" >/dev/null &
		pids+=($!)
	done
	for i in 0 1 2 3 4 5 6; do wait_http "http://127.0.0.1:$((BPORT + i))/healthz"; done
}

nginx_lb() { # $1 name, $2 addr, $3 balancing directive
	local d="$work/$1"
	mkdir -p "$d"
	{
		echo "worker_processes 1; daemon off; pid $d/nginx.pid; error_log $d/error.log warn;"
		echo "events { worker_connections 4096; }"
		echo "http { access_log off; client_body_temp_path $d/b; proxy_temp_path $d/p; fastcgi_temp_path $d/f; uwsgi_temp_path $d/u; scgi_temp_path $d/s;"
		echo "upstream web { $3"
		for i in 0 1 2 3 4 5 6; do echo "  server 127.0.0.1:$((BPORT + i)) weight=${CORES[$i]} max_fails=0;"; done
		echo "  keepalive 256; }"
		echo "server { listen $2; location / { proxy_pass http://web; proxy_http_version 1.1; proxy_set_header Connection \"\"; proxy_read_timeout 600s; } } }"
	} >"$d/nginx.conf"
	nginx -c "$d/nginx.conf" &
	pids+=($!)
	lbpids+=($!)
}

haproxy_lb() { # $1 name, $2 addr, $3 balance algorithm
	local f="$work/$1.cfg"
	{
		printf 'global\n  nbthread 1\n  maxconn 4000\ndefaults\n  mode http\n  timeout connect 2s\n  timeout client 600s\n  timeout server 600s\n'
		printf 'frontend f\n  bind %s\n  default_backend web\nbackend web\n  balance %s\n' "$2" "$3"
		for i in 0 1 2 3 4 5 6; do printf '  server s%d 127.0.0.1:%d weight %d\n' "$i" "$((BPORT + i))" "${CORES[$i]}"; done
	} >"$f"
	haproxy -f "$f" -db &
	pids+=($!)
	lbpids+=($!)
}

shoal_lb() { # $1 name (lb0/lb1), $2 addr, $3 policy (or "train" to train distr-lb online)
	local f="$work/$1.yaml"
	{
		echo "listen: $2"
		if [ "$1" = lb0 ]; then echo "admin: $ADMIN0"; else echo "admin: $ADMIN1"; fi
		echo "name: $1"
		echo "seed: $SEED"
		if [ "$3" = distr-lb ]; then
			echo "policy: distr-lb"
			echo "agent: {file: $PWD/$LOAD_POLICY}"
		elif [ "$3" = distr-lb-general ]; then
			echo "policy: distr-lb-general"
			echo "agent: {file: $GENERAL}"
		elif [ "$3" = distr-lb-online ]; then
			echo "policy: distr-lb"
			echo "agent: {file: $PWD/$OUT/distr-lb-online-$1.slb}"
		elif [ "$3" = train ]; then
			echo "policy: distr-lb"
			echo "agent: {file: $PWD/$POLICY, train: {save: $PWD/$OUT/distr-lb-online-$1.slb}}"
		else
			echo "policy: $3"
		fi
		echo "timeouts: {response_header: 600s}"
		echo "backends:"
		for i in 0 1 2 3 4 5 6; do echo "  - {url: http://127.0.0.1:$((BPORT + i)), weight: ${CORES[$i]}}"; done
	} >"$f"
	"$SHOAL" proxy -c "$f" --log-level warn &
	pids+=($!)
	lbpids+=($!)
}

if [ "$ONLINE" != 0 ]; then
	rate=$(python3 -c "print(round(0.85 * $CAPACITY / $MEAN_DEMAND, 3))")
	echo "== online training of both Distr-LB agents for ${ONLINE}s at load 0.85 (seed $SEED)"
	start_backends
	shoal_lb lb0 $LB0 train
	shoal_lb lb1 $LB1 train
	wait_http "http://$LB0/healthz"
	wait_http "http://$LB1/healthz"
	"$SHOAL" load "http://$LB0/" "http://$LB1/" --rate "$rate" --duration "${ONLINE}s" --seed "$((SEED + 1000))" \
		--timeout 600s --json >"$work/train.json"
	stop_all # SIGTERM: each proxy saves its policy as it stops
	python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('  during training: mean %.3fs p99 %.3fs' % (r['mean'], r['p99']))" "$work/train.json"
	for lb in lb0 lb1; do
		head -1 "$OUT/distr-lb-online-$lb.slb" | python3 -c "import json,sys; print('  $lb: %d online updates' % json.load(sys.stdin)['provenance'].get('online_updates', 0))"
	done
fi

results=$OUT/quality.csv
echo "policy,load,rate,mean,p50,p90,p99,p999,completed,failed,seed,duration,warmup,lb_cpu_s,probes,offered" >"$results"
echo "== testbed: 7 emulated backends, 2 load balancers, ${DURATION}s per run (${WARMUP}s warm-up), seed $SEED"
for load in $LOADS; do
	rate=$(python3 -c "print(round($load * $CAPACITY / $MEAN_DEMAND, 3))")
	LOAD_POLICY=$POLICY
	if [ "$PER_LOAD" = 1 ]; then
		LOAD_POLICY=$OUT/distr-lb-load$load.slb
		if [ ! -f "$LOAD_POLICY" ]; then
			echo "== training Distr-LB on $SCENARIO at load $load (seed 1)"
			"$SHOAL" train distr-lb "$SCENARIO" --load "$load" -o "$LOAD_POLICY" --seed 1 --quiet
		fi
	fi
	for rep in $(seq 0 $((REPEATS - 1))); do
	seed=$((SEED + rep))
	for pol in $POLICIES; do
		start_backends
		case $pol in
		nginx-least_conn) nginx_lb lb0 $LB0 least_conn\; ; nginx_lb lb1 $LB1 least_conn\; ;;
		nginx-wrr) nginx_lb lb0 $LB0 "" ; nginx_lb lb1 $LB1 "" ;;
		haproxy-leastconn) haproxy_lb lb0 $LB0 leastconn ; haproxy_lb lb1 $LB1 leastconn ;;
		haproxy-roundrobin) haproxy_lb lb0 $LB0 roundrobin ; haproxy_lb lb1 $LB1 roundrobin ;;
		shoal-*) shoal_lb lb0 $LB0 "${pol#shoal-}" ; shoal_lb lb1 $LB1 "${pol#shoal-}" ;;
		*) echo "quality.sh: unknown policy $pol" >&2; exit 2 ;;
		esac
		wait_http "http://$LB0/healthz"
		wait_http "http://$LB1/healthz"
		cpu0=$(cpu_seconds "${lbpids[@]}")
		probes0=$(probes)
		"$SHOAL" load "http://$LB0/" "http://$LB1/" --rate "$rate" --duration "${DURATION}s" --warmup "${WARMUP}s" \
			--seed "$seed" --timeout 600s --json >"$work/load.json"
		cpu=$(python3 -c "print($(cpu_seconds "${lbpids[@]}") - $cpu0)")
		nprobes=$(($(probes) - probes0))
		python3 - "$work/load.json" "$pol" "$load" "$seed" "$DURATION" "$WARMUP" "$cpu" "$nprobes" "$rate" >>"$results" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
failed = sum(r["failed"].values())
print(",".join(str(x) for x in [sys.argv[2], sys.argv[3], round(r["rate"], 2), r["mean"], r["p50"], r["p90"], r["p99"], r["p999"], r["completed"], failed, sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7], sys.argv[8], sys.argv[9]]))
EOF
		tail -1 "$results" | awk -F, '{ printf "  %-20s load %s seed %s  mean %7.3fs  p99 %7.3fs  completed %d  failed %d  LB CPU %.2fs\n", $1, $2, $11, $4, $7, $9, $10, $14 }'
		stop_all
	done
	done
done

echo "== simulator: the same scenario, 5 seeds of 5 minutes"
sim=$OUT/sim.csv
echo "policy,load,mean,p99" >"$sim"
for load in $LOADS; do
	LOAD_POLICY=$POLICY
	[ "$PER_LOAD" = 1 ] && LOAD_POLICY=$OUT/distr-lb-load$load.slb
	general=""
	[ -n "$GENERAL" ] && general=",distr-lb-general:$GENERAL"
	"$SHOAL" sim "$SCENARIO" --policy "lsq,sed,p2c,least-request,peak-ewma,prequal,c3,probing-sed,wrr,distr-lb:$LOAD_POLICY$general" --load "$load" --json --quiet >"$work/sim.json"
	python3 - "$work/sim.json" "$load" >>"$sim" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
for p in r["policies"]:
    s = p["summary"]
    print(f"{p['policy']},{sys.argv[2]},{s['mean']['mean']},{s['p99']['mean']}")
EOF
done

python3 - "$results" "$sim" <<'EOF'
import csv, statistics, sys
real = list(csv.DictReader(open(sys.argv[1])))
sim = {(r["policy"], r["load"]): r for r in csv.DictReader(open(sys.argv[2]))}
loads = sorted({r["load"] for r in real}, key=float)
T95 = {2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776, 6: 2.571, 7: 2.447, 8: 2.365, 9: 2.306, 10: 2.262}

def ci(xs):
    """mean and 95% half-width (Student's t) over repeats"""
    m = statistics.mean(xs)
    return m, (T95.get(len(xs), 1.96) * statistics.stdev(xs) / len(xs) ** 0.5 if len(xs) > 1 else 0)

print("\n== policy quality (testbed): mean and p99 in seconds over repeats (± 95% interval), LB CPU per 1,000 requests, probes per request")
for load in loads:
    rows = [r for r in real if r["load"] == load]
    pols = list(dict.fromkeys(r["policy"] for r in rows))
    agg = {}
    for pol in pols:
        rs = [r for r in rows if r["policy"] == pol]
        sent = [float(r["offered"]) * float(r["duration"]) for r in rs]  # requests sent, warm-up included
        agg[pol] = dict(n=len(rs), mean=ci([float(r["mean"]) for r in rs]), p99=ci([float(r["p99"]) for r in rs]),
                        cpu=1000 * sum(float(r["lb_cpu_s"]) for r in rs) / sum(sent),
                        probes=sum(float(r["probes"]) for r in rs) / sum(sent))
    peers = [p for p in pols if p.startswith(("nginx", "haproxy"))]
    best = min(peers, key=lambda p: agg[p]["p99"][0]) if peers else None
    print(f"load {load}" + (f"  (best nginx/HAProxy p99: {best} {agg[best]['p99'][0]:.3f}s)" if best else ""))
    for pol in pols:
        a = agg[pol]
        rel = f"{100 * (a['p99'][0] / agg[best]['p99'][0] - 1):+6.1f}% p99 vs best peer" if best else ""
        print(f"  {pol:20s} n {a['n']}  mean {a['mean'][0]:7.3f} ± {a['mean'][1]:<6.3f} p99 {a['p99'][0]:7.3f} ± {a['p99'][1]:<6.3f} "
              f"CPU/1k {a['cpu']:6.3f}s  probes/req {a['probes']:5.2f}  {rel}")
print("\n== sim-to-real: simulated vs testbed (sim/real - 1)")
names = {"shoal-lsq": "lsq", "shoal-sed": "sed", "shoal-p2c": "p2c", "shoal-least-request": "least-request", "shoal-peak-ewma": "peak-ewma",
         "shoal-prequal": "prequal", "shoal-c3": "c3", "shoal-probing-sed": "probing-sed", "nginx-wrr": "wrr", "shoal-distr-lb": None,
         "shoal-distr-lb-general": "distr-lb-general"}
for r in real:
    s = names.get(r["policy"], "")
    if s == "":
        continue
    key = (s, r["load"]) if s else next(((p, l) for (p, l) in sim if p.startswith("distr-lb") and p != "distr-lb-general" and l == r["load"]), None)
    if key not in sim:
        continue
    m, p = float(sim[key]["mean"]), float(sim[key]["p99"])
    print(f"  {r['policy']:20s} load {r['load']}: sim mean {m:7.3f} real {float(r['mean']):7.3f} ({100*(m/float(r['mean'])-1):+.1f}%)"
          f"  sim p99 {p:7.3f} real {float(r['p99']):7.3f} ({100*(p/float(r['p99'])-1):+.1f}%)")
EOF
