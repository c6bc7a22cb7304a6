package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-project/shoal/loadgen"
	"github.com/shoal-project/shoal/workload"
	"github.com/spf13/cobra"
)

func (cl *cli) load() *cobra.Command {
	var (
		rate, speedup                    float64
		arrivals, trace, method, phases  string
		start, duration, timeout, warmup time.Duration
		window                           time.Duration
		requests, inFlight               int
		seed                             uint64
		asJSON                           bool
	)
	cmd := &cobra.Command{
		Use:   "load URL... --rate R",
		Short: "Send open-loop HTTP load and print latency percentiles",
		Long: `Send open-loop HTTP load to one or more URLs and print the latency percentiles,
throughput and failures. Several URLs share the load: each request goes to one at
random (Poisson arrivals stay Poisson at each). Latency is measured from each
request's scheduled start, so a slow server cannot hide its delay (no coordinated
omission). Ctrl-C stops early and prints what was measured.`,
		Example: `  shoal load http://127.0.0.1:8080/ --rate 200 --duration 30s
  shoal load http://127.0.0.1:8080/ --phases 150:10s,600:20s,100:10s --window 1s --json
  shoal load http://127.0.0.1:8080/ --arrivals trace --trace nasa --speedup 60 --rate 300 --json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("want one or more URLs")
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Float64Var(&rate, "rate", 0, "mean arrival rate, requests per second (for a trace: rescales it; 0 keeps its own)")
	f.StringVar(&arrivals, "arrivals", "poisson", "arrival process: poisson, constant or trace")
	f.StringVar(&trace, "trace", "", "with --arrivals trace: nasa, wikipedia, alibaba, azure-llm or a `file`")
	f.Float64Var(&speedup, "speedup", 0, "with a trace: compress trace time this many times")
	f.DurationVar(&start, "start", 0, "with a trace: where the replay starts")
	f.DurationVar(&duration, "duration", 10*time.Second, "arrivals stop after this long")
	f.IntVar(&requests, "requests", 0, "send at most N requests (alone: no time limit)")
	f.IntVar(&inFlight, "max-in-flight", 0, "requests in flight at most, further arrivals are dropped (default 10000)")
	f.DurationVar(&timeout, "timeout", 30*time.Second, "timeout per request")
	f.StringVar(&method, "method", http.MethodGet, "HTTP method")
	f.Uint64Var(&seed, "seed", 1, "seed of the arrival schedule")
	f.DurationVar(&warmup, "warmup", 0, "requests scheduled in the first D are sent but not measured")
	f.BoolVar(&asJSON, "json", false, "print the summary as JSON (times in seconds)")
	f.StringVar(&phases, "phases", "", "Poisson arrivals at `RATE:DURATION,...` in turn (e.g. 150:10s,600:20s), each phase reported apart; replaces --rate, --arrivals and --duration")
	f.DurationVar(&window, "window", 0, "with --json: also report the outcomes by scheduled time in windows this wide")
	cmd.RunE = cl.action(func(cmd *cobra.Command, urls []string) error {
		if duration < 0 || requests < 0 || inFlight < 0 || timeout <= 0 {
			return usagef("--duration, --requests and --max-in-flight must not be negative, --timeout must be positive")
		}
		var p workload.Process
		var err error
		var steps []loadgen.Phase
		if phases != "" {
			for _, name := range []string{"rate", "arrivals", "duration", "trace"} {
				if cmd.Flags().Changed(name) {
					return usagef("--phases replaces --%s: give one of the two", name)
				}
			}
			if steps, err = parsePhases(phases); err != nil {
				return err
			}
			arrivals = "phases"
			if p, duration, err = loadgen.PhaseArrivals(steps); err != nil {
				return usagef("--phases: %v", err)
			}
		}
		if window < 0 {
			return usagef("--window must not be negative, got %v", window)
		}
		switch arrivals {
		case "phases":
		case "constant":
			p, err = workload.NewConstant(rate)
		case "poisson":
			p, err = workload.NewPoisson(rate)
		case "trace":
			spec := workload.ProcessSpec{Kind: workload.KindTrace, Trace: trace, Speedup: speedup, Start: start, Loop: true}
			p, err = spec.BuildWith(rate, workload.NewTraces("")) // BuildWith validates the spec
		default:
			return usagef("--arrivals %q: want poisson, constant or trace", arrivals)
		}
		if err != nil {
			return fmt.Errorf("load: %w", err)
		}
		cfg := loadgen.Config{URLs: urls, Method: method, Arrivals: p, Duration: duration, Requests: requests, MaxInFlight: inFlight,
			Seed: seed, Warmup: warmup, Phases: steps, Window: window}
		if requests > 0 && !cmd.Flags().Changed("duration") && phases == "" {
			cfg.Duration = 0
		}
		client := &http.Client{Timeout: timeout, Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
		res, err := loadgen.Run(cmd.Context(), cfg, client)
		switch {
		case res != nil && asJSON:
			out := struct {
				URLs     []string `json:"urls"`
				Arrivals string   `json:"arrivals"`
				Seed     uint64   `json:"seed"`
				loadgen.Summary
			}{urls, arrivals, seed, res.Summary()}
			enc := json.NewEncoder(cl.stdout)
			enc.SetIndent("", "  ")
			if werr := enc.Encode(out); werr != nil {
				return werr
			}
		case res != nil:
			fmt.Fprintf(cl.stdout, "load %s: %s arrivals, seed %d\n", strings.Join(urls, " "), arrivals, seed)
			if werr := res.WriteSummary(cl.stdout); werr != nil {
				return werr
			}
		}
		if errors.Is(err, context.Canceled) {
			return nil // interrupted: the summary of what was sent is the answer
		}
		return err
	})
	return cmd
}

// parsePhases reads --phases: RATE:DURATION pairs separated by commas.
func parsePhases(s string) ([]loadgen.Phase, error) {
	var out []loadgen.Phase
	for i, part := range strings.Split(s, ",") {
		r, d, ok := strings.Cut(strings.TrimSpace(part), ":")
		rate, rerr := strconv.ParseFloat(r, 64)
		dur, derr := time.ParseDuration(d)
		if !ok || rerr != nil || derr != nil || !(rate >= 0) || dur <= 0 {
			return nil, usagef("--phases: phase %d %q: want RATE:DURATION, a rate >= 0 and a duration > 0 (e.g. 600:20s)", i+1, part)
		}
		out = append(out, loadgen.Phase{Rate: rate, Duration: dur})
	}
	return out, nil
}
