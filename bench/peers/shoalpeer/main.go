// Command shoalpeer is Shoal's side of the SimPy comparison in bench/peers:
// it runs the embedded scenarios "mm1" and "lb-moderate-cpu" (policy lsq)
// for a given simulated horizon and seed count, one run after another on one
// goroutine, and prints one JSON object per model with the mean response
// time, the simulated requests and events, and the wall and CPU time of the
// runs.
//
// Usage:
//
//	GOMAXPROCS=1 taskset -c 0 shoalpeer -model mm1 -horizon 20000s -seeds 10
//	shoalpeer -model lb2x7 -horizon 5000s -seeds 10 -cpuprofile cpu.out
//
// Each run is built and driven as experiment.Comparison does (cluster.New,
// RunUntil in 50 steps, Drain), with the scenario's horizon, warm-up
// (horizon/20), drain limit (the horizon) and sample period
// (max(1s, horizon/2000)) re-derived from -horizon, as if the scenario file
// had been written with that horizon. Run i uses seed -seed+i.
package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"syscall"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/scenario"
)

// model is one benchmark model: an embedded scenario and a policy.
type model struct {
	scenario string
	policy   string
}

var models = map[string]model{
	"mm1":   {scenario: "mm1", policy: "rr"},
	"lb2x7": {scenario: "lb-moderate-cpu", policy: "lsq"},
}

// Report is the JSON output for one model.
type Report struct {
	Model    string `json:"model"`
	Scenario string `json:"scenario"`
	Policy   string `json:"policy"`
	// HorizonS is the simulated horizon of each run (arrivals stop), seconds.
	HorizonS float64 `json:"horizon_s"`
	// WarmupS is the warm-up of each run (earlier arrivals not measured), seconds.
	WarmupS float64 `json:"warmup_s"`
	Seeds   int     `json:"seeds"`
	Seed    uint64  `json:"seed"`
	// MeanResponseS is the mean over seeds of each run's mean response time
	// of the requests that arrived after the warm-up, seconds.
	MeanResponseS float64 `json:"mean_response_s"`
	// SeedMeansS are the per-run mean response times, seconds.
	SeedMeansS []float64 `json:"seed_means_s"`
	// StdErrS is the standard error of MeanResponseS over seeds, seconds.
	StdErrS float64 `json:"stderr_s"`
	// Requests is the number of requests simulated (arrived and finished,
	// warm-up included) over all runs.
	Requests int64 `json:"requests"`
	// Measured is the number of requests after the warm-up that completed.
	Measured int64 `json:"measured"`
	// Events is the number of simulation events fired over all runs.
	Events uint64 `json:"events"`
	// WallS is the wall time of all runs (build, run, drain), seconds.
	WallS float64 `json:"wall_s"`
	// CPUS is the CPU time (user + system, all threads) the process spent
	// during the runs, seconds: the measure that survives a shared machine.
	CPUS float64 `json:"cpu_s"`
	// RequestsPerS is Requests / CPUS: simulated requests per CPU second.
	RequestsPerS float64 `json:"requests_per_s"`
	// RequestsPerWallS is Requests / WallS.
	RequestsPerWallS float64 `json:"requests_per_wall_s"`
	// EventsPerS is Events / CPUS.
	EventsPerS float64 `json:"events_per_s"`
	// Repeats is how many times the runs were repeated; the report is the
	// repetition with the median CPU time.
	Repeats    int `json:"repeats"`
	GOMAXPROCS int `json:"gomaxprocs"`
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "shoalpeer:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("shoalpeer", flag.ContinueOnError)
	name := fs.String("model", "mm1", "model: mm1 or lb2x7")
	horizon := fs.Duration("horizon", time.Hour, "simulated horizon of each run")
	seeds := fs.Int("seeds", 5, "number of runs (seeds)")
	seed := fs.Uint64("seed", 1, "first seed; run i uses seed+i")
	repeat := fs.Int("repeat", 1, "repeat the whole set of runs this many times and report the one with the median CPU time (results are identical)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the runs to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	m, ok := models[*name]
	if !ok {
		return fmt.Errorf("unknown model %q (known: mm1, lb2x7)", *name)
	}
	if *seeds < 1 || *horizon <= 0 || *repeat < 1 {
		return errors.New("-seeds and -repeat must be >= 1 and -horizon > 0")
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return fmt.Errorf("create cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("start cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	reps := make([]*Report, 0, *repeat)
	for i := 0; i < *repeat; i++ {
		r, err := measure(*name, m, *horizon, *seeds, *seed)
		if err != nil {
			return err
		}
		reps = append(reps, r)
	}
	slices.SortFunc(reps, func(a, b *Report) int { return cmp.Compare(a.CPUS, b.CPUS) })
	med := reps[len(reps)/2]
	med.Repeats = *repeat
	return json.NewEncoder(stdout).Encode(med)
}

// measure runs seeds runs of model m and times them.
func measure(name string, m model, horizon time.Duration, seeds int, seed uint64) (*Report, error) {
	sc, err := scenario.Embedded(m.scenario)
	if err != nil {
		return nil, fmt.Errorf("load scenario: %w", err)
	}
	sc.Horizon, sc.Warmup, sc.Drain = horizon, horizon/20, horizon
	sc.SamplePeriod = max(time.Second, (horizon / 2000).Round(time.Second))
	sc.Seed, sc.Seeds = seed, seeds
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("scenario with the new horizon: %w", err)
	}
	rep := &Report{
		Model: name, Scenario: m.scenario, Policy: m.policy,
		HorizonS: horizon.Seconds(), WarmupS: sc.Warmup.Seconds(),
		Seeds: seeds, Seed: seed, GOMAXPROCS: runtime.GOMAXPROCS(0),
	}
	sel := lb.Classical()
	traces := sc.Traces()
	runtime.GC()
	start, cpu0 := time.Now(), cpuTime()
	results := make([]*cluster.Results, seeds)
	for i := range seeds {
		cl, err := cluster.New(&sc.Config, cluster.Options{
			Seed: sc.Seed + uint64(i), Selectors: sel, Policy: m.policy, Traces: traces,
			Horizon: sc.Horizon, Warmup: sc.Warmup, SamplePeriod: sc.SamplePeriod,
			Unobserved: true, // as Comparison builds a run without a controller
		})
		if err != nil {
			return nil, fmt.Errorf("seed %d: %w", sc.Seed+uint64(i), err)
		}
		const steps = 50
		for s := 1; s <= steps; s++ {
			cl.RunUntil(sc.Horizon * time.Duration(s) / steps)
		}
		if !cl.Drain(sc.Drain) {
			return nil, fmt.Errorf("seed %d: requests still in progress after the drain limit", sc.Seed+uint64(i))
		}
		results[i] = cl.Results()
	}
	rep.WallS = time.Since(start).Seconds()
	rep.CPUS = cpuTime() - cpu0
	sum, sumSq := 0.0, 0.0
	for i, r := range results {
		if !r.Little.OK() {
			return nil, fmt.Errorf("seed %d: little's law does not hold (relative error %g): a simulator bug", sc.Seed+uint64(i), r.Little.RelErr)
		}
		mean := r.Latency.Mean()
		rep.SeedMeansS = append(rep.SeedMeansS, mean)
		sum += mean
		sumSq += mean * mean
		rep.Measured += r.Completed
		rep.Events += r.Events
		// Results has no count of all arrivals (warm-up included); Little's
		// check holds it exactly as Lambda = arrivals / End.
		all := int64(math.Round(r.Little.Lambda * r.End.Seconds()))
		if all < r.Arrivals {
			return nil, fmt.Errorf("seed %d: derived %d arrivals in all, fewer than %d after the warm-up", sc.Seed+uint64(i), all, r.Arrivals)
		}
		rep.Requests += all
	}
	n := float64(seeds)
	rep.MeanResponseS = sum / n
	if seeds > 1 {
		rep.StdErrS = math.Sqrt(math.Max(0, sumSq-sum*sum/n) / (n - 1) / n)
	}
	rep.RequestsPerS = float64(rep.Requests) / rep.CPUS
	rep.RequestsPerWallS = float64(rep.Requests) / rep.WallS
	rep.EventsPerS = float64(rep.Events) / rep.CPUS
	return rep, nil
}

// cpuTime is the CPU time the process has used so far (user + system, all
// threads), seconds.
func cpuTime() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(fmt.Sprintf("getrusage: %v", err)) // cannot fail with RUSAGE_SELF
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
