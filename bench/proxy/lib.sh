# Helpers of the proxy benchmarks (sourced by overhead.sh, overload.sh and
# container.sh).

# wait_answer ADDR...: waits up to 10 s for each address to answer HTTP.
wait_answer() {
	local a i
	for a in "$@"; do
		for i in $(seq 100); do
			curl -fsS "http://$a/" >/dev/null 2>&1 && break
			sleep 0.1
		done
		curl -fsS "http://$a/" >/dev/null || { echo "$(basename "$0"): nothing answers on $a" >&2; exit 1; }
	done
}

# to_ms: a wrk duration (12us, 1.5ms, 2s) on stdin as milliseconds.
to_ms() { awk '{ v=$1; if (v ~ /us$/) { sub(/us$/,"",v); v/=1000 } else if (v ~ /ms$/) { sub(/ms$/,"",v) } else if (v ~ /s$/) { sub(/s$/,"",v); v*=1000 } printf "%.3f", v }'; }

# median: the median of the numbers on stdin, one per line.
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# start_work: a scratch directory $work, removed on exit with the processes
# in pids killed, and the shoal binary built there.
start_work() {
	work=$(mktemp -d)
	pids=()
	trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"' EXIT
	go build -o "$work/shoal" ./cmd/shoal
}

# nginx_conf NAME BLOCK: $work/NAME/nginx.conf, one worker in the
# foreground, no access log, BLOCK inside http.
nginx_conf() {
	mkdir -p "$work/$1"
	cat >"$work/$1/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $work/$1/nginx.pid;
error_log $work/$1/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/$1/body;
  proxy_temp_path $work/$1/proxy;
  fastcgi_temp_path $work/$1/fastcgi;
  uwsgi_temp_path $work/$1/uwsgi;
  scgi_temp_path $work/$1/scgi;
  keepalive_requests 1000000;
  $2
}
EOF
}
