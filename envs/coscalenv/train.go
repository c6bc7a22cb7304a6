// Package coscalenv trains the CoScal-like baseline (control/coscal; Xu,
// Buyya et al., IEEE TNSM 2022) in the simulator: first the GRU workload
// forecaster (learn/forecast) on ingress-rate series of the training
// workloads, then the Q-function every deployment consults by ε-greedy
// Q-learning (learn/rl LinearQ over the one-hot quarter x trend x SLO
// state), every deployment acting every period and learning from its own
// transition, on the same generated workloads as
// DRPC's teacher (drpcenv.Surges).
//
// The reward of a deployment after a period, in the spirit of CoScal's
// (SLO, resources and brownout traded off): its CPU utilisation of what is
// allocated (clipped to 1), minus CostWeight times its allocated cores over
// its most (max replicas x max CPU), minus ViolationWeight times the share
// of its calls that failed plus, when it is in its top utilisation quarter,
// the application's SLO violation (coscal.Observer.Violation),
// minus BrownoutWeight while it is browned out.
package coscalenv

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/coscal"
	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/envs/drpcenv"
	"github.com/shoal-project/shoal/learn/forecast"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/workload"
)

// Config sets a training run. Zero fields take the defaults of
// DefaultConfig.
type Config struct {
	// Seed seeds the forecaster, the exploration and every episode's system
	// seed (with the top bit set, never an evaluation seed).
	Seed uint64
	// Episodes bounds the Q-learning episodes; Deadline, if set (with Now),
	// stops them earlier (the last one run is greedy either way).
	Episodes      int
	Deadline      time.Time
	Now           func() time.Time
	EpisodeLength time.Duration
	Period        time.Duration
	// Arrivals draws each episode's arrival process (default drpcenv.Surges).
	Arrivals func(rng *rand.Rand) workload.ProcessSpec
	// Forecast configures the GRU (Dims is one: the ingress rate) and
	// ForecastSeries how many generated workloads it is fitted on (a fifth
	// as many more score it); NoForecast uses the last period's trend.
	Forecast       forecast.Config
	ForecastSeries int
	NoForecast     bool
	TrendBand      float64
	// Q-learning: step size, discount, exploration from EpsilonStart down to
	// EpsilonEnd over the first 70% of the episodes.
	Alpha, Gamma             float64
	EpsilonStart, EpsilonEnd float64
	ViolationWeight          float64
	CostWeight               float64
	BrownoutWeight           float64
	Steps                    drpc.Steps
	Progress                 func(Episode)
}

// DefaultConfig returns the defaults: 10-minute episodes decided every 5 s
// (DRPC's period), a 16-wide GRU over the last 12 periods forecasting 6
// ahead (30 s, half a cold start) fitted on 40 workloads, a ±10% flat band,
// α 0.1, γ 0.9, ε from 1 to 0.05, weights 2, 0.5 and 0.2, DRPC's action
// sizes, and at most 150 episodes.
func DefaultConfig() Config {
	return Config{Episodes: 150, EpisodeLength: 10 * time.Minute, Period: 5 * time.Second,
		Forecast: forecast.Config{Window: 12, Hidden: 16, Horizon: 6, Epochs: 10, EpochWindows: 2000, Log: true}, ForecastSeries: 40,
		TrendBand: 0.1, Alpha: 0.1, Gamma: 0.9, EpsilonStart: 1, EpsilonEnd: 0.05,
		ViolationWeight: 2, CostWeight: 0.5, BrownoutWeight: 0.2, Steps: drpc.Steps{CPU: 0.1, Memory: 64, Replicas: 3}}
}

func withDefaults(cfg Config, sc *scenario.Scenario) Config {
	def := DefaultConfig()
	setDefault(&cfg.Episodes, def.Episodes)
	setDefault(&cfg.EpisodeLength, def.EpisodeLength)
	setDefault(&cfg.Period, def.Period)
	setDefault(&cfg.ForecastSeries, def.ForecastSeries)
	setDefault(&cfg.TrendBand, def.TrendBand)
	setDefault(&cfg.Alpha, def.Alpha)
	setDefault(&cfg.Gamma, def.Gamma)
	setDefault(&cfg.EpsilonStart, def.EpsilonStart)
	setDefault(&cfg.EpsilonEnd, def.EpsilonEnd)
	setDefault(&cfg.ViolationWeight, def.ViolationWeight)
	setDefault(&cfg.CostWeight, def.CostWeight)
	setDefault(&cfg.BrownoutWeight, def.BrownoutWeight)
	if cfg.Forecast == (forecast.Config{}) {
		cfg.Forecast = def.Forecast
	}
	if cfg.Steps == (drpc.Steps{}) {
		cfg.Steps = def.Steps
	}
	if cfg.Arrivals == nil {
		cfg.Arrivals = drpcenv.Surges(sc)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg
}

func setDefault[T int | float64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Episode is one training episode's learning-curve point.
type Episode struct {
	Index         int
	Epsilon       float64
	Reward        float64 // mean over deployments and periods
	SLOViolations float64
	Actions       int // decisions that changed something
}

// Trained is the outcome of a training run.
type Trained struct {
	Policy *coscal.Policy
	Curve  []Episode
}

// Train learns a CoScal-like policy for the scenario's autoscaled services.
func Train(ctx context.Context, sc *scenario.Scenario, cfg Config) (*Trained, error) {
	cfg = withDefaults(cfg, sc)
	deps, err := drpcenv.Deployments(sc, cfg.Period)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x636f7363)) // "cosc"
	var fc *forecast.GRUForecaster
	var mape float64
	if !cfg.NoForecast {
		if fc, mape, err = fitForecaster(cfg, rng); err != nil {
			return nil, err
		}
	}
	pol, err := coscal.NewPolicy(coscal.Policy{Period: drpc.Duration(cfg.Period), Deployments: deps, Ingress: drpcenv.Ingress(sc),
		SLO: drpc.Duration(sc.SLO), Steps: cfg.Steps, TrendBand: cfg.TrendBand,
		Provenance: coscal.Provenance{Scenario: sc.Name, Seed: cfg.Seed, ForecastMAPE: mape}}, fc)
	if err != nil {
		return nil, fmt.Errorf("coscalenv: %w", err)
	}
	var curve []Episode
	for ep := 1; ep <= cfg.Episodes; ep++ {
		last := ep == cfg.Episodes || (!cfg.Deadline.IsZero() && cfg.Now().After(cfg.Deadline))
		eps := 0.0
		if !last {
			f := math.Min(float64(ep-1)/(0.7*float64(cfg.Episodes)), 1)
			eps = cfg.EpsilonStart + f*(cfg.EpsilonEnd-cfg.EpsilonStart)
		}
		e, err := episode(ctx, sc, cfg, pol, fc, eps, rng)
		if err != nil {
			return nil, err
		}
		e.Index = ep
		curve = append(curve, e)
		if cfg.Progress != nil {
			cfg.Progress(e)
		}
		if last {
			break
		}
	}
	pr := &pol.Provenance
	pr.Episodes = len(curve)
	pr.Score, pr.SLOViolations = curve[len(curve)-1].Reward, curve[len(curve)-1].SLOViolations
	pr.EnvSteps = len(curve) * int(cfg.EpisodeLength/cfg.Period)
	return &Trained{Policy: pol, Curve: curve}, nil
}

// ingressSeries is the ingress rate per period a workload draws (a series
// of rates, or a steady Poisson rate), with the Poisson noise of counting
// arrivals over a period (normal approximation).
func ingressSeries(spec workload.ProcessSpec, cfg Config, rng *rand.Rand) [][]float64 {
	p := cfg.Period.Seconds()
	n := int(cfg.EpisodeLength / cfg.Period)
	out := make([][]float64, n)
	for t := range out {
		r := spec.Rate
		if spec.Kind == workload.KindSeries {
			r = spec.Rates[min(int(time.Duration(t)*cfg.Period/spec.Step), len(spec.Rates)-1)]
		}
		out[t] = []float64{math.Max(r+math.Sqrt(r/p)*rng.NormFloat64(), 0)}
	}
	return out
}

// fitForecaster fits the GRU on ForecastSeries generated workloads and
// scores it (MAPE at its horizon) on a fifth as many more.
func fitForecaster(cfg Config, rng *rand.Rand) (*forecast.GRUForecaster, float64, error) {
	var series [][]float64
	for range cfg.ForecastSeries {
		series = append(series, ingressSeries(cfg.Arrivals(rng), cfg, rng)...)
	}
	train := len(series)
	for range max(cfg.ForecastSeries/5, 1) {
		series = append(series, ingressSeries(cfg.Arrivals(rng), cfg, rng)...)
	}
	fc, err := forecast.Fit(series[:train], cfg.Forecast, rng)
	if err != nil {
		return nil, 0, fmt.Errorf("coscalenv: forecaster: %w", err)
	}
	e, err := forecast.Evaluate(fc, series, train, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("coscalenv: forecaster: %w", err)
	}
	return fc, e.MAPE(fc.Horizon()), nil
}

// episode runs one episode: every deployment acts ε-greedily each period
// and learns from the next period's reward.
func episode(ctx context.Context, sc *scenario.Scenario, cfg Config, pol *coscal.Policy, fc *forecast.GRUForecaster, eps float64, rng *rand.Rand) (Episode, error) {
	seed := rng.Uint64() | 1<<63
	cl, err := drpcenv.EpisodeCluster(sc, drpcenv.Traffic{Total: cfg.Arrivals(rng)}, seed, cfg.EpisodeLength+cfg.Period)
	if err != nil {
		return Episode{}, fmt.Errorf("coscalenv: %w", err)
	}
	var f forecast.Forecaster
	if fc != nil {
		f = fc
	}
	deps := pol.Deployments
	n := len(deps)
	obs := coscal.NewObserver(deps, pol.Ingress, time.Duration(pol.SLO), pol.TrendBand, f)
	q := pol.Q()
	phi, next, guard := make([]float64, coscal.States), make([]float64, coscal.States), make([]float64, 4)
	state, acts := make([]int, n), make([]int, n)
	brown := make([]bool, n)
	var snap metrics.Snapshot
	var buf []control.Action
	var sum float64
	var rewards, changed int
	started := false
	for now := time.Duration(0); now <= cfg.EpisodeLength; now += cfg.Period {
		if err := ctx.Err(); err != nil {
			return Episode{}, err
		}
		cl.RunUntil(now)
		cl.Observe(&snap)
		if now == 0 || !obs.Observe(&snap) {
			continue
		}
		for i := range n {
			if started {
				r := reward(cfg, obs, obs.Service(&snap, i), &deps[i], brown[i])
				coscal.OneHot(phi, state[i])
				coscal.OneHot(next, obs.State(i))
				q.Update(phi, acts[i], r, next, coscal.Allowed(&deps[i], brown[i]), cfg.Alpha, cfg.Gamma)
				sum += r
				rewards++
			}
			state[i] = obs.State(i)
			coscal.OneHot(phi, state[i])
			acts[i] = q.EpsilonGreedy(phi, coscal.Allowed(&deps[i], brown[i]), eps, rng)
		}
		started = true
		buf = buf[:0]
		for i := range n {
			s := obs.Service(&snap, i)
			coscal.GuardAction(guard, acts[i])
			dec := drpc.Guard(&deps[i], cfg.Steps, s, brown[i], guard)
			brown[i] = dec.Brownout
			k := len(buf)
			if buf = dec.Actions(buf, deps[i].Name, s); len(buf) > k {
				changed++
			}
		}
		for _, a := range buf {
			if err := cl.Apply(now, a); err != nil {
				return Episode{}, fmt.Errorf("coscalenv: %w", err)
			}
		}
	}
	cl.Drain(time.Minute)
	e := Episode{Epsilon: eps, Actions: changed, SLOViolations: sloViolations(cl.Results())}
	if rewards > 0 {
		e.Reward = sum / float64(rewards)
	}
	return e, nil
}

// reward is a deployment's reward after a period (see the package doc).
func reward(cfg Config, obs *coscal.Observer, s *metrics.ServiceStats, d *drpc.Deployment, brown bool) float64 {
	util, cost := 0.0, 0.0
	if s.Replicas > 0 && s.CPULimit > 0 {
		util = math.Min(s.CPUUse/(float64(s.Replicas)*s.CPULimit), 1)
	}
	if d.MaxReplicas > 0 && d.CPUMax > 0 {
		cost = float64(s.Replicas) * s.CPULimit / (float64(d.MaxReplicas) * d.CPUMax)
	}
	// The application's violation is blamed on the saturated deployments
	// (top quarter), and those failing calls pay for them: a penalty shared
	// by all would cost every deployment alike whatever it did, and each
	// would learn to save its own resources. (A deployment's response time
	// includes its callees', so blaming the slow ones blames every caller
	// of a bottleneck: tried, it did worse.)
	r := util - cfg.CostWeight*cost - cfg.ViolationWeight*float64(s.Failures.Total())/float64(max(s.Arrivals, 1))
	if coscal.Level(coscal.Util(s)) == coscal.Levels-1 {
		r -= cfg.ViolationWeight * obs.Violation()
	}
	if brown {
		r -= cfg.BrownoutWeight
	}
	return r
}

// sloViolations is the share of requests that failed or missed their SLO.
func sloViolations(r *cluster.Results) float64 {
	if n := r.SLOArrivals(); n > 0 {
		return float64(r.SLOViolations()) / float64(n)
	}
	return 0
}
