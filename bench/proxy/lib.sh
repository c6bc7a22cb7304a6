# Helpers of the proxy benchmarks (sourced by overhead.sh and container.sh).

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
