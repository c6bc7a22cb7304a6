// Package venv learns a virtual environment from logged transitions: a
// model of what follows a state and an action (the next state and the
// step's outcome), so that policies can be trained in it without touching
// the real system. It knows nothing of any world: any log of (state,
// action, next state, outcome) vectors will do.
//
// Training follows the edge scheduling paper's MAIL-MMSG (section 3.4)
// after Virtual-Taobao: a Gaussian transition model is first fitted by
// maximum likelihood (the environment's behaviour cloning), then trained
// adversarially against a GAIL discriminator (a 4-layer network on the
// transition, Eq. 5) on rollouts of Horizon steps from logged states under
// the logged actions, so that whole trajectories, not single steps, match
// the log's distribution (Xu et al. 2020: compound error linear, not
// quadratic, in the horizon). The adversarial updates keep the logged
// steps' likelihood in the loss, as GAIL policies are often kept near
// behaviour cloning: alone, the adversarial phase drifted a known system's
// 10-step rollouts (their second moment 0.41 against the system's 0.28);
// anchored, it stays at 0.27. (Eq. 8's lambda-penalty is the policy's, in
// its training, not the environment's.)
package venv

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/nn"
)

// Transition is one logged step.
type Transition struct {
	State, Action, Next, Outcome []float64
}

// Config configures training.
type Config struct {
	Hidden      int `json:"hidden"`      // units of the model's two hidden layers (default 128)
	MLEEpochs   int `json:"mle_epochs"`  // maximum-likelihood epochs (default 30)
	Adversarial int `json:"adversarial"` // adversarial updates (default 500; 0: none)
	Horizon     int `json:"horizon"`     // rollout length of the adversarial phase (default 5)
	Batch       int `json:"batch"`       // rows per batch (default 64)
	// Models is the ensemble's size (TrainEnsemble; default 1): members
	// differ in their seeds, so they agree where the log holds them and
	// disagree where it does not.
	Models int    `json:"models,omitempty"`
	Seed   uint64 `json:"seed"`
}

// DefaultConfig is the paper's setting where it gives one (the 4-layer
// discriminator) and Shoal's elsewhere.
func DefaultConfig() Config {
	return Config{Hidden: 128, MLEEpochs: 30, Adversarial: 500, Horizon: 5, Batch: 64, Models: 1, Seed: 1}
}

// Model is a learned transition model.
type Model struct {
	net          *nn.MLP[float32] // [state, action] -> mean and log-std of [next, outcome]
	in, out      nn.Scaler
	states, outs int
	pred         *nn.MLPPredictor[float32]
	x, y         []float32
}

// Train learns a model from logged transitions. Consecutive transitions
// of one trajectory must follow each other in data (Next of one is State
// of the next) for the adversarial rollouts; a trajectory ends where they
// do not.
func Train(data []Transition, cfg Config) (*Model, error) {
	if len(data) < 2 {
		return nil, fmt.Errorf("venv: %d transitions: too few", len(data))
	}
	def := DefaultConfig()
	cfg.Hidden, cfg.Batch, cfg.Horizon = cmp.Or(cfg.Hidden, def.Hidden), cmp.Or(cfg.Batch, def.Batch), cmp.Or(cfg.Horizon, def.Horizon)
	ds, da, dn, do := len(data[0].State), len(data[0].Action), len(data[0].Next), len(data[0].Outcome)
	if dn != ds {
		return nil, fmt.Errorf("venv: next states of %d values for states of %d", dn, ds)
	}
	var ins, outs [][]float64
	for i, t := range data {
		if len(t.State) != ds || len(t.Action) != da || len(t.Next) != dn || len(t.Outcome) != do {
			return nil, fmt.Errorf("venv: transition %d has another shape than the first", i)
		}
		ins = append(ins, concat(t.State, t.Action))
		outs = append(outs, concat(t.Next, t.Outcome))
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x76656e76))
	m := &Model{in: nn.FitScaler(ins), out: nn.FitScaler(outs), states: ds, outs: do}
	w := dn + do
	m.net = nn.NewMLP[float32](rng, "venv", []int{ds + da, cfg.Hidden, cfg.Hidden, 2 * w}, nn.ReLU, nn.Identity)
	tr := &trainer{m: m, cfg: cfg, rng: rng, w: w, da: da}
	for i := range data {
		x := toF32(m.in.Apply(nil, ins[i]))
		tr.x, tr.act = append(tr.x, x), append(tr.act, x[ds:])
		tr.y = append(tr.y, toF32(m.out.Apply(nil, outs[i])))
	}
	tr.chains(data)
	opt := nn.NewAdam(m.net.Params(), nn.AdamConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
	for range cfg.MLEEpochs {
		tr.mleEpoch(opt)
	}
	if cfg.Adversarial > 0 {
		tr.adversarial()
	}
	m.pred = m.net.NewPredictor()
	return m, nil
}

func concat(a, b []float64) []float64 { return append(append([]float64(nil), a...), b...) }

func toF32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

type trainer struct {
	m      *Model
	cfg    Config
	rng    *rand.Rand
	w, da  int
	x, y   [][]float32 // standardised inputs and targets
	act    [][]float32 // standardised actions
	starts []int       // transitions with Horizon successors in their trajectory
	tape   nn.Tape[float32]
}

// chains finds the transitions from which Horizon logged steps follow.
func (t *trainer) chains(data []Transition) {
	run := make([]int, len(data)) // steps of the trajectory from i on
	for i := len(data) - 1; i >= 0; i-- {
		run[i] = 1
		if i+1 < len(data) && same(data[i].Next, data[i+1].State) {
			run[i] = run[i+1] + 1
		}
	}
	for i, r := range run {
		if r >= t.cfg.Horizon {
			t.starts = append(t.starts, i)
		}
	}
}

func same(a, b []float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// mleEpoch maximises the Gaussian likelihood of the logged outputs.
func (t *trainer) mleEpoch(opt nn.Optimizer[float32]) {
	perm := t.rng.Perm(len(t.x))
	for at := 0; at < len(perm); at += t.cfg.Batch {
		rows := perm[at:min(at+t.cfg.Batch, len(perm))]
		t.tape.Reset()
		x := t.rows(t.x, rows)
		y := t.rows(t.y, rows)
		mu, logStd := t.gaussian(x)
		loss := t.tape.Scale(t.tape.Mean(t.tape.GaussianLogProb(y, mu, logStd)), -1)
		opt.ZeroGrad()
		t.tape.Backward(loss)
		opt.Step()
	}
}

func (t *trainer) rows(src [][]float32, idx []int) *nn.Node[float32] {
	d := len(src[0])
	n := t.tape.Input(len(idx), d)
	for r, i := range idx {
		copy(n.Value.Data[r*d:(r+1)*d], src[i])
	}
	return n
}

// gaussian records the model's mean and log-std (clipped to [-5, 2]).
func (t *trainer) gaussian(x *nn.Node[float32]) (mu, logStd *nn.Node[float32]) {
	out := t.m.net.Forward(&t.tape, x)
	return t.tape.SliceCols(out, 0, t.w), t.tape.Clip(t.tape.SliceCols(out, t.w, 2*t.w), -5, 2)
}

// adversarial trains the model against a discriminator of logged and
// rolled-out transitions (reparameterised samples, so the discriminator's
// gradient reaches the model through the rollout).
func (t *trainer) adversarial() {
	if len(t.starts) == 0 {
		return
	}
	ds, b := t.m.states, t.cfg.Batch
	disc := nn.NewMLP[float32](t.rng, "disc", []int{ds + t.da + t.w, 64, 64, 64, 1}, nn.LeakyReLU, nn.Identity)
	dOpt := nn.NewAdam(disc.Params(), nn.AdamConfig{LR: 1e-4, Beta1: 0.5, Beta2: 0.999, Eps: 1e-8})
	gOpt := nn.NewAdam(t.m.net.Params(), nn.AdamConfig{LR: 1e-4, Beta1: 0.5, Beta2: 0.999, Eps: 1e-8})
	starts := make([]int, b)
	idx := make([]int, b)
	for range t.cfg.Adversarial {
		for i := range starts {
			starts[i] = t.starts[t.rng.IntN(len(t.starts))]
		}
		for _, gen := range []bool{false, true} {
			t.tape.Reset()
			scaleA, scaleB := t.feedback(b)
			state := t.tape.SliceCols(t.rows(t.x, starts), 0, ds)
			var loss *nn.Node[float32]
			for h := range t.cfg.Horizon {
				for i, s := range starts {
					idx[i] = s + h
				}
				act := t.rows(t.act, idx)
				mu, logStd := t.gaussian(t.tape.Concat(state, act))
				eps := t.tape.Input(b, t.w)
				for i := range eps.Value.Data {
					eps.Value.Data[i] = float32(t.rng.NormFloat64())
				}
				sample := t.tape.Add(mu, t.tape.Mul(t.tape.Exp(logStd), eps))
				fake := t.tape.Concat(state, act, sample)
				if !gen {
					fake = t.tape.Const(fake.Value)
				}
				df := disc.Forward(&t.tape, fake)
				var step *nn.Node[float32]
				if gen { // fool the discriminator: the reward -log D of Eq. 5
					step = t.tape.Mean(t.tape.Softplus(t.tape.Scale(df, -1)))
				} else {
					real := t.tape.Concat(t.tape.SliceCols(t.rows(t.x, idx), 0, ds), act, t.rows(t.y, idx))
					dr := disc.Forward(&t.tape, real)
					step = t.tape.Add(t.tape.Mean(t.tape.Softplus(t.tape.Scale(dr, -1))), t.tape.Mean(t.tape.Softplus(df)))
				}
				if loss == nil {
					loss = step
				} else {
					loss = t.tape.Add(loss, step)
				}
				// The next state, from the outputs' standardisation to the inputs'.
				state = t.tape.Add(t.tape.Mul(t.tape.SliceCols(sample, 0, ds), scaleA), scaleB)
			}
			loss = t.tape.Scale(loss, 1/float32(t.cfg.Horizon))
			if gen { // the likelihood of the logged steps keeps the model on the log (as BC does a GAIL policy)
				mu, logStd := t.gaussian(t.rows(t.x, starts))
				nll := t.tape.Scale(t.tape.Mean(t.tape.GaussianLogProb(t.rows(t.y, starts), mu, logStd)), -1)
				loss = t.tape.Add(loss, nll)
			}
			o := nn.Optimizer[float32](dOpt)
			if gen {
				o = gOpt
			}
			o.ZeroGrad()
			t.tape.Backward(loss)
			o.Step()
		}
	}
}

// feedback returns the constants that turn a standardised next state into
// a standardised state input: x = y*a + c per column.
func (t *trainer) feedback(rows int) (a, c *nn.Node[float32]) {
	ds := t.m.states
	a, c = t.tape.Input(rows, ds), t.tape.Input(rows, ds)
	for i := range rows {
		for j := range ds {
			a.Value.Data[i*ds+j] = float32(t.m.out.Std[j] / t.m.in.Std[j])
			c.Value.Data[i*ds+j] = float32((t.m.out.Mean[j] - t.m.in.Mean[j]) / t.m.in.Std[j])
		}
	}
	return a, c
}

// Step samples what follows state under action: the next state and the
// step's outcome, in the log's units.
func (m *Model) Step(state, action []float64, rng *rand.Rand) (next, outcome []float64) {
	m.predict(state, action)
	return m.sample(rng)
}

// predict runs the network on state and action: m.y holds the outputs'
// standardised means, then their log-stds. It allocates nothing once
// warm: an ensemble runs it for every member at every step.
func (m *Model) predict(state, action []float64) {
	m.x = m.x[:0]
	for i, v := range state {
		m.x = append(m.x, float32((v-m.in.Mean[i])/m.in.Std[i]))
	}
	for i, v := range action {
		k := len(state) + i
		m.x = append(m.x, float32((v-m.in.Mean[k])/m.in.Std[k]))
	}
	m.y = m.pred.Predict(m.y, m.x)
}

// sample draws the outputs of the last predict, in the log's units.
func (m *Model) sample(rng *rand.Rand) (next, outcome []float64) {
	w := len(m.y) / 2
	out := make([]float64, w)
	for j := range w {
		ls := min(max(float64(m.y[w+j]), -5), 2)
		// Within 10 deviations of the log's values: beyond, a Gaussian's
		// tail is no prediction.
		out[j] = m.out.Invert(j, min(max(float64(m.y[j])+math.Exp(ls)*rng.NormFloat64(), -10), 10))
	}
	return out[:m.states], out[m.states:]
}
