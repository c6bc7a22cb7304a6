// Package gan learns to generate tabular rows (continuous columns and one
// categorical column) like a data set's: a plain GAN (Goodfellow et al.
// 2014, the non-saturating generator loss), a WGAN (Arjovsky et al. 2017:
// a critic with clipped weights, RMSProp, five critic steps per generator
// step), and the edge scheduling paper's GAN-SMMSG (Algorithm 1, Eq. 3
// and 4): the GAN's generator also maximises the entropy of the generated
// group's distribution V and minimises KL(V(real) || V(generated)), so it
// learns the distribution of a group, not only of single instances.
//
// V is the paper's "variable associated with internal value": here, per
// column, the batch's soft histogram over fixed bins (each value spread
// over the bins by a Gaussian kernel), and the categorical column's class
// frequencies. KL on those is what Table 1 measures, per column.
package gan

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/nn"
)

// Kind is the training method.
type Kind string

// The methods.
const (
	GAN   Kind = "gan"
	WGAN  Kind = "wgan"
	SMMSG Kind = "gan-smmsg"
)

// Config configures training.
type Config struct {
	Kind   Kind
	Noise  int // generator input size (default 16)
	Hidden int // units of the two hidden layers of both networks (default 64)
	Steps  int // generator updates (default 6000)
	Batch  int // rows per batch (default 128)
	// Alpha and Beta weigh GAN-SMMSG's entropy and KL terms. The paper's
	// experiments use 1 and 1; the default Alpha is 0.1, because the
	// entropy of V at full weight pulls every histogram toward uniform,
	// away from the real one (the edge devices' KL: 0.03-0.06 per measure
	// at 1, 0.002-0.003 at 0.1, on validation logs).
	Alpha, Beta float64
	// Bins is the number of bins of a column's histogram (default 20),
	// over the standardised range [-3, 3].
	Bins int
	// Scaling is how continuous columns reach the networks: "standard"
	// (mean and deviation; empty means this) or "quantile" (through each
	// column's empirical distribution onto a standard normal; the
	// DefaultConfig's).
	Scaling string
	// Temperature, when positive, makes the generated class a
	// Gumbel-softmax sample at that temperature (Jang et al. 2017), close
	// to one-hot as the real rows' classes are; 0: the softmax
	// probabilities themselves.
	Temperature float64
	Seed        uint64
}

// The scalings.
const (
	Standard = "standard"
	Quantile = "quantile"
)

// DefaultConfig returns the defaults for kind: quantile scaling and a
// Gumbel-softmax class at temperature 0.3 for every kind (chosen on the
// edge devices' validation logs: the standard scaling left the GANs' KL
// at 0.1 per measure, and the softmax class let the discriminator tell
// generated rows by their class column alone).
func DefaultConfig(kind Kind) Config {
	return Config{Kind: kind, Noise: 16, Hidden: 64, Steps: 6000, Batch: 128, Alpha: 0.1, Beta: 1, Bins: 20, Scaling: Quantile,
		Temperature: 0.3, Seed: 1}
}

// Data is a table: Cont[i] the continuous values of row i, Class[i] its
// class in [0, Classes).
type Data struct {
	Cont    [][]float64
	Class   []int
	Classes int
}

// Model generates rows.
type Model struct {
	gen     *nn.MLP[float32]
	scale   nn.Scaler  // of the continuous columns, with Standard
	quant   *quantiles // with Quantile
	cont    int
	classes int
	noise   int
	rng     *rand.Rand
}

// Train fits a generator to data by cfg's method.
func Train(data Data, cfg Config) (*Model, error) {
	if cfg.Kind != GAN && cfg.Kind != WGAN && cfg.Kind != SMMSG {
		return nil, fmt.Errorf("gan: unknown kind %q (want gan, wgan or gan-smmsg)", cfg.Kind)
	}
	if cfg.Scaling == "" {
		cfg.Scaling = Standard
	}
	if cfg.Scaling != Standard && cfg.Scaling != Quantile {
		return nil, fmt.Errorf("gan: unknown scaling %q (want %s or %s)", cfg.Scaling, Standard, Quantile)
	}
	if !(cfg.Temperature >= 0) {
		return nil, fmt.Errorf("gan: temperature %g, want >= 0", cfg.Temperature)
	}
	def := DefaultConfig(cfg.Kind)
	cfg.Noise, cfg.Hidden, cfg.Steps = cmp.Or(cfg.Noise, def.Noise), cmp.Or(cfg.Hidden, def.Hidden), cmp.Or(cfg.Steps, def.Steps)
	cfg.Batch, cfg.Bins = cmp.Or(cfg.Batch, def.Batch), cmp.Or(cfg.Bins, def.Bins)
	n := len(data.Cont)
	if n < 2 || len(data.Class) != n || data.Classes < 1 {
		return nil, fmt.Errorf("gan: %d rows, %d classes, %d classes given: want at least 2 rows, a class per row and a class", n, len(data.Class), data.Classes)
	}
	d := len(data.Cont[0])
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x67616e))
	m := &Model{cont: d, classes: data.Classes, noise: cfg.Noise, rng: rng}
	if cfg.Scaling == Quantile {
		q := fitQuantiles(data.Cont)
		m.quant = &q
	} else {
		m.scale = nn.FitScaler(data.Cont)
	}
	real := make([][]float32, n) // scaled continuous columns, then the class one-hot
	for i, row := range data.Cont {
		r := make([]float32, d+data.Classes)
		for j, v := range row {
			r[j] = float32(m.forward(j, v))
		}
		r[d+data.Class[i]] = 1
		real[i] = r
	}
	width := d + data.Classes
	m.gen = nn.NewMLP[float32](rng, "gen", []int{cfg.Noise, cfg.Hidden, cfg.Hidden, width}, nn.ReLU, nn.Identity)
	disc := nn.NewMLP[float32](rng, "disc", []int{width, cfg.Hidden, cfg.Hidden, 1}, nn.LeakyReLU, nn.Identity)
	t := &trainer{m: m, disc: disc, real: real, cfg: cfg, width: width}
	t.histogramBins()
	switch cfg.Kind {
	case GAN, SMMSG:
		t.gOpt = nn.NewAdam(m.gen.Params(), nn.AdamConfig{LR: 2e-4, Beta1: 0.5, Beta2: 0.999, Eps: 1e-8})
		t.dOpt = nn.NewAdam(disc.Params(), nn.AdamConfig{LR: 2e-4, Beta1: 0.5, Beta2: 0.999, Eps: 1e-8})
		for range cfg.Steps {
			t.discStep(false)
			t.genStep()
		}
	case WGAN:
		t.gOpt = nn.NewRMSProp(m.gen.Params(), nn.RMSPropConfig{LR: 5e-5, Alpha: 0.99, Eps: 1e-8})
		t.dOpt = nn.NewRMSProp(disc.Params(), nn.RMSPropConfig{LR: 5e-5, Alpha: 0.99, Eps: 1e-8})
		for range cfg.Steps {
			for range 5 {
				t.discStep(true)
			}
			t.genStep()
		}
	}
	return m, nil
}

type trainer struct {
	m         *Model
	disc      *nn.MLP[float32]
	real      [][]float32
	cfg       Config
	width     int
	gOpt      nn.Optimizer[float32]
	dOpt      nn.Optimizer[float32]
	tape      nn.Tape[float32]
	centres   []float32 // the bin centres over the standardised range
	kernelInv float64
}

func (t *trainer) histogramBins() {
	k := t.cfg.Bins
	t.centres = make([]float32, k)
	for c := range k {
		t.centres[c] = float32(-3 + 6*(float64(c)+0.5)/float64(k))
	}
	h := 6 / float64(k) // the kernel's width: one bin
	t.kernelInv = 1 / (2 * h * h)
}

// batch fills a tape input with a random batch of real rows.
func (t *trainer) batch() *nn.Node[float32] {
	x := t.tape.Input(t.cfg.Batch, t.width)
	for i := range t.cfg.Batch {
		copy(x.Value.Data[i*t.width:(i+1)*t.width], t.real[t.m.rng.IntN(len(t.real))])
	}
	return x
}

// generated records the generator on a batch of noise.
func (t *trainer) generated() *nn.Node[float32] {
	z := t.tape.Input(t.cfg.Batch, t.m.noise)
	for i := range z.Value.Data {
		z.Value.Data[i] = float32(t.m.rng.NormFloat64())
	}
	out := t.m.gen.Forward(&t.tape, z)
	d := t.m.cont
	logits := t.tape.SliceCols(out, d, t.width)
	if tau := t.cfg.Temperature; tau > 0 { // Gumbel-softmax: softmax((logits + g) / tau)
		g := t.tape.Input(t.cfg.Batch, t.m.classes)
		for i := range g.Value.Data {
			g.Value.Data[i] = float32(-math.Log(-math.Log(max(t.m.rng.Float64(), 1e-12))))
		}
		logits = t.tape.Scale(t.tape.Add(logits, g), float32(1/tau))
	}
	return t.tape.Concat(t.tape.SliceCols(out, 0, d), t.tape.Softmax(logits))
}

// discStep updates the discriminator (Eq. 3; for the WGAN the critic's
// Wasserstein estimate, then weight clipping at 0.01).
func (t *trainer) discStep(wasserstein bool) {
	t.tape.Reset()
	x := t.batch()
	g := t.tape.Const(t.generated().Value)
	dr, dg := t.disc.Forward(&t.tape, x), t.disc.Forward(&t.tape, g)
	var loss *nn.Node[float32]
	if wasserstein {
		loss = t.tape.Sub(t.tape.Mean(dg), t.tape.Mean(dr))
	} else { // -log sigmoid(dr) - log(1 - sigmoid(dg)) = softplus(-dr) + softplus(dg)
		loss = t.tape.Add(t.tape.Mean(t.tape.Softplus(t.tape.Scale(dr, -1))), t.tape.Mean(t.tape.Softplus(dg)))
	}
	t.dOpt.ZeroGrad()
	t.tape.Backward(loss)
	t.dOpt.Step()
	if wasserstein {
		for _, p := range t.disc.Params() {
			for i, v := range p.Value.Data {
				p.Value.Data[i] = min(max(v, -0.01), 0.01)
			}
		}
	}
}

// genStep updates the generator: the non-saturating loss -log D(G(z))
// (for the WGAN, -critic), and for GAN-SMMSG Eq. 4's -alpha H(V(G(z))) +
// beta KL(V(x) || V(G(z))).
func (t *trainer) genStep() {
	t.tape.Reset()
	g := t.generated()
	dg := t.disc.Forward(&t.tape, g)
	var loss *nn.Node[float32]
	if t.cfg.Kind == WGAN {
		loss = t.tape.Scale(t.tape.Mean(dg), -1)
	} else {
		loss = t.tape.Mean(t.tape.Softplus(t.tape.Scale(dg, -1)))
	}
	if t.cfg.Kind == SMMSG {
		vg := t.groupV(g)
		vr := t.tape.Const(t.groupV(t.batch()).Value)
		logG := t.tape.Log(t.tape.AddScalar(vg, 1e-6))
		entropy := t.tape.Scale(t.tape.Sum(t.tape.Mul(vg, logG)), -1)
		// KL(vr || vg) = sum vr log vr - sum vr log vg; the first term is constant.
		kl := t.tape.Scale(t.tape.Sum(t.tape.Mul(vr, logG)), -1)
		loss = t.tape.Add(loss, t.tape.Add(t.tape.Scale(entropy, float32(-t.cfg.Alpha)), t.tape.Scale(kl, float32(t.cfg.Beta))))
	}
	t.gOpt.ZeroGrad()
	t.tape.Backward(loss)
	t.gOpt.Step()
}

// groupV is a batch's V: each continuous column's soft histogram (the
// values spread over the bins by a Gaussian kernel), then the class
// frequencies, all as one row of probabilities (each block sums to 1).
func (t *trainer) groupV(rows *nn.Node[float32]) *nn.Node[float32] {
	b, d, k := t.cfg.Batch, t.m.cont, t.cfg.Bins
	inv := 1 / float32(b)
	var parts []*nn.Node[float32]
	ones := t.tape.Input(1, k)
	for i := range ones.Value.Data {
		ones.Value.Data[i] = 1
	}
	for j := range d {
		col := t.tape.SliceCols(rows, j, j+1) // b x 1
		spread := t.tape.MatMul(col, ones)    // b x k
		centres := t.tape.Input(b, k)         // the bin centres
		for i := range b {
			copy(centres.Value.Data[i*k:(i+1)*k], t.centres)
		}
		dist := t.tape.Square(t.tape.Sub(spread, centres))
		soft := t.tape.Softmax(t.tape.Scale(dist, float32(-t.kernelInv)))
		parts = append(parts, t.tape.Scale(t.tape.ColSum(soft), inv))
	}
	parts = append(parts, t.tape.Scale(t.tape.ColSum(t.tape.SliceCols(rows, d, t.width)), inv))
	return t.tape.Concat(parts...)
}

// Generate returns n rows: continuous columns in the data's units, and a
// class drawn from the generator's class probabilities.
func (m *Model) Generate(n int) Data {
	out := Data{Classes: m.classes}
	pred := m.gen.NewPredictor()
	z := make([]float32, m.noise)
	var y []float32
	for range n {
		for i := range z {
			z[i] = float32(m.rng.NormFloat64())
		}
		y = pred.Predict(y, z)
		row := make([]float64, m.cont)
		for j := range row {
			row[j] = m.backward(j, float64(y[j]))
		}
		out.Cont = append(out.Cont, row)
		out.Class = append(out.Class, drawSoftmax(y[m.cont:], m.rng))
	}
	return out
}

// forward scales value v of continuous column j for the networks.
func (m *Model) forward(j int, v float64) float64 {
	if m.quant != nil {
		return m.quant.apply(j, v)
	}
	return (v - m.scale.Mean[j]) / m.scale.Std[j]
}

// backward maps a generated value of column j back to its units.
func (m *Model) backward(j int, v float64) float64 {
	if m.quant != nil {
		return m.quant.invert(j, v)
	}
	return m.scale.Invert(j, v)
}

func drawSoftmax(logits []float32, rng *rand.Rand) int {
	top := logits[0]
	for _, v := range logits {
		top = max(top, v)
	}
	sum := 0.0
	p := make([]float64, len(logits))
	for i, v := range logits {
		p[i] = math.Exp(float64(v - top))
		sum += p[i]
	}
	u := rng.Float64() * sum
	for i, x := range p {
		if u -= x; u < 0 {
			return i
		}
	}
	return len(p) - 1
}
