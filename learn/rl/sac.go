package rl

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/nn"
)

// Soft Actor-Critic with twin critics, target critics and automatic entropy
// tuning: Haarnoja, Zhou, Hartikainen, Tucker, Ha, Tan, Kumar, Zhu, Gupta,
// Abbeel, Levine (2018), "Soft Actor-Critic Algorithms and Applications",
// arXiv:1812.05905 (equation numbers below refer to it). Defaults follow
// Stable-Baselines3 and the RL Baselines3 Zoo entry for Pendulum-v1.

// SACConfig holds SAC's hyperparameters.
type SACConfig struct {
	Hidden         []int   // hidden layer widths of actor and critics (SB3: 256, 256)
	LR             float64 // Adam step size of actor, critics and temperature (zoo Pendulum-v1: 1e-3)
	BufferSize     int     // replay capacity, transitions (1e6)
	BatchSize      int     // minibatch size (256)
	Gamma          float64 // discount γ (0.99)
	Tau            float64 // Polyak coefficient τ of the target critics (0.005)
	LearningStarts int     // uniformly random steps before training starts (100)
	TrainFreq      int     // environment steps between training rounds; 0 = at episode ends (1)
	GradientSteps  int     // updates per round; -1 = as many as steps since the last round (1)
	// InitAlpha is the initial temperature α (1.0); FixedAlpha disables its tuning.
	InitAlpha  float64
	FixedAlpha bool
	// TargetEntropy is the entropy target H̄ of eq. 17; NaN means −|A| (the paper's choice).
	TargetEntropy float64
	LogStdMin     float64 // clamp of the policy's log standard deviation (−20)
	LogStdMax     float64 // (2)
}

// DefaultSACConfig returns the RL Baselines3 Zoo hyperparameters for
// Pendulum-v1 (learning rate 1e-3) over Stable-Baselines3's SAC defaults.
func DefaultSACConfig() SACConfig {
	return SACConfig{
		Hidden: []int{256, 256}, LR: 1e-3, BufferSize: 1_000_000, BatchSize: 256,
		Gamma: 0.99, Tau: 0.005, LearningStarts: 100, TrainFreq: 1, GradientSteps: 1,
		InitAlpha: 1, TargetEntropy: math.NaN(), LogStdMin: -20, LogStdMax: 2,
	}
}

// Validate reports the first invalid field.
func (c SACConfig) Validate() error {
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
	case c.InitAlpha <= 0:
		return fmt.Errorf("init_alpha: must be > 0, got %v", c.InitAlpha)
	case c.TrainFreq < 0 || c.GradientSteps < -1:
		return fmt.Errorf("train_freq, gradient_steps: got %d, %d", c.TrainFreq, c.GradientSteps)
	}
	return nil
}

// SAC is a Soft Actor-Critic agent for box action spaces.
type SAC struct {
	Config SACConfig
	spec   Spec
	scale  actionScale
	rng    *rand.Rand
	obsDim int
	actDim int

	actor                  *nn.MLP[float32]    // π_φ: s ↦ (μ, log σ)
	q1, q2                 *nn.MLP[float32]    // Q_θ1, Q_θ2: (s, a) ↦ Q
	q1Target, q2Target     *nn.MLP[float32]    // Q_θ̄1, Q_θ̄2
	targets, sources       []*nn.Node[float32] // θ̄ and θ of both critics, paired
	logAlpha               *nn.Node[float32]
	actorOpt, criticOpt    *nn.Adam[float32]
	alphaOpt               *nn.Adam[float32]
	targetEntropy          float64
	replay                 *Replay
	batch                  Batch
	sched                  schedule
	tpTarget, tpQ, tpActor nn.Tape[float32]
	eps, epsNext           []float32
	y                      []float32

	pred        *nn.MLPPredictor[float32]
	obs32, out  []float32
	unit        []float32
	act, unitIn []float64

	// Updates counts gradient updates done so far.
	Updates int
}

// NewSAC returns a SAC agent for spec (box actions) with networks
// initialised from rng, which also drives exploration and sampling.
func NewSAC(spec Spec, cfg SACConfig, rng *rand.Rand) (*SAC, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new sac: %w", err)
	}
	scale, err := newActionScale(spec.Action)
	if err != nil {
		return nil, fmt.Errorf("new sac: %w", err)
	}
	o, a := spec.Observation.Dim(), spec.Action.Dim()
	s := &SAC{Config: cfg, spec: spec, scale: scale, rng: rng, obsDim: o, actDim: a}
	s.actor = newMLP(rng, "actor", o, cfg.Hidden, 2*a, nn.ReLU, nn.Identity)
	s.q1 = newMLP(rng, "q1", o+a, cfg.Hidden, 1, nn.ReLU, nn.Identity)
	s.q2 = newMLP(rng, "q2", o+a, cfg.Hidden, 1, nn.ReLU, nn.Identity)
	s.q1Target = newMLP(rng, "q1_target", o+a, cfg.Hidden, 1, nn.ReLU, nn.Identity)
	s.q2Target = newMLP(rng, "q2_target", o+a, cfg.Hidden, 1, nn.ReLU, nn.Identity)
	s.targets, s.sources = params(s.q1Target, s.q2Target), params(s.q1, s.q2)
	nn.HardCopy(s.targets, s.sources)
	s.logAlpha = nn.NewParam[float32]("log_alpha", 1, 1)
	s.logAlpha.Value.Data[0] = float32(math.Log(cfg.InitAlpha))
	adam := nn.DefaultAdam()
	adam.LR = cfg.LR
	s.actorOpt = nn.NewAdam(s.actor.Params(), adam)
	s.criticOpt = nn.NewAdam(params(s.q1, s.q2), adam)
	s.alphaOpt = nn.NewAdam([]*nn.Node[float32]{s.logAlpha}, adam)
	s.targetEntropy = cfg.TargetEntropy
	if math.IsNaN(s.targetEntropy) {
		s.targetEntropy = -float64(a) // H̄ = −dim(A)
	}
	s.replay = NewReplay(cfg.BufferSize, o, a)
	s.sched = schedule{learningStarts: cfg.LearningStarts, trainFreq: cfg.TrainFreq, gradientSteps: cfg.GradientSteps}
	s.eps = make([]float32, cfg.BatchSize*a)
	s.epsNext = make([]float32, cfg.BatchSize*a)
	s.y = make([]float32, cfg.BatchSize)
	s.pred = s.actor.NewPredictor()
	s.obs32, s.out, s.unit = make([]float32, o), make([]float32, 2*a), make([]float32, a)
	s.act, s.unitIn = make([]float64, a), make([]float64, a)
	return s, nil
}

// Alpha returns the current temperature α.
func (s *SAC) Alpha() float64 { return math.Exp(float64(s.logAlpha.Value.Data[0])) }

// Act returns the action for obs: tanh(μ(s)) when deterministic, otherwise a
// sample tanh(μ + σ ε), ε ~ N(0, I), scaled to the action bounds. It
// allocates nothing.
func (s *SAC) Act(obs []float64, deterministic bool) []float64 {
	for i, v := range obs {
		s.obs32[i] = float32(v)
	}
	s.pred.Predict(s.out, s.obs32)
	for j := 0; j < s.actDim; j++ {
		u := float64(s.out[j])
		if !deterministic {
			ls := math.Min(math.Max(float64(s.out[s.actDim+j]), s.Config.LogStdMin), s.Config.LogStdMax)
			u += math.Exp(ls) * s.rng.NormFloat64()
		}
		s.unit[j] = float32(math.Tanh(u))
	}
	s.scale.toEnv(s.act, s.unit)
	return s.act
}

// Explore returns a uniformly random action before LearningStarts steps and
// a policy sample afterwards.
func (s *SAC) Explore(obs []float64) []float64 {
	if s.sched.steps < s.Config.LearningStarts {
		s.spec.Action.Sample(s.rng, s.act)
		return s.act
	}
	return s.Act(obs, false)
}

// Observe stores the transition (done = terminated, so time-limit
// truncation bootstraps) and runs the updates the schedule asks for.
func (s *SAC) Observe(obs, act []float64, reward float64, next []float64, terminated, truncated bool) {
	s.scale.toUnit(s.unitIn, act)
	s.replay.Add(obs, s.unitIn, reward, next, terminated)
	for n := s.sched.observe(terminated || truncated); n > 0; n-- {
		s.Update()
	}
}

// Update runs one gradient step on a replayed minibatch: temperature
// (eq. 18), critics (eq. 5 with the twin-minimum target) and actor (eq. 7
// with the reparameterisation of eq. 11), then the Polyak target update.
func (s *SAC) Update() {
	cfg := s.Config
	B, o, a := cfg.BatchSize, s.obsDim, s.actDim
	s.replay.Sample(&s.batch, s.rng, B)
	b := &s.batch

	// Policy sample for the current states: ã ~ π_φ(·|s) (eq. 11).
	s.tpActor.Reset()
	tpA := &s.tpActor
	obsA := input(tpA, B, o, b.Obs)
	out := s.actor.Forward(tpA, obsA)
	mu := tpA.SliceCols(out, 0, a)
	logStd := tpA.Clip(tpA.SliceCols(out, a, 2*a), float32(cfg.LogStdMin), float32(cfg.LogStdMax))
	fillNormal(s.rng, s.eps)
	aPi, logPi := tpA.SquashedGaussian(mu, logStd, nn.TensorFrom(B, a, s.eps))

	// Temperature: J(α) = E[−α (log π(ã|s) + H̄)] (eq. 18), optimised on log α.
	if !cfg.FixedAlpha {
		var g float64
		for _, lp := range logPi.Value.Data {
			g -= float64(lp) + s.targetEntropy
		}
		s.alphaOpt.ZeroGrad()
		s.logAlpha.Grad.Data[0] = float32(g / float64(B))
		s.alphaOpt.Step()
	}
	alpha := float32(s.Alpha())

	// Soft Q target: y = r + γ (1 − d) (min_i Q_θ̄i(s', a') − α log π(a'|s')), a' ~ π(·|s').
	s.tpTarget.Reset()
	tpT := &s.tpTarget
	nextObs := input(tpT, B, o, b.NextObs)
	outN := s.actor.Forward(tpT, nextObs)
	muN := tpT.SliceCols(outN, 0, a)
	logStdN := tpT.Clip(tpT.SliceCols(outN, a, 2*a), float32(cfg.LogStdMin), float32(cfg.LogStdMax))
	fillNormal(s.rng, s.epsNext)
	aNext, logPiNext := tpT.SquashedGaussian(muN, logStdN, nn.TensorFrom(B, a, s.epsNext))
	saNext := tpT.Concat(nextObs, tpT.Const(aNext.Value))
	q1N := s.q1Target.Forward(tpT, saNext)
	q2N := s.q2Target.Forward(tpT, saNext)
	for i := 0; i < B; i++ {
		minQ := min(q1N.Value.Data[i], q2N.Value.Data[i])
		s.y[i] = b.Reward[i] + float32(cfg.Gamma)*(1-b.Done[i])*(minQ-alpha*logPiNext.Value.Data[i])
	}

	// Critics: J_Q(θ) = E[½ (Q_θ(s, a) − y)²] for both critics (eq. 5).
	s.tpQ.Reset()
	tpQ := &s.tpQ
	sa := tpQ.Concat(input(tpQ, B, o, b.Obs), input(tpQ, B, a, b.Act))
	y := input(tpQ, B, 1, s.y)
	lossQ := tpQ.Scale(tpQ.Add(tpQ.MSE(s.q1.Forward(tpQ, sa), y), tpQ.MSE(s.q2.Forward(tpQ, sa), y)), 0.5)
	s.criticOpt.ZeroGrad()
	tpQ.Backward(lossQ)
	s.criticOpt.Step()

	// Actor: J_π(φ) = E[α log π(ã|s) − min_i Q_θi(s, ã)] (eq. 7 with eq. 11).
	saPi := tpA.Concat(obsA, aPi)
	minQPi := tpA.Min(s.q1.Forward(tpA, saPi), s.q2.Forward(tpA, saPi))
	lossPi := tpA.Mean(tpA.Sub(tpA.Scale(logPi, alpha), minQPi))
	s.actorOpt.ZeroGrad()
	tpA.Backward(lossPi)
	s.actorOpt.Step()

	// Target critics: θ̄ ← τ θ + (1 − τ) θ̄.
	nn.SoftUpdate(s.targets, s.sources, float32(cfg.Tau))
	s.Updates++
}

// Replay returns the agent's replay buffer, for example to pre-fill it with
// logged transitions. Its actions are in [-1, 1] units (the action space
// mapped affinely), not environment units.
func (s *SAC) Replay() *Replay { return s.replay }

// Actor returns the policy network s ↦ (μ, log σ) (2|A| outputs, the
// squashed action is tanh(μ) in [-1, 1] units), e.g. to save it with
// nn.SaveModule.
func (s *SAC) Actor() *nn.MLP[float32] { return s.actor }
