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
// frequencies. KL on those is what Table 1 measures, per column. With
// Config.Pairs, V also holds the soft joint histograms of every pair of
// columns (and of the class with each), so that the columns are matched
// together, not only one by one (gan.PairKL measures that).
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
	// Pairs, when positive, adds V over pairs of columns to GAN-SMMSG's
	// Eq. 4 KL term (issue 51): the soft joint histogram of every pair of
	// blocks among the class and the continuous columns, each column in
	// Pairs bins equal in its own units over the real column's 1st to
	// 99th percentile (the outer ones open, as gan.PairKL's), mapped
	// through the scaling; a value's membership of a bin is the
	// difference of two sigmoids of width PairTau (scaled units) at its
	// edges (PairTau 0: 0.1). Pairs 0: off. The real side is the whole
	// table's histograms.
	Pairs   int
	PairTau float64
	// Conditional, when true, draws each generated row's class from the
	// real class frequencies and gives it to the generator as a one-hot
	// input (a conditional generator), instead of generating the class.
	Conditional bool
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
// generated rows by their class column alone); for GAN-SMMSG, V over
// pairs in 10 bins at a width of 0.1 (chosen on validation logs of
// seed 500, training seeds 1-3: the pair KL of eight device features
// 0.118 against 0.164 without; in a Gaussian kernel's bins over [-3, 3]
// instead, 0.17-0.20; with the conditional generator too, 0.078, but
// the average task time's KL of Table 1 rose to 0.012).
func DefaultConfig(kind Kind) Config {
	c := Config{Kind: kind, Noise: 16, Hidden: 64, Steps: 6000, Batch: 128, Alpha: 0.1, Beta: 1, Bins: 20, Scaling: Quantile,
		Temperature: 0.3, Seed: 1}
	if kind == SMMSG {
		c.Pairs, c.PairTau = 10, 0.1
	}
	return c
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
	prior   []float64 // with Conditional: the real class frequencies
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
	if !(cfg.Temperature >= 0) || cfg.Pairs < 0 || cfg.Pairs == 1 || !(cfg.PairTau >= 0) {
		return nil, fmt.Errorf("gan: temperature %g, %d pair bins, pair width %g: want a temperature >= 0, no or at least 2 bins and a width >= 0",
			cfg.Temperature, cfg.Pairs, cfg.PairTau)
	}
	def := DefaultConfig(cfg.Kind)
	cfg.PairTau = cmp.Or(cfg.PairTau, 0.1)
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
	in, out := cfg.Noise, width
	if cfg.Conditional {
		m.prior = make([]float64, data.Classes)
		for _, c := range data.Class {
			m.prior[c] += 1 / float64(n)
		}
		in, out = cfg.Noise+data.Classes, d
	}
	m.gen = nn.NewMLP[float32](rng, "gen", []int{in, cfg.Hidden, cfg.Hidden, out}, nn.ReLU, nn.Identity)
	disc := nn.NewMLP[float32](rng, "disc", []int{width, cfg.Hidden, cfg.Hidden, 1}, nn.LeakyReLU, nn.Identity)
	t := &trainer{m: m, disc: disc, real: real, cfg: cfg, width: width}
	t.histogramBins()
	if cfg.Pairs > 0 && cfg.Kind == SMMSG {
		t.pairBins(data)
	}
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
	pairEdges []float32          // with Pairs: per column, its bins' Pairs-1 inner edges, scaled
	realPairs nn.Tensor[float32] // the whole table's pairs' V
}

func (t *trainer) histogramBins() {
	t.centres, t.kernelInv = binCentres(t.cfg.Bins)
}

// binCentres returns the centres of k equal bins over [-3, 3] and the
// Gaussian kernel's 1/(2h^2) for a width h of one bin.
func binCentres(k int) ([]float32, float64) {
	centres := make([]float32, k)
	for c := range k {
		centres[c] = float32(-3 + 6*(float64(c)+0.5)/float64(k))
	}
	h := 6 / float64(k)
	return centres, 1 / (2 * h * h)
}

// pairBins sets the pairs' bins from the unscaled table: per column,
// Pairs equal bins over its 1st to 99th percentile, their inner edges
// scaled; then the real table's pairs' V.
func (t *trainer) pairBins(data Data) {
	k := t.cfg.Pairs
	c := make([]float64, len(data.Cont))
	for j := range t.m.cont {
		for i, r := range data.Cont {
			c[i] = r[j]
		}
		lo, hi := quantile(c, 0.01), quantile(c, 0.99)
		for i := 1; i < k; i++ {
			t.pairEdges = append(t.pairEdges, float32(t.m.forward(j, lo+(hi-lo)*float64(i)/float64(k))))
		}
	}
	t.realPairs = t.pairHistograms(t.real)
}

// pairMember sets m (Pairs values) to scaled value z of column j's
// memberships of its pairs' bins: 1 - F(e1), F(e1) - F(e2), ..., F(e_last)
// for F the sigmoid of width PairTau at each inner edge.
func (t *trainer) pairMember(m []float64, j int, z float64) {
	prev := 1.0
	for c, e := range t.pairEdges[j*(t.cfg.Pairs-1) : (j+1)*(t.cfg.Pairs-1)] {
		f := 1 / (1 + math.Exp(-(z-float64(e))/t.cfg.PairTau))
		m[c] = prev - f
		prev = f
	}
	m[len(m)-1] = prev
}

// pairHistograms is the pairs' part of V (as groupV lays it out) over
// every row of rows at once, without the tape: the real side of the
// pairs' KL, from the whole table rather than a batch (the same
// expectation; a batch is too small for joint histograms of Pairs^2
// bins).
func (t *trainer) pairHistograms(rows [][]float32) nn.Tensor[float32] {
	d, k, classes := t.m.cont, t.cfg.Pairs, t.width-t.m.cont
	member := make([]float64, classes+d*k) // the class's one-hot, then each column's memberships
	out := make([]float64, len(member)*(len(member)-classes)-d*(d+1)/2*k*k)
	for _, r := range rows {
		for i, v := range r[d:t.width] {
			member[i] = float64(v)
		}
		for j := range d {
			t.pairMember(member[classes+j*k:classes+(j+1)*k], j, float64(r[j]))
		}
		at, from := 0, 0
		for a := range d { // the class, then each column but the last
			w := k
			if a == 0 {
				w = classes
			}
			rest := member[from+w:]
			for p := range w {
				row := out[at+p*len(rest) : at+(p+1)*len(rest)]
				for q, v := range rest {
					row[q] += member[from+p] * v
				}
			}
			at += w * len(rest)
			from += w
		}
	}
	v := nn.Tensor[float32]{Rows: 1, Cols: len(out), Data: make([]float32, len(out))}
	for i, x := range out {
		v.Data[i] = float32(x / float64(len(rows)))
	}
	return v
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
	if t.m.prior != nil {
		in := t.m.noise + t.m.classes
		z := t.tape.Input(t.cfg.Batch, in)
		class := t.tape.Input(t.cfg.Batch, t.m.classes)
		clear(class.Value.Data)
		for i := range t.cfg.Batch {
			c := t.m.drawClass(z.Value.Data[i*in : (i+1)*in])
			class.Value.Data[i*t.m.classes+c] = 1
		}
		return t.tape.Concat(t.m.gen.Forward(&t.tape, z), class)
	}
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
		vg, pg := t.groupV(g, t.cfg.Pairs > 0)
		vr, _ := t.groupV(t.batch(), false)
		h, kl := t.terms(vg, vr)
		if pg != nil { // the pairs' KL beside the columns' (their entropy left out)
			_, pkl := t.terms(pg, t.tape.Const(t.realPairs))
			kl = t.tape.Add(kl, pkl)
		}
		loss = t.tape.Add(loss, t.tape.Add(t.tape.Scale(h, float32(-t.cfg.Alpha)), t.tape.Scale(kl, float32(t.cfg.Beta))))
	}
	t.gOpt.ZeroGrad()
	t.tape.Backward(loss)
	t.gOpt.Step()
}

// terms returns Eq. 4's entropy H(vg) and KL(vr || vg) up to its
// constant sum vr log vr, for vg and vr rows of probabilities (vr's
// values are taken as constants).
func (t *trainer) terms(vg, vr *nn.Node[float32]) (h, kl *nn.Node[float32]) {
	logG := t.tape.Log(t.tape.AddScalar(vg, 1e-6))
	h = t.tape.Scale(t.tape.Sum(t.tape.Mul(vg, logG)), -1)
	kl = t.tape.Scale(t.tape.Sum(t.tape.Mul(t.tape.Const(vr.Value), logG)), -1)
	return h, kl
}

// groupV is a batch's V: each continuous column's soft histogram (the
// values spread over the bins by a Gaussian kernel), then the class
// frequencies, all as one row of probabilities (each block sums to 1);
// and with pairs, V over pairs of blocks (nil without): for the class and
// each column but the last, its joint histograms with every later column,
// a row's joint membership the product of its two memberships, so that
// the batch's mean is a histogram summing to 1 per pair.
func (t *trainer) groupV(rows *nn.Node[float32], pairs bool) (v, joint *nn.Node[float32]) {
	b, d := t.cfg.Batch, t.m.cont
	inv := 1 / float32(b)
	var parts []*nn.Node[float32]
	coarse := []*nn.Node[float32]{t.tape.SliceCols(rows, d, t.width)} // the class, then each column's pairs' bins
	for j := range d {
		col := t.tape.SliceCols(rows, j, j+1) // b x 1
		parts = append(parts, t.tape.Scale(t.tape.ColSum(t.membership(col, t.centres, t.kernelInv)), inv))
		if pairs {
			coarse = append(coarse, t.pairMembership(col, j))
		}
	}
	parts = append(parts, t.tape.Scale(t.tape.ColSum(coarse[0]), inv))
	v = t.tape.Concat(parts...)
	if !pairs {
		return v, nil
	}
	// For block a and every later block at once: a's memberships
	// transposed times the later blocks' (a's width x the rest's).
	all := t.tape.Concat(coarse...)
	var blocks []*nn.Node[float32]
	from := 0
	for a := range d {
		from += coarse[a].Value.Cols
		m := t.tape.MatMul(t.tape.Transpose(coarse[a]), t.tape.SliceCols(all, from, all.Value.Cols))
		blocks = append(blocks, t.tape.Scale(t.tape.Reshape(m, 1, m.Value.Len()), inv))
	}
	return v, t.tape.Concat(blocks...)
}

// pairMembership is each value of col, column j, spread over its pairs'
// bins as pairMember does: b x Pairs.
func (t *trainer) pairMembership(col *nn.Node[float32], j int) *nn.Node[float32] {
	b, e := col.Value.Rows, t.pairEdges[j*(t.cfg.Pairs-1):(j+1)*(t.cfg.Pairs-1)]
	ones, edges := t.tape.Input(1, len(e)), t.tape.Input(1, len(e))
	for i := range e {
		ones.Value.Data[i] = 1
	}
	copy(edges.Value.Data, e)
	f := t.tape.Sigmoid(t.tape.Scale(t.tape.Sub(t.tape.MatMul(col, ones), edges), float32(1/t.cfg.PairTau))) // b x Pairs-1
	one, zero := t.tape.Input(b, 1), t.tape.Input(b, 1)
	for i := range b {
		one.Value.Data[i], zero.Value.Data[i] = 1, 0
	}
	return t.tape.Sub(t.tape.Concat(one, f), t.tape.Concat(f, zero))
}

// membership is each value of col (b x 1) spread over the bins of
// centres by a Gaussian kernel: b x len(centres), each row summing to 1
// (a softmax, so values beyond the outer centres fall in the outer bins).
func (t *trainer) membership(col *nn.Node[float32], centres []float32, kernelInv float64) *nn.Node[float32] {
	b, k := col.Value.Rows, len(centres)
	ones := t.tape.Input(1, k)
	for i := range ones.Value.Data {
		ones.Value.Data[i] = 1
	}
	spread := t.tape.MatMul(col, ones) // b x k
	c := t.tape.Input(b, k)
	for i := range b {
		copy(c.Value.Data[i*k:(i+1)*k], centres)
	}
	dist := t.tape.Square(t.tape.Sub(spread, c))
	return t.tape.Softmax(t.tape.Scale(dist, float32(-kernelInv)))
}

// Generate returns n rows: continuous columns in the data's units, and a
// class drawn from the generator's class probabilities.
func (m *Model) Generate(n int) Data {
	out := Data{Classes: m.classes}
	pred := m.gen.NewPredictor()
	z := make([]float32, m.noise)
	if m.prior != nil {
		z = make([]float32, m.noise+m.classes)
	}
	var y []float32
	for range n {
		c := 0
		if m.prior != nil {
			c = m.drawClass(z)
		} else {
			for i := range z {
				z[i] = float32(m.rng.NormFloat64())
			}
		}
		y = pred.Predict(y, z)
		row := make([]float64, m.cont)
		for j := range row {
			row[j] = m.backward(j, float64(y[j]))
		}
		out.Cont = append(out.Cont, row)
		if m.prior == nil {
			c = drawSoftmax(y[m.cont:], m.rng)
		}
		out.Class = append(out.Class, c)
	}
	return out
}

// drawClass fills a conditional generator's input z: noise, then the
// one-hot of a class drawn from the real frequencies, which it returns.
func (m *Model) drawClass(z []float32) int {
	for i := range m.noise {
		z[i] = float32(m.rng.NormFloat64())
	}
	u, c := m.rng.Float64(), 0
	for c < m.classes-1 && u >= m.prior[c] {
		u -= m.prior[c]
		c++
	}
	clear(z[m.noise:])
	z[m.noise+c] = 1
	return c
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
