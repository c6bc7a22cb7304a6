package lbenv

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/learn/rl"
	"github.com/shoal-project/shoal/scenario"
)

// Algorithm names a way to learn load-balancing weights.
type Algorithm string

// The learners of the paper's comparison (section 4).
const (
	// DistrLB: one recurrent SAC agent per LB point, each with its own
	// replay buffer and reward, no communication (paper Alg. 2, Fig. 3).
	DistrLB Algorithm = "distr-lb"
	// CentrLB: one recurrent SAC agent observing and acting for all LB
	// points, rewarded with the mean of their rewards.
	CentrLB Algorithm = "centr-lb"
)

// TrainConfig sets up a training run. Zero fields take the defaults noted.
type TrainConfig struct {
	Algorithm Algorithm // default DistrLB
	Reward    Reward    // default VBF
	// Episodes is the number of training episodes after the normalisation
	// episode (default 40).
	Episodes int
	// EpisodeSteps is the number of control periods per episode (default 200).
	EpisodeSteps int
	// Seed seeds the learners and draws every episode's system seed.
	// Training systems always have the top bit of their seed set, so they
	// never coincide with evaluation seeds below 2^63 (scenario seeds).
	Seed uint64
	// NoGRU trains plain SAC on the newest observation (the ablation of
	// the paper's GRU).
	NoGRU bool
	// RawReward feeds the learners the reward as it is; by default each
	// learner divides its reward by the running standard deviation of its
	// discounted return and clips the result to ±10 (Stable-Baselines3's
	// VecNormalize), because the VBF of durations in seconds² spans orders
	// of magnitude between an overloaded and a balanced system.
	RawReward bool
	// SAC is the learner's configuration (zero: LBSACConfig()).
	SAC rl.RecurrentSACConfig
	// Progress, if set, is called after every episode.
	Progress func(Episode)
}

// LBSACConfig returns the recurrent SAC configuration used for load
// balancing: 64-64 heads over a 64-unit GRU reading the last 8 periods,
// minibatches of 64 windows, γ = 0.95 (a 0.5 s period makes the effective
// horizon 10 s, longer than the tasks' completion times), replay of 50,000
// transitions, learning after 2 episodes of random weights.
func LBSACConfig() rl.RecurrentSACConfig {
	c := rl.DefaultRecurrentSACConfig()
	c.Gamma = 0.95
	c.BufferSize = 50_000
	c.LearningStarts = 400
	return c
}

// Episode is one training episode's learning-curve point.
type Episode struct {
	Index    int       // 1-based
	Returns  []float64 // undiscounted return per agent
	Mean     float64   // mean completion time of the episode's completed requests, seconds
	P99      float64   // their 99th percentile, seconds
	EnvSteps int       // environment steps so far, normalisation included
}

// Trained is the outcome of a training run.
type Trained struct {
	Policy   *lb.Policy
	Curve    []Episode
	EnvSteps int
}

// learner is what the loop needs of rl.SAC and rl.RecurrentSAC.
type learner interface {
	rl.Learner
}

// Train learns a policy for the scenario's LB points.
func Train(ctx context.Context, sc *scenario.Scenario, cfg TrainConfig) (*Trained, error) {
	if cfg.Algorithm == "" {
		cfg.Algorithm = DistrLB
	}
	if cfg.Algorithm != DistrLB && cfg.Algorithm != CentrLB {
		return nil, fmt.Errorf("lbenv: unknown algorithm %q (want %s or %s)", cfg.Algorithm, DistrLB, CentrLB)
	}
	if cfg.Episodes <= 0 {
		cfg.Episodes = 40
	}
	if cfg.SAC.SeqLen == 0 {
		cfg.SAC = LBSACConfig()
	}
	if cfg.NoGRU {
		cfg.SAC.SeqLen, cfg.SAC.GRUHidden = 1, 0
	} else if err := cfg.SAC.Validate(); err != nil {
		return nil, fmt.Errorf("lbenv: %w", err)
	}
	env, err := New(sc, Config{Reward: cfg.Reward, EpisodeSteps: cfg.EpisodeSteps})
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6c62656e76)) // "lbenv"
	t := &trainer{ctx: ctx, env: env, cfg: cfg, rng: rng}
	mean, std := t.normalisation()
	if err := env.SetNormalisation(mean, std); err != nil {
		return nil, err
	}
	if err := t.makeLearners(); err != nil {
		return nil, err
	}
	for ep := 1; ep <= cfg.Episodes; ep++ {
		if err := t.episode(ep); err != nil {
			return nil, err
		}
	}
	pol, err := t.policy(mean, std)
	if err != nil {
		return nil, err
	}
	return &Trained{Policy: pol, Curve: t.curve, EnvSteps: t.steps}, nil
}

type trainer struct {
	ctx      context.Context
	env      *Env
	cfg      TrainConfig
	rng      *rand.Rand
	learners []learner
	scalers  []rewardScaler
	central  *Central // CentrLB only
	curve    []Episode
	steps    int
}

// systemRNG returns a generator whose first draw is a training system
// seed: top bit set (see TrainConfig.Seed).
func (t *trainer) systemRNG() *rand.Rand {
	return rand.New(rand.NewPCG(t.rng.Uint64()|1<<63, 0))
}

// normalisation runs one episode with uniformly random weights and returns
// the per-dimension mean and standard deviation of one LB's observation,
// pooled over LB points (floored at 0.1 so near-constant inputs stay small).
func (t *trainer) normalisation() (mean, std []float64) {
	sp := t.env.Spec()
	dim := sp.Observation[0].Dim()
	var w = make([]struct{ n, mean, m2 float64 }, dim)
	add := func(obs [][]float64) {
		for _, o := range obs {
			for d, v := range o {
				s := &w[d]
				s.n++
				delta := v - s.mean
				s.mean += delta / s.n
				s.m2 += delta * (v - s.mean)
			}
		}
	}
	add(t.env.Reset(t.systemRNG()))
	acts := make([][]float64, sp.Agents())
	for i := range acts {
		acts[i] = make([]float64, sp.Action[i].Dim())
	}
	for {
		for i, a := range acts {
			sp.Action[i].Sample(t.rng, a)
		}
		obs, _, term, trunc := t.env.Step(acts)
		t.steps++
		add(obs)
		if term || trunc {
			break
		}
	}
	mean, std = make([]float64, dim), make([]float64, dim)
	for d, s := range w {
		mean[d] = s.mean
		std[d] = math.Max(0.1, math.Sqrt(s.m2/math.Max(1, s.n-1)))
	}
	return mean, std
}

func (t *trainer) makeLearners() error {
	sp := t.env.Spec()
	specs := make([]rl.Spec, sp.Agents())
	for i := range specs {
		specs[i] = rl.Spec{ID: fmt.Sprintf("%s/%s", sp.ID, t.env.LBNames()[i]), Observation: sp.Observation[i], Action: sp.Action[i], MaxEpisodeSteps: sp.MaxEpisodeSteps}
	}
	if t.cfg.Algorithm == CentrLB {
		t.central = NewCentral(t.env)
		specs = []rl.Spec{t.central.Spec()}
	}
	for i, s := range specs {
		lrng := rand.New(rand.NewPCG(t.cfg.Seed, uint64(i)+1))
		var l learner
		var err error
		if t.cfg.NoGRU {
			l, err = rl.NewSAC(s, t.cfg.SAC.SACConfig, lrng)
		} else {
			l, err = rl.NewRecurrentSAC(s, t.cfg.SAC, lrng)
		}
		if err != nil {
			return fmt.Errorf("lbenv: %w", err)
		}
		t.learners = append(t.learners, l)
		t.scalers = append(t.scalers, rewardScaler{gamma: t.cfg.SAC.Gamma})
	}
	return nil
}

// rewardScaler divides rewards by the running standard deviation of the
// discounted return and clips them to ±10 (Stable-Baselines3 VecNormalize).
type rewardScaler struct {
	gamma, ret  float64
	n, mean, m2 float64
}

func (s *rewardScaler) scale(r float64, done bool) float64 {
	s.ret = s.ret*s.gamma + r
	s.n++
	d := s.ret - s.mean
	s.mean += d / s.n
	s.m2 += d * (s.ret - s.mean)
	if done {
		s.ret = 0
	}
	std := math.Sqrt(s.m2/s.n + 1e-8)
	return math.Max(-10, math.Min(10, r/std))
}

// episode runs one training episode; the learners update as they observe,
// in parallel (they share nothing, so the result does not depend on the
// scheduling).
func (t *trainer) episode(index int) error {
	obs := cloneAll(t.reset())
	for _, l := range t.learners {
		if r, ok := l.(interface{ ResetEpisode() }); ok {
			r.ResetEpisode()
		}
	}
	returns := make([]float64, len(t.learners))
	acts := make([][]float64, len(t.learners))
	for {
		if err := t.ctx.Err(); err != nil {
			return err
		}
		for i, l := range t.learners {
			acts[i] = append(acts[i][:0], l.Explore(obs[i])...)
		}
		next, rew, term, trunc := t.step(acts)
		t.steps++
		var wg sync.WaitGroup
		for i, l := range t.learners {
			returns[i] += rew[i]
			r := rew[i]
			if !t.cfg.RawReward {
				r = t.scalers[i].scale(r, term || trunc)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				l.Observe(obs[i], acts[i], r, next[i], term, trunc)
			}()
		}
		wg.Wait()
		if term || trunc {
			break
		}
		for i := range obs {
			copy(obs[i], next[i])
		}
	}
	lat := t.env.Latency()
	e := Episode{Index: index, Returns: returns, Mean: lat.Mean(), P99: lat.Quantile(0.99), EnvSteps: t.steps}
	t.curve = append(t.curve, e)
	if t.cfg.Progress != nil {
		t.cfg.Progress(e)
	}
	return nil
}

func (t *trainer) reset() [][]float64 {
	if t.central != nil {
		return [][]float64{t.central.Reset(t.systemRNG())}
	}
	return t.env.Reset(t.systemRNG())
}

func (t *trainer) step(acts [][]float64) ([][]float64, []float64, bool, bool) {
	if t.central != nil {
		o, r, term, trunc := t.central.Step(acts[0])
		return [][]float64{o}, []float64{r}, term, trunc
	}
	return t.env.Step(acts)
}

func cloneAll(x [][]float64) [][]float64 {
	y := make([][]float64, len(x))
	for i, v := range x {
		y[i] = append([]float64(nil), v...)
	}
	return y
}

// policy exports the learners' actors as a deployable policy.
func (t *trainer) policy(mean, std []float64) (*lb.Policy, error) {
	c := t.cfg.SAC
	names := t.env.LBNames()
	var nets []lb.NetSpec
	groups := [][]string{}
	if t.central != nil {
		groups = append(groups, names)
	} else {
		for _, n := range names {
			groups = append(groups, []string{n})
		}
	}
	for _, g := range groups {
		var m, s []float64
		for range g {
			m, s = append(m, mean...), append(s, std...)
		}
		nets = append(nets, lb.NetSpec{LBs: g, Backends: t.env.Backends(), SeqLen: c.SeqLen,
			GRUHidden: c.GRUHidden, Hidden: c.Hidden, ObsMean: m, ObsStd: s})
	}
	learnerName := "recurrent-sac"
	if t.cfg.NoGRU {
		learnerName = "sac"
	}
	reward := t.cfg.Reward
	if reward == "" {
		reward = VBF
	}
	p, err := lb.NewPolicy(string(t.cfg.Algorithm), t.env.sc.ControlPeriod, nets, lb.Provenance{
		Scenario: t.env.sc.Name, Seed: t.cfg.Seed, Reward: string(reward), Learner: learnerName,
		Episodes: t.cfg.Episodes, EnvSteps: t.steps})
	if err != nil {
		return nil, fmt.Errorf("lbenv: %w", err)
	}
	for i, l := range t.learners {
		switch a := l.(type) {
		case *rl.RecurrentSAC:
			g, h := a.Actor()
			err = p.SetWeights(i, g, h)
		case *rl.SAC:
			err = p.SetWeights(i, nil, a.Actor())
		}
		if err != nil {
			return nil, fmt.Errorf("lbenv: %w", err)
		}
	}
	return p, nil
}
