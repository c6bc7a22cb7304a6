package lbenv

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/learn/nn"
	"github.com/shoal-project/shoal/learn/rl"
	"github.com/shoal-project/shoal/metrics"
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
	// QMixLB: QMIX (centralised training, decentralised execution): one
	// recurrent Q network per LB point over discrete weight steps (see
	// Stepped), mixed monotonically into a team value of the summed rewards.
	QMixLB Algorithm = "qmix-lb"
)

// TrainConfig sets up a training run. Zero fields take the defaults noted.
type TrainConfig struct {
	Algorithm Algorithm // default DistrLB
	Reward    lb.Reward // default VBF
	// Episodes is the number of training episodes after the normalisation
	// episode (default 60).
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
	// Estimate is what the rewards measure per server (Config.Estimate).
	Estimate lb.Estimate
	// RawReward feeds the learners the reward as it is; by default each
	// learner divides its reward by the running standard deviation of its
	// discounted return and clips the result to ±10 (Stable-Baselines3's
	// VecNormalize), because the VBF of durations in seconds² spans orders
	// of magnitude between an overloaded and a balanced system.
	RawReward bool
	// SAC is the learner's configuration (zero: LBSACConfig()).
	SAC rl.RecurrentSACConfig
	// QMIX is QMixLB's configuration (zero: LBQMIXConfig()).
	QMIX rl.QMIXConfig
	// ValidateEvery is how often (in episodes) the deterministic policy is
	// run on ValidationSystems fixed training systems (default 5 and 2;
	// negative: never). Train returns the policy of the best validation,
	// or the last one without validation.
	ValidateEvery     int
	ValidationSystems int
	// Progress, if set, is called after every episode.
	Progress func(Episode)
}

// LBSACConfig returns the recurrent SAC configuration used for load
// balancing: 64-64 heads over a 64-unit GRU reading the last 8 periods,
// minibatches of 64 windows, γ = 0.8 (with 0.5 s periods an effective
// horizon of 2.5 s, a few task durations; 0.95 and 0.99 learned no better
// in our runs), replay of 50,000 transitions, learning after 2 episodes of
// random weights. Two settings differ from the library's defaults, both
// chosen by comparing runs on lb-moderate-cpu (see docs/results/distr-lb.md): an initial
// temperature α = 0.1 instead of 1 (with rewards scaled to unit return
// deviation, α = 1 makes the entropy bonus, α·7 nats for 7 backends,
// outweigh every difference in Q, and the policies stayed no better than
// LSQ), and a learning rate of 3e-4 instead of 1e-3 (the actors drifted
// less between validations).
func LBSACConfig() rl.RecurrentSACConfig {
	c := rl.DefaultRecurrentSACConfig()
	c.InitAlpha = 0.1
	c.LR = 3e-4
	c.Gamma = 0.8
	c.BufferSize = 50_000
	c.LearningStarts = 400
	return c
}

// LBQMIXConfig returns the QMIX configuration used for load balancing:
// the library defaults (the QMIX paper's) with the window, γ and replay of
// LBSACConfig, and exploration annealed over 6,000 steps, half of a
// default 60-episode training run.
func LBQMIXConfig() rl.QMIXConfig {
	c, s := rl.DefaultQMIXConfig(), LBSACConfig()
	c.GRUHidden, c.SeqLen, c.Gamma, c.BufferSize, c.LearningStarts = s.GRUHidden, s.SeqLen, s.Gamma, s.BufferSize, s.LearningStarts
	c.EpsAnnealSteps = 6_000
	return c
}

// Episode is one training episode's learning-curve point.
type Episode struct {
	Index    int       // 1-based
	Returns  []float64 // undiscounted return per agent
	Mean     float64   // mean completion time of the episode's completed requests, seconds
	P99      float64   // their 99th percentile, seconds
	EnvSteps int       // environment steps so far, normalisation included
	// Validation is the deterministic policy's mean completion time on the
	// validation systems after this episode, seconds (NaN when not run).
	Validation float64
}

// Trained is the outcome of a training run.
type Trained struct {
	Policy   *lb.Policy
	Curve    []Episode
	EnvSteps int
}

// Train learns a policy for the scenario's LB points.
func Train(ctx context.Context, sc *scenario.Scenario, cfg TrainConfig) (*Trained, error) {
	if cfg.Algorithm == "" {
		cfg.Algorithm = DistrLB
	}
	if cfg.Algorithm != DistrLB && cfg.Algorithm != CentrLB && cfg.Algorithm != QMixLB {
		return nil, fmt.Errorf("lbenv: unknown algorithm %q (want %s, %s or %s)", cfg.Algorithm, DistrLB, CentrLB, QMixLB)
	}
	if cfg.Episodes <= 0 {
		cfg.Episodes = 60
	}
	if cfg.SAC.SeqLen == 0 {
		cfg.SAC = LBSACConfig()
	}
	if cfg.NoGRU {
		cfg.SAC.SeqLen, cfg.SAC.GRUHidden = 1, 0
	} else if err := cfg.SAC.Validate(); err != nil {
		return nil, fmt.Errorf("lbenv: %w", err)
	}
	envCfg := Config{Reward: cfg.Reward, EpisodeSteps: cfg.EpisodeSteps, Estimate: cfg.Estimate}
	env, err := New(sc, envCfg)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6c62656e76)) // "lbenv"
	t := &trainer{ctx: ctx, env: env, cfg: cfg, rng: rng}
	mean, std := t.normalisation()
	if err := env.SetNormalisation(mean, std); err != nil {
		return nil, err
	}
	if err := t.makeTeam(); err != nil {
		return nil, err
	}
	if cfg.ValidateEvery == 0 {
		cfg.ValidateEvery = 5
	}
	if cfg.ValidationSystems <= 0 {
		cfg.ValidationSystems = 2
	}
	var valid []uint64
	for range cfg.ValidationSystems {
		valid = append(valid, rng.Uint64()|1<<63)
	}
	var best *lb.Policy
	bestMean := math.Inf(1)
	for ep := 1; ep <= cfg.Episodes; ep++ {
		e, err := t.episode(ep)
		if err != nil {
			return nil, err
		}
		if cfg.ValidateEvery > 0 && (ep%cfg.ValidateEvery == 0 || ep == cfg.Episodes) {
			e.Validation = t.validate(valid)
			if e.Validation < bestMean {
				bestMean = e.Validation
				if best, err = t.policy(mean, std); err != nil {
					return nil, err
				}
				best.Provenance.Selected = ep
			}
		}
		if cfg.Progress != nil {
			cfg.Progress(*e)
		}
	}
	if best == nil {
		var err error
		if best, err = t.policy(mean, std); err != nil {
			return nil, err
		}
		best.Provenance.Selected = cfg.Episodes
	}
	return &Trained{Policy: best, Curve: t.curve, EnvSteps: t.steps}, nil
}

// validate runs the deterministic policy for one episode on each of the
// given training systems and returns the mean completion time over them.
func (t *trainer) validate(seeds []uint64) float64 {
	sum := 0.0
	for _, seed := range seeds {
		obs := t.menv.Reset(rand.New(rand.NewPCG(seed, 0)))
		t.team.resetEpisode()
		for {
			acts := t.team.act(obs)
			next, _, term, trunc := t.menv.Step(acts)
			if term || trunc {
				break
			}
			obs = next
		}
		sum += t.env.Latency().Mean()
	}
	return sum / float64(len(seeds))
}

type trainer struct {
	ctx     context.Context
	env     *Env
	cfg     TrainConfig
	rng     *rand.Rand
	menv    rl.MultiEnv // what the team acts in: env, its central view or its stepped view
	team    team
	scalers []rl.ReturnScaler
	curve   []Episode
	steps   int
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
	w := make([]metrics.Welford, dim)
	add := func(obs [][]float64) {
		for _, o := range obs {
			for d, v := range o {
				w[d].Add(v)
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
	for d := range w {
		mean[d] = w[d].Mean()
		std[d] = math.Max(0.1, w[d].StdDev())
	}
	return mean, std
}

// team is what the training loop needs of the learners.
type team interface {
	explore(obs [][]float64) [][]float64
	act(obs [][]float64) [][]float64 // deterministic
	observe(obs, acts [][]float64, rew []float64, next [][]float64, term, trunc bool)
	resetEpisode()
}

// independent learners, one per agent. They update in parallel and share
// nothing, so the result does not depend on the scheduling.
type independent struct {
	ls   []rl.Learner
	acts [][]float64
}

func (t *independent) explore(obs [][]float64) [][]float64 {
	for i, l := range t.ls {
		t.acts[i] = append(t.acts[i][:0], l.Explore(obs[i])...)
	}
	return t.acts
}

func (t *independent) act(obs [][]float64) [][]float64 {
	for i, l := range t.ls {
		t.acts[i] = append(t.acts[i][:0], l.Act(obs[i], true)...)
	}
	return t.acts
}

func (t *independent) observe(obs, acts [][]float64, rew []float64, next [][]float64, term, trunc bool) {
	var wg sync.WaitGroup
	for i, l := range t.ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Observe(obs[i], acts[i], rew[i], next[i], term, trunc)
		}()
	}
	wg.Wait()
}

func (t *independent) resetEpisode() {
	for _, l := range t.ls {
		if r, ok := l.(interface{ ResetEpisode() }); ok {
			r.ResetEpisode()
		}
	}
}

// ctde is one learner for the whole team (QMIX).
type ctde struct {
	q    *rl.QMIX
	acts [][]float64
}

func (t *ctde) explore(obs [][]float64) [][]float64 {
	for i, a := range t.q.Explore(obs) {
		t.acts[i] = append(t.acts[i][:0], a...)
	}
	return t.acts
}

func (t *ctde) act(obs [][]float64) [][]float64 {
	for i, a := range t.q.Act(obs, true) {
		t.acts[i] = append(t.acts[i][:0], a...)
	}
	return t.acts
}

func (t *ctde) observe(obs, acts [][]float64, rew []float64, next [][]float64, term, trunc bool) {
	t.q.Observe(obs, acts, rew, next, term, trunc)
}

func (t *ctde) resetEpisode() { t.q.ResetEpisode() }

// makeTeam builds the environment view and the learners of the algorithm.
func (t *trainer) makeTeam() error {
	switch t.cfg.Algorithm {
	case QMixLB:
		t.menv = NewStepped(t.env, stepSize)
		if t.cfg.QMIX.GRUHidden == 0 {
			t.cfg.QMIX = LBQMIXConfig()
		}
		q, err := rl.NewQMIX(t.menv.Spec(), t.cfg.QMIX, rand.New(rand.NewPCG(t.cfg.Seed, 1)))
		if err != nil {
			return fmt.Errorf("lbenv: %w", err)
		}
		t.team = &ctde{q: q, acts: make([][]float64, t.menv.Spec().Agents())}
	case CentrLB:
		t.menv = rl.Independent(t.env.Spec().ID+"/central", NewCentral(t.env))
	default:
		t.menv = t.env
	}
	t.makeTeamFor(t.menv)
	return nil
}

func (t *trainer) makeTeamFor(menv rl.MultiEnv) {
	gamma := t.cfg.SAC.Gamma
	if t.cfg.Algorithm == QMixLB {
		gamma = t.cfg.QMIX.Gamma
	}
	ms := menv.Spec()
	if t.team == nil {
		ind := &independent{acts: make([][]float64, ms.Agents())}
		for i := range ms.Agents() {
			s := rl.Spec{ID: fmt.Sprintf("%s/%d", ms.ID, i), Observation: ms.Observation[i], Action: ms.Action[i], MaxEpisodeSteps: ms.MaxEpisodeSteps}
			lrng := rand.New(rand.NewPCG(t.cfg.Seed, uint64(i)+1))
			var l rl.Learner
			var err error
			if t.cfg.NoGRU {
				l, err = rl.NewSAC(s, t.cfg.SAC.SACConfig, lrng)
			} else {
				l, err = rl.NewRecurrentSAC(s, t.cfg.SAC, lrng)
			}
			if err != nil {
				panic(err)
			}
			ind.ls = append(ind.ls, l)
		}
		t.team = ind
	}
	for range ms.Agents() {
		t.scalers = append(t.scalers, rl.ReturnScaler{Gamma: gamma})
	}
}

// episode runs one training episode and appends it to the curve.
func (t *trainer) episode(index int) (*Episode, error) {
	obs := rl.CloneJoint(t.menv.Reset(t.systemRNG()))
	t.team.resetEpisode()
	returns := make([]float64, len(obs))
	scaled := make([]float64, len(obs))
	for {
		if err := t.ctx.Err(); err != nil {
			return nil, err
		}
		acts := t.team.explore(obs)
		next, rew, term, trunc := t.menv.Step(acts)
		t.steps++
		for i, r := range rew {
			returns[i] += r
			scaled[i] = r
			if !t.cfg.RawReward {
				scaled[i] = t.scalers[i].Scale(r, term || trunc)
			}
		}
		t.team.observe(obs, acts, scaled, next, term, trunc)
		if term || trunc {
			break
		}
		for i := range obs {
			copy(obs[i], next[i])
		}
	}
	lat := t.env.Latency()
	t.curve = append(t.curve, Episode{Index: index, Returns: returns, Mean: lat.Mean(), P99: lat.Quantile(0.99), EnvSteps: t.steps, Validation: math.NaN()})
	return &t.curve[len(t.curve)-1], nil
}

// policy exports the learners' actors as a deployable policy.
func (t *trainer) policy(mean, std []float64) (*lb.Policy, error) {
	names := t.env.LBNames()
	var groups [][]string
	if t.cfg.Algorithm == CentrLB {
		groups = append(groups, names)
	} else {
		for _, n := range names {
			groups = append(groups, []string{n})
		}
	}
	var nets []lb.NetSpec
	for _, g := range groups {
		n := lb.NetSpec{LBs: g, Backends: t.env.Backends(), SeqLen: t.cfg.SAC.SeqLen,
			GRUHidden: t.cfg.SAC.GRUHidden, Hidden: t.cfg.SAC.Hidden}
		for range g {
			n.ObsMean, n.ObsStd = append(n.ObsMean, mean...), append(n.ObsStd, std...)
		}
		if t.cfg.Algorithm == QMixLB {
			q := t.cfg.QMIX
			n.SeqLen, n.GRUHidden, n.Hidden, n.Actions, n.StepSize = q.SeqLen, q.GRUHidden, q.Hidden, lb.ActionsSteps, stepSize
		}
		nets = append(nets, n)
	}
	learner := "recurrent-sac"
	switch {
	case t.cfg.Algorithm == QMixLB:
		learner = "qmix"
	case t.cfg.NoGRU:
		learner = "sac"
	}
	reward := t.cfg.Reward
	if reward == "" {
		reward = lb.VBF
	}
	p, err := lb.NewPolicy(string(t.cfg.Algorithm), t.env.sc.ControlPeriod, nets, lb.Provenance{
		Scenario: t.env.sc.Name, Seed: t.cfg.Seed, Reward: string(reward), Estimate: string(t.env.cfg.Estimate), Learner: learner,
		Episodes: t.cfg.Episodes, EnvSteps: t.steps})
	if err != nil {
		return nil, fmt.Errorf("lbenv: %w", err)
	}
	for i := range nets {
		var g *nn.GRU[float32]
		var h *nn.MLP[float32]
		switch tm := t.team.(type) {
		case *ctde:
			g, h = tm.q.Agent(i)
		case *independent:
			switch a := tm.ls[i].(type) {
			case *rl.RecurrentSAC:
				g, h = a.Actor()
			case *rl.SAC:
				h = a.Actor()
			}
		}
		if err := p.SetWeights(i, g, h); err != nil {
			return nil, fmt.Errorf("lbenv: %w", err)
		}
	}
	return p, nil
}
