package rl

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/shoal-project/shoal/learn/nn"
)

// MADDPG: Lowe et al. (2017), "Multi-Agent Actor-Critic for Mixed
// Cooperative-Competitive Environments", NeurIPS. Each agent has its own
// actor and its own centralised critic, trained with DDPG's updates:
// FaaSConf (Wang et al., ASE 2024; docs/PAPERS.md) equations 3 and 4. The
// variants differ in what the critic and the actor of agent j see:
//
//   - Vanilla: the critic every agent's state and action, the actor s_j.
//   - MeanField: the critic (s_j, s̄_j, a_j, ā_j), the actor (s_j, ŝ_j),
//     with s̄, ā and ŝ the plain means over j's neighbours in the
//     adjacency matrix (Yang et al. 2018's mean field; FaaSConf eq. 5).
//   - AttMF: the same with weighted means (FaaSConf eq. 6-8) whose weights
//     are attention over the neighbours, α^{jk} ∝ exp(s_j W_q W_kᵀ s_kᵀ/√d)
//     A^{jk} (eq. 9), a separate W_q and W_k for every agent's actor and
//     critic, learnt with them.
//   - IndependentDDPG: the critic (s_j, a_j), the actor s_j: DDPG per agent.
//
// The agents share the team reward (the mean of their rewards), as FaaSConf
// does. Observations and actions of all agents have the same widths.

// MADDPGVariant selects what the critics and actors see.
type MADDPGVariant string

// The variants.
const (
	AttMF     MADDPGVariant = "attmf"
	MeanField MADDPGVariant = "mf"
	Vanilla   MADDPGVariant = "maddpg"
	// IndependentDDPG is independent DDPG learners under the team reward: each
	// actor and critic sees only its own agent (FaaSConf Fig. 13's DDPG,
	// the algorithm of FIRM).
	IndependentDDPG MADDPGVariant = "ddpg"
)

// ownOnly reports whether the actors read only their own state.
func (v MADDPGVariant) ownOnly() bool { return v == Vanilla || v == IndependentDDPG }

// Valid reports whether v is one of the variants.
func (v MADDPGVariant) Valid() bool { return v.MeanField() || v == Vanilla || v == IndependentDDPG }

// MeanField reports whether the variant averages over neighbours (and so
// needs the adjacency).
func (v MADDPGVariant) MeanField() bool { return v == AttMF || v == MeanField }

// MADDPGConfig holds MADDPG's hyperparameters.
type MADDPGConfig struct {
	Variant MADDPGVariant
	// Adjacency is n×n: Adjacency[j][k] > 0 makes k one of j's neighbours
	// (the diagonal is ignored). The mean-field variants need it.
	Adjacency [][]float64
	Hidden    []int // hidden widths of actors and critics (Lowe et al.: 64, 64)
	// AttentionDim is the width d of the queries and keys (AttMF).
	AttentionDim      int
	ActorLR, CriticLR float64 // Adam step sizes (Lowe et al.: 0.01)
	BufferSize        int     // joint transitions kept (10⁶)
	BatchSize         int     // (1024)
	Gamma             float64 // discount (0.95)
	Tau               float64 // Polyak coefficient of the targets (0.01)
	LearningStarts    int     // joint steps of uniform random actions before learning
	UpdatesPerStep    int     // updates per joint step after that (1)
	ActionNoise       float64 // std of the Gaussian exploration noise in [-1, 1] units (0.1)
	// AnchorWeight weighs a behaviour-cloning term in every actor's loss:
	// the squared distance of its action on the anchor's observations to
	// the anchor's actions (SetAnchor), as TD3+BC (Fujimoto and Gu,
	// NeurIPS 2021) keeps an offline actor near the data; 0: none.
	AnchorWeight float64
	// GradClip bounds the global L2 norm of every actor's and critic's
	// gradient (0.5: maddpg/trainer/maddpg.py, U.minimize_and_clip with
	// grad_norm_clipping=0.5 in Lowe et al.'s released code; 0: none).
	GradClip float64
}

// DefaultMADDPGConfig returns Lowe et al.'s settings (appendix: Adam with
// step 0.01, τ 0.01, γ 0.95, a buffer of 10⁶, batches of 1024, two ReLU
// layers of 64 units; their code clips gradient norms at 0.5) for AttMF
// with 16-wide queries and keys, Gaussian exploration noise 0.1 and 1,000
// random steps.
func DefaultMADDPGConfig() MADDPGConfig {
	return MADDPGConfig{Variant: AttMF, Hidden: []int{64, 64}, AttentionDim: 16, ActorLR: 0.01, CriticLR: 0.01,
		BufferSize: 1_000_000, BatchSize: 1024, Gamma: 0.95, Tau: 0.01, LearningStarts: 1000, UpdatesPerStep: 1,
		ActionNoise: 0.1, GradClip: 0.5}
}

// Validate reports the first invalid field for n agents.
func (c MADDPGConfig) Validate(n int) error {
	switch {
	case !c.Variant.Valid():
		return fmt.Errorf("variant: %q is none of attmf, mf, maddpg, ddpg", c.Variant)
	case c.Variant.MeanField() && len(c.Adjacency) != n:
		return fmt.Errorf("adjacency: %d rows for %d agents", len(c.Adjacency), n)
	case len(c.Hidden) == 0:
		return errors.New("hidden: need at least one hidden layer")
	case c.Variant == AttMF && c.AttentionDim < 1:
		return fmt.Errorf("attention_dim: must be >= 1, got %d", c.AttentionDim)
	case c.ActorLR <= 0 || c.CriticLR <= 0:
		return errors.New("actor_lr, critic_lr: must be > 0")
	case c.BufferSize < 1 || c.BatchSize < 1 || c.UpdatesPerStep < 1:
		return errors.New("buffer_size, batch_size, updates_per_step: must be >= 1")
	case c.Gamma < 0 || c.Gamma > 1 || c.Tau <= 0 || c.Tau > 1:
		return fmt.Errorf("gamma in [0, 1], tau in (0, 1]: got %v, %v", c.Gamma, c.Tau)
	case c.ActionNoise < 0 || c.GradClip < 0 || c.AnchorWeight < 0:
		return errors.New("action_noise, grad_clip, anchor_weight: must be >= 0")
	}
	for j, row := range c.Adjacency {
		if len(row) != n {
			return fmt.Errorf("adjacency[%d]: %d entries for %d agents", j, len(row), n)
		}
		for _, v := range row {
			if v < 0 || math.IsNaN(v) {
				return fmt.Errorf("adjacency[%d]: weights must be >= 0", j)
			}
		}
	}
	return nil
}

// maddpgAgent is one agent's networks: actor and critic, their attention
// (W_q, W_k; AttMF only) and the targets of all of them.
type maddpgAgent struct {
	actor, actorT, critic, criticT *nn.MLP[float32]
	aq, ak, aqT, akT               *nn.Node[float32] // the actor's attention
	cq, ck, cqT, ckT               *nn.Node[float32] // the critic's
	actorOpt, criticOpt            *nn.Adam[float32]
	actorP, criticP                []*nn.Node[float32] // what each optimiser steps
}

// MADDPG is a MultiLearner for n homogeneous agents with box actions.
type MADDPG struct {
	Config    MADDPGConfig
	spec      MultiSpec
	scale     []actionScale
	rng       *rand.Rand
	n, ds, da int
	agents    []*maddpgAgent
	replay    *Replay
	batch     Batch
	tpT, tpQ  nn.Tape[float32]
	tpA       nn.Tape[float32]
	aNext, y  []float32
	steps     int
	actors    *MFActors
	acts      [][]float64
	joint, jn []float64
	jointA    []float64
	unit      []float64
	targets   []*nn.Node[float32]
	sources   []*nn.Node[float32]
	// The anchor: joint observations and the actions (in [-1, 1] units)
	// the actors are drawn to.
	anchor  jointTargets
	Updates int // critic updates of every agent so far
}

// SetAnchor replaces the anchor of the behaviour-cloning term with the
// joint observations and actions (one row per agent each, actions in the
// agents' spaces).
func (m *MADDPG) SetAnchor(obs, acts [][][]float64) {
	m.anchor.reset()
	for i := range obs {
		for j := range m.n {
			m.scale[j].toUnit(m.unit, acts[i][j])
			m.anchor.add(obs[i][j], m.unit)
		}
	}
}

// NewMADDPG returns a MADDPG learner for spec.
func NewMADDPG(spec MultiSpec, cfg MADDPGConfig, rng *rand.Rand) (*MADDPG, error) {
	n := spec.Agents()
	if n == 0 {
		return nil, errors.New("new maddpg: no agents")
	}
	if err := cfg.Validate(n); err != nil {
		return nil, fmt.Errorf("new maddpg: %w", err)
	}
	m := &MADDPG{Config: cfg, spec: spec, rng: rng, n: n, ds: spec.Observation[0].Dim(), da: spec.Action[0].Dim()}
	for i := range n {
		if spec.Observation[i].Dim() != m.ds || spec.Action[i].Dim() != m.da {
			return nil, fmt.Errorf("new maddpg: agent %d's spaces differ from agent 0's", i)
		}
		s, err := newActionScale(spec.Action[i])
		if err != nil {
			return nil, fmt.Errorf("new maddpg: agent %d: %w", i, err)
		}
		m.scale = append(m.scale, s)
	}
	m.actors = NewMFActors(cfg.Variant, cfg.Adjacency, n, m.ds, m.da, cfg.Hidden, cfg.AttentionDim, rng)
	actorIn, criticIn := m.actors.InputDim(), 2*(m.ds+m.da)
	switch cfg.Variant {
	case Vanilla:
		criticIn = n * (m.ds + m.da)
	case IndependentDDPG:
		criticIn = m.ds + m.da
	}
	adam := func(lr float64) nn.AdamConfig { c := nn.DefaultAdam(); c.LR = lr; return c }
	for j := range n {
		a := &maddpgAgent{
			actor:   m.actors.nets[j],
			actorT:  newMLP(rng, fmt.Sprintf("actor%d_target", j), actorIn, cfg.Hidden, m.da, nn.ReLU, nn.Tanh),
			critic:  newMLP(rng, fmt.Sprintf("critic%d", j), criticIn, cfg.Hidden, 1, nn.ReLU, nn.Identity),
			criticT: newMLP(rng, fmt.Sprintf("critic%d_target", j), criticIn, cfg.Hidden, 1, nn.ReLU, nn.Identity)}
		actorP, criticP := a.actor.Params(), a.critic.Params()
		m.targets = append(m.targets, append(a.actorT.Params(), a.criticT.Params()...)...)
		m.sources = append(m.sources, append(slices.Clone(actorP), criticP...)...)
		if cfg.Variant == AttMF {
			w := func(name string) *nn.Node[float32] {
				return attentionWeights(rng, fmt.Sprintf("%s%d", name, j), m.ds, cfg.AttentionDim)
			}
			a.aq, a.ak, a.cq, a.ck = m.actors.wq[j], m.actors.wk[j], w("critic_wq"), w("critic_wk")
			a.aqT, a.akT, a.cqT, a.ckT = w("actor_wq_target"), w("actor_wk_target"), w("critic_wq_target"), w("critic_wk_target")
			actorP = append(actorP, a.aq, a.ak)
			criticP = append(criticP, a.cq, a.ck)
			m.targets = append(m.targets, a.aqT, a.akT, a.cqT, a.ckT)
			m.sources = append(m.sources, a.aq, a.ak, a.cq, a.ck)
		}
		a.actorOpt, a.criticOpt = nn.NewAdam(actorP, adam(cfg.ActorLR)), nn.NewAdam(criticP, adam(cfg.CriticLR))
		a.actorP, a.criticP = actorP, criticP
		m.agents = append(m.agents, a)
	}
	nn.HardCopy(m.targets, m.sources)
	m.replay = NewReplay(cfg.BufferSize, n*m.ds, n*m.da)
	m.aNext = make([]float32, cfg.BatchSize*n*m.da)
	m.y = make([]float32, cfg.BatchSize)
	m.acts = make([][]float64, n)
	for j := range m.acts {
		m.acts[j] = make([]float64, m.da)
	}
	m.joint, m.jn, m.jointA, m.unit = make([]float64, n*m.ds), make([]float64, n*m.ds), make([]float64, n*m.da), make([]float64, m.da)
	return m, nil
}

// ResetEpisode implements MultiLearner (MADDPG keeps no history).
func (m *MADDPG) ResetEpisode() {}

// Act returns every agent's action for the joint observation; with
// deterministic false it adds the exploration noise. It allocates nothing.
func (m *MADDPG) Act(obs [][]float64, deterministic bool) [][]float64 {
	out := m.actors.Act(obs)
	for j := range out {
		if !deterministic && m.Config.ActionNoise > 0 {
			for i := range out[j] {
				out[j][i] = float32(math.Min(math.Max(float64(out[j][i])+m.Config.ActionNoise*m.rng.NormFloat64(), -1), 1))
			}
		}
		m.scale[j].toEnv(m.acts[j], out[j])
	}
	return m.acts
}

// Actors returns the decentralised actors, what runs at deployment.
func (m *MADDPG) Actors() *MFActors { return m.actors }

// Explore returns uniformly random actions before LearningStarts joint
// steps, noisy actor actions after.
func (m *MADDPG) Explore(obs [][]float64) [][]float64 {
	if m.steps < m.Config.LearningStarts {
		for j := range m.acts {
			m.spec.Action[j].Sample(m.rng, m.acts[j])
		}
		return m.acts
	}
	return m.Act(obs, false)
}

// Observe stores the joint transition and runs the updates due.
func (m *MADDPG) Observe(obs, acts [][]float64, rewards []float64, next [][]float64, terminated, truncated bool) {
	m.Store(obs, acts, rewards, next, terminated)
	m.steps++
	if m.steps >= m.Config.LearningStarts && m.replay.Len() >= m.Config.BatchSize {
		for range m.Config.UpdatesPerStep {
			m.Update()
		}
	}
}

// Store adds a joint transition (actions in the agents' spaces) to the
// replay buffer with the team reward, the mean of the agents', and learns
// nothing: logged data for offline training.
func (m *MADDPG) Store(obs, acts [][]float64, rewards []float64, next [][]float64, terminated bool) {
	r := 0.0
	for j := range m.n {
		copy(m.joint[j*m.ds:], obs[j])
		copy(m.jn[j*m.ds:], next[j])
		m.scale[j].toUnit(m.unit, acts[j])
		copy(m.jointA[j*m.da:], m.unit)
		r += rewards[j]
	}
	m.replay.Add(m.joint, m.jointA, r/float64(m.n), m.jn, terminated)
}

// Replay returns the joint replay buffer (observations and actions of all
// agents concatenated, actions in [-1, 1] units), for example to fill it
// with logged transitions for offline training.
func (m *MADDPG) Replay() *Replay { return m.replay }

// Update runs one critic and one actor update for every agent, then moves
// the targets (Lowe et al., Algorithm 1).
func (m *MADDPG) Update() {
	cfg := m.Config
	B, n, ds, da := cfg.BatchSize, m.n, m.ds, m.da
	m.replay.Sample(&m.batch, m.rng, B)
	b := &m.batch

	// Target actions a'_k = π'_k(s'_k, ŝ'_k) of every agent.
	m.tpT.Reset()
	tp := &m.tpT
	sNext := input(tp, B*n, ds, b.NextObs)
	for k, a := range m.agents {
		act := a.actorT.Forward(tp, m.actors.record(tp, k, a.aqT, a.akT, sNext))
		for r := range B {
			copy(m.aNext[(r*n+k)*da:(r*n+k+1)*da], act.Value.Data[r*da:(r+1)*da])
		}
	}
	aNext := input(tp, B*n, da, m.aNext)
	var anchorObs, anchorAct []float32 // a batch of the anchor (none without its term)
	if cfg.AnchorWeight > 0 {
		anchorObs, anchorAct = m.anchor.draw(m.rng, B, n*ds, n*da)
	}
	for j, a := range m.agents {
		// y = r + γ (1 − d) Q'_j(s', a') (eq. 3).
		q := a.criticT.Forward(tp, m.criticIn(tp, j, a.cqT, a.ckT, sNext, aNext, nil))
		for i := range m.y {
			m.y[i] = b.Reward[i] + float32(cfg.Gamma)*(1-b.Done[i])*q.Value.Data[i]
		}
		m.tpQ.Reset()
		tq := &m.tpQ
		s, acts := input(tq, B*n, ds, b.Obs), input(tq, B*n, da, b.Act)
		loss := tq.MSE(a.critic.Forward(tq, m.criticIn(tq, j, a.cq, a.ck, s, acts, nil)), input(tq, B, 1, m.y))
		a.criticOpt.ZeroGrad()
		tq.Backward(loss)
		m.clip(a.criticP)
		a.criticOpt.Step()

		// ∇θ J = E[∇θ π_j(s_j) ∇a_j Q_j(s, a)|a_j = π_j(s_j)] (eq. 4).
		m.tpA.Reset()
		ta := &m.tpA
		s, acts = input(ta, B*n, ds, b.Obs), input(ta, B*n, da, b.Act)
		mine := a.actor.Forward(ta, m.actors.record(ta, j, a.aq, a.ak, s))
		lossPi := ta.Scale(ta.Mean(a.critic.Forward(ta, m.criticIn(ta, j, a.cq, a.ck, s, acts, mine))), -1)
		if anchorObs != nil {
			bc := m.actors.cloneLoss(ta, j, a.aq, a.ak, input(ta, B*n, ds, anchorObs), input(ta, B*n, da, anchorAct))
			lossPi = ta.Add(lossPi, ta.Scale(bc, float32(cfg.AnchorWeight)))
		}
		a.actorOpt.ZeroGrad()
		ta.Backward(lossPi)
		m.clip(a.actorP)
		a.actorOpt.Step()
	}
	m.Updates++
	nn.SoftUpdate(m.targets, m.sources, float32(cfg.Tau))
}

func (m *MADDPG) clip(params []*nn.Node[float32]) {
	if m.Config.GradClip > 0 {
		nn.ClipGradNorm(params, m.Config.GradClip)
	}
}

// criticIn records agent j's critic input from the states s and actions
// acts (B·n rows each), with j's own action replaced by mine if set.
func (m *MADDPG) criticIn(tp *nn.Tape[float32], j int, wq, wk, s, acts, mine *nn.Node[float32]) *nn.Node[float32] {
	own := m.actors.rows(tp, s, j)
	act := mine
	if act == nil {
		act = m.actors.rows(tp, acts, j)
	}
	if m.Config.Variant == IndependentDDPG {
		return tp.Concat(own, act)
	}
	if m.Config.Variant == Vanilla {
		parts := []*nn.Node[float32]{tp.Reshape(s, s.Value.Rows/m.n, m.n*m.ds)}
		for k := range m.n {
			if k == j {
				parts = append(parts, act)
			} else {
				parts = append(parts, m.actors.rows(tp, acts, k))
			}
		}
		return tp.Concat(parts...)
	}
	mf := m.actors.meanField(tp, j, wq, wk, own, s, tp.Concat(s, acts))
	return tp.Concat(own, tp.SliceCols(mf, 0, m.ds), act, tp.SliceCols(mf, m.ds, m.ds+m.da))
}
