package sweep

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/envs/lbenv"
	"github.com/shoal-project/shoal/experiment"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/store"
)

// Runner runs a sweep's jobs, or one shard's, into a store.
type Runner struct {
	Spec  *Spec
	Store *store.Store
	// ID is the sweep's id in the store (default Spec.Name): runs a sweep
	// with the same id already has are skipped.
	ID string
	// Shard of Shards (default 0 of 1: everything).
	Shard, Shards int
	// Workers is the jobs run at once (default GOMAXPROCS).
	Workers     int
	CodeVersion string
	// Progress, if set, is called after each job with the runs done (run
	// or found stored) of the total, serialised.
	Progress func(done, total int, job Job)
}

// Outcome counts a Run's runs.
type Outcome struct {
	Jobs, Runs, Skipped int // jobs of the shard; runs recorded; runs already stored
}

// Run runs the shard's jobs, recording every run in one transaction as it
// finishes. On an error it stops taking new jobs and returns the first.
func (r *Runner) Run(ctx context.Context) (Outcome, error) {
	if r.ID == "" {
		r.ID = r.Spec.Name
	}
	if r.Shards == 0 {
		r.Shards = 1
	}
	if r.Shard < 0 || r.Shard >= r.Shards {
		return Outcome{}, fmt.Errorf("sweep: shard %d of %d", r.Shard, r.Shards)
	}
	jobs := Shard(r.Spec.Jobs(), r.Shard, r.Shards)
	stored, err := r.Store.Keys(ctx, r.ID)
	if err != nil {
		return Outcome{}, err
	}
	plans := make([]*plan, len(jobs))
	total := 0
	for i, j := range jobs {
		if plans[i], err = r.plan(j); err != nil {
			return Outcome{}, err
		}
		total += len(plans[i].keys)
	}
	out := Outcome{Jobs: len(jobs)}
	var (
		mu    sync.Mutex
		done  int
		first error
	)
	finish := func(p *plan, recorded, skipped int, err error) {
		mu.Lock()
		defer mu.Unlock()
		out.Runs += recorded
		out.Skipped += skipped
		done += recorded + skipped
		if err != nil && first == nil {
			first = fmt.Errorf("%s: %w", p.job, err)
		}
		if r.Progress != nil {
			r.Progress(done, total, p.job)
		}
	}
	workers := r.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan *plan)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for p := range next {
				rec, skip, err := r.runJob(ctx, p, stored)
				finish(p, rec, skip, err) // first, so its error is the one reported
				if err != nil {
					cancel()
				}
			}
		})
	}
	for _, p := range plans {
		if ctx.Err() != nil {
			break
		}
		next <- p
	}
	close(next)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = context.Cause(ctx)
	}
	return out, first
}

// plan is a job resolved: the runs it records, each with its key.
type plan struct {
	job     Job
	trainSc *scenario.Scenario // a train step's training scenario
	train   *store.Run         // a train step's own run
	evals   []eval
	keys    []string // every run's key, the train run's first
}

// eval is one evaluation a job records: a policy on a scenario resolved
// at a load.
type eval struct {
	sc  *scenario.Scenario
	run store.Run
}

// plan resolves a job's scenarios and the runs it will record.
func (r *Runner) plan(j Job) (*plan, error) {
	p := &plan{job: j}
	if j.Train == nil {
		e, err := r.eval(j.Scenario, j.Load, j.Policy, "")
		if err != nil {
			return nil, err
		}
		p.evals = []eval{e}
	} else if err := r.planTrain(p); err != nil {
		return nil, err
	}
	if p.train != nil {
		p.keys = append(p.keys, p.train.ComputeKey())
	}
	for _, e := range p.evals {
		p.keys = append(p.keys, e.run.ComputeKey())
	}
	return p, nil
}

// planTrain resolves a train step: the training run, then each of its
// policies at each load.
func (r *Runner) planTrain(p *plan) error {
	t := p.job.Train
	sc, err := r.scenario(p.job.Scenario, t.Load)
	if err != nil {
		return err
	}
	h, err := experiment.ScenarioHash(sc)
	if err != nil {
		return err
	}
	p.trainSc = sc
	// The trained policy is named by what made it: the same step on the
	// same scenario trains the same policy (training is seeded).
	policyH := store.Hash(fmt.Appendf(nil, "train %s episodes %d steps %d seed %d on %s",
		t.Learner, t.Episodes, t.EpisodeSteps, t.Seed, h))
	p.train = &store.Run{Kind: store.KindTrain, Scenario: sc.Name, ScenarioHash: h,
		Policy: t.Learner, PolicyHash: policyH, RootSeed: t.Seed, Seeds: 1, Load: sc.Load,
		Flags: map[string]string{"episodes": strconv.Itoa(t.Episodes), "episode_steps": strconv.Itoa(t.EpisodeSteps)}}
	for _, l := range r.Spec.loads() {
		for _, as := range t.As {
			e, err := r.eval(p.job.Scenario, l, as, policyH)
			if err != nil {
				return err
			}
			p.evals = append(p.evals, e)
		}
	}
	return nil
}

// eval resolves an evaluation: its scenario, and the run it records but
// for its results.
func (r *Runner) eval(name string, load float64, policy, policyHash string) (eval, error) {
	sc, err := r.scenario(name, load)
	if err != nil {
		return eval{}, err
	}
	h, err := experiment.ScenarioHash(sc)
	if err != nil {
		return eval{}, err
	}
	return eval{sc, store.Run{Kind: store.KindSim, Scenario: sc.Name, ScenarioHash: h, Policy: policy,
		PolicyHash: policyHash, RootSeed: sc.Seed, Seeds: sc.Seeds, Load: sc.Load}}, nil
}

// scenario resolves a scenario entry with the sweep's seeds and horizon
// and the load (0: the scenario's).
func (r *Runner) scenario(name string, load float64) (*scenario.Scenario, error) {
	sc, err := scenario.Lookup(r.Spec.scenarioPath(name))
	if err != nil {
		return nil, err
	}
	if r.Spec.Seed != 0 {
		sc.Seed = r.Spec.Seed
	}
	if r.Spec.Seeds != 0 {
		sc.Seeds = r.Spec.Seeds
	}
	if sc.Seeds == 0 {
		sc.Seeds = 5 // the comparison's default, made explicit for the key
	}
	if r.Spec.Horizon > 0 {
		sc.SetHorizon(r.Spec.Horizon)
	}
	if load != 0 {
		if err := sc.SetLoad(load); err != nil {
			return nil, fmt.Errorf("scenario %s at load %g: %w", name, load, err)
		}
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	return sc, nil
}

// runJob runs what of a job the store does not have yet.
func (r *Runner) runJob(ctx context.Context, p *plan, stored map[string]bool) (recorded, skipped int, err error) {
	for _, k := range p.keys {
		if stored[k] {
			skipped++
		}
	}
	if skipped == len(p.keys) {
		return 0, skipped, nil
	}
	keys := p.keys
	var learned map[string]experiment.Learned
	if p.train != nil {
		start := time.Now()
		tr, err := lbenv.Train(ctx, p.trainSc, lbenv.TrainConfig{Algorithm: lbenv.Algorithm(p.job.Train.Learner),
			Episodes: p.job.Train.Episodes, EpisodeSteps: p.job.Train.EpisodeSteps, Seed: p.job.Train.Seed})
		if err != nil {
			return 0, skipped, err
		}
		if !stored[keys[0]] {
			run := *p.train
			run.Summary = TrainSummary(tr)
			if err := r.record(ctx, &run, keys[0], start); err != nil {
				return 0, skipped, err
			}
			recorded++
		}
		keys = keys[1:]
		learned = map[string]experiment.Learned{
			p.job.Train.Learner: experiment.LBPolicy(tr.Policy),
			hybrid:              experiment.LBHybrid(tr.Policy),
		}
	}
	for i, e := range p.evals {
		if stored[keys[i]] {
			continue
		}
		if err := r.evaluate(ctx, e, keys[i], learned); err != nil {
			return recorded, skipped, err
		}
		recorded++
	}
	return recorded, skipped, nil
}

// evaluate runs one policy on its scenario and records it.
func (r *Runner) evaluate(ctx context.Context, e eval, key string, learned map[string]experiment.Learned) error {
	start := time.Now()
	cmp := experiment.Comparison{Scenario: e.sc, Policies: []string{e.run.Policy}, Seeds: e.sc.Seeds,
		Selectors: lb.Classical(), Workers: 1}
	if l, ok := learned[e.run.Policy]; ok {
		cmp.Learned = map[string]experiment.Learned{e.run.Policy: l}
	}
	res, err := cmp.Run(ctx)
	if err != nil {
		return err
	}
	runs, err := experiment.StoreRuns(res, e.run, func(string) string { return e.run.PolicyHash })
	if err != nil {
		return err
	}
	return r.record(ctx, runs[0], key, start)
}

// record stores a run of the sweep, checking that what ran is what was
// planned.
func (r *Runner) record(ctx context.Context, run *store.Run, key string, start time.Time) error {
	run.Sweep, run.Shard, run.CodeVersion = r.ID, fmt.Sprintf("%d/%d", r.Shard, r.Shards), r.CodeVersion
	run.Started, run.Finished = start, time.Now()
	if k := run.ComputeKey(); k != key {
		return fmt.Errorf("sweep: %s %s ran as %s but was planned as %s (a bug)", run.Scenario, run.Policy, k, key)
	}
	run.Key = key
	return r.Store.Record(ctx, run)
}

// TrainSummary is a training run's statistics: its episodes, steps, and
// the last episode's mean and p99, which the training's seed determines.
func TrainSummary(tr *lbenv.Trained) map[string]store.Stat {
	m := map[string]store.Stat{"episodes": {Mean: float64(len(tr.Curve))}, "env_steps": {Mean: float64(tr.EnvSteps)}}
	if n := len(tr.Curve); n > 0 {
		last := tr.Curve[n-1]
		m["mean"], m["p99"] = store.Stat{Mean: last.Mean}, store.Stat{Mean: last.P99}
	}
	return m
}
