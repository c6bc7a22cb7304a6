package rl

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/nn"
)

// Soft Actor-Critic for discrete actions: Christodoulou (2019), "Soft
// Actor-Critic for Discrete Action Settings", arXiv:1910.07207 (equation
// numbers below refer to it). The critics output Q(s, ·) for every action
// and the policy the full distribution π(·|s), so the expectations over
// actions in the soft value, the policy loss and the temperature loss are
// computed exactly instead of by sampling.

// DiscreteSACConfig holds discrete SAC's hyperparameters.
type DiscreteSACConfig struct {
	Hidden         []int   // hidden widths of actor and critics (64, 64)
	LR             float64 // Adam step size (3e-4, the paper's Table 1)
	BufferSize     int     // replay capacity (1e6)
	BatchSize      int     // minibatch size (64, Table 1)
	Gamma          float64 // discount γ (0.99)
	Tau            float64 // Polyak coefficient of the target critics (0.005)
	LearningStarts int     // uniformly random steps before training (1000)
	TrainFreq      int     // steps between training rounds (1)
	GradientSteps  int     // updates per round (1)
	InitAlpha      float64 // initial temperature (1)
	// TargetEntropyScale sets H̄ = scale · log|A| (0.98, the paper's 0.98 · −log(1/|A|)).
	TargetEntropyScale float64
}

// DefaultDiscreteSACConfig returns the paper's hyperparameters (Table 1)
// with small networks and Polyak target updates.
func DefaultDiscreteSACConfig() DiscreteSACConfig {
	return DiscreteSACConfig{
		Hidden: []int{64, 64}, LR: 3e-4, BufferSize: 1_000_000, BatchSize: 64, Gamma: 0.99,
		Tau: 0.005, LearningStarts: 1000, TrainFreq: 1, GradientSteps: 1, InitAlpha: 1,
		TargetEntropyScale: 0.98,
	}
}

// Validate reports the first invalid field.
func (c DiscreteSACConfig) Validate() error {
	switch {
	case len(c.Hidden) == 0:
		return errors.New("hidden: need at least one hidden layer")
	case c.LR <= 0 || c.InitAlpha <= 0:
		return fmt.Errorf("lr, init_alpha: must be > 0, got %v, %v", c.LR, c.InitAlpha)
	case c.BufferSize < 1 || c.BatchSize < 1:
		return fmt.Errorf("buffer_size, batch_size: must be >= 1, got %d, %d", c.BufferSize, c.BatchSize)
	case c.Gamma < 0 || c.Gamma > 1 || c.Tau <= 0 || c.Tau > 1:
		return fmt.Errorf("gamma, tau: got %v, %v", c.Gamma, c.Tau)
	case c.TrainFreq < 0 || c.GradientSteps < -1:
		return fmt.Errorf("train_freq, gradient_steps: got %d, %d", c.TrainFreq, c.GradientSteps)
	}
	return nil
}

// DiscreteSAC is a discrete-action SAC agent.
type DiscreteSAC struct {
	Config DiscreteSACConfig
	spec   Spec
	rng    *rand.Rand
	obsDim int
	nAct   int

	actor              *nn.MLP[float32] // s ↦ logits of π_φ(·|s)
	q1, q2             *nn.MLP[float32] // s ↦ Q_θi(s, ·)
	q1Target, q2Target *nn.MLP[float32]
	targets, sources   []*nn.Node[float32]
	logAlpha           *nn.Node[float32]
	actorOpt, qOpt     *nn.Adam[float32]
	alphaOpt           *nn.Adam[float32]
	targetEntropy      float64
	replay             *Replay
	batch              Batch
	sched              schedule
	tpT, tpQ, tpA      nn.Tape[float32]
	y, minQ            []float32
	actIdx             []int

	pred       *nn.MLPPredictor[float32]
	obs32, out []float32
	act        []float64

	// Updates counts gradient updates.
	Updates int
}

// NewDiscreteSAC returns a discrete SAC agent for spec (discrete actions).
func NewDiscreteSAC(spec Spec, cfg DiscreteSACConfig, rng *rand.Rand) (*DiscreteSAC, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new discrete sac: %w", err)
	}
	if !spec.Action.IsDiscrete() {
		return nil, fmt.Errorf("new discrete sac: action space %v is not discrete", spec.Action)
	}
	o, n := spec.Observation.Dim(), spec.Action.N
	s := &DiscreteSAC{Config: cfg, spec: spec, rng: rng, obsDim: o, nAct: n}
	s.actor = newMLP(rng, "actor", o, cfg.Hidden, n, nn.ReLU, nn.Identity)
	s.q1 = newMLP(rng, "q1", o, cfg.Hidden, n, nn.ReLU, nn.Identity)
	s.q2 = newMLP(rng, "q2", o, cfg.Hidden, n, nn.ReLU, nn.Identity)
	s.q1Target = newMLP(rng, "q1_target", o, cfg.Hidden, n, nn.ReLU, nn.Identity)
	s.q2Target = newMLP(rng, "q2_target", o, cfg.Hidden, n, nn.ReLU, nn.Identity)
	s.targets, s.sources = params(s.q1Target, s.q2Target), params(s.q1, s.q2)
	nn.HardCopy(s.targets, s.sources)
	s.logAlpha = nn.NewParam[float32]("log_alpha", 1, 1)
	s.logAlpha.Value.Data[0] = float32(math.Log(cfg.InitAlpha))
	adam := nn.DefaultAdam()
	adam.LR = cfg.LR
	s.actorOpt = nn.NewAdam(s.actor.Params(), adam)
	s.qOpt = nn.NewAdam(params(s.q1, s.q2), adam)
	s.alphaOpt = nn.NewAdam([]*nn.Node[float32]{s.logAlpha}, adam)
	s.targetEntropy = cfg.TargetEntropyScale * math.Log(float64(n))
	s.replay = NewReplay(cfg.BufferSize, o, 1)
	s.sched = schedule{learningStarts: cfg.LearningStarts, trainFreq: cfg.TrainFreq, gradientSteps: cfg.GradientSteps}
	s.y, s.minQ = make([]float32, cfg.BatchSize), make([]float32, cfg.BatchSize*n)
	s.actIdx = make([]int, cfg.BatchSize)
	s.pred = s.actor.NewPredictor()
	s.obs32, s.out, s.act = make([]float32, o), make([]float32, n), make([]float64, 1)
	return s, nil
}

// Alpha returns the current temperature α.
func (s *DiscreteSAC) Alpha() float64 { return math.Exp(float64(s.logAlpha.Value.Data[0])) }

// Act returns argmax π(·|s) when deterministic, else a sample of π(·|s).
// It allocates nothing.
func (s *DiscreteSAC) Act(obs []float64, deterministic bool) []float64 {
	for i, v := range obs {
		s.obs32[i] = float32(v)
	}
	s.pred.Predict(s.out, s.obs32)
	k := 0
	if deterministic {
		for j, v := range s.out {
			if v > s.out[k] {
				k = j
			}
		}
	} else {
		lse := logSumExp32(s.out)
		u := s.rng.Float64()
		k = s.nAct - 1
		for j, v := range s.out {
			u -= math.Exp(float64(v) - lse)
			if u < 0 {
				k = j
				break
			}
		}
	}
	s.act[0] = float64(k)
	return s.act
}

// Explore returns uniform random actions before LearningStarts, then policy samples.
func (s *DiscreteSAC) Explore(obs []float64) []float64 {
	if s.sched.steps < s.Config.LearningStarts {
		s.spec.Action.Sample(s.rng, s.act)
		return s.act
	}
	return s.Act(obs, false)
}

// Observe stores the transition and runs the scheduled updates.
func (s *DiscreteSAC) Observe(obs, act []float64, reward float64, next []float64, terminated, truncated bool) {
	s.replay.Add(obs, act, reward, next, terminated)
	for n := s.sched.observe(terminated || truncated); n > 0; n-- {
		s.Update()
	}
}

// Update runs one gradient step of critics, actor and temperature.
func (s *DiscreteSAC) Update() {
	cfg := s.Config
	B, o, n := cfg.BatchSize, s.obsDim, s.nAct
	s.replay.Sample(&s.batch, s.rng, B)
	b := &s.batch
	alpha := float32(s.Alpha())

	// Soft state value V(s') = π(s')ᵀ [min_i Q_θ̄i(s') − α log π(s')] (eq. 10).
	s.tpT.Reset()
	tpT := &s.tpT
	nextObs := input(tpT, B, o, b.NextObs)
	logPiN := tpT.LogSoftmax(s.actor.Forward(tpT, nextObs))
	q1N, q2N := s.q1Target.Forward(tpT, nextObs), s.q2Target.Forward(tpT, nextObs)
	for i := 0; i < B; i++ {
		var v float32
		for j := 0; j < n; j++ {
			k := i*n + j
			lp := logPiN.Value.Data[k]
			v += float32(math.Exp(float64(lp))) * (min(q1N.Value.Data[k], q2N.Value.Data[k]) - alpha*lp)
		}
		s.y[i] = b.Reward[i] + float32(cfg.Gamma)*(1-b.Done[i])*v
	}

	// Critics: J_Q(θ) = E[½ (Q_θ(s, a) − y)²] with Q_θ(s, a) read off the action's output.
	for i := range s.actIdx {
		s.actIdx[i] = int(b.Act[i])
	}
	s.tpQ.Reset()
	tpQ := &s.tpQ
	obs := input(tpQ, B, o, b.Obs)
	y := input(tpQ, B, 1, s.y)
	lossQ := tpQ.Scale(tpQ.Add(
		tpQ.MSE(tpQ.Gather(s.q1.Forward(tpQ, obs), s.actIdx), y),
		tpQ.MSE(tpQ.Gather(s.q2.Forward(tpQ, obs), s.actIdx), y)), 0.5)
	s.qOpt.ZeroGrad()
	tpQ.Backward(lossQ)
	s.qOpt.Step()

	// Policy: J_π(φ) = E_s[π(s)ᵀ (α log π(s) − min_i Q_θi(s))] (eq. 12), Q held fixed.
	s.tpA.Reset()
	tpA := &s.tpA
	obsA := input(tpA, B, o, b.Obs)
	obsT := input(tpT, B, o, b.Obs) // critics evaluated on the forward-only tape
	q1, q2 := s.q1.Forward(tpT, obsT), s.q2.Forward(tpT, obsT)
	for k := range s.minQ {
		s.minQ[k] = min(q1.Value.Data[k], q2.Value.Data[k])
	}
	logPi := tpA.LogSoftmax(s.actor.Forward(tpA, obsA))
	pi := tpA.Exp(logPi)
	lossPi := tpA.Scale(tpA.Sum(tpA.Mul(pi, tpA.Sub(tpA.Scale(logPi, alpha), input(tpA, B, n, s.minQ)))), 1/float32(B))
	s.actorOpt.ZeroGrad()
	tpA.Backward(lossPi)
	s.actorOpt.Step()

	// Temperature: J(α) = π(s)ᵀ [−α (log π(s) + H̄)] (eq. 11); ∂/∂log α = E[H(π(s))] − H̄.
	var ent float64
	for k, lp := range logPi.Value.Data {
		ent -= float64(pi.Value.Data[k]) * float64(lp)
	}
	s.alphaOpt.ZeroGrad()
	s.logAlpha.Grad.Data[0] = float32(ent/float64(B) - s.targetEntropy)
	s.alphaOpt.Step()

	nn.SoftUpdate(s.targets, s.sources, float32(cfg.Tau))
	s.Updates++
}
