package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/shoal-project/shoal/loadgen"
	"github.com/shoal-project/shoal/workload"
)

// cmdLoad sends open-loop load to a URL and prints what it measured.
func cmdLoad(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rate := fs.Float64("rate", 0, "")
	arrivals := fs.String("arrivals", "poisson", "")
	trace := fs.String("trace", "", "")
	speedup := fs.Float64("speedup", 0, "")
	start := fs.Duration("start", 0, "")
	duration := fs.Duration("duration", 10*time.Second, "")
	requests := fs.Int("requests", 0, "")
	inFlight := fs.Int("max-in-flight", 0, "")
	timeout := fs.Duration("timeout", 30*time.Second, "")
	method := fs.String("method", http.MethodGet, "")
	seed := fs.Uint64("seed", 1, "")
	warmup := fs.Duration("warmup", 0, "")
	asJSON := fs.Bool("json", false, "")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return fmt.Errorf("load: want one or more URLs: %w", errUsage)
	}
	if *duration < 0 || *requests < 0 || *inFlight < 0 || *timeout <= 0 {
		return fmt.Errorf("load: --duration, --requests and --max-in-flight must not be negative, --timeout must be positive: %w", errUsage)
	}
	var p workload.Process
	switch *arrivals {
	case "constant":
		p, err = workload.NewConstant(*rate)
	case "poisson":
		p, err = workload.NewPoisson(*rate)
	case "trace":
		spec := workload.ProcessSpec{Kind: workload.KindTrace, Trace: *trace, Speedup: *speedup, Start: *start, Loop: true}
		p, err = spec.BuildWith(*rate, workload.NewTraces("")) // BuildWith validates the spec
	default:
		return fmt.Errorf("load: --arrivals %q: want poisson, constant or trace: %w", *arrivals, errUsage)
	}
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	cfg := loadgen.Config{URLs: pos, Method: *method, Arrivals: p, Duration: *duration, Requests: *requests, MaxInFlight: *inFlight,
		Seed: *seed, Warmup: *warmup}
	if *requests > 0 && !flagSet(fs, "duration") {
		cfg.Duration = 0
	}
	client := &http.Client{Timeout: *timeout, Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	res, err := loadgen.Run(ctx, cfg, client)
	switch {
	case res != nil && *asJSON:
		out := struct {
			URLs     []string `json:"urls"`
			Arrivals string   `json:"arrivals"`
			Seed     uint64   `json:"seed"`
			loadgen.Summary
		}{pos, *arrivals, *seed, res.Summary()}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if werr := enc.Encode(out); werr != nil {
			return werr
		}
	case res != nil:
		fmt.Fprintf(stdout, "load %s: %s arrivals, seed %d\n", strings.Join(pos, " "), *arrivals, *seed)
		if werr := res.WriteSummary(stdout); werr != nil {
			return werr
		}
	}
	if errors.Is(err, context.Canceled) {
		return nil // interrupted: the summary of what was sent is the answer
	}
	return err
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
