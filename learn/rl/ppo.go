package rl

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/nn"
)

// Proximal Policy Optimization with the clipped surrogate objective:
// Schulman, Wolski, Dhariwal, Radford, Klimov (2017), "Proximal Policy
// Optimization Algorithms", arXiv:1707.06347 (equations below refer to it),
// with generalised advantage estimation (Rollout.ComputeGAE), a value loss,
// an entropy bonus and minibatch epochs, for discrete (categorical policy)
// and box (diagonal Gaussian with a state-independent log σ) action spaces.
// Defaults are the RL Baselines3 Zoo hyperparameters for CartPole-v1 over
// Stable-Baselines3's PPO defaults.

// PPOConfig holds PPO's hyperparameters.
type PPOConfig struct {
	Hidden      []int         // hidden widths of the separate policy and value networks (64, 64)
	Activation  nn.Activation // hidden activation (tanh)
	NumEnvs     int           // parallel environments (zoo CartPole-v1: 8)
	NSteps      int           // steps per environment per rollout (zoo: 32)
	BatchSize   int           // minibatch size (zoo: 256)
	NEpochs     int           // passes over each rollout (zoo: 20)
	Gamma       float64       // discount γ (zoo: 0.98)
	GAELambda   float64       // GAE λ (zoo: 0.8)
	LR          float64       // initial Adam step size (zoo: 1e-3)
	LinearLR    bool          // decay LR linearly to 0 over training (zoo: lin_0.001)
	ClipRange   float64       // initial ε of the clipped objective (zoo: 0.2)
	LinearClip  bool          // decay ε linearly to 0 (zoo: lin_0.2)
	EntCoef     float64       // entropy bonus coefficient c₂ (0)
	VFCoef      float64       // value loss coefficient c₁ (0.5)
	MaxGradNorm float64       // global gradient norm clip (0.5)
	NormAdv     bool          // standardise advantages per minibatch (true)
	LogStdInit  float64       // initial log σ of a Gaussian policy (0)
}

// DefaultPPOConfig returns the RL Baselines3 Zoo hyperparameters for CartPole-v1.
func DefaultPPOConfig() PPOConfig {
	return PPOConfig{
		Hidden: []int{64, 64}, Activation: nn.Tanh, NumEnvs: 8, NSteps: 32, BatchSize: 256,
		NEpochs: 20, Gamma: 0.98, GAELambda: 0.8, LR: 1e-3, LinearLR: true, ClipRange: 0.2,
		LinearClip: true, EntCoef: 0, VFCoef: 0.5, MaxGradNorm: 0.5, NormAdv: true,
	}
}

// Validate reports the first invalid field.
func (c PPOConfig) Validate() error {
	switch {
	case len(c.Hidden) == 0:
		return errors.New("hidden: need at least one hidden layer")
	case c.NumEnvs < 1 || c.NSteps < 1 || c.BatchSize < 1 || c.NEpochs < 1:
		return fmt.Errorf("num_envs, n_steps, batch_size, n_epochs: must be >= 1, got %d, %d, %d, %d", c.NumEnvs, c.NSteps, c.BatchSize, c.NEpochs)
	case c.Gamma < 0 || c.Gamma > 1 || c.GAELambda < 0 || c.GAELambda > 1:
		return fmt.Errorf("gamma, gae_lambda: must be in [0, 1], got %v, %v", c.Gamma, c.GAELambda)
	case c.LR <= 0 || c.ClipRange <= 0:
		return fmt.Errorf("lr, clip_range: must be > 0, got %v, %v", c.LR, c.ClipRange)
	case c.MaxGradNorm <= 0:
		return fmt.Errorf("max_grad_norm: must be > 0, got %v", c.MaxGradNorm)
	}
	return nil
}

// PPO is a PPO agent.
type PPO struct {
	Config   PPOConfig
	spec     Spec
	rng      *rand.Rand
	discrete bool
	obsDim   int
	actDim   int // action values stored per step (1 for discrete)
	outDim   int // policy outputs: logits or means

	pi, vf  *nn.MLP[float32]
	logStd  *nn.Node[float32] // 1×A, Gaussian policies only
	opt     *nn.Adam[float32]
	all     []*nn.Node[float32]
	rollout *Rollout
	mb      RolloutBatch
	tp      nn.Tape[float32]
	actIdx  []int

	piPred, vPred *nn.MLPPredictor[float32]
	obs32, out    []float32
	v1            []float32
	act           []float64
	envAct        []float64

	// Updates counts gradient steps; Steps counts environment steps.
	Updates, Steps int

	// Regularize, when set, adds a term to every minibatch's loss: it is
	// given the policy network and its outputs on the minibatch (e.g. to
	// keep an offline policy near logged actions).
	Regularize func(tp *nn.Tape[float32], pi *nn.MLP[float32], out *nn.Node[float32]) *nn.Node[float32]
}

// NewPPO returns a PPO agent for spec (discrete or box actions).
func NewPPO(spec Spec, cfg PPOConfig, rng *rand.Rand) (*PPO, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new ppo: %w", err)
	}
	p := &PPO{Config: cfg, spec: spec, rng: rng, discrete: spec.Action.IsDiscrete(), obsDim: spec.Observation.Dim()}
	if p.discrete {
		p.actDim, p.outDim = 1, spec.Action.N
	} else {
		if _, err := newActionScale(spec.Action); err != nil {
			return nil, fmt.Errorf("new ppo: %w", err)
		}
		p.actDim, p.outDim = spec.Action.Dim(), spec.Action.Dim()
	}
	p.pi = newMLP(rng, "pi", p.obsDim, cfg.Hidden, p.outDim, cfg.Activation, nn.Identity)
	p.vf = newMLP(rng, "vf", p.obsDim, cfg.Hidden, 1, cfg.Activation, nn.Identity)
	// Small initial policy output (SB3 uses orthogonal init with gain 0.01
	// there), so the initial policy is near uniform / centred.
	last := p.pi.Layers[len(p.pi.Layers)-1]
	for i := range last.W.Value.Data {
		last.W.Value.Data[i] *= 0.01
	}
	clear(last.B.Value.Data)
	p.all = params(p.pi, p.vf)
	if !p.discrete {
		p.logStd = nn.NewParam[float32]("log_std", 1, p.actDim)
		for i := range p.logStd.Value.Data {
			p.logStd.Value.Data[i] = float32(cfg.LogStdInit)
		}
		p.all = append(p.all, p.logStd)
	}
	adam := nn.DefaultAdam()
	adam.LR, adam.Eps = cfg.LR, 1e-5 // SB3's PPO uses eps 1e-5
	p.opt = nn.NewAdam(p.all, adam)
	p.rollout = NewRollout(cfg.NSteps, cfg.NumEnvs, p.obsDim, p.actDim)
	p.piPred, p.vPred = p.pi.NewPredictor(), p.vf.NewPredictor()
	p.obs32, p.out, p.v1 = make([]float32, p.obsDim), make([]float32, p.outDim), make([]float32, 1)
	p.act, p.envAct = make([]float64, p.actDim), make([]float64, p.actDim)
	return p, nil
}

// policy runs the policy network on obs into p.out.
func (p *PPO) policy(obs []float64) {
	for i, v := range obs {
		p.obs32[i] = float32(v)
	}
	p.piPred.Predict(p.out, p.obs32)
}

// Value returns V(obs).
func (p *PPO) Value(obs []float64) float64 {
	for i, v := range obs {
		p.obs32[i] = float32(v)
	}
	return float64(p.vPred.Predict(p.v1, p.obs32)[0])
}

// Act returns the action for obs: the most likely action (argmax logits or
// the Gaussian mean, clipped to the bounds) when deterministic, a sample
// otherwise. It allocates nothing.
func (p *PPO) Act(obs []float64, deterministic bool) []float64 {
	p.sample(obs, deterministic)
	return p.envAct
}

// sample draws an action into p.act (raw) and p.envAct (clipped for the
// environment) and returns its log-probability.
func (p *PPO) sample(obs []float64, deterministic bool) float64 {
	p.policy(obs)
	if p.discrete {
		lse := logSumExp32(p.out)
		k := 0
		if deterministic {
			for j, v := range p.out {
				if v > p.out[k] {
					k = j
				}
			}
		} else {
			u := p.rng.Float64()
			k = len(p.out) - 1
			for j, v := range p.out {
				u -= math.Exp(float64(v) - lse)
				if u < 0 {
					k = j
					break
				}
			}
		}
		p.act[0], p.envAct[0] = float64(k), float64(k)
		return float64(p.out[k]) - lse
	}
	var lp float64
	for j, m := range p.out {
		ls := float64(p.logStd.Value.Data[j])
		x := float64(m)
		if !deterministic {
			x += math.Exp(ls) * p.rng.NormFloat64()
		}
		z := (x - float64(m)) * math.Exp(-ls)
		lp += -0.5*z*z - ls - 0.5*math.Log(2*math.Pi)
		p.act[j] = x
	}
	p.spec.Action.Clip(p.envAct, p.act)
	return lp
}

func logSumExp32(x []float32) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, float64(v))
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - m)
	}
	return m + math.Log(s)
}

// Learn trains for at least steps more environment steps on envs (NumEnvs
// of them, reset from rng) in rollouts of NSteps × NumEnvs, with the linear
// schedules running over this call, and returns the undiscounted returns
// of the episodes finished, in order.
func (p *PPO) Learn(envs []Env, steps int, rng *rand.Rand) ([]float64, error) {
	cfg := p.Config
	if len(envs) != cfg.NumEnvs {
		return nil, fmt.Errorf("ppo learn: %d environments, config wants %d", len(envs), cfg.NumEnvs)
	}
	obs := make([][]float64, len(envs))
	rets := make([]float64, len(envs))
	for e, env := range envs {
		obs[e] = clone(env.Reset(rng))
	}
	var episodes []float64
	last := make([]float64, len(envs))
	start := p.Steps
	for p.Steps-start < steps {
		// Linear schedules on the remaining progress of this call, as SB3's lin_<x>.
		remaining := 1 - float64(p.Steps-start)/float64(steps)
		clip := cfg.ClipRange
		if cfg.LinearClip {
			clip *= remaining
		}
		p.opt.Config.LR = cfg.LR
		if cfg.LinearLR {
			p.opt.Config.LR = cfg.LR * remaining
		}
		for t := 0; t < cfg.NSteps; t++ {
			for e, env := range envs {
				v := p.Value(obs[e])
				lp := p.sample(obs[e], false)
				next, r, term, trunc := env.Step(p.envAct)
				rets[e] += r
				boot := 0.0
				if trunc && !term {
					boot = p.Value(next)
				}
				p.rollout.Set(t, e, obs[e], p.act, lp, v, r, term, trunc, boot)
				if term || trunc {
					episodes = append(episodes, rets[e])
					rets[e] = 0
					copy(obs[e], env.Reset(rng))
				} else {
					copy(obs[e], next)
				}
			}
			p.Steps += len(envs)
		}
		for e := range envs {
			last[e] = p.Value(obs[e])
		}
		p.rollout.ComputeGAE(cfg.Gamma, cfg.GAELambda, last)
		p.update(clip)
	}
	return episodes, nil
}

// update runs NEpochs passes of minibatch gradient steps on the rollout.
func (p *PPO) update(clip float64) {
	cfg := p.Config
	n := p.rollout.Len()
	for epoch := 0; epoch < cfg.NEpochs; epoch++ {
		perm := p.rollout.Shuffle(p.rng)
		for start := 0; start < n; start += cfg.BatchSize {
			p.rollout.Gather(&p.mb, perm[start:min(start+cfg.BatchSize, n)], cfg.NormAdv)
			p.step(clip)
		}
	}
}

// step is one gradient step on the minibatch p.mb of the loss
// L = −L^CLIP + c₁ L^VF − c₂ S (eq. 9).
func (p *PPO) step(clip float64) {
	cfg, mb := p.Config, &p.mb
	B := mb.N
	p.tp.Reset()
	tp := &p.tp
	obs := input(tp, B, p.obsDim, mb.Obs)
	out := p.pi.Forward(tp, obs)
	var logp, entropy *nn.Node[float32]
	if p.discrete {
		p.actIdx = p.actIdx[:0]
		for _, a := range mb.Act {
			p.actIdx = append(p.actIdx, int(a))
		}
		logAll := tp.LogSoftmax(out)
		logp = tp.Gather(logAll, p.actIdx)
		// S = −Σ_a π(a|s) log π(a|s).
		entropy = tp.Scale(tp.RowSum(tp.Mul(tp.Exp(logAll), logAll)), -1)
	} else {
		logStd := tp.Add(tp.Input(B, p.actDim), p.logStd) // broadcast 1×A to B×A
		logp = tp.GaussianLogProb(input(tp, B, p.actDim, mb.Act), out, logStd)
		// S = Σ_j (log σ_j + ½ log(2πe)).
		entropy = tp.AddScalar(tp.RowSum(logStd), float32(float64(p.actDim)*0.5*(1+math.Log(2*math.Pi))))
	}
	// r_t(θ) = π_θ(a|s) / π_θold(a|s) (eq. 6).
	ratio := tp.Exp(tp.Sub(logp, input(tp, B, 1, mb.LogProb)))
	adv := input(tp, B, 1, mb.Adv)
	// L^CLIP = E[min(r Â, clip(r, 1 − ε, 1 + ε) Â)] (eq. 7).
	surr := tp.Min(tp.Mul(ratio, adv), tp.Mul(tp.Clip(ratio, float32(1-clip), float32(1+clip)), adv))
	lossPi := tp.Scale(tp.Mean(surr), -1)
	// L^VF = E[(V_θ(s) − R)²].
	lossV := tp.MSE(p.vf.Forward(tp, obs), input(tp, B, 1, mb.Ret))
	loss := tp.Add(lossPi, tp.Scale(lossV, float32(cfg.VFCoef)))
	if cfg.EntCoef != 0 {
		loss = tp.Sub(loss, tp.Scale(tp.Mean(entropy), float32(cfg.EntCoef)))
	}
	if p.Regularize != nil {
		loss = tp.Add(loss, p.Regularize(tp, p.pi, out))
	}
	p.opt.ZeroGrad()
	tp.Backward(loss)
	nn.ClipGradNorm(p.all, cfg.MaxGradNorm)
	p.opt.Step()
	p.Updates++
}

// Policy returns the policy network (logits, or Gaussian means in
// environment units), e.g. to save it with nn.SaveModule.
func (p *PPO) Policy() *nn.MLP[float32] { return p.pi }
