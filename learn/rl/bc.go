package rl

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/nn"
)

// Behaviour cloning: supervised learning of a policy from expert
// state-action pairs (Pomerleau 1991; Bain & Sammut 1995). For box actions
// the policy is tanh-squashed and fitted by mean squared error to the
// expert actions mapped to [-1, 1]; for discrete actions it is a
// categorical policy fitted by cross-entropy (maximum likelihood):
//
//	box:       L(φ) = E_{(s,a)~D} ‖tanh(f_φ(s)) − a‖²
//	discrete:  L(φ) = −E_{(s,a)~D} log softmax(f_φ(s))_a

// BCConfig holds behaviour cloning's hyperparameters.
type BCConfig struct {
	Hidden    []int   // hidden widths (64, 64)
	LR        float64 // Adam step size (1e-3)
	BatchSize int     // minibatch size (64)
	Epochs    int     // passes over the data set per Fit (20)
}

// DefaultBCConfig returns small-network defaults suited to low-dimensional
// control tasks.
func DefaultBCConfig() BCConfig {
	return BCConfig{Hidden: []int{64, 64}, LR: 1e-3, BatchSize: 64, Epochs: 20}
}

// Validate reports the first invalid field.
func (c BCConfig) Validate() error {
	switch {
	case len(c.Hidden) == 0:
		return errors.New("hidden: need at least one hidden layer")
	case c.LR <= 0:
		return fmt.Errorf("lr: must be > 0, got %v", c.LR)
	case c.BatchSize < 1 || c.Epochs < 1:
		return fmt.Errorf("batch_size, epochs: must be >= 1, got %d, %d", c.BatchSize, c.Epochs)
	}
	return nil
}

// BC is a behaviour-cloning policy.
type BC struct {
	Config   BCConfig
	spec     Spec
	rng      *rand.Rand
	discrete bool
	scale    actionScale
	obsDim   int
	outDim   int

	net  *nn.MLP[float32]
	opt  *nn.Adam[float32]
	tp   nn.Tape[float32]
	pred *nn.MLPPredictor[float32]

	xb, yb     []float32
	idx        []int
	obs32, out []float32
	act        []float64
}

// NewBC returns an untrained behaviour-cloning policy for spec.
func NewBC(spec Spec, cfg BCConfig, rng *rand.Rand) (*BC, error) {
	b, outAct, err := newBC(spec, cfg, rng)
	if err != nil {
		return nil, err
	}
	return b.withNet(newMLP(rng, "bc", b.obsDim, cfg.Hidden, b.outDim, nn.ReLU, outAct)), nil
}

// NewBCOn returns a behaviour-cloning learner that trains net, an existing
// policy network of spec's shape (tanh output for box actions), for example
// a deployed student refreshed on new expert data.
func NewBCOn(spec Spec, cfg BCConfig, net *nn.MLP[float32], rng *rand.Rand) (*BC, error) {
	b, _, err := newBC(spec, cfg, rng)
	if err != nil {
		return nil, err
	}
	if net.In() != b.obsDim || net.Out() != b.outDim {
		return nil, fmt.Errorf("new bc: network %d -> %d, spec wants %d -> %d", net.In(), net.Out(), b.obsDim, b.outDim)
	}
	return b.withNet(net), nil
}

// newBC is a learner for spec without its network, and the network's
// output activation.
func newBC(spec Spec, cfg BCConfig, rng *rand.Rand) (*BC, nn.Activation, error) {
	if err := cfg.Validate(); err != nil {
		return nil, 0, fmt.Errorf("new bc: %w", err)
	}
	b := &BC{Config: cfg, spec: spec, rng: rng, discrete: spec.Action.IsDiscrete(), obsDim: spec.Observation.Dim()}
	if b.discrete {
		b.outDim = spec.Action.N
		return b, nn.Identity, nil
	}
	var err error
	if b.scale, err = newActionScale(spec.Action); err != nil {
		return nil, 0, fmt.Errorf("new bc: %w", err)
	}
	b.outDim = spec.Action.Dim()
	return b, nn.Tanh, nil
}

func (b *BC) withNet(net *nn.MLP[float32]) *BC {
	b.net = net
	adam := nn.DefaultAdam()
	adam.LR = b.Config.LR
	b.opt = nn.NewAdam(b.net.Params(), adam)
	b.pred = b.net.NewPredictor()
	b.obs32, b.out = make([]float32, b.obsDim), make([]float32, b.outDim)
	b.act = make([]float64, b.spec.Action.Dim())
	return b
}

// Fit trains on the data set of expert observations obs[i] and actions
// act[i] (environment units) for Config.Epochs epochs of shuffled
// minibatches, and returns the mean loss of the last epoch. It may be
// called again with more data (DAgger-style aggregation).
func (b *BC) Fit(obs, act [][]float64) (float64, error) {
	if len(obs) != len(act) || len(obs) == 0 {
		return 0, fmt.Errorf("bc fit: %d observations and %d actions", len(obs), len(act))
	}
	cfg := b.Config
	n := len(obs)
	b.idx = b.idx[:0]
	for i := 0; i < n; i++ {
		b.idx = append(b.idx, i)
	}
	ydim := b.outDim
	if b.discrete {
		ydim = 1
	}
	unit := make([]float64, b.spec.Action.Dim())
	labels := make([]int, 0, cfg.BatchSize)
	var epochLoss float64
	for ep := 0; ep < cfg.Epochs; ep++ {
		b.rng.Shuffle(n, func(i, j int) { b.idx[i], b.idx[j] = b.idx[j], b.idx[i] })
		epochLoss = 0
		batches := 0
		for start := 0; start < n; start += cfg.BatchSize {
			ids := b.idx[start:min(start+cfg.BatchSize, n)]
			B := len(ids)
			b.xb = grow(b.xb, B*b.obsDim)
			b.yb = grow(b.yb, B*ydim)
			labels = labels[:0]
			for k, i := range ids {
				if len(obs[i]) != b.obsDim || len(act[i]) != b.spec.Action.Dim() {
					return 0, fmt.Errorf("bc fit: sample %d has %d observation and %d action values", i, len(obs[i]), len(act[i]))
				}
				put(b.xb[k*b.obsDim:(k+1)*b.obsDim], obs[i])
				if b.discrete {
					labels = append(labels, int(act[i][0]))
				} else {
					b.scale.toUnit(unit, act[i])
					for j, u := range unit {
						b.yb[k*ydim+j] = float32(math.Min(math.Max(u, -1), 1))
					}
				}
			}
			b.tp.Reset()
			tp := &b.tp
			out := b.net.Forward(tp, input(tp, B, b.obsDim, b.xb))
			var loss *nn.Node[float32]
			if b.discrete {
				loss = tp.Scale(tp.Mean(tp.Gather(tp.LogSoftmax(out), labels)), -1)
			} else {
				loss = tp.MSE(out, input(tp, B, ydim, b.yb))
			}
			b.opt.ZeroGrad()
			tp.Backward(loss)
			b.opt.Step()
			epochLoss += float64(loss.Scalar())
			batches++
		}
		epochLoss /= float64(batches)
	}
	return epochLoss, nil
}

// Act returns the cloned policy's action: the argmax (deterministic) or a
// softmax sample for discrete actions; the scaled tanh output for box
// actions (deterministic either way). It allocates nothing.
func (b *BC) Act(obs []float64, deterministic bool) []float64 {
	for i, v := range obs {
		b.obs32[i] = float32(v)
	}
	b.pred.Predict(b.out, b.obs32)
	if !b.discrete {
		b.scale.toEnv(b.act, b.out)
		return b.act
	}
	k := 0
	if deterministic {
		for j, v := range b.out {
			if v > b.out[k] {
				k = j
			}
		}
	} else {
		lse := logSumExp32(b.out)
		u := b.rng.Float64()
		k = len(b.out) - 1
		for j, v := range b.out {
			u -= math.Exp(float64(v) - lse)
			if u < 0 {
				k = j
				break
			}
		}
	}
	b.act[0] = float64(k)
	return b.act
}

// Net returns the cloned policy network (logits, or tanh outputs in [-1, 1]
// units), e.g. to save it with nn.SaveModule.
func (b *BC) Net() *nn.MLP[float32] { return b.net }
