// Command shoal is Shoal's command line: it lists and dumps scenarios and
// compares policies on them in the simulator.
//
//	shoal scenarios                          list the embedded scenarios
//	shoal scenarios dump NAME [-o FILE]      write one to edit and run
//	shoal sim SCENARIO|FILE [flags]          compare policies on the same arrivals
//	shoal train distr-lb SCENARIO -o FILE    learn load-balancing weights, save the policy
//	shoal experiment distr-lb NAME|all       reproduce the Distr-LB paper's experiments
//	shoal load URL... --rate R [flags]       open-loop HTTP load, latency percentiles
//	shoal proxy -c FILE                      HTTP load balancer (selectors, Distr-LB agent)
//	shoal backend [flags]                    emulated server of given cores and speed
//
// See README.md for the scenario format and every flag.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// errUsage marks errors in the command line: exit code 2.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil:
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "shoal:", strings.TrimSuffix(err.Error(), ": usage"))
		fmt.Fprintln(os.Stderr, "run 'shoal help' for usage")
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "shoal:", err)
		os.Exit(1)
	}
}

const usage = `Shoal: learning-based resource management of cloud-native services.

Usage:
  shoal scenarios                        list the embedded scenarios
  shoal scenarios dump NAME [-o FILE]    print an embedded scenario (to edit and run)
  shoal sim SCENARIO|FILE [flags]        compare policies on the same arrivals
  shoal train distr-lb|centr-lb|qmix-lb SCENARIO -o FILE [flags]
                                         learn LB weights in the simulator, save the policy
  shoal experiment distr-lb NAME|all [flags]
                                         train and compare as the Distr-LB paper does:
                                         table3, misconfigured, large, sweep, ablation
  shoal load URL... --rate R [flags]     send open-loop HTTP load, print latency percentiles
  shoal proxy -c FILE [--log-level L]    HTTP/1.1 load balancer running a selector or a
                                         Distr-LB policy; SIGHUP reloads, SIGTERM drains
  shoal backend [flags]                  emulate a server of given cores and speed (HTTP test backend)
  shoal help                             this text

Flags of sim:
  --policy a,b,c   policies to compare (default: the scenario's list): request selectors
                   (rr, lsq, sed, ...), autoscalers set up in the scenario's autoscaling
                   section (static, hpa, kpa, vpa, keda, openfaas; a+b runs both), or
                   KIND:FILE, a trained policy file, e.g. distr-lb:policy.slb
  --seeds N        seeds per policy (default: the scenario's); run i uses seed+i
  --seed N         root seed (default: the scenario's)
  --load X         offered load as a fraction of capacity (load-balancing scenarios)
  --arrivals A     every source's arrival process, in YAML, keeping the sources' mix; e.g.
                   '{kind: trace, trace: nasa, rate: 200, speedup: 60}' or
                   '{kind: series, step: 10s, rates: [200, 400, 800]}'
  --slo D          response-time target of every class, e.g. 500ms (default: the scenario's)
  --horizon D      simulated time with arrivals, e.g. 10m (warm-up becomes D/20)
  --out DIR        write results.json, runs.csv, summary.csv, classes.csv, scaling.csv
                   and report.html
  --json           print the results as JSON instead of the table
  --workers N      runs in parallel (default: number of CPUs)
  --quiet          no progress bar

Flags of train:
  -o FILE            where to save the policy (required)
  --reward R         vbf (default), vbf+log, jain, pbf or makespan
  --episodes N       training episodes (default 60), after one with random weights
  --episode-steps N  control periods per episode (default 200)
  --seed N           training seed (default 1); training systems never reuse evaluation seeds
  --no-gru           plain SAC on the newest observation (ablation)
  --estimate E       what rewards measure per server: backlog (default) or duration (the paper's)
  --load X           offered load as a fraction of capacity
  --curve FILE       write the learning curve as CSV
  --quiet            no per-episode progress

Flags of experiment distr-lb:
  --out DIR          results (default out/distr-lb); policies in DIR/policies are reused
  --episodes N       training episodes per policy (default 60)
  --seeds N          evaluation seeds (default: the scenario's, 5)
  --horizon D        evaluation horizon (default: the scenario's)
  --train-seed N     training seed (default 1)
  --quiet            no progress lines

Flags of load:
  --rate R           mean arrival rate, requests per second (for a trace: rescales it; 0 keeps its own)
  --arrivals A       poisson (default), constant or trace
  --trace T          with --arrivals trace: nasa, wikipedia, alibaba, azure-llm or a file
  --speedup X        with a trace: compress trace time X times; --start D: where replay starts
  --duration D       arrivals stop after D (default 10s)
  --requests N       at most N requests (alone: no time limit)
  --max-in-flight N  requests in flight at most (default 10000); further arrivals are dropped
  --timeout D        per request (default 30s)
  --method M         HTTP method (default GET)
  --seed N           seed of the arrival schedule (default 1)
  --warmup D         requests scheduled in the first D are sent but not measured
  --json             print the summary as JSON (times in seconds)
  Several URLs share the load: each request goes to one at random (Poisson
  arrivals stay Poisson at each). Latency is measured from each request's
  scheduled start (no coordinated omission).

Flags of backend:
  --listen ADDR         address to listen on (default 127.0.0.1:8081; port 0 picks a free port,
                        the line printed at start shows it)
  --cores N             CPU limit in cores, shared by processor sharing (default 1; fractions allowed)
  --speed X             CPU speed: work done per core-second (default 1)
  --io-speed X          I/O speed factor (default 1)
  --io-parallelism N    I/O phases served at full speed before they share (default 0: I/O is a pure delay)
  --phases N            alternating CPU and I/O phases per request, CPU first (default 1)
  --cpu DIST            CPU demand in core-seconds at speed 1 (default exp:0.01)
  --io DIST             I/O demand in seconds at I/O speed 1 (default none)
  --concurrency N       requests in service at once (default 0: unlimited)
  --queue N             requests waiting beyond --concurrency (default 0: reject at the limit;
                        -1 unbounded); a full queue answers 429
  --scenario S          take cores, speed, I/O settings, concurrency and queue from instance
  --instance N          --instance N (from 0) of the first service of scenario S (a name or a
                        file), and the demand of the first class entering that service;
                        explicit flags override them
  --seed N              seed of the demand stream (default 1)
  DIST is exp:MEAN, det:VALUE, lognormal:MEAN:CV, uniform:MIN:MAX, pareto:ALPHA:MIN:MAX or none
  (seconds). A request header X-Shoal-Demand: cpu=0.25,io=0.01 sets that request's demand
  (common random numbers). Responses carry X-Shoal-Demand and X-Shoal-Service-Time (seconds
  at the server); GET /healthz, GET /stats (JSON). SIGTERM stops it after up to 10 s of drain.

Flags of proxy:
  -c FILE            configuration (YAML; see README "HTTP load balancer")
  --log-level L      debug, info (default), warn or error
  SIGHUP reloads the file without dropping requests (listen and admin cannot change);
  SIGTERM or Ctrl-C stops accepting and drains requests in flight (timeouts.shutdown).
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("no command: %w", errUsage)
	}
	switch args[0] {
	case "sim":
		return cmdSim(ctx, args[1:], stdout, stderr)
	case "scenarios":
		return cmdScenarios(args[1:], stdout)
	case "train":
		return cmdTrain(ctx, args[1:], stdout, stderr)
	case "experiment":
		return cmdExperiment(ctx, args[1:], stdout, stderr)
	case "load":
		return cmdLoad(ctx, args[1:], stdout)
	case "proxy":
		return cmdProxy(ctx, args[1:], stderr)
	case "backend":
		return cmdBackend(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q: %w", args[0], errUsage)
}
