// Package lbenv presents a load-balancing scenario to the learning code as a
// multi-agent environment: one agent per explicit LB point, each observing
// only its own traffic through an lb.Observer and setting the weights of its
// argmin (q+1)/a data plane (the Distr-LB paper, Alg. 2). It is the training
// adapter; the deployable agent in control/lb does not import it.
//
// The usage loop:
//
//	env, err := lbenv.New(sc, lbenv.Config{Reward: lbenv.VBF})
//	obs := env.Reset(rng)                      // a fresh system: server load X_j = 0 (Alg. 2, line 6)
//	obs, rewards, _, truncated := env.Step(actions)   // one control period
package lbenv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/learn/rl"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/scenario"
)

// Config sets up the environment.
type Config struct {
	// Reward is every agent's reward (default VBF).
	Reward lb.Reward
	// EpisodeSteps is the number of control periods per episode (default 200).
	EpisodeSteps int
	// Estimate is what the rewards measure per server: lb.EstimateBacklog
	// (default) or lb.EstimateDuration (the paper's input).
	Estimate lb.Estimate
	// ObsMean and ObsStd, when set, normalise every agent's observation,
	// x' = (x-mean)/std, as the deployed policy will (lb.NetSpec).
	ObsMean, ObsStd []float64
}

// Env is the multi-agent environment. It implements rl.MultiEnv.
type Env struct {
	sc    *scenario.Scenario
	cfg   Config
	spec  rl.MultiSpec
	names []string
	n     int // backends per LB

	cl      *cluster.Cluster
	obs     []*lb.Observer
	obsBuf  [][]float64
	rewards []float64
	weights []float64
	x       [][]float64 // per agent: the action in force, in [-1, 1]^n
	durs    []float64
	steps   int
	latency metrics.Histogram // completion times of this episode's requests, seconds
}

// New builds the environment of a scenario with explicit LB points in front
// of one service.
func New(sc *scenario.Scenario, cfg Config) (*Env, error) {
	if cfg.Reward == "" {
		cfg.Reward = lb.VBF
	}
	if !cfg.Reward.Valid() {
		return nil, fmt.Errorf("lbenv: unknown reward %q (want vbf, vbf+log, jain, pbf or makespan)", cfg.Reward)
	}
	if cfg.Estimate == "" {
		cfg.Estimate = lb.EstimateBacklog
	}
	if cfg.Estimate != lb.EstimateBacklog && cfg.Estimate != lb.EstimateDuration {
		return nil, fmt.Errorf("lbenv: unknown estimate %q (want backlog or duration)", cfg.Estimate)
	}
	if cfg.EpisodeSteps <= 0 {
		cfg.EpisodeSteps = 200
	}
	if len(sc.LBs) == 0 {
		return nil, fmt.Errorf("lbenv: scenario %s has no explicit lbs", sc.Name)
	}
	e := &Env{sc: sc, cfg: cfg}
	// Build once to learn the backends and to fail early on a bad scenario.
	if err := e.build(sc.Seed); err != nil {
		return nil, err
	}
	e.n = e.obs[0].Backends()
	e.names = e.cl.LBNames()
	dim := e.obs[0].Len()
	e.spec = rl.MultiSpec{ID: "lb/" + sc.Name, MaxEpisodeSteps: cfg.EpisodeSteps}
	for range e.names {
		e.spec.Observation = append(e.spec.Observation, rl.UniformBox(dim, math.Inf(-1), math.Inf(1)))
		e.spec.Action = append(e.spec.Action, rl.UniformBox(e.n, -1, 1))
		e.obsBuf = append(e.obsBuf, make([]float64, dim))
	}
	e.rewards = make([]float64, len(e.names))
	e.weights = make([]float64, e.n)
	for range e.names {
		e.x = append(e.x, make([]float64, e.n))
	}
	e.durs = make([]float64, e.n)
	if err := e.SetNormalisation(cfg.ObsMean, cfg.ObsStd); err != nil {
		return nil, err
	}
	return e, nil
}

// build starts a fresh system with the given seed, every LB point running
// argmin (q+1)/a with weights the agents set.
func (e *Env) build(seed uint64) error {
	sc := e.sc
	// Episodes end by truncation; the horizon only has to outlast them.
	horizon := time.Duration(e.cfg.EpisodeSteps+1) * sc.ControlPeriod
	cl, err := cluster.New(&sc.Config, cluster.Options{
		Seed: seed, Policy: "sed", Selectors: lb.Classical(), Traces: sc.Traces(),
		Horizon: horizon, SamplePeriod: horizon,
	})
	if err != nil {
		return fmt.Errorf("lbenv: %w", err)
	}
	e.cl = cl
	e.obs = e.obs[:0]
	var snap metrics.Snapshot
	cl.Observe(&snap)
	for i, name := range cl.LBNames() {
		o, err := lb.NewObserver(len(snap.LBs[i].Backends), sc.ControlPeriod)
		if err != nil {
			return err
		}
		if err := cl.SetFeedback(name, tee{o, &e.latency}); err != nil {
			return err
		}
		e.obs = append(e.obs, o)
	}
	e.steps = 0
	e.latency.Reset()
	return nil
}

// tee passes feedback to an observer and records completion times.
type tee struct {
	*lb.Observer
	latency *metrics.Histogram
}

func (t tee) Done(now time.Duration, j int, duration, tct time.Duration) {
	t.Observer.Done(now, j, duration, tct)
	t.latency.Record(tct.Seconds())
}

// Latency is the histogram of completion times (seconds) of the requests
// completed so far in this episode, all LB points together: the QoS a
// learning curve shows.
func (e *Env) Latency() *metrics.Histogram { return &e.latency }

// LBNames names the agents' LB points, in agent order.
func (e *Env) LBNames() []string { return e.names }

// Backends is the number of backends behind each LB point.
func (e *Env) Backends() int { return e.n }

// SetNormalisation sets the observation normalisation (see Config).
func (e *Env) SetNormalisation(mean, std []float64) error {
	if len(mean) != len(std) || (len(mean) != 0 && len(mean) != e.spec.Observation[0].Dim()) {
		return fmt.Errorf("lbenv: normalisation of length %d and %d for observations of %d", len(mean), len(std), e.spec.Observation[0].Dim())
	}
	e.cfg.ObsMean, e.cfg.ObsStd = mean, std
	return nil
}

func (e *Env) normalise(x []float64) {
	for d, m := range e.cfg.ObsMean {
		x[d] = (x[d] - m) / e.cfg.ObsStd[d]
	}
}

// Spec implements rl.MultiEnv.
func (e *Env) Spec() rl.MultiSpec { return e.spec }

// Reset implements rl.MultiEnv: a new system with empty servers and arrivals
// drawn from a seed taken from rng.
func (e *Env) Reset(rng *rand.Rand) [][]float64 {
	if err := e.build(rng.Uint64()); err != nil {
		panic(err) // the same scenario built in New
	}
	for _, x := range e.x {
		clear(x)
	}
	for i, o := range e.obs {
		e.obsBuf[i] = o.Observe(0, e.obsBuf[i])
		e.normalise(e.obsBuf[i])
	}
	return e.obsBuf
}

// Step implements rl.MultiEnv: every agent sets its weights, the system runs
// one control period, and each agent gets its observation and reward.
func (e *Env) Step(actions [][]float64) ([][]float64, []float64, bool, bool) {
	now := e.cl.Now()
	for i, a := range actions {
		x := e.x[i]
		copy(x, a)
		e.weights = lb.ActionToWeights(e.weights, x)
		if err := e.cl.Apply(now, control.SetWeights{LB: e.names[i], Weights: e.weights}); err != nil {
			panic(err) // sizes come from the spec
		}
		e.obs[i].SetPrevious(x)
	}
	next := now + e.sc.ControlPeriod
	e.cl.RunUntil(next)
	e.steps++
	for i, o := range e.obs {
		e.obsBuf[i] = o.Observe(next, e.obsBuf[i])
		e.normalise(e.obsBuf[i])
		e.durs = o.Estimates(e.cfg.Estimate, next, e.durs)
		e.rewards[i] = lb.Score(e.cfg.Reward, e.durs)
	}
	return e.obsBuf, e.rewards, false, e.steps >= e.cfg.EpisodeSteps
}
