// Package experiment runs scenarios: every policy on the same arrivals
// (common random numbers) over several seeds, summarised with confidence
// intervals and written as a table, JSON, CSV and an HTML report.
//
// The usage loop:
//
//	sc, _ := scenario.Lookup("lb-moderate-cpu")
//	cmp := experiment.Comparison{Scenario: sc, Policies: sc.Policies, Seeds: 5, Selectors: lb.Classical()}
//	res, err := cmp.Run(ctx)
//	res.WriteTable(os.Stdout)
//	res.WriteFiles("out/")
package experiment

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/control/multicloud"
	"github.com/shoal-project/shoal/control/policy"
	"github.com/shoal-project/shoal/control/slate"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/workload"
)

// Comparison runs a scenario under several policies and seeds.
type Comparison struct {
	Scenario *scenario.Scenario
	// Policies to compare (default: the scenario's, else "rr").
	Policies []string
	// Seeds is the number of seeds (default: the scenario's); run i uses
	// the scenario's seed + i for every policy.
	Seeds int
	// Selectors builds the request selectors named by policies.
	Selectors lb.Registry
	// Learned holds the policies driven by controllers, by policy name;
	// other names are selectors.
	Learned map[string]Learned
	// Traces resolves trace names and paths (default: the scenario's:
	// embedded traces, and paths relative to the scenario file).
	Traces *workload.Traces
	// Workers is the number of runs in parallel (default: GOMAXPROCS).
	Workers int
	// Progress, if set, is called with the fraction of the work done
	// (0..1), from the runner's goroutines, serialised.
	Progress func(done float64)
	// OnRun, if set, is called with every run's outcome and controllers as
	// it finishes, from the runner's goroutines (concurrently), for figures
	// the summary does not keep.
	OnRun func(policy string, seed uint64, r *cluster.Results, ctls []control.Controller)
}

// Run executes every (policy, seed) pair and summarises the results. It
// fails if any run breaks Little's law, which would be a simulator bug.
func (c *Comparison) Run(ctx context.Context) (*Result, error) {
	started := time.Now()
	sc := c.Scenario
	policies := c.Policies
	if len(policies) == 0 {
		policies = sc.Policies
	}
	if len(policies) == 0 {
		policies = []string{"rr"}
	}
	seeds := c.Seeds
	if seeds <= 0 {
		seeds = sc.Seeds
	}
	sel := c.Selectors
	if sel == nil {
		sel = lb.Classical()
	}
	for _, p := range policies {
		if _, ok := c.Learned[p]; ok {
			continue
		}
		if err := checkBuiltIn(p, sel); err != nil {
			return nil, err
		}
	}
	traces := c.Traces
	if traces == nil {
		traces = sc.Traces()
	}
	workers := c.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}

	type job struct{ p, s int }
	runs := make([][]*cluster.Results, len(policies))
	for i := range runs {
		runs[i] = make([]*cluster.Results, seeds)
	}
	prog := newProgress(len(policies)*seeds, c.Progress)
	jobs := make(chan job)
	errs := make(chan error, len(policies)*seeds)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				r, err := c.runOne(ctx, policies[j.p], sc.Seed+uint64(j.s), sel, traces, func(f float64) { prog.set(j.p*seeds+j.s, f) })
				if err != nil {
					errs <- fmt.Errorf("policy %s, seed %d: %w", policies[j.p], sc.Seed+uint64(j.s), err)
					cancel()
					continue
				}
				runs[j.p][j.s] = r
			}
		}()
	}
feed:
	for p := range policies {
		for s := 0; s < seeds; s++ {
			select {
			case jobs <- job{p, s}:
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := summarise(sc, policies, seeds, runs)
	if record, ok := ctx.Value(recorderKey{}).(func(Recorded)); ok {
		hashes := map[string]string{}
		for name, l := range c.Learned {
			if l.Write != nil {
				hashes[name] = policyHash(l.Write)
			}
		}
		record(Recorded{Scenario: sc, Result: res, Started: started, PolicyHashes: hashes})
	}
	return res, nil
}

// checkBuiltIn checks a policy the comparison builds itself: a selector
// sel has (with its settings), an autoscaler or a baseline route.
func checkBuiltIn(name string, sel lb.Registry) error {
	s, err := policy.Parse(name)
	if err != nil {
		return err
	}
	if s.File != "" || (s.Policy != nil && s.Policy.File == policy.NeedsFile) {
		return fmt.Errorf("policy %s: a learned policy needs its file loaded (Comparison.Learned)", name)
	}
	switch s.Kind() {
	case policy.Selector:
		if _, ok := sel[s.Name()]; !ok {
			return fmt.Errorf("policy %s: not a selector of this comparison (%s)", name, strings.Join(sel.Names(), ", "))
		}
	case policy.Autoscaler, policy.Route:
	default:
		return fmt.Errorf("policy %s: a %s does not run in a comparison", name, s.Kind())
	}
	return nil
}

// runOne simulates one policy with one seed.
func (c *Comparison) runOne(ctx context.Context, name string, seed uint64, sel lb.Registry, traces *workload.Traces, progress func(float64)) (*cluster.Results, error) {
	sc := c.Scenario
	learned, isLearned := c.Learned[name]
	var selector string
	var params lb.Params
	cfg := &sc.Config
	if isLearned {
		selector = learned.Selector
		if learned.Factory != nil {
			sel = maps.Clone(sel)
			sel[selector] = learned.Factory
		}
	} else {
		s, err := policy.Parse(name) // checked by Run
		if err != nil {
			return nil, err
		}
		switch s.Kind() {
		case policy.Selector:
			selector, params = s.Name(), s.Params()
		case policy.Autoscaler:
			if cfg, err = sc.ConfigFor(name); err != nil {
				return nil, err
			}
			learned, isLearned = Learned{New: func(*cluster.Cluster) ([]control.Controller, error) { return sc.Autoscalers(name) }}, true
		case policy.Route:
			learned, isLearned = Learned{New: func(*cluster.Cluster) ([]control.Controller, error) {
				if s.Name() == "slate" {
					opt := slate.DefaultOptions()
					opt.EgressWeight, _ = s.Get("egress")
					return []control.Controller{slate.NewController(opt)}, nil
				}
				c, err := multicloud.NewBaseline(s, seed)
				return []control.Controller{c}, err
			}}, true
		}
	}
	cl, err := cluster.New(cfg, cluster.Options{
		Seed: seed, Selectors: sel, Policy: selector, Params: params, Traces: traces,
		Horizon: sc.Horizon, Warmup: sc.Warmup, SamplePeriod: sc.SamplePeriod,
		Unobserved: !isLearned, // no controller: nothing reads a snapshot
	})
	if err != nil {
		return nil, err
	}
	run := func(until time.Duration) error { cl.RunUntil(until); return nil }
	var ctls []control.Controller
	if isLearned {
		ctls, err = learned.New(cl)
		if err != nil {
			return nil, err
		}
		period := sc.ControlPeriod
		if learned.Period > 0 {
			period = learned.Period
		}
		run = controlLoop(cl, ctls, period)
	}
	const steps = 50
	for i := 1; i <= steps; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := run(sc.Horizon * time.Duration(i) / steps); err != nil {
			return nil, err
		}
		progress(0.95 * float64(i) / steps)
	}
	cl.Drain(sc.Drain)
	progress(1)
	r := cl.Results()
	if !r.Little.OK() {
		return nil, fmt.Errorf("little's law does not hold: L=%g, lambda*W=%g (relative error %g): a simulator bug", r.Little.L, r.Little.Lambda*r.Little.W, r.Little.RelErr)
	}
	if c.OnRun != nil {
		c.OnRun(name, seed, r, ctls)
	}
	return r, nil
}

// progress aggregates per-run fractions and reports the total, serialised.
type progress struct {
	mu   sync.Mutex
	runs []float64
	sum  float64
	fn   func(float64)
}

func newProgress(n int, fn func(float64)) *progress {
	return &progress{runs: make([]float64, n), fn: fn}
}

func (p *progress) set(i int, f float64) {
	if p.fn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sum += f - p.runs[i]
	p.runs[i] = f
	p.fn(p.sum / float64(len(p.runs)))
}
