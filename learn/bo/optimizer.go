package bo

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/optimize"
)

// Optimizer is the ask/tell interface shared by BayesOpt and RandomSearch.
// The objective is minimised subject to constraints c_k(x) <= 0.
type Optimizer interface {
	// Ask returns the next point to evaluate (one value per Param).
	Ask() ([]float64, error)
	// Tell records the objective value y and the constraint values c (len
	// equal to the configured number of constraints; nil when there are none)
	// observed at x.
	Tell(x []float64, y float64, c []float64) error
	// Best returns the observation with the smallest objective among the
	// feasible ones, and false if there is none.
	Best() (Observation, bool)
}

// Observation is one evaluated point.
type Observation struct {
	// X is the point, one value per Param.
	X []float64
	// Y is the objective value.
	Y float64
	// C holds the constraint values; the point is feasible when all are <= 0.
	C []float64
}

// Feasible reports whether all constraint values are <= 0.
func (o Observation) Feasible() bool {
	for _, c := range o.C {
		if !(c <= 0) {
			return false
		}
	}
	return true
}

// AcquisitionMethod selects how BayesOpt maximises the acquisition after
// random screening.
type AcquisitionMethod int

const (
	// AutoMethod uses L-BFGS with analytic gradients when every parameter is
	// Continuous and CMA-ES otherwise (the rounded acquisition is piecewise
	// constant in integer and categorical coordinates).
	AutoMethod AcquisitionMethod = iota
	// LBFGSMethod always uses L-BFGS (gonum optimize.LBFGS).
	LBFGSMethod
	// CMAESMethod always uses CMA-ES (gonum optimize.CmaEsChol).
	CMAESMethod
)

// Config configures BayesOpt. Zero numeric fields take the defaults given.
type Config struct {
	// Space lists the parameters.
	Space []Param
	// Constraints is the number of constraint values passed to Tell.
	Constraints int
	// InitialPoints is the size of the seeded Latin-hypercube initial design
	// (default 2·(len(Space)+1)).
	InitialPoints int
	// Acquisition is EI (default), NoisyEI or MonteCarloNoisyEI.
	Acquisition AcquisitionKind
	// NoisySamples is the number of posterior samples of MonteCarloNoisyEI
	// (default 32).
	NoisySamples int
	// Kernel is the GP kernel of the objective and constraint models
	// (default Matern52).
	Kernel KernelKind
	// Candidates is the number of uniform random points screened per Ask
	// (default 2000); a further Candidates/4 are Gaussian perturbations of the
	// best observed points.
	Candidates int
	// LocalStarts is the number of best screened candidates refined by local
	// optimisation (default 5).
	LocalStarts int
	// Method selects the local optimiser (default AutoMethod).
	Method AcquisitionMethod
	// GPRestarts is the number of random hyperparameter restarts per refit in
	// addition to the warm start and the default start (default 1; negative
	// means none).
	GPRestarts int
}

// DefaultConfig returns the configuration with every default filled in for
// the given parameters (EI, Matérn 5/2, no constraints).
func DefaultConfig(space []Param) Config {
	c := Config{Space: space}
	c.fill()
	return c
}

func (c *Config) fill() {
	if c.InitialPoints <= 0 {
		c.InitialPoints = 2 * (len(c.Space) + 1)
	}
	if c.Candidates <= 0 {
		c.Candidates = 2000
	}
	if c.LocalStarts <= 0 {
		c.LocalStarts = 5
	}
	if c.NoisySamples <= 0 {
		c.NoisySamples = 32
	}
	if c.GPRestarts == 0 {
		c.GPRestarts = 1
	}
}

// BayesOpt is a seeded Gaussian-process Bayesian optimiser with an ask/tell
// interface. Ask fits a GP to the objective (and one GP per constraint) and
// returns the maximiser of log EI (or noisy EI) plus the log probability of
// feasibility. It is deterministic for a given rng state and call sequence.
// It is not safe for concurrent use.
type BayesOpt struct {
	cfg     Config
	sp      *space
	rng     *rand.Rand
	design  [][]float64
	asked   int
	obs     []Observation
	enc     [][]float64 // canonical encodings of obs
	pending [][]float64 // canonical encodings of points asked but not told
	hy      *Hyper      // warm start, objective
	hc      []*Hyper    // warm starts, constraints
}

var _ Optimizer = (*BayesOpt)(nil)

// NewBayesOpt returns an optimiser for cfg that draws all its randomness from rng.
func NewBayesOpt(cfg Config, rng *rand.Rand) (*BayesOpt, error) {
	if rng == nil {
		return nil, errors.New("bo: new bayes opt: nil rng")
	}
	sp, err := newSpace(cfg.Space)
	if err != nil {
		return nil, fmt.Errorf("bo: new bayes opt: %w", err)
	}
	if cfg.Constraints < 0 {
		return nil, fmt.Errorf("bo: new bayes opt: constraints: must be >= 0, got %d", cfg.Constraints)
	}
	if !cfg.Kernel.valid() {
		return nil, fmt.Errorf("bo: new bayes opt: kernel: unknown %v", cfg.Kernel)
	}
	if cfg.Acquisition != EI && cfg.Acquisition != NoisyEI && cfg.Acquisition != MonteCarloNoisyEI {
		return nil, fmt.Errorf("bo: new bayes opt: acquisition: unknown %v", cfg.Acquisition)
	}
	cfg.fill()
	b := &BayesOpt{cfg: cfg, sp: sp, rng: rng, hc: make([]*Hyper, cfg.Constraints)}
	b.design = sp.latinHypercube(cfg.InitialPoints, rng)
	return b, nil
}

// Observations returns the observations told so far, in order.
func (b *BayesOpt) Observations() []Observation { return b.obs }

// Best implements Optimizer.
func (b *BayesOpt) Best() (Observation, bool) { return bestOf(b.obs) }

// Tell implements Optimizer. Telling a point that Ask or AskBatch returned
// removes it from the pending points.
func (b *BayesOpt) Tell(x []float64, y float64, c []float64) error {
	o, err := checkObservation(x, y, c, b.cfg.Constraints)
	if err != nil {
		return fmt.Errorf("bo: tell: %w", err)
	}
	u, err := b.sp.encode(x)
	if err != nil {
		return fmt.Errorf("bo: tell: %w", err)
	}
	b.obs = append(b.obs, o)
	b.enc = append(b.enc, u)
	for i, p := range b.pending {
		if sameCanonical(p, u) {
			b.pending = append(b.pending[:i], b.pending[i+1:]...)
			break
		}
	}
	return nil
}

// Pending returns the number of points asked but not yet told.
func (b *BayesOpt) Pending() int { return len(b.pending) }

// ClearPending forgets the points asked but not told (for example after
// their evaluations failed), so they no longer enter the models as fantasies.
func (b *BayesOpt) ClearPending() { b.pending = nil }

// Ask implements Optimizer. The first InitialPoints calls return the Latin
// hypercube design, unless at least as many observations were told before
// the first call (a warm start); later calls return the acquisition maximiser given the
// observations told so far, with the points asked but not yet told entering
// the models as kriging-believer fantasies (so consecutive Asks without Tell
// return distinct points, as AskBatch does).
func (b *BayesOpt) Ask() ([]float64, error) {
	xs, err := b.AskBatch(1)
	if err != nil {
		return nil, err
	}
	return xs[0], nil
}

// AskBatch returns q points to evaluate in parallel: remaining design points
// first, then acquisition maximisers chosen one after another with the
// earlier ones (and all pending points) as kriging-believer fantasies.
func (b *BayesOpt) AskBatch(q int) ([][]float64, error) {
	if q < 1 {
		return nil, fmt.Errorf("bo: ask batch: q must be >= 1, got %d", q)
	}
	if b.asked == 0 && len(b.obs) >= len(b.design) {
		b.asked = len(b.design) // warm-started: the observations told replace the design
	}
	var xs [][]float64
	for len(xs) < q && b.asked < len(b.design) {
		xs = append(xs, append([]float64(nil), b.design[b.asked]...))
		b.asked++
	}
	// The design points just handed out are pending too.
	for _, x := range xs {
		u, err := b.sp.encode(x)
		if err != nil {
			return nil, fmt.Errorf("bo: ask: %w", err)
		}
		b.pending = append(b.pending, u)
	}
	if len(xs) == q {
		return xs, nil
	}
	rest := q - len(xs)
	if len(b.obs) < 2 {
		for range rest {
			x := b.sp.sample(b.rng)
			u, err := b.sp.encode(x)
			if err != nil {
				return nil, fmt.Errorf("bo: ask: %w", err)
			}
			b.pending = append(b.pending, u)
			xs = append(xs, x)
		}
		return xs, nil
	}
	us, err := b.suggestBatch(rest)
	if err != nil {
		return nil, fmt.Errorf("bo: ask: %w", err)
	}
	for _, u := range us {
		b.pending = append(b.pending, u)
		xs = append(xs, b.sp.decode(u))
	}
	return xs, nil
}

func linf(a, b []float64) float64 {
	var d float64
	for i := range a {
		d = math.Max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

func sameCanonical(a, b []float64) bool {
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9 {
			return false
		}
	}
	return true
}

// acqModel is the fitted state an acquisition evaluation needs.
type acqModel struct {
	sp       *space
	obj      *GP
	cons     []*GP
	best     float64 // incumbent (output units)
	sdFloor  float64
	dm, dv   []float64
	gradTmp  []float64
	feasOnly bool // no feasible observation yet: maximise Π PoF_k only
	nei      *nei // non-nil for MonteCarloNoisyEI
}

// logAcq returns log EI(u)·Π PoF_k(u) at the canonical point u and, if grad is
// non-nil, its gradient with respect to u.
func (m *acqModel) logAcq(u, grad []float64) float64 {
	var dm, dv []float64
	if grad != nil {
		for i := range grad {
			grad[i] = 0
		}
		dm, dv = m.dm, m.dv
	}
	var total float64
	if !m.feasOnly && m.nei != nil {
		var gt []float64
		if grad != nil {
			gt = m.gradTmp
		}
		total += m.nei.logValue(u, gt)
		for i := range grad {
			grad[i] += gt[i]
		}
	} else if !m.feasOnly {
		mu, vr := m.obj.PredictGrad(dm, dv, u)
		sd := math.Sqrt(vr)
		floored := false
		if sd < m.sdFloor {
			sd, floored = m.sdFloor, true
		}
		la, dMu, dSD := LogExpectedImprovement(mu, sd, m.best)
		total += la
		if grad != nil {
			for i := range grad {
				g := dMu * dm[i]
				if !floored {
					g += dSD * dv[i] / (2 * sd)
				}
				grad[i] += g
			}
		}
	}
	for _, c := range m.cons {
		mu, vr := c.PredictGrad(dm, dv, u)
		sd := math.Sqrt(math.Max(vr, 1e-18))
		lp, dz := logPhi(-mu / sd)
		total += lp
		if grad != nil {
			// z = −μ/σ; dz/dμ = −1/σ; dz/dσ = μ/σ²; dσ/dv = 1/(2σ).
			for i := range grad {
				grad[i] += dz * (-dm[i]/sd + mu/(sd*sd)*dv[i]/(2*sd))
			}
		}
	}
	return total
}

// fitModels fits the objective and constraint GPs to the observations in the
// unit-box encoding, warm-starting from the previous hyperparameters.
func (b *BayesOpt) fitModels() (*GP, []*GP, error) {
	D := b.sp.dim
	n := len(b.obs)
	box0, box1 := make([]float64, D), make([]float64, D)
	for i := range box1 {
		box1[i] = 1
	}
	gcfg := GPConfig{Kernel: b.cfg.Kernel, Lower: box0, Upper: box1, Restarts: b.cfg.GPRestarts}
	ys := make([]float64, n)
	for i, o := range b.obs {
		ys[i] = o.Y
	}
	gcfg.Init = b.hy
	obj, err := FitGP(b.enc, ys, gcfg, b.rng)
	if err != nil {
		return nil, nil, fmt.Errorf("fitting objective model: %w", err)
	}
	h := obj.Hyper()
	b.hy = &h
	var cons []*GP
	for k := range b.cfg.Constraints {
		cs := make([]float64, n)
		for i, o := range b.obs {
			cs[i] = o.C[k]
		}
		gcfg.Init = b.hc[k]
		cg, err := FitGP(b.enc, cs, gcfg, b.rng)
		if err != nil {
			return nil, nil, fmt.Errorf("fitting constraint %d model: %w", k, err)
		}
		hk := cg.Hyper()
		b.hc[k] = &hk
		cons = append(cons, cg)
	}
	return obj, cons, nil
}

// suggestBatch returns q new canonical encoded points. Pending points (asked
// but not told) and the points chosen earlier in the batch enter the models
// as "kriging believer" fantasies (Ginsbourger, Le Riche & Carraro 2010,
// "Kriging is well-suited to parallelize optimization"): observed at their
// posterior mean, with the fitted hyperparameters kept.
func (b *BayesOpt) suggestBatch(q int) ([][]float64, error) {
	obj, cons, err := b.fitModels()
	if err != nil {
		return nil, err
	}
	var out [][]float64
	for range q {
		fant := append(append([][]float64(nil), b.pending...), out...)
		objF, consF := obj, cons
		if len(fant) > 0 {
			if objF, err = believe(obj, b.enc, fant); err != nil {
				return nil, fmt.Errorf("fantasy objective model: %w", err)
			}
			consF = make([]*GP, len(cons))
			for k, c := range cons {
				if consF[k], err = believe(c, b.enc, fant); err != nil {
					return nil, fmt.Errorf("fantasy constraint %d model: %w", k, err)
				}
			}
		}
		m, err := b.newAcqModel(objF, consF)
		if err != nil {
			return nil, err
		}
		u, err := b.maximise(m, fant)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// believe returns g conditioned on x plus the fantasy points fant observed at
// g's posterior mean, with g's hyperparameters and normalisation.
func believe(g *GP, x, fant [][]float64) (*GP, error) {
	n, d := len(x)+len(fant), g.d
	f := &GP{kind: g.kind, n: n, d: d, lo: g.lo, scale: g.scale, ymean: g.ymean, ystd: g.ystd,
		x: make([]float64, 0, n*d), yn: make([]float64, 0, n),
		ks: make([]float64, n), v: make([]float64, n), xn: make([]float64, d)}
	for _, r := range x {
		for j, v := range r {
			f.x = append(f.x, (v-g.lo[j])/g.scale[j])
		}
	}
	f.yn = append(f.yn, g.yn...)
	for _, r := range fant {
		for j, v := range r {
			f.x = append(f.x, (v-g.lo[j])/g.scale[j])
		}
		m, _ := g.Predict(r)
		f.yn = append(f.yn, (m-g.ymean)/g.ystd)
	}
	if err := f.condition(g.h.clone()); err != nil {
		return nil, err
	}
	return f, nil
}

// newAcqModel sets up the acquisition for the given models. The incumbent
// comes from the real observations only.
func (b *BayesOpt) newAcqModel(obj *GP, cons []*GP) (*acqModel, error) {
	D := b.sp.dim
	m := &acqModel{sp: b.sp, obj: obj, cons: cons, dm: make([]float64, D), dv: make([]float64, D), gradTmp: make([]float64, D)}
	m.sdFloor = 1e-6 * obj.ystd
	m.best = math.Inf(1)
	for i, o := range b.obs {
		if !o.Feasible() {
			continue
		}
		v := o.Y
		if b.cfg.Acquisition == NoisyEI {
			v, _ = obj.Predict(b.enc[i])
		}
		m.best = math.Min(m.best, v)
	}
	m.feasOnly = math.IsInf(m.best, 1)
	if m.feasOnly && len(m.cons) == 0 {
		return nil, errors.New("no incumbent") // unreachable: no constraints means all feasible
	}
	if b.cfg.Acquisition == MonteCarloNoisyEI && !m.feasOnly {
		feasible := make([]bool, obj.n) // fantasy points (after the real ones) stay false
		for i, o := range b.obs {
			feasible[i] = o.Feasible()
		}
		var err error
		m.nei, err = newNEI(obj, feasible, b.cfg.NoisySamples, b.rng)
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

// maximise returns the canonical maximiser of m's acquisition that is
// neither observed nor in taken.
func (b *BayesOpt) maximise(m *acqModel, taken [][]float64) ([]float64, error) {
	D := b.sp.dim
	n := len(b.obs)
	// Random screening: uniform points plus perturbations of the best points.
	type cand struct {
		u []float64
		f float64
	}
	nc := b.cfg.Candidates
	cands := make([]cand, 0, nc+nc/4)
	canon := make([]float64, D)
	eval := func(u []float64) float64 {
		b.sp.canonical(canon, u)
		f := m.logAcq(canon, nil)
		if math.IsNaN(f) {
			return math.Inf(-1)
		}
		return f
	}
	for range nc {
		u := make([]float64, D)
		for i := range u {
			u[i] = b.rng.Float64()
		}
		cands = append(cands, cand{u, eval(u)})
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool {
		oi, oj := b.obs[order[i]], b.obs[order[j]]
		if oi.Feasible() != oj.Feasible() {
			return oi.Feasible()
		}
		return oi.Y < oj.Y
	})
	top := min(5, n)
	for k := range nc / 4 {
		base := b.enc[order[k%top]]
		u := make([]float64, D)
		for i := range u {
			u[i] = clamp01(base[i] + 0.05*b.rng.NormFloat64())
		}
		cands = append(cands, cand{u, eval(u)})
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].f > cands[j].f })

	// Local refinement from the best distinct candidates, in z-space where
	// u = (1 − cos πz)/2 keeps every iterate in the box.
	method := b.cfg.Method
	if method == AutoMethod {
		method = LBFGSMethod
		if b.sp.mixed {
			method = CMAESMethod
		}
	}
	bestU, bestF := append([]float64(nil), cands[0].u...), cands[0].f
	var starts [][]float64
	for _, c := range cands {
		if len(starts) >= b.cfg.LocalStarts || math.IsInf(c.f, -1) {
			break
		}
		near := false
		for _, s := range starts {
			if linf(s, c.u) < 0.02 {
				near = true
				break
			}
		}
		if near {
			continue
		}
		starts = append(starts, c.u)
		u, f := b.refine(m, c.u, method)
		if f > bestF {
			bestU, bestF = u, f
		}
	}

	// Avoid re-proposing an observed point; fall back to the next candidates.
	b.sp.canonical(bestU, bestU)
	if b.duplicate(bestU, taken) {
		found := false
		for _, c := range cands {
			b.sp.canonical(canon, c.u)
			if !b.duplicate(canon, taken) {
				bestU, found = append([]float64(nil), canon...), true
				break
			}
		}
		if !found {
			u, err := b.sp.encode(b.sp.sample(b.rng))
			if err != nil {
				return nil, err
			}
			bestU = u
		}
	}
	return bestU, nil
}

func (b *BayesOpt) duplicate(u []float64, taken [][]float64) bool {
	for _, e := range append(b.enc[:len(b.enc):len(b.enc)], taken...) {
		if sameCanonical(u, e) {
			return true
		}
	}
	return false
}

// refine maximises the log acquisition from u0 and returns the best point
// found (not canonicalised) with its value.
func (b *BayesOpt) refine(m *acqModel, u0 []float64, method AcquisitionMethod) ([]float64, float64) {
	D := len(u0)
	z0 := make([]float64, D)
	for i, v := range u0 {
		z0[i] = math.Acos(1-2*clamp01(v)) / math.Pi
	}
	u := make([]float64, D)
	canon := make([]float64, D)
	gu := make([]float64, D)
	toU := func(z []float64) {
		for i, v := range z {
			u[i] = 0.5 * (1 - math.Cos(math.Pi*v))
		}
	}
	f := func(z []float64) float64 {
		toU(z)
		b.sp.canonical(canon, u)
		v := m.logAcq(canon, nil)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 1e300
		}
		return -v
	}
	prob := optimize.Problem{Func: f}
	var meth optimize.Method
	settings := &optimize.Settings{}
	switch method {
	case CMAESMethod:
		meth = &optimize.CmaEsChol{InitStepSize: 0.1, Src: b.rng}
		settings.FuncEvaluations = 60 * (D + 5)
	default:
		prob.Grad = func(grad, z []float64) {
			toU(z)
			b.sp.canonical(canon, u)
			m.logAcq(canon, gu)
			for i := range grad {
				// u = (1 − cos πz)/2 ⇒ du/dz = (π/2) sin πz; minimise −log acq.
				grad[i] = -gu[i] * 0.5 * math.Pi * math.Sin(math.Pi*z[i])
			}
		}
		meth = &optimize.LBFGS{}
		settings.MajorIterations = 50
		settings.Converger = &optimize.FunctionConverge{Absolute: 1e-9, Relative: 1e-9, Iterations: 10}
	}
	res, _ := optimize.Minimize(prob, z0, settings, meth)
	bestZ, bestF := z0, f(z0)
	if res != nil && res.X != nil && res.F < bestF {
		bestZ, bestF = res.X, res.F
	}
	toU(bestZ)
	return append([]float64(nil), u...), -bestF
}

func checkObservation(x []float64, y float64, c []float64, nc int) (Observation, error) {
	if math.IsNaN(y) || math.IsInf(y, 0) {
		return Observation{}, fmt.Errorf("objective value %g is not finite", y)
	}
	if len(c) != nc {
		return Observation{}, fmt.Errorf("%d constraint values, want %d", len(c), nc)
	}
	for k, v := range c {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Observation{}, fmt.Errorf("constraint %d value %g is not finite", k, v)
		}
	}
	return Observation{X: append([]float64(nil), x...), Y: y, C: append([]float64(nil), c...)}, nil
}

func bestOf(obs []Observation) (Observation, bool) {
	bi := -1
	for i, o := range obs {
		if o.Feasible() && (bi < 0 || o.Y < obs[bi].Y) {
			bi = i
		}
	}
	if bi < 0 {
		return Observation{}, false
	}
	return obs[bi], true
}
