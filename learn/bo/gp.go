package bo

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/optimize"
)

// Hyper holds Gaussian-process hyperparameters in the GP's internal units:
// inputs scaled to the unit box [0,1]^d (see GPConfig.Lower/Upper) and outputs
// standardised to zero mean and unit variance.
type Hyper struct {
	// LengthScales are the ARD length-scales ℓ_d, in unit-box units.
	LengthScales []float64
	// SignalVariance is σf², in standardised output units squared.
	SignalVariance float64
	// NoiseVariance is the Gaussian observation-noise variance σn², in
	// standardised output units squared.
	NoiseVariance float64
}

func (h Hyper) clone() Hyper {
	h.LengthScales = append([]float64(nil), h.LengthScales...)
	return h
}

// logParams writes [log ℓ_1..log ℓ_d, log σf², log σn²] into dst.
func (h Hyper) logParams(dst []float64) {
	d := len(h.LengthScales)
	for i, l := range h.LengthScales {
		dst[i] = math.Log(l)
	}
	dst[d] = math.Log(h.SignalVariance)
	dst[d+1] = math.Log(h.NoiseVariance)
}

func hyperFromLog(p []float64) Hyper {
	d := len(p) - 2
	h := Hyper{LengthScales: make([]float64, d)}
	for i := range d {
		h.LengthScales[i] = math.Exp(p[i])
	}
	h.SignalVariance = math.Exp(p[d])
	h.NoiseVariance = math.Exp(p[d+1])
	return h
}

// GPConfig configures FitGP. The zero value of each field means its default.
type GPConfig struct {
	// Kernel is the covariance family (default Matern52).
	Kernel KernelKind
	// Lower and Upper give the input box that is mapped to the unit box.
	// If nil, the per-dimension range of the training inputs is used.
	Lower, Upper []float64
	// Restarts is the number of random L-BFGS starts in addition to the
	// default start and Init (default 4; negative means none).
	Restarts int
	// MaxIterations bounds the L-BFGS major iterations per start (default 100).
	MaxIterations int
	// LengthScaleBounds bounds ℓ_d in unit-box units (default [0.01, 20]).
	LengthScaleBounds [2]float64
	// SignalVarianceBounds bounds σf² in standardised units (default [0.01, 100]).
	SignalVarianceBounds [2]float64
	// NoiseVarianceBounds bounds σn² in standardised units (default [1e-6, 1]).
	NoiseVarianceBounds [2]float64
	// NoPrior disables the hyperparameter priors, making the fit a pure
	// type-II maximum-likelihood estimate. By default the fit is a MAP estimate
	// with the Gamma priors that BoTorch's SingleTaskGP used by default
	// (shape, rate): ℓ_d ~ Gamma(3, 6), σf² ~ Gamma(2, 0.15), σn² ~ Gamma(1.1, 0.05).
	NoPrior bool
	// Init, if non-nil, is an extra starting point (for example the previous
	// fit, to warm-start sequential refits).
	Init *Hyper
}

// DefaultGPConfig returns the defaults documented on GPConfig.
func DefaultGPConfig() GPConfig {
	return GPConfig{
		Kernel:               Matern52,
		Restarts:             4,
		MaxIterations:        100,
		LengthScaleBounds:    [2]float64{0.01, 20},
		SignalVarianceBounds: [2]float64{0.01, 100},
		NoiseVarianceBounds:  [2]float64{1e-6, 1},
	}
}

func (c *GPConfig) fill() {
	def := DefaultGPConfig()
	if c.Restarts == 0 {
		c.Restarts = def.Restarts
	}
	if c.Restarts < 0 {
		c.Restarts = 0
	}
	if c.MaxIterations <= 0 {
		c.MaxIterations = def.MaxIterations
	}
	if c.LengthScaleBounds == [2]float64{} {
		c.LengthScaleBounds = def.LengthScaleBounds
	}
	if c.SignalVarianceBounds == [2]float64{} {
		c.SignalVarianceBounds = def.SignalVarianceBounds
	}
	if c.NoiseVarianceBounds == [2]float64{} {
		c.NoiseVarianceBounds = def.NoiseVarianceBounds
	}
}

// GP is a Gaussian-process regression model conditioned on training data.
// Its methods are not safe for concurrent use (Predict reuses buffers).
type GP struct {
	kind      KernelKind
	n, d      int
	lo, scale []float64 // x_unit = (x − lo) / scale
	ymean     float64
	ystd      float64
	x         []float64 // n×d unit-box inputs, row-major
	yn        []float64 // standardised outputs
	h         Hyper
	invL2     []float64 // 1/ℓ_d²
	u         blas64.Triangular
	alpha     []float64 // (K + σn² I)⁻¹ yn
	jitter    float64
	logLik    float64

	ks, v, xn []float64 // Predict workspace
}

// ErrNoData is returned when a model is asked to fit zero observations.
var ErrNoData = errors.New("bo: no training data")

// FitGP fits a GP to inputs x (n rows of d values) and outputs y by
// maximising the log marginal likelihood (plus log prior, see GPConfig.NoPrior)
// over the log hyperparameters with multi-start L-BFGS and analytic gradients.
// Each log parameter is kept inside its bounds by a logistic map. rng draws
// the random starts; the same rng state gives the same fit.
func FitGP(x [][]float64, y []float64, cfg GPConfig, rng *rand.Rand) (*GP, error) {
	cfg.fill()
	g, err := newGPData(x, y, cfg)
	if err != nil {
		return nil, err
	}
	d := g.d
	p := d + 2
	lo := make([]float64, p)
	hi := make([]float64, p)
	for i := range d {
		lo[i], hi[i] = math.Log(cfg.LengthScaleBounds[0]), math.Log(cfg.LengthScaleBounds[1])
	}
	lo[d], hi[d] = math.Log(cfg.SignalVarianceBounds[0]), math.Log(cfg.SignalVarianceBounds[1])
	lo[d+1], hi[d+1] = math.Log(cfg.NoiseVarianceBounds[0]), math.Log(cfg.NoiseVarianceBounds[1])
	for i := range p {
		if !(lo[i] < hi[i]) {
			return nil, fmt.Errorf("bo: fitting gp: hyperparameter bounds must be positive with lower < upper")
		}
	}

	ws := newLMLWorkspace(g.n)
	logp := make([]float64, p)
	glog := make([]float64, p)
	scratch := make([]float64, p)
	toLog := func(z []float64) {
		for i := range p {
			logp[i] = lo[i] + (hi[i]-lo[i])*sigmoid(z[i])
		}
	}
	// objective returns −(log marginal likelihood + log prior) at z and, if
	// grad is non-nil, its gradient with respect to z.
	objective := func(z, grad []float64) float64 {
		toLog(z)
		h := hyperFromLog(logp)
		var gl []float64
		if grad != nil {
			gl = glog
		}
		lml, err := g.lml(h, gl, ws)
		if err != nil || math.IsNaN(lml) {
			for i := range grad {
				grad[i] = 0
			}
			return 1e300
		}
		if !cfg.NoPrior {
			if gl == nil {
				for i := range scratch {
					scratch[i] = 0
				}
				lml += logPrior(h, scratch)
			} else {
				lml += logPrior(h, gl)
			}
		}
		for i := range grad {
			s := sigmoid(z[i])
			grad[i] = -glog[i] * (hi[i] - lo[i]) * s * (1 - s)
		}
		return -lml
	}

	var starts [][]float64
	toZ := func(h Hyper) []float64 {
		lp := make([]float64, p)
		h.logParams(lp)
		z := make([]float64, p)
		for i := range p {
			t := (lp[i] - lo[i]) / (hi[i] - lo[i])
			t = math.Min(math.Max(t, 1e-6), 1-1e-6)
			z[i] = math.Log(t / (1 - t))
		}
		return z
	}
	if cfg.Init != nil && len(cfg.Init.LengthScales) == d {
		starts = append(starts, toZ(*cfg.Init))
	}
	def := Hyper{LengthScales: make([]float64, d), SignalVariance: 1, NoiseVariance: 1e-3}
	for i := range def.LengthScales {
		def.LengthScales[i] = 0.5
	}
	starts = append(starts, toZ(def))
	for range cfg.Restarts {
		z := make([]float64, p)
		for i := range z {
			// Uniform in log space over the central part of the box.
			t := 0.1 + 0.8*rng.Float64()
			z[i] = math.Log(t / (1 - t))
		}
		starts = append(starts, z)
	}

	best := math.Inf(1)
	var bestZ []float64
	grad := make([]float64, p)
	// gonum asks for the value and the gradient at a point in separate calls,
	// and line-search trial points often need only the value. Cache the last
	// evaluation so each point is factorised at most twice, and compute K⁻¹
	// (for the gradient) only when the gradient is asked for.
	lastZ, lastG := make([]float64, p), make([]float64, p)
	lastF, haveLast, lastHasGrad := 0.0, false, false
	eval := func(z []float64, wantGrad bool) float64 {
		if haveLast && slices.Equal(z, lastZ) && (lastHasGrad || !wantGrad) {
			return lastF
		}
		if wantGrad {
			lastF = objective(z, lastG)
		} else {
			lastF = objective(z, nil)
		}
		copy(lastZ, z)
		haveLast, lastHasGrad = true, wantGrad
		return lastF
	}
	for _, z0 := range starts {
		prob := optimize.Problem{
			Func: func(z []float64) float64 { return eval(z, false) },
			Grad: func(gr, z []float64) { eval(z, true); copy(gr, lastG) },
		}
		settings := &optimize.Settings{
			MajorIterations:   cfg.MaxIterations,
			GradientThreshold: 1e-4,
			Converger:         &optimize.FunctionConverge{Absolute: 1e-6, Relative: 1e-8, Iterations: 5},
		}
		res, err := optimize.Minimize(prob, z0, settings, &optimize.LBFGS{})
		f, z := math.Inf(1), z0
		if res != nil && !math.IsNaN(res.F) && res.X != nil {
			f, z = res.F, res.X
		}
		if err != nil || f >= 1e300 {
			// A failed line search still leaves the best point found; keep the
			// start itself as a fallback.
			if f0 := objective(z0, grad); f0 < f {
				f, z = f0, z0
			}
		}
		if f < best {
			best, bestZ = f, append([]float64(nil), z...)
		}
	}
	if bestZ == nil || best >= 1e300 {
		return nil, fmt.Errorf("bo: fitting gp: no hyperparameters gave a positive-definite covariance")
	}
	toLog(bestZ)
	if err := g.condition(hyperFromLog(logp)); err != nil {
		return nil, fmt.Errorf("bo: fitting gp: %w", err)
	}
	return g, nil
}

// NewGP conditions a GP with fixed hyperparameters h (in internal units, see
// Hyper) on x and y, without hyperparameter optimisation. cfg supplies the
// kernel and input box; its optimisation fields are ignored.
func NewGP(x [][]float64, y []float64, cfg GPConfig, h Hyper) (*GP, error) {
	g, err := newGPData(x, y, cfg)
	if err != nil {
		return nil, err
	}
	if len(h.LengthScales) != g.d {
		return nil, fmt.Errorf("bo: new gp: %d length-scales for %d inputs", len(h.LengthScales), g.d)
	}
	if err := g.condition(h.clone()); err != nil {
		return nil, fmt.Errorf("bo: new gp: %w", err)
	}
	return g, nil
}

func newGPData(x [][]float64, y []float64, cfg GPConfig) (*GP, error) {
	if !cfg.Kernel.valid() {
		return nil, fmt.Errorf("bo: gp: unknown kernel %v", cfg.Kernel)
	}
	n := len(x)
	if n == 0 {
		return nil, ErrNoData
	}
	if len(y) != n {
		return nil, fmt.Errorf("bo: gp: %d inputs but %d outputs", n, len(y))
	}
	d := len(x[0])
	if d == 0 {
		return nil, fmt.Errorf("bo: gp: inputs have zero dimensions")
	}
	g := &GP{kind: cfg.Kernel, n: n, d: d, lo: make([]float64, d), scale: make([]float64, d)}
	switch {
	case cfg.Lower == nil && cfg.Upper == nil:
		for j := range d {
			mn, mx := math.Inf(1), math.Inf(-1)
			for _, r := range x {
				mn, mx = math.Min(mn, r[j]), math.Max(mx, r[j])
			}
			g.lo[j], g.scale[j] = mn, mx-mn
		}
	case len(cfg.Lower) == d && len(cfg.Upper) == d:
		for j := range d {
			g.lo[j], g.scale[j] = cfg.Lower[j], cfg.Upper[j]-cfg.Lower[j]
		}
	default:
		return nil, fmt.Errorf("bo: gp: input box has %d/%d bounds for %d inputs", len(cfg.Lower), len(cfg.Upper), d)
	}
	for j := range d {
		if !(g.scale[j] > 0) {
			g.scale[j] = 1
		}
	}
	g.x = make([]float64, n*d)
	for i, r := range x {
		if len(r) != d {
			return nil, fmt.Errorf("bo: gp: input %d has %d values, want %d", i, len(r), d)
		}
		for j, v := range r {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("bo: gp: input %d is not finite", i)
			}
			g.x[i*d+j] = (v - g.lo[j]) / g.scale[j]
		}
	}
	var mean float64
	for i, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("bo: gp: output %d is not finite", i)
		}
		mean += v
	}
	mean /= float64(n)
	var ss float64
	for _, v := range y {
		ss += (v - mean) * (v - mean)
	}
	std := 1.0
	if n > 1 {
		std = math.Sqrt(ss / float64(n-1))
	}
	if !(std > 1e-12*math.Max(1, math.Abs(mean))) {
		std = 1
	}
	g.ymean, g.ystd = mean, std
	g.yn = make([]float64, n)
	for i, v := range y {
		g.yn[i] = (v - mean) / std
	}
	g.ks, g.v, g.xn = make([]float64, n), make([]float64, n), make([]float64, d)
	return g, nil
}

// condition factorises the covariance for h and stores the posterior state.
func (g *GP) condition(h Hyper) error {
	ws := newLMLWorkspace(g.n)
	lml, err := g.lml(h, nil, ws)
	if err != nil {
		return err
	}
	g.h = h
	g.logLik = lml
	g.invL2 = make([]float64, g.d)
	for j, l := range h.LengthScales {
		g.invL2[j] = 1 / (l * l)
	}
	g.u = blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: g.n, Stride: g.n, Data: ws.k}
	g.alpha = ws.alpha
	g.jitter = ws.jitter
	return nil
}

type lmlWorkspace struct {
	n      int
	k      []float64 // covariance, then its upper Cholesky factor
	kv, gv []float64 // unit kernel values and d/dr² per pair (upper triangle)
	kinv   []float64
	alpha  []float64
	jitter float64
}

func newLMLWorkspace(n int) *lmlWorkspace {
	return &lmlWorkspace{n: n, k: make([]float64, n*n), kv: make([]float64, n*n), gv: make([]float64, n*n), alpha: make([]float64, n)}
}

// maxJitterTries bounds the jitter escalation: jitter starts at 1e-9·σf² and
// grows tenfold per failed factorisation up to 1e-3·σf².
const maxJitterTries = 7

// lml returns the log marginal likelihood of the standardised data under h,
//
//	log p(y|X,θ) = −½ yᵀα − Σ log U_ii − (n/2) log 2π   (R&W 2006, eq. 5.8 / alg. 2.1),
//
// and, if grad is non-nil, its gradient with respect to
// [log ℓ_1..log ℓ_d, log σf², log σn²]:
//
//	∂/∂θ_j = ½ tr((ααᵀ − K⁻¹) ∂K/∂θ_j)   (R&W 2006, eq. 5.9).
//
// On success ws.k holds the upper Cholesky factor and ws.alpha holds α.
func (g *GP) lml(h Hyper, grad []float64, ws *lmlWorkspace) (float64, error) {
	n, d := g.n, g.d
	sf2, sn2 := h.SignalVariance, h.NoiseVariance
	var invL2 [16]float64
	il := invL2[:0]
	if d > len(invL2) {
		il = make([]float64, 0, d)
	}
	for _, l := range h.LengthScales {
		il = append(il, 1/(l*l))
	}
	ws.jitter = 0
	var ok bool
	var u blas64.Triangular
	for try := 0; try < maxJitterTries; try++ {
		if try == 0 {
			g.fillCov(ws.k, ws.kv, ws.gv, il, sf2, sn2)
		} else {
			g.refillCov(ws.k, ws.kv, sf2, sn2+ws.jitter)
		}
		u, ok = lapack64.Potrf(blas64.Symmetric{Uplo: blas.Upper, N: n, Stride: n, Data: ws.k})
		if ok {
			break
		}
		if ws.jitter == 0 {
			ws.jitter = 1e-9 * sf2
		} else {
			ws.jitter *= 10
		}
	}
	if !ok {
		return 0, fmt.Errorf("covariance not positive definite even with jitter %g", ws.jitter)
	}
	copy(ws.alpha, g.yn)
	lapack64.Potrs(u, blas64.General{Rows: n, Cols: 1, Stride: 1, Data: ws.alpha})
	var lml float64
	for i := range n {
		lml -= 0.5 * g.yn[i] * ws.alpha[i]
		lml -= math.Log(ws.k[i*n+i])
	}
	lml -= 0.5 * float64(n) * math.Log(2*math.Pi)
	if grad == nil {
		return lml, nil
	}

	if len(ws.kinv) != n*n {
		ws.kinv = make([]float64, n*n)
	}
	copy(ws.kinv, ws.k)
	kinv, ok := lapack64.Potri(blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: n, Stride: n, Data: ws.kinv})
	if !ok {
		return 0, fmt.Errorf("covariance inverse failed")
	}
	for j := range grad {
		grad[j] = 0
	}
	// Diagonal terms: ∂K_ii/∂log σf² = σf², ∂K_ii/∂log σn² = σn², length-scales 0.
	var trW float64
	a := ws.alpha
	for i := range n {
		w := a[i]*a[i] - kinv.Data[i*n+i]
		trW += w
	}
	grad[d] += 0.5 * sf2 * trW
	grad[d+1] += 0.5 * sn2 * trW
	// Off-diagonal terms, counted twice by symmetry (½·2 = 1).
	for i := range n {
		xi := g.x[i*d : i*d+d]
		for j := i + 1; j < n; j++ {
			xj := g.x[j*d : j*d+d]
			w := a[i]*a[j] - kinv.Data[i*n+j]
			kv, gv := ws.kv[i*n+j], ws.gv[i*n+j]
			grad[d] += w * sf2 * kv
			// ∂k/∂log ℓ_t = σf² g(r²) · (−2 Δ_t²/ℓ_t²)
			c := -2 * w * sf2 * gv
			for t := range d {
				dt := xi[t] - xj[t]
				grad[t] += c * dt * dt * il[t]
			}
		}
	}
	return lml, nil
}

// fillCov writes σf² k(x_i,x_j) + diag·δ_ij into the upper triangle of k,
// and the unit kernel values and their r²-derivatives into kv and gv.
func (g *GP) fillCov(k, kv, gv []float64, invL2 []float64, sf2, diag float64) {
	n, d := g.n, g.d
	for i := range n {
		xi := g.x[i*d : i*d+d]
		k[i*n+i] = sf2 + diag
		for j := i + 1; j < n; j++ {
			xj := g.x[j*d : j*d+d]
			var r2 float64
			for t := range d {
				dt := xi[t] - xj[t]
				r2 += dt * dt * invL2[t]
			}
			u, du := unitKernel(g.kind, r2)
			kv[i*n+j], gv[i*n+j] = u, du
			k[i*n+j] = sf2 * u
		}
	}
}

// refillCov rebuilds the upper triangle of k from the cached unit kernel
// values kv (after a failed factorisation overwrote it).
func (g *GP) refillCov(k, kv []float64, sf2, diag float64) {
	n := g.n
	for i := range n {
		k[i*n+i] = sf2 + diag
		for j := i + 1; j < n; j++ {
			k[i*n+j] = sf2 * kv[i*n+j]
		}
	}
}

// logPrior returns the log density (up to a constant) of the Gamma priors
// documented on GPConfig.NoPrior and adds its gradient with respect to the log
// parameters into grad.
func logPrior(h Hyper, grad []float64) float64 {
	// Gamma(a, b) on θ: log p = (a−1) log θ − bθ; d/d log θ = (a−1) − bθ.
	gamma := func(a, b, th float64, gi *float64) float64 {
		*gi += (a - 1) - b*th
		return (a-1)*math.Log(th) - b*th
	}
	d := len(h.LengthScales)
	var lp float64
	for i, l := range h.LengthScales {
		lp += gamma(3, 6, l, &grad[i])
	}
	lp += gamma(2, 0.15, h.SignalVariance, &grad[d])
	lp += gamma(1.1, 0.05, h.NoiseVariance, &grad[d+1])
	return lp
}

func sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

// LogMarginalLikelihood returns the log marginal likelihood of y given x under
// kernel kind and hyperparameters h, with x and y used as given (no
// normalisation), and writes its gradient with respect to
// [log ℓ_1..log ℓ_d, log σf², log σn²] into grad if grad is non-nil
// (len(grad) must be d+2). It is the objective FitGP maximises (without prior).
func LogMarginalLikelihood(grad []float64, kind KernelKind, x [][]float64, y []float64, h Hyper) (float64, error) {
	if len(x) == 0 {
		return 0, ErrNoData
	}
	d := len(x[0])
	if grad != nil && len(grad) != d+2 {
		return 0, fmt.Errorf("bo: log marginal likelihood: grad has %d elements, want %d", len(grad), d+2)
	}
	if len(h.LengthScales) != d {
		return 0, fmt.Errorf("bo: log marginal likelihood: %d length-scales for %d inputs", len(h.LengthScales), d)
	}
	g := &GP{kind: kind, n: len(x), d: d, x: make([]float64, 0, len(x)*d), yn: y}
	if len(y) != len(x) {
		return 0, fmt.Errorf("bo: log marginal likelihood: %d inputs but %d outputs", len(x), len(y))
	}
	for _, r := range x {
		if len(r) != d {
			return 0, fmt.Errorf("bo: log marginal likelihood: ragged inputs")
		}
		g.x = append(g.x, r...)
	}
	lml, err := g.lml(h, grad, newLMLWorkspace(g.n))
	if err != nil {
		return 0, fmt.Errorf("bo: log marginal likelihood: %w", err)
	}
	return lml, nil
}

// Hyper returns a copy of the fitted hyperparameters (internal units).
func (g *GP) Hyper() Hyper { return g.h.clone() }

// Kernel returns the fitted kernel, acting on unit-box inputs and
// standardised outputs.
func (g *GP) Kernel() Kernel {
	return Kernel{Kind: g.kind, LengthScales: append([]float64(nil), g.h.LengthScales...), Variance: g.h.SignalVariance}
}

// LogLikelihood returns the log marginal likelihood of the standardised
// training outputs at the fitted hyperparameters.
func (g *GP) LogLikelihood() float64 { return g.logLik }

// Jitter returns the diagonal jitter (standardised units) that was added to
// make the covariance positive definite; 0 if none was needed.
func (g *GP) Jitter() float64 { return g.jitter }

// NoiseVariance returns the fitted observation-noise variance in output units squared.
func (g *GP) NoiseVariance() float64 { return g.h.NoiseVariance * g.ystd * g.ystd }

// Len returns the number of training points.
func (g *GP) Len() int { return g.n }

// Dim returns the input dimension.
func (g *GP) Dim() int { return g.d }

// Predict returns the posterior mean and variance of the latent function
// f(x) (observation noise excluded), in output units and output units squared:
//
//	mean = k*ᵀ (K + σn² I)⁻¹ y,  variance = k(x,x) − k*ᵀ (K + σn² I)⁻¹ k*.
//
// It does not allocate.
func (g *GP) Predict(x []float64) (mean, variance float64) {
	return g.PredictGrad(nil, nil, x)
}

// PredictGrad is Predict that also writes the gradients of the mean and the
// variance with respect to x into dmean and dvar when they are non-nil (each
// of length Dim()). It does not allocate.
func (g *GP) PredictGrad(dmean, dvar, x []float64) (mean, variance float64) {
	n, d := g.n, g.d
	if len(x) != d {
		panic("bo: gp predict: dimension mismatch")
	}
	sf2 := g.h.SignalVariance
	for j := range d {
		g.xn[j] = (x[j] - g.lo[j]) / g.scale[j]
	}
	var mu float64
	for i := range n {
		xi := g.x[i*d : i*d+d]
		var r2 float64
		for t := range d {
			dt := g.xn[t] - xi[t]
			r2 += dt * dt * g.invL2[t]
		}
		kv, _ := unitKernel(g.kind, r2)
		g.ks[i] = sf2 * kv
		mu += g.ks[i] * g.alpha[i]
	}
	copy(g.v, g.ks)
	// Solve Uᵀ v = k*, so vᵀv = k*ᵀ K⁻¹ k*.
	blas64.Trsv(blas.Trans, g.u, blas64.Vector{N: n, Inc: 1, Data: g.v})
	var vv float64
	for _, t := range g.v {
		vv += t * t
	}
	vr := sf2 - vv
	if vr < 0 {
		vr = 0
	}
	if dmean != nil || dvar != nil {
		if dvar != nil {
			// w = U⁻¹ v = K⁻¹ k*.
			blas64.Trsv(blas.NoTrans, g.u, blas64.Vector{N: n, Inc: 1, Data: g.v})
		}
		for t := range d {
			if dmean != nil {
				dmean[t] = 0
			}
			if dvar != nil {
				dvar[t] = 0
			}
		}
		for i := range n {
			xi := g.x[i*d : i*d+d]
			var r2 float64
			for t := range d {
				dt := g.xn[t] - xi[t]
				r2 += dt * dt * g.invL2[t]
			}
			_, gv := unitKernel(g.kind, r2)
			// ∂k*_i/∂x_t = σf² g(r²) · 2 Δ_t/ℓ_t² / scale_t
			cm, cv := 2*sf2*gv*g.alpha[i], 0.0
			if dvar != nil {
				cv = -2 * 2 * sf2 * gv * g.v[i]
			}
			for t := range d {
				f := (g.xn[t] - xi[t]) * g.invL2[t] / g.scale[t]
				if dmean != nil {
					dmean[t] += cm * f
				}
				if dvar != nil {
					dvar[t] += cv * f
				}
			}
		}
		for t := range d {
			if dmean != nil {
				dmean[t] *= g.ystd
			}
			if dvar != nil {
				dvar[t] *= g.ystd * g.ystd
				if vr == 0 {
					dvar[t] = 0
				}
			}
		}
	}
	return g.ymean + g.ystd*mu, g.ystd * g.ystd * vr
}
