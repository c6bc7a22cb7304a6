package rl

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/nn"
)

// ChoiceConfig configures a Choice.
type ChoiceConfig struct {
	Hidden []int   // the scorer's hidden layers
	LR     float64 // Adam's learning rate
	Clip   float64 // PPO's ratio clip ε
	Epochs int     // passes over each update's samples
	Batch  int     // minibatch size
}

// DefaultChoiceConfig is a small scorer with PPO's usual clip.
func DefaultChoiceConfig() ChoiceConfig {
	return ChoiceConfig{Hidden: []int{32, 32}, LR: 3e-4, Clip: 0.2, Epochs: 4, Batch: 256}
}

// Choice is a stochastic policy over a varying set of at most K
// candidates, each described by F features: one MLP scores every
// candidate, and the choice is drawn from the softmax of the scores. It
// A prior per candidate (fixed, not learned) may be added to its score,
// so that learning starts from a known rule and learns a correction. It
// learns as a contextual bandit: each choice's advantage is its own
// outcome's, and Update takes PPO's clipped steps (Schulman et al. 2017,
// eq. 7) on them.
type Choice struct {
	K, F int
	cfg  ChoiceConfig
	net  *nn.MLP[float32]
	pred *nn.MLPPredictor[float32]
	opt  *nn.Adam[float32]
	rng  *rand.Rand
	tp   nn.Tape[float32]
	x    []float32 // one candidate's features
	s    []float64 // the candidates' scores
	y    []float32
	pick []int
}

// NewChoice returns a policy over k candidates of f features, its scores
// starting near equal.
func NewChoice(k, f int, cfg ChoiceConfig, rng *rand.Rand) (*Choice, error) {
	if k < 1 || f < 1 || cfg.LR <= 0 || cfg.Clip <= 0 || cfg.Epochs < 1 || cfg.Batch < 1 {
		return nil, fmt.Errorf("rl: choice: k %d, f %d, lr %g, clip %g, epochs %d, batch %d: all must be positive", k, f, cfg.LR, cfg.Clip, cfg.Epochs, cfg.Batch)
	}
	c := &Choice{K: k, F: f, cfg: cfg, rng: rng, net: newMLP(rng, "choice", f, cfg.Hidden, 1, nn.Tanh, nn.Identity)}
	last := c.net.Layers[len(c.net.Layers)-1]
	for i := range last.W.Value.Data {
		last.W.Value.Data[i] *= 0.01
	}
	adam := nn.DefaultAdam()
	adam.LR = cfg.LR
	c.opt = nn.NewAdam(c.net.Params(), adam)
	c.pred = c.net.NewPredictor()
	c.x, c.s, c.y = make([]float32, f), make([]float64, k), make([]float32, 1)
	return c, nil
}

// Params are the scorer's weights (to save and load them).
func (c *Choice) Params() []*nn.Node[float32] { return c.net.Params() }

// Choose draws one of the n candidates whose features are feats (n rows
// of F) and whose priors are prior (nil: none), or takes the best scored
// when deterministic, and returns it with its log-probability. It
// allocates nothing.
func (c *Choice) Choose(feats, prior []float64, n int, deterministic bool) (int, float64) {
	top := math.Inf(-1)
	for j := range n {
		for i, v := range feats[j*c.F : (j+1)*c.F] {
			c.x[i] = float32(v)
		}
		c.s[j] = float64(c.pred.Predict(c.y, c.x)[0])
		if prior != nil {
			c.s[j] += prior[j]
		}
		top = max(top, c.s[j])
	}
	sum := 0.0
	for j := range n {
		sum += math.Exp(c.s[j] - top)
	}
	lse := top + math.Log(sum)
	k := 0
	if deterministic {
		for j := range n {
			if c.s[j] > c.s[k] {
				k = j
			}
		}
		return k, c.s[k] - lse
	}
	u, k := c.rng.Float64(), n-1
	for j := range n {
		if u -= math.Exp(c.s[j] - lse); u < 0 {
			k = j
			break
		}
	}
	return k, c.s[k] - lse
}

// ChoiceSample is one finished choice: its candidates' features (N rows of
// F) and priors (nil: none), the pick, its log-probability when drawn, and
// its advantage.
type ChoiceSample struct {
	Feats   []float64
	Prior   []float64
	N, Pick int
	LogProb float64
	Adv     float64
}

// Update takes Epochs passes of clipped policy-gradient steps over the
// samples, in minibatches of Batch.
func (c *Choice) Update(samples []ChoiceSample) {
	idx := make([]int, len(samples))
	for i := range idx {
		idx[i] = i
	}
	for range c.cfg.Epochs {
		c.rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		for start := 0; start < len(idx); start += c.cfg.Batch {
			c.step(samples, idx[start:min(start+c.cfg.Batch, len(idx))])
		}
	}
}

// step is one Adam step on the minibatch's clipped surrogate.
func (c *Choice) step(samples []ChoiceSample, batch []int) {
	tp := &c.tp
	logp := c.logProbs(samples, batch)
	old, adv := tp.Input(len(batch), 1), tp.Input(len(batch), 1)
	for r, i := range batch {
		old.Value.Data[r], adv.Value.Data[r] = float32(samples[i].LogProb), float32(samples[i].Adv)
	}
	ratio := tp.Exp(tp.Sub(logp, old))
	clip := float32(c.cfg.Clip)
	surr := tp.Min(tp.Mul(ratio, adv), tp.Mul(tp.Clip(ratio, 1-clip, 1+clip), adv))
	c.descend(tp.Scale(tp.Mean(surr), -1))
}

// logProbs records, on a reset tape, the log-probability of each
// minibatch sample's pick: the candidates past a sample's N are masked
// out of its softmax.
func (c *Choice) logProbs(samples []ChoiceSample, batch []int) *nn.Node[float32] {
	b, k, f := len(batch), c.K, c.F
	c.tp.Reset()
	tp := &c.tp
	x, mask := tp.Input(b*k, f), tp.Input(b, k)
	c.pick = c.pick[:0]
	for r, i := range batch {
		s := &samples[i]
		for j := range k {
			if j >= s.N {
				mask.Value.Data[r*k+j] = -1e4
				continue
			}
			if s.Prior != nil {
				mask.Value.Data[r*k+j] = float32(s.Prior[j])
			}
			for q := range f {
				x.Value.Data[(r*k+j)*f+q] = float32(s.Feats[j*f+q])
			}
		}
		c.pick = append(c.pick, s.Pick)
	}
	scores := tp.Add(tp.Reshape(c.net.Forward(tp, x), b, k), mask)
	return tp.Gather(tp.LogSoftmax(scores), c.pick)
}

// descend takes one Adam step down loss, the gradient's norm clipped.
func (c *Choice) descend(loss *nn.Node[float32]) {
	c.opt.ZeroGrad()
	c.tp.Backward(loss)
	nn.ClipGradNorm(c.net.Params(), 0.5)
	c.opt.Step()
}

// Imitate is behaviour cloning: epochs passes of minibatch steps of the
// logged picks' cross-entropy (their advantages and log-probabilities
// unused). It returns the last pass's mean negative log-likelihood.
func (c *Choice) Imitate(samples []ChoiceSample, epochs int) float64 {
	idx := make([]int, len(samples))
	for i := range idx {
		idx[i] = i
	}
	nll := 0.0
	for range epochs {
		c.rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		nll = 0
		for start := 0; start < len(idx); start += c.cfg.Batch {
			batch := idx[start:min(start+c.cfg.Batch, len(idx))]
			loss := c.tp.Scale(c.tp.Mean(c.logProbs(samples, batch)), -1)
			nll += float64(loss.Value.Data[0]) * float64(len(batch))
			c.descend(loss)
		}
		nll /= float64(max(len(idx), 1))
	}
	return nll
}
