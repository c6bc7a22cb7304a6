package rl

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/nn"
)

// Twin Delayed DDPG: Fujimoto, van Hoof, Meger (2018), "Addressing Function
// Approximation Error in Actor-Critic Methods", ICML (equation and
// algorithm-line references below are to it): clipped double-Q learning
// (eq. 10), target policy smoothing (eq. 14-15) and delayed policy and target
// updates (Algorithm 1). With Critics = 1, PolicyDelay = 1 and no target noise
// the same code is DDPG (see ddpg.go). Defaults are the RL Baselines3 Zoo
// hyperparameters for Pendulum-v1 over Stable-Baselines3's TD3 defaults.

// TD3Config holds TD3's (and DDPG's) hyperparameters.
type TD3Config struct {
	Hidden         []int   // hidden widths of actor and critics (zoo: 400, 300)
	LR             float64 // Adam step size of actor and critics (1e-3)
	BufferSize     int     // replay capacity (zoo: 200000)
	BatchSize      int     // minibatch size (SB3: 256)
	Gamma          float64 // discount γ (zoo: 0.98)
	Tau            float64 // Polyak coefficient τ (0.005)
	LearningStarts int     // uniformly random steps before training (zoo: 10000)
	TrainFreq      int     // steps between training rounds; 0 = at episode ends (zoo: episode)
	GradientSteps  int     // updates per round; -1 = as many as steps collected (zoo: -1)
	ActionNoise    float64 // std of the Gaussian exploration noise, in [-1, 1] action units (0.1)
	PolicyDelay    int     // critic updates per actor and target update, d (2)
	TargetNoise    float64 // std σ̃ of the target policy smoothing noise (0.2)
	TargetNoiseCap float64 // clip c of the smoothing noise (0.5)
	Critics        int     // 2 for clipped double Q, 1 for DDPG
}

// DefaultTD3Config returns the RL Baselines3 Zoo TD3 hyperparameters for
// Pendulum-v1: γ 0.98, buffer 200000, 10000 random steps, Gaussian noise 0.1,
// one training round per episode with as many updates as steps, learning
// rate 1e-3, networks 400-300; SB3 defaults for the rest (batch 256,
// τ 0.005, policy delay 2, target noise 0.2 clipped at 0.5).
func DefaultTD3Config() TD3Config {
	return TD3Config{
		Hidden: []int{400, 300}, LR: 1e-3, BufferSize: 200_000, BatchSize: 256,
		Gamma: 0.98, Tau: 0.005, LearningStarts: 10_000, TrainFreq: 0, GradientSteps: -1,
		ActionNoise: 0.1, PolicyDelay: 2, TargetNoise: 0.2, TargetNoiseCap: 0.5, Critics: 2,
	}
}

// Validate reports the first invalid field.
func (c TD3Config) Validate() error {
	switch {
	case len(c.Hidden) == 0:
		return errors.New("hidden: need at least one hidden layer")
	case c.LR <= 0:
		return fmt.Errorf("lr: must be > 0, got %v", c.LR)
	case c.BufferSize < 1 || c.BatchSize < 1:
		return fmt.Errorf("buffer_size, batch_size: must be >= 1, got %d, %d", c.BufferSize, c.BatchSize)
	case c.Gamma < 0 || c.Gamma > 1:
		return fmt.Errorf("gamma: must be in [0, 1], got %v", c.Gamma)
	case c.Tau <= 0 || c.Tau > 1:
		return fmt.Errorf("tau: must be in (0, 1], got %v", c.Tau)
	case c.PolicyDelay < 1:
		return fmt.Errorf("policy_delay: must be >= 1, got %d", c.PolicyDelay)
	case c.Critics != 1 && c.Critics != 2:
		return fmt.Errorf("critics: must be 1 or 2, got %d", c.Critics)
	case c.ActionNoise < 0 || c.TargetNoise < 0 || c.TargetNoiseCap < 0:
		return errors.New("action_noise, target_noise, target_noise_cap: must be >= 0")
	case c.TrainFreq < 0 || c.GradientSteps < -1:
		return fmt.Errorf("train_freq, gradient_steps: got %d, %d", c.TrainFreq, c.GradientSteps)
	}
	return nil
}

// TD3 is a TD3 (or DDPG) agent for box action spaces.
type TD3 struct {
	Config TD3Config
	spec   Spec
	scale  actionScale
	rng    *rand.Rand
	obsDim int
	actDim int

	actor, actorTarget *nn.MLP[float32]   // μ_φ, μ_φ' : s ↦ tanh(...) in [-1, 1]
	q, qTarget         []*nn.MLP[float32] // Q_θi, Q_θ'i
	actorOpt, qOpt     *nn.Adam[float32]
	targets, sources   []*nn.Node[float32] // φ', θ'i and φ, θi, paired
	replay             *Replay
	batch              Batch
	sched              schedule
	tpT, tpQ, tpA      nn.Tape[float32]
	aNext, y           []float32

	pred       *nn.MLPPredictor[float32]
	obs32, out []float32
	act, unit  []float64

	// Updates counts critic updates done so far.
	Updates int
}

// NewTD3 returns a TD3 agent (or DDPG with the DDPG settings) for spec.
func NewTD3(spec Spec, cfg TD3Config, rng *rand.Rand) (*TD3, error) {
	return newTD3(spec, cfg, nil, nil, rng)
}

// NewTD3On returns a TD3 agent that trains the given actor and critics in
// place, their targets starting as copies of them: for example a trained
// teacher that explores and learns again after deployment. They must have
// the shapes NewTD3 would give them (cfg.Hidden, cfg.Critics of them).
func NewTD3On(spec Spec, cfg TD3Config, actor *nn.MLP[float32], critics []*nn.MLP[float32], rng *rand.Rand) (*TD3, error) {
	if actor == nil || len(critics) != cfg.Critics {
		return nil, fmt.Errorf("new td3: an actor and %d critics needed, got %d critics", cfg.Critics, len(critics))
	}
	return newTD3(spec, cfg, actor, critics, rng)
}

func newTD3(spec Spec, cfg TD3Config, actor *nn.MLP[float32], critics []*nn.MLP[float32], rng *rand.Rand) (*TD3, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new td3: %w", err)
	}
	scale, err := newActionScale(spec.Action)
	if err != nil {
		return nil, fmt.Errorf("new td3: %w", err)
	}
	o, a := spec.Observation.Dim(), spec.Action.Dim()
	t := &TD3{Config: cfg, spec: spec, scale: scale, rng: rng, obsDim: o, actDim: a}
	t.actor = newMLP(rng, "actor", o, cfg.Hidden, a, nn.ReLU, nn.Tanh)
	if actor != nil {
		if actor.Arch() != t.actor.Arch() {
			return nil, fmt.Errorf("new td3: actor %s, want %s", actor.Arch(), t.actor.Arch())
		}
		t.actor = actor
	}
	t.actorTarget = newMLP(rng, "actor_target", o, cfg.Hidden, a, nn.ReLU, nn.Tanh)
	nn.HardCopy(t.actorTarget.Params(), t.actor.Params())
	var qParams []*nn.Node[float32]
	for i := 0; i < cfg.Critics; i++ {
		q := newMLP(rng, fmt.Sprintf("q%d", i+1), o+a, cfg.Hidden, 1, nn.ReLU, nn.Identity)
		if critics != nil {
			if critics[i].Arch() != q.Arch() {
				return nil, fmt.Errorf("new td3: critic %d %s, want %s", i+1, critics[i].Arch(), q.Arch())
			}
			q = critics[i]
		}
		qt := newMLP(rng, fmt.Sprintf("q%d_target", i+1), o+a, cfg.Hidden, 1, nn.ReLU, nn.Identity)
		nn.HardCopy(qt.Params(), q.Params())
		t.q, t.qTarget = append(t.q, q), append(t.qTarget, qt)
		qParams = append(qParams, q.Params()...)
	}
	adam := nn.DefaultAdam()
	adam.LR = cfg.LR
	t.actorOpt = nn.NewAdam(t.actor.Params(), adam)
	t.targets, t.sources = t.actorTarget.Params(), t.actor.Params()
	for i := range t.q {
		t.targets = append(t.targets, t.qTarget[i].Params()...)
		t.sources = append(t.sources, t.q[i].Params()...)
	}
	t.qOpt = nn.NewAdam(qParams, adam)
	t.replay = NewReplay(cfg.BufferSize, o, a)
	t.sched = schedule{learningStarts: cfg.LearningStarts, trainFreq: cfg.TrainFreq, gradientSteps: cfg.GradientSteps}
	t.aNext = make([]float32, cfg.BatchSize*a)
	t.y = make([]float32, cfg.BatchSize)
	t.pred = t.actor.NewPredictor()
	t.obs32, t.out = make([]float32, o), make([]float32, a)
	t.act, t.unit = make([]float64, a), make([]float64, a)
	return t, nil
}

// Act returns μ(s) scaled to the action bounds; with deterministic false it
// adds the Gaussian exploration noise N(0, ActionNoise²) in unit space and
// clips to [-1, 1] first. It allocates nothing.
func (t *TD3) Act(obs []float64, deterministic bool) []float64 {
	for i, v := range obs {
		t.obs32[i] = float32(v)
	}
	t.pred.Predict(t.out, t.obs32)
	if !deterministic && t.Config.ActionNoise > 0 {
		for j := range t.out {
			t.out[j] = float32(math.Min(math.Max(float64(t.out[j])+t.Config.ActionNoise*t.rng.NormFloat64(), -1), 1))
		}
	}
	t.scale.toEnv(t.act, t.out)
	return t.act
}

// Explore returns uniformly random actions before LearningStarts steps and
// noisy policy actions afterwards.
func (t *TD3) Explore(obs []float64) []float64 {
	if t.sched.steps < t.Config.LearningStarts {
		t.spec.Action.Sample(t.rng, t.act)
		return t.act
	}
	return t.Act(obs, false)
}

// Observe stores the transition and runs the scheduled updates.
func (t *TD3) Observe(obs, act []float64, reward float64, next []float64, terminated, truncated bool) {
	t.scale.toUnit(t.unit, act)
	t.replay.Add(obs, t.unit, reward, next, terminated)
	for n := t.sched.observe(terminated || truncated); n > 0; n-- {
		t.Update()
	}
}

// Update runs one critic update and, every PolicyDelay updates, one actor
// update and the target updates (Algorithm 1).
func (t *TD3) Update() {
	cfg := t.Config
	B, o, a := cfg.BatchSize, t.obsDim, t.actDim
	t.replay.Sample(&t.batch, t.rng, B)
	b := &t.batch

	// Target policy smoothing: ã = clip(μ_φ'(s') + clip(ε, −c, c), −1, 1), ε ~ N(0, σ̃) (eq. 15).
	t.tpT.Reset()
	tpT := &t.tpT
	nextObs := input(tpT, B, o, b.NextObs)
	muN := t.actorTarget.Forward(tpT, nextObs)
	for i, v := range muN.Value.Data {
		eps := 0.0
		if cfg.TargetNoise > 0 {
			eps = math.Min(math.Max(cfg.TargetNoise*t.rng.NormFloat64(), -cfg.TargetNoiseCap), cfg.TargetNoiseCap)
		}
		t.aNext[i] = float32(math.Min(math.Max(float64(v)+eps, -1), 1))
	}
	saNext := tpT.Concat(nextObs, input(tpT, B, a, t.aNext))
	// Clipped double Q: y = r + γ (1 − d) min_i Q_θ'i(s', ã) (eq. 10).
	for i := range t.y {
		t.y[i] = float32(math.Inf(1))
	}
	for _, qt := range t.qTarget {
		qn := qt.Forward(tpT, saNext)
		for i, v := range qn.Value.Data {
			t.y[i] = min(t.y[i], v)
		}
	}
	for i := range t.y {
		t.y[i] = b.Reward[i] + float32(cfg.Gamma)*(1-b.Done[i])*t.y[i]
	}

	// Critics: minimise Σ_i E[(Q_θi(s, a) − y)²].
	t.tpQ.Reset()
	tpQ := &t.tpQ
	sa := tpQ.Concat(input(tpQ, B, o, b.Obs), input(tpQ, B, a, b.Act))
	y := input(tpQ, B, 1, t.y)
	var lossQ *nn.Node[float32]
	for _, q := range t.q {
		l := tpQ.MSE(q.Forward(tpQ, sa), y)
		if lossQ == nil {
			lossQ = l
		} else {
			lossQ = tpQ.Add(lossQ, l)
		}
	}
	t.qOpt.ZeroGrad()
	tpQ.Backward(lossQ)
	t.qOpt.Step()
	t.Updates++

	if t.Updates%cfg.PolicyDelay != 0 {
		return
	}
	// Deterministic policy gradient: maximise E[Q_θ1(s, μ_φ(s))] (eq. 6 of Lillicrap et al. / Alg. 1).
	t.tpA.Reset()
	tpA := &t.tpA
	obs := input(tpA, B, o, b.Obs)
	lossPi := tpA.Scale(tpA.Mean(t.q[0].Forward(tpA, tpA.Concat(obs, t.actor.Forward(tpA, obs)))), -1)
	t.actorOpt.ZeroGrad()
	tpA.Backward(lossPi)
	t.actorOpt.Step()
	// Targets: θ' ← τ θ + (1 − τ) θ', φ' ← τ φ + (1 − τ) φ'.
	nn.SoftUpdate(t.targets, t.sources, float32(cfg.Tau))
}

// Replay returns the agent's replay buffer, for example to pre-fill it with
// logged transitions. Its actions are in [-1, 1] units (the action space
// mapped affinely), not environment units.
func (t *TD3) Replay() *Replay { return t.replay }

// Actor returns the deterministic policy network μ_φ: s ↦ [-1, 1]^|A|, e.g.
// to save it with nn.SaveModule.
func (t *TD3) Actor() *nn.MLP[float32] { return t.actor }

// Critics returns the critics Q_θi: (s, a) ↦ value, a in [-1, 1] units.
func (t *TD3) Critics() []*nn.MLP[float32] { return t.q }
