package rl

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/nn"
)

// QMIX: Rashid et al. (2018), "QMIX: Monotonic Value Function Factorisation
// for Deep Multi-Agent Reinforcement Learning", arXiv:1803.11485. Shoal uses
// it as the centrally trained baseline QMix-LB of the Distr-LB paper.
//
// Every agent a has a recurrent utility network Q_a(τ_a, u_a) over its own
// observation history τ_a (a DRQN: GRU, then an MLP head with one output per
// discrete action). A mixing network combines the chosen utilities into the
// team value
//
//	Q_tot(τ, u, s) = W₂(s)ᵀ ELU(W₁(s)ᵀ [Q_1, ..., Q_n] + b₁(s)) + V(s)
//
// whose weights W₁ (n×E) and W₂ (E×1) are produced from the global state s
// by hypernetworks followed by an absolute value, so that
// ∂Q_tot/∂Q_a ≥ 0 for every agent (the paper's monotonicity constraint):
// the team's greedy joint action is then every agent's own
// greedy action, which is what makes decentralised execution consistent.
// b₁(s) comes from a linear hypernetwork without the sign constraint, and the
// state-dependent bias V(s) from a two-layer hypernetwork with a ReLU.
//
// Training minimises the paper's TD loss on Q_tot with the team reward
// r = Σ_a r_a:
//
//	L(θ) = mean over the batch of (y − Q_tot(τ, u, s; θ))²,
//	y    = r + γ (1 − d) Q_tot(τ', u*, s'; θ⁻),
//	u*_a = argmax_u Q_a(τ'_a, u; θ)      (double Q, the default), or
//	u*_a = argmax_u Q_a(τ'_a, u; θ⁻)     (the paper's plain max),
//
// with target networks θ⁻ (agents and mixer) copied from θ every
// TargetUpdateInterval updates, gradients clipped to a global norm, and
// RMSProp (the paper's optimiser) or Adam. Behaviour is ε-greedy per agent
// with ε annealed linearly.
//
// Global state. The load-balancing environment has no state beyond what the
// agents observe, so s is the concatenation of all agents' observations
// [o_1, ..., o_n] (its width is the sum of their widths). Environments with
// a richer state can append it to an agent's observation.
//
// Histories. Like RecurrentSAC, QMIX trains on fixed windows of the last
// SeqLen joint observations sampled from a SequenceReplay of joint
// transitions, masked before the episode's first observation, with
// backpropagation through the whole window; acting replays the same window,
// so behaviour and training see identical inputs. Windows instead of the
// paper's whole-episode replay keep the cost of an update independent of
// the episode length (load-balancing episodes run for hundreds of control
// periods) and decorrelate the minibatch; the price is that an agent sees at
// most SeqLen steps of history. To feed previous actions as the paper does,
// put them into the observation (envs/lbenv does).
//
// Agents have separate networks by default (load balancers see different
// traffic); ShareParams uses one network for all, with the agent's one-hot
// index appended to its input (the paper's setting for homogeneous agents).

// Mixing names how QMIX combines the agents' utilities into Q_tot.
type Mixing string

// Mixings.
const (
	// MixQMIX is the monotonic mixing network with hypernetworks (the paper).
	MixQMIX Mixing = "qmix"
	// MixVDN is Q_tot = Σ_a Q_a (VDN, Sunehag et al. 2018), the additive
	// ablation QMIX is compared against.
	MixVDN Mixing = "vdn"
)

// Optimisers QMIX can use.
const (
	OptRMSProp = "rmsprop"
	OptAdam    = "adam"
)

// QMIXConfig holds QMIX's hyperparameters. Defaults follow the paper's
// SMAC setup where it gives one: RMSProp with step 5e-4, γ 0.99, ε from 1
// to 0.05 over 50000 steps, 64-unit GRU agents, mixing width 32, a
// 64-unit hidden layer in two-layer hypernetworks. Where the paper counts
// episodes (a batch of 32 whole episodes, target copies every 200
// episodes), QMIX here counts windows and updates. The paper's agent has
// its extra 64-unit layer before the GRU; here it follows the GRU, as in
// RecurrentSAC.
type QMIXConfig struct {
	GRUHidden   int   // agent GRU state width (64)
	Hidden      []int // hidden widths of the agent head after the GRU (64); empty: one linear layer, as in the paper's DRQN
	SeqLen      int   // history window L, steps (8)
	ShareParams bool  // one agent network for all agents, agent one-hot appended (false)

	Mixing         Mixing // MixQMIX or MixVDN (qmix)
	MixingEmbed    int    // mixing network hidden width E (32)
	HypernetLayers int    // layers of the W₁, W₂ hypernetworks: 1 (the paper) or 2 (1)
	HypernetHidden int    // hidden width of the weight hypernetworks when HypernetLayers is 2 (64)

	Optimizer string  // OptRMSProp (the paper; α 0.99, ε 1e-5) or OptAdam (rmsprop)
	LR        float64 // step size (5e-4)
	GradClip  float64 // maximum global gradient norm (10)
	Gamma     float64 // discount γ (0.99)
	DoubleQ   bool    // pick u* with the online agents (true)

	BufferSize           int // replay capacity in joint transitions (100000)
	BatchSize            int // windows per update (32)
	LearningStarts       int // environment steps before training (1000)
	TrainFreq            int // steps between training rounds; 0: at every episode end (1)
	GradientSteps        int // updates per round; -1: as many as steps since the last round (1)
	TargetUpdateInterval int // updates between hard copies into the target networks (200)

	EpsStart       float64 // initial exploration rate ε (1)
	EpsEnd         float64 // final ε (0.05)
	EpsAnnealSteps int     // environment steps over which ε falls linearly; 0: EpsEnd throughout (50000)
}

// DefaultQMIXConfig returns the defaults documented on QMIXConfig.
func DefaultQMIXConfig() QMIXConfig {
	return QMIXConfig{
		GRUHidden: 64, Hidden: []int{64}, SeqLen: 8,
		Mixing: MixQMIX, MixingEmbed: 32, HypernetLayers: 1, HypernetHidden: 64,
		Optimizer: OptRMSProp, LR: 5e-4, GradClip: 10, Gamma: 0.99, DoubleQ: true,
		BufferSize: 100_000, BatchSize: 32, LearningStarts: 1000, TrainFreq: 1, GradientSteps: 1,
		TargetUpdateInterval: 200,
		EpsStart:             1, EpsEnd: 0.05, EpsAnnealSteps: 50_000,
	}
}

// Validate reports the first invalid field.
func (c QMIXConfig) Validate() error {
	for i, h := range c.Hidden {
		if h < 1 {
			return fmt.Errorf("hidden[%d]: must be >= 1, got %d", i, h)
		}
	}
	switch {
	case c.GRUHidden < 1:
		return fmt.Errorf("gru_hidden: must be >= 1, got %d", c.GRUHidden)
	case c.SeqLen < 1:
		return fmt.Errorf("seq_len: must be >= 1, got %d", c.SeqLen)
	case c.Mixing != MixQMIX && c.Mixing != MixVDN:
		return fmt.Errorf("mixing: want %q or %q, got %q", MixQMIX, MixVDN, c.Mixing)
	case c.Mixing == MixQMIX && (c.MixingEmbed < 1 || c.HypernetLayers == 2 && c.HypernetHidden < 1):
		return fmt.Errorf("mixing_embed, hypernet_hidden: must be >= 1, got %d, %d", c.MixingEmbed, c.HypernetHidden)
	case c.Mixing == MixQMIX && c.HypernetLayers != 1 && c.HypernetLayers != 2:
		return fmt.Errorf("hypernet_layers: must be 1 or 2, got %d", c.HypernetLayers)
	case c.Optimizer != OptRMSProp && c.Optimizer != OptAdam:
		return fmt.Errorf("optimizer: want %q or %q, got %q", OptRMSProp, OptAdam, c.Optimizer)
	case !(c.LR > 0) || !(c.GradClip > 0):
		return fmt.Errorf("lr, grad_clip: must be > 0, got %v, %v", c.LR, c.GradClip)
	case !(c.Gamma >= 0 && c.Gamma <= 1):
		return fmt.Errorf("gamma: must be in [0, 1], got %v", c.Gamma)
	case c.BufferSize < 1 || c.BatchSize < 1:
		return fmt.Errorf("buffer_size, batch_size: must be >= 1, got %d, %d", c.BufferSize, c.BatchSize)
	case c.LearningStarts < 0 || c.TrainFreq < 0 || c.GradientSteps < -1:
		return fmt.Errorf("learning_starts, train_freq, gradient_steps: got %d, %d, %d", c.LearningStarts, c.TrainFreq, c.GradientSteps)
	case c.TargetUpdateInterval < 1:
		return fmt.Errorf("target_update_interval: must be >= 1, got %d", c.TargetUpdateInterval)
	case !(c.EpsStart >= 0 && c.EpsStart <= 1) || !(c.EpsEnd >= 0 && c.EpsEnd <= 1):
		return fmt.Errorf("eps_start, eps_end: must be in [0, 1], got %v, %v", c.EpsStart, c.EpsEnd)
	case c.EpsAnnealSteps < 0:
		return fmt.Errorf("eps_anneal_steps: must be >= 0, got %d", c.EpsAnnealSteps)
	}
	return nil
}

// Mixer is QMIX's monotonic mixing network: it maps the n agents' chosen
// utilities q (B×n) and the global state s (B×stateDim) to Q_tot (B×1),
//
//	Q_tot = |W₂(s)|ᵀ ELU(|W₁(s)|ᵀ q + b₁(s)) + V(s),
//
// with hypernetworks HyperW1 (state → n·E, row-major n×E), HyperB1 (state
// → E, linear), HyperW2 (state → E) and HyperV (state → E → 1, ReLU).
// The absolute values make Q_tot non-decreasing in every q_a.
type Mixer[T nn.Float] struct {
	HyperW1, HyperB1, HyperW2, HyperV *nn.MLP[T]

	agents, stateDim, embed int
	pred                    [4]*nn.MLPPredictor[T]
	w1, b1, w2, hid         []T
	v                       [1]T
}

// NewMixer returns a mixing network for agents utilities and a state of
// stateDim values, with embed hidden units E; hyperLayers (1 or 2) is the
// depth of the weight hypernetworks and hyperHidden the hidden width of the
// two-layer ones (unused with one layer). Parameters are named name.w1, name.b1, name.w2, name.v.
func NewMixer[T nn.Float](rng *rand.Rand, name string, agents, stateDim, embed, hyperLayers, hyperHidden int) *Mixer[T] {
	if agents < 1 || stateDim < 1 || embed < 1 || hyperLayers < 1 || hyperLayers > 2 || hyperLayers == 2 && hyperHidden < 1 {
		panic(fmt.Sprintf("rl: NewMixer(%d agents, state %d, embed %d, %d layers of %d)", agents, stateDim, embed, hyperLayers, hyperHidden))
	}
	sizes := func(out int) []int {
		if hyperLayers == 2 {
			return []int{stateDim, hyperHidden, out}
		}
		return []int{stateDim, out}
	}
	m := &Mixer[T]{
		HyperW1:  nn.NewMLP[T](rng, name+".w1", sizes(agents*embed), nn.ReLU, nn.Identity),
		HyperB1:  nn.NewMLP[T](rng, name+".b1", []int{stateDim, embed}, nn.ReLU, nn.Identity),
		HyperW2:  nn.NewMLP[T](rng, name+".w2", sizes(embed), nn.ReLU, nn.Identity),
		HyperV:   nn.NewMLP[T](rng, name+".v", []int{stateDim, embed, 1}, nn.ReLU, nn.Identity),
		agents:   agents,
		stateDim: stateDim,
		embed:    embed,
	}
	for i, h := range []*nn.MLP[T]{m.HyperW1, m.HyperB1, m.HyperW2, m.HyperV} {
		m.pred[i] = h.NewPredictor()
	}
	m.w1, m.b1, m.w2, m.hid = make([]T, agents*embed), make([]T, embed), make([]T, embed), make([]T, embed)
	return m
}

// Agents is the number of mixed utilities n.
func (m *Mixer[T]) Agents() int { return m.agents }

// StateDim is the width of the global state.
func (m *Mixer[T]) StateDim() int { return m.stateDim }

// Params returns the hypernetworks' parameters (W₁, b₁, W₂, V order).
func (m *Mixer[T]) Params() []*nn.Node[T] {
	var ps []*nn.Node[T]
	for _, h := range []*nn.MLP[T]{m.HyperW1, m.HyperB1, m.HyperW2, m.HyperV} {
		ps = append(ps, h.Params()...)
	}
	return ps
}

// Arch describes the mixer: "qmix-mixer(n,state,embed;w1;b1;w2;v)".
func (m *Mixer[T]) Arch() string {
	return fmt.Sprintf("qmix-mixer(%d,%d,%d;%s;%s;%s;%s)", m.agents, m.stateDim, m.embed,
		m.HyperW1.Arch(), m.HyperB1.Arch(), m.HyperW2.Arch(), m.HyperV.Arch())
}

// Forward records Q_tot (B×1) for utilities q (B×n) and states s
// (B×stateDim) on tp.
func (m *Mixer[T]) Forward(tp *nn.Tape[T], q, s *nn.Node[T]) *nn.Node[T] {
	if q.Value.Cols != m.agents || s.Value.Cols != m.stateDim || q.Value.Rows != s.Value.Rows {
		panic(fmt.Sprintf("rl: Mixer(%d agents, state %d).Forward: q %dx%d, s %dx%d",
			m.agents, m.stateDim, q.Value.Rows, q.Value.Cols, s.Value.Rows, s.Value.Cols))
	}
	w1 := tp.Abs(m.HyperW1.Forward(tp, s))
	hid := tp.ELU(tp.Add(tp.BatchVecMat(q, w1), m.HyperB1.Forward(tp, s)), 1)
	w2 := tp.Abs(m.HyperW2.Forward(tp, s))
	return tp.Add(tp.RowSum(tp.Mul(hid, w2)), m.HyperV.Forward(tp, s))
}

// Value returns Q_tot for one sample: utilities q (len n) in state s (len
// stateDim). It allocates nothing and is not safe for concurrent use.
func (m *Mixer[T]) Value(q, s []T) T {
	if len(q) != m.agents || len(s) != m.stateDim {
		panic(fmt.Sprintf("rl: Mixer(%d agents, state %d).Value: len(q)=%d, len(s)=%d", m.agents, m.stateDim, len(q), len(s)))
	}
	m.pred[0].Predict(m.w1, s)
	m.pred[1].Predict(m.b1, s)
	m.pred[2].Predict(m.w2, s)
	m.pred[3].Predict(m.v[:], s)
	E := m.embed
	var out T
	for e := 0; e < E; e++ {
		x := m.b1[e]
		for a, qa := range q {
			x += qa * abs(m.w1[a*E+e])
		}
		if x < 0 {
			x = expm1(x)
		}
		out += x * abs(m.w2[e])
	}
	return out + m.v[0]
}

// qmixAgent is a DRQN utility network: a GRU over the input history and an
// MLP head with one output per action.
type qmixAgent struct {
	gru  *nn.GRU[float32]
	head *nn.MLP[float32]
}

func (a *qmixAgent) Params() []*nn.Node[float32] {
	return append(append([]*nn.Node[float32](nil), a.gru.Params()...), a.head.Params()...)
}

// forward records the utilities (rows×actions) of time-major windows x (L
// blocks of rows×in) with masks mask (L blocks of rows); a masked step
// leaves the GRU state unchanged: z_k = z_{k−1} + m_k (GRU(x_k, z_{k−1}) − z_{k−1})
// (recorded only for steps where masks differ across rows).
func (a *qmixAgent) forward(tp *nn.Tape[float32], rows, L int, x, mask []float32) *nn.Node[float32] {
	in := a.gru.In()
	h := tp.Input(rows, a.gru.Hidden())
	for k := 0; k < L; k++ {
		mk := mask[k*rows : (k+1)*rows]
		ones := 0
		for _, v := range mk {
			if v != 0 {
				ones++
			}
		}
		if ones == 0 {
			continue // every window starts later: the state stays zero
		}
		xk := input(tp, rows, in, x[k*rows*in:(k+1)*rows*in])
		hn := a.gru.Step(tp, xk, h)
		if ones == rows {
			h = hn
			continue
		}
		h = tp.Add(h, tp.Mul(tp.Sub(hn, h), input(tp, rows, 1, mk)))
	}
	return a.head.Forward(tp, h)
}

// QMIX is a QMIX learner for a team of agents with discrete actions. It
// implements MultiLearner.
type QMIX struct {
	Config QMIXConfig
	spec   MultiSpec
	rng    *rand.Rand
	n      int   // agents
	obsDim []int // per agent
	obsOff []int // offset of agent i's observation in the joint observation (the state)
	nAct   []int
	inDim  []int // agent network input width: obsDim (+ n with shared parameters)
	state  int   // joint observation width Σ obsDim

	agents, agentsTarget []*qmixAgent // one per agent, or a single shared one
	mixer, mixerTarget   *Mixer[float32]
	params, targetParams []*nn.Node[float32]
	opt                  nn.Optimizer[float32]
	replay               *SequenceReplay
	batch                SeqBatch
	sched                schedule
	tpT, tpQ             nn.Tape[float32]
	xs, nextXs           [][]float32 // per network: time-major agent inputs
	masks, nextMasks     []float32   // shared parameters: masks repeated per agent
	idx                  [][]int     // per network: taken actions
	qNext, y             []float32
	uTarget, uSelect     []*nn.Node[float32] // per network: utilities on the target tape
	uOnline, parts       []*nn.Node[float32] // per network: utilities, chosen ones
	joint, jointNext     []float64           // Observe scratch
	jointAct             []float64

	windows  []*Window
	gruPred  []*nn.GRUPredictor[float32]
	headPred []*nn.MLPPredictor[float32]
	h        []float32
	q        [][]float32 // utilities of the last Act/Explore, per agent
	in       []float64   // shared-parameter input scratch
	act      [][]float64

	// Updates counts gradient updates.
	Updates int
	// Loss is the TD loss of the last update.
	Loss float64
}

// NewQMIX returns a QMIX learner for spec, whose agents must all have
// discrete action spaces and box observations (with ShareParams, all of
// the same size).
func NewQMIX(spec MultiSpec, cfg QMIXConfig, rng *rand.Rand) (*QMIX, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new qmix: %w", err)
	}
	n := spec.Agents()
	if n == 0 || len(spec.Action) != n {
		return nil, fmt.Errorf("new qmix: %s: %d observation and %d action spaces", spec.ID, n, len(spec.Action))
	}
	q := &QMIX{Config: cfg, spec: spec, rng: rng, n: n}
	for i := 0; i < n; i++ {
		if !spec.Action[i].IsDiscrete() {
			return nil, fmt.Errorf("new qmix: %s: agent %d: action space %v is not discrete", spec.ID, i, spec.Action[i])
		}
		if spec.Observation[i].IsDiscrete() || spec.Observation[i].Dim() < 1 {
			return nil, fmt.Errorf("new qmix: %s: agent %d: observation space %v is not a box", spec.ID, i, spec.Observation[i])
		}
		o := spec.Observation[i].Dim()
		q.obsOff = append(q.obsOff, q.state)
		q.obsDim = append(q.obsDim, o)
		q.nAct = append(q.nAct, spec.Action[i].N)
		q.state += o
		if cfg.ShareParams {
			if o != q.obsDim[0] || q.nAct[i] != q.nAct[0] {
				return nil, errors.New("new qmix: share_params: agents need equal observation widths and action counts")
			}
			q.inDim = append(q.inDim, o+n)
		} else {
			q.inDim = append(q.inDim, o)
		}
	}
	nets := n
	if cfg.ShareParams {
		nets = 1
	}
	newAgent := func(name string, i int) *qmixAgent {
		return &qmixAgent{
			gru:  nn.NewGRU[float32](rng, name+".gru", q.inDim[i], cfg.GRUHidden),
			head: newMLP(rng, name+".head", cfg.GRUHidden, cfg.Hidden, q.nAct[i], nn.ReLU, nn.Identity),
		}
	}
	for i := 0; i < nets; i++ {
		q.agents = append(q.agents, newAgent(fmt.Sprintf("agent%d", i), i))
		q.agentsTarget = append(q.agentsTarget, newAgent(fmt.Sprintf("agent%d_target", i), i))
	}
	for i := 0; i < nets; i++ {
		q.params = append(q.params, q.agents[i].Params()...)
		q.targetParams = append(q.targetParams, q.agentsTarget[i].Params()...)
	}
	if cfg.Mixing == MixQMIX {
		q.mixer = NewMixer[float32](rng, "mixer", n, q.state, cfg.MixingEmbed, cfg.HypernetLayers, cfg.HypernetHidden)
		q.mixerTarget = NewMixer[float32](rng, "mixer_target", n, q.state, cfg.MixingEmbed, cfg.HypernetLayers, cfg.HypernetHidden)
		q.params = append(q.params, q.mixer.Params()...)
		q.targetParams = append(q.targetParams, q.mixerTarget.Params()...)
	}
	nn.HardCopy(q.targetParams, q.params)
	if cfg.Optimizer == OptAdam {
		adam := nn.DefaultAdam()
		adam.LR = cfg.LR
		q.opt = nn.NewAdam(q.params, adam)
	} else {
		q.opt = nn.NewRMSProp(q.params, nn.RMSPropConfig{LR: cfg.LR, Alpha: 0.99, Eps: 1e-5})
	}
	q.replay = NewSequenceReplay(cfg.BufferSize, q.state, n, cfg.SeqLen)
	q.sched = schedule{learningStarts: cfg.LearningStarts, trainFreq: cfg.TrainFreq, gradientSteps: cfg.GradientSteps}

	B, L := cfg.BatchSize, cfg.SeqLen
	q.xs, q.nextXs, q.idx = make([][]float32, nets), make([][]float32, nets), make([][]int, nets)
	for i := 0; i < nets; i++ {
		rows := B
		if cfg.ShareParams {
			rows = B * n
			q.masks, q.nextMasks = make([]float32, L*rows), make([]float32, L*rows)
		}
		q.xs[i], q.nextXs[i], q.idx[i] = make([]float32, L*rows*q.inDim[i]), make([]float32, L*rows*q.inDim[i]), make([]int, rows)
	}
	q.qNext, q.y = make([]float32, B*n), make([]float32, B)
	q.uTarget, q.uSelect, q.uOnline = make([]*nn.Node[float32], nets), make([]*nn.Node[float32], nets), make([]*nn.Node[float32], nets)
	q.parts = make([]*nn.Node[float32], nets)
	q.joint, q.jointNext, q.jointAct = make([]float64, q.state), make([]float64, q.state), make([]float64, n)

	q.h = make([]float32, cfg.GRUHidden)
	for i := 0; i < n; i++ {
		q.windows = append(q.windows, NewWindow(L, q.inDim[i]))
		q.q = append(q.q, make([]float32, q.nAct[i]))
		q.act = append(q.act, make([]float64, 1))
	}
	for _, a := range q.agents {
		q.gruPred = append(q.gruPred, a.gru.NewPredictor())
		q.headPred = append(q.headPred, a.head.NewPredictor())
	}
	if cfg.ShareParams {
		q.in = make([]float64, q.inDim[0])
	}
	return q, nil
}

// net returns the index of agent i's network.
func (q *QMIX) net(i int) int {
	if q.Config.ShareParams {
		return 0
	}
	return i
}

// Epsilon returns the current exploration rate: EpsStart falling linearly
// to EpsEnd over the first EpsAnnealSteps observed environment steps.
func (q *QMIX) Epsilon() float64 {
	c := q.Config
	if c.EpsAnnealSteps == 0 || q.sched.steps >= c.EpsAnnealSteps {
		return c.EpsEnd
	}
	return c.EpsStart + (c.EpsEnd-c.EpsStart)*float64(q.sched.steps)/float64(c.EpsAnnealSteps)
}

// ResetEpisode clears the agents' histories and closes the replay's current
// episode; call it at every episode start (TrainCTDE and EvaluateCTDE do).
func (q *QMIX) ResetEpisode() {
	for _, w := range q.windows {
		w.Reset()
	}
	q.replay.EndEpisode()
}

// Act appends obs to the agents' histories and returns every agent's
// action: the greedy one when deterministic, else ε-greedy with the current
// ε (like Explore). Call it once per environment step. It allocates nothing.
func (q *QMIX) Act(obs [][]float64, deterministic bool) [][]float64 {
	eps := 0.0
	if !deterministic {
		eps = q.Epsilon()
	}
	return q.choose(obs, eps)
}

// Explore appends obs to the agents' histories and returns ε-greedy actions.
func (q *QMIX) Explore(obs [][]float64) [][]float64 { return q.choose(obs, q.Epsilon()) }

// choose pushes obs and picks every agent's action ε-greedily.
func (q *QMIX) choose(obs [][]float64, eps float64) [][]float64 {
	if len(obs) != q.n {
		panic(fmt.Sprintf("rl: QMIX: %d observations for %d agents", len(obs), q.n))
	}
	for i, o := range obs {
		if len(o) != q.obsDim[i] {
			panic(fmt.Sprintf("rl: QMIX: agent %d observation of length %d, want %d", i, len(o), q.obsDim[i]))
		}
		w := q.windows[i]
		if q.Config.ShareParams {
			copy(q.in, o)
			clear(q.in[len(o):])
			q.in[len(o)+i] = 1
			w.Push(q.in)
		} else {
			w.Push(o)
		}
		g, hp, in := q.gruPred[q.net(i)], q.headPred[q.net(i)], q.inDim[i]
		clear(q.h)
		for k := 0; k < w.L; k++ {
			if w.Mask[k] != 0 {
				g.Step(q.h, q.h, w.Data[k*in:(k+1)*in])
			}
		}
		hp.Predict(q.q[i], q.h)
		if eps > 0 && q.rng.Float64() < eps {
			q.act[i][0] = float64(q.rng.IntN(q.nAct[i]))
		} else {
			q.act[i][0] = float64(argmax32(q.q[i]))
		}
	}
	return q.act
}

// AgentQ returns agent i's utilities Q_i(τ_i, ·) (one per action) computed
// by the last Act or Explore call. The slice is owned by the learner.
func (q *QMIX) AgentQ(i int) []float32 { return q.q[i] }

// Mixer returns the online mixing network (nil with MixVDN).
func (q *QMIX) Mixer() *Mixer[float32] { return q.mixer }

// Agent returns agent i's GRU encoder and head: for a window of inputs
// (the agent's observation, followed with ShareParams by the one-hot agent
// index) the head maps the GRU's last state (zero initial state, masked steps
// skipped) to one utility per action; the greedy action is the argmax.
// With ShareParams every agent returns the same networks.
func (q *QMIX) Agent(i int) (*nn.GRU[float32], *nn.MLP[float32]) {
	a := q.agents[q.net(i)]
	return a.gru, a.head
}

// Observe stores the joint transition (with the team reward Σ_i rewards[i])
// and runs the scheduled updates. Actions must be members of the agents'
// discrete action spaces.
func (q *QMIX) Observe(obs, acts [][]float64, rewards []float64, next [][]float64, terminated, truncated bool) {
	r := 0.0
	for i := 0; i < q.n; i++ {
		if !q.spec.Action[i].Contains(acts[i]) {
			panic(fmt.Sprintf("rl: QMIX.Observe: agent %d action %v outside %v", i, acts[i], q.spec.Action[i]))
		}
		if len(obs[i]) != q.obsDim[i] || len(next[i]) != q.obsDim[i] {
			panic(fmt.Sprintf("rl: QMIX.Observe: agent %d observations of lengths %d and %d, want %d", i, len(obs[i]), len(next[i]), q.obsDim[i]))
		}
		copy(q.joint[q.obsOff[i]:q.obsOff[i]+q.obsDim[i]], obs[i])
		copy(q.jointNext[q.obsOff[i]:q.obsOff[i]+q.obsDim[i]], next[i])
		q.jointAct[i] = acts[i][0]
		r += rewards[i]
	}
	q.replay.Add(q.joint, q.jointAct, r, q.jointNext, terminated, truncated)
	for k := q.sched.observe(terminated || truncated); k > 0; k-- {
		q.Update()
	}
}

// split copies agent inputs out of time-major joint windows (L blocks of
// B×state) into the per-network buffers xs (and masks with shared
// parameters, rows b·n+i).
func (q *QMIX) split(xs [][]float32, masks []float32, joint, jointMask []float32) {
	B, L, n, S := q.Config.BatchSize, q.Config.SeqLen, q.n, q.state
	for k := 0; k < L; k++ {
		blk := joint[k*B*S : (k+1)*B*S]
		for b := 0; b < B; b++ {
			row := blk[b*S : (b+1)*S]
			for i := 0; i < n; i++ {
				src := row[q.obsOff[i] : q.obsOff[i]+q.obsDim[i]]
				if !q.Config.ShareParams {
					in := q.inDim[i]
					copy(xs[i][(k*B+b)*in:(k*B+b+1)*in], src)
					continue
				}
				in, r := q.inDim[0], b*n+i
				dst := xs[0][(k*B*n+r)*in : (k*B*n+r+1)*in]
				copy(dst, src)
				clear(dst[len(src):])
				dst[len(src)+i] = 1
				masks[k*B*n+r] = jointMask[k*B+b]
			}
		}
	}
}

// utilities records every network's utilities over the windows xs.
// dst (len: the number of networks) receives them and is returned.
func (q *QMIX) utilities(dst []*nn.Node[float32], tp *nn.Tape[float32], nets []*qmixAgent, xs [][]float32, mask []float32) []*nn.Node[float32] {
	B, L := q.Config.BatchSize, q.Config.SeqLen
	out := dst[:len(nets)]
	for i, a := range nets {
		if q.Config.ShareParams {
			out[i] = a.forward(tp, B*q.n, L, xs[i], mask)
		} else {
			out[i] = a.forward(tp, B, L, xs[i], mask)
		}
	}
	return out
}

// Update runs one gradient step on a minibatch of windows and returns its
// TD loss.
func (q *QMIX) Update() float64 {
	cfg := q.Config
	B, L, n, S := cfg.BatchSize, cfg.SeqLen, q.n, q.state
	q.replay.Sample(&q.batch, q.rng, B)
	b := &q.batch
	mask, nextMask := b.Mask, b.NextMask
	if cfg.ShareParams {
		mask, nextMask = q.masks, q.nextMasks
	}
	q.split(q.xs, q.masks, b.Obs, b.Mask)
	q.split(q.nextXs, q.nextMasks, b.NextObs, b.NextMask)

	// Target: y = r + γ (1 − d) Q_tot(τ', u*, s'; θ⁻).
	q.tpT.Reset()
	tpT := &q.tpT
	qTarget := q.utilities(q.uTarget, tpT, q.agentsTarget, q.nextXs, nextMask)
	qSelect := qTarget
	if cfg.DoubleQ {
		qSelect = q.utilities(q.uSelect, tpT, q.agents, q.nextXs, nextMask)
	}
	for bi := 0; bi < B; bi++ {
		for i := 0; i < n; i++ {
			net, row := q.net(i), bi
			if cfg.ShareParams {
				row = bi*n + i
			}
			A := q.nAct[i]
			best := argmax32(qSelect[net].Value.Data[row*A : (row+1)*A])
			q.qNext[bi*n+i] = qTarget[net].Value.Data[row*A+best]
		}
	}
	nextState := b.NextObs[(L-1)*B*S : L*B*S]
	if q.mixer != nil {
		qtot := q.mixerTarget.Forward(tpT, input(tpT, B, n, q.qNext), input(tpT, B, S, nextState))
		for bi := range q.y {
			q.y[bi] = qtot.Value.Data[bi]
		}
	} else {
		for bi := range q.y {
			var s float32
			for _, v := range q.qNext[bi*n : (bi+1)*n] {
				s += v
			}
			q.y[bi] = s
		}
	}
	for bi := range q.y {
		q.y[bi] = b.Reward[bi] + float32(cfg.Gamma)*(1-b.Done[bi])*q.y[bi]
	}

	// TD loss on Q_tot(τ, u, s; θ), backpropagated through mixer, agents and windows.
	for bi := 0; bi < B; bi++ {
		for i := 0; i < n; i++ {
			if cfg.ShareParams {
				q.idx[0][bi*n+i] = int(b.Act[bi*n+i])
			} else {
				q.idx[i][bi] = int(b.Act[bi*n+i])
			}
		}
	}
	q.tpQ.Reset()
	tp := &q.tpQ
	util := q.utilities(q.uOnline, tp, q.agents, q.xs, mask)
	var chosen *nn.Node[float32]
	if cfg.ShareParams {
		chosen = tp.Reshape(tp.Gather(util[0], q.idx[0]), B, n)
	} else {
		for i := range q.parts {
			q.parts[i] = tp.Gather(util[i], q.idx[i])
		}
		chosen = tp.Concat(q.parts...)
	}
	var qtot *nn.Node[float32]
	if q.mixer != nil {
		qtot = q.mixer.Forward(tp, chosen, input(tp, B, S, b.Obs[(L-1)*B*S:L*B*S]))
	} else {
		qtot = tp.RowSum(chosen)
	}
	loss := tp.MSE(qtot, input(tp, B, 1, q.y))
	q.opt.ZeroGrad()
	tp.Backward(loss)
	nn.ClipGradNorm(q.params, cfg.GradClip)
	q.opt.Step()

	q.Updates++
	if q.Updates%cfg.TargetUpdateInterval == 0 {
		nn.HardCopy(q.targetParams, q.params)
	}
	q.Loss = float64(loss.Value.Data[0])
	return q.Loss
}

// argmax32 returns the index of the largest value (the first on ties).
func argmax32(x []float32) int {
	k := 0
	for j, v := range x {
		if v > x[k] {
			k = j
		}
	}
	return k
}

func abs[T nn.Float](x T) T {
	if x < 0 {
		return -x
	}
	return x
}

// expm1 is e^x − 1 in T's precision.
func expm1[T nn.Float](x T) T { return T(math.Expm1(float64(x))) }

var _ MultiLearner = (*QMIX)(nil)
