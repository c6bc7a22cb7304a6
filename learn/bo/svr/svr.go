// Package svr is epsilon-support-vector regression with an RBF (or linear)
// kernel, trained by sequential minimal optimisation, for the performance
// models of the multi-cloud routing paper.
//
// The dual problem (Smola & Schölkopf 2004, "A tutorial on support vector
// regression", Stat. Comput. 14, eq. 10) is
//
//	min_{α,α*} ½ (α−α*)ᵀ K (α−α*) + ε Σ (α_i+α*_i) − Σ z_i (α_i−α*_i)
//	s.t. Σ (α_i−α*_i) = 0,  0 <= α_i, α*_i <= C,
//
// with f(x) = Σ (α_i−α*_i) k(x_i, x) + b. It is solved as one 2l-variable
// problem min ½ βᵀQβ + pᵀβ, yᵀβ = 0, 0 <= β <= C, with β = (α, α*),
// y = (+1…, −1…), as in Chang & Lin (2011, "LIBSVM: a library for support
// vector machines", ACM TIST 2(3), section 2.2 and 4.1), using the
// second-order working-set selection of Fan, Chen & Lin (2005, "Working set
// selection using second order information for training support vector
// machines", JMLR 6, WSS 3/Algorithm 1) and the stopping rule
// m(β) − M(β) <= Tolerance.
//
// Usage:
//
//	m, err := svr.Fit(x, z, svr.Config{C: 10, Epsilon: 0.05, Gamma: 0.5})
//	if err != nil { ... }
//	latency := m.Predict(features)
//
// Inputs should be scaled to comparable ranges (for example [0,1] or
// standardised), as LIBSVM recommends; Fit does not rescale them.
package svr

import (
	"errors"
	"fmt"
	"math"
)

// KernelKind selects the kernel.
type KernelKind int

const (
	// RBF is k(x, x') = exp(−γ ||x − x'||²).
	RBF KernelKind = iota
	// Linear is k(x, x') = xᵀx'.
	Linear
)

// Config holds the training parameters. Zero values take LIBSVM's defaults.
type Config struct {
	// Kernel is RBF (default) or Linear.
	Kernel KernelKind
	// C is the box constraint (default 1), in the units of the objective
	// Σ ξ: the cost per unit of error beyond the tube.
	C float64
	// Epsilon is the half-width of the insensitive tube (default 0.1), in
	// target units. A zero value means the default, so pass a tiny positive
	// value for an (almost) zero-width tube.
	Epsilon float64
	// Gamma is the RBF width γ in 1/(input units)² (default 1/d).
	Gamma float64
	// Tolerance is the stopping tolerance on the maximal KKT violation
	// m(β) − M(β) (default 1e-3).
	Tolerance float64
	// MaxIterations bounds the SMO iterations (default max(10⁷, 100·l)).
	MaxIterations int
}

// Model is a trained epsilon-SVR.
type Model struct {
	kernel KernelKind
	gamma  float64
	sv     [][]float64 // support vectors (points with α−α* ≠ 0)
	coef   []float64   // α_i − α*_i of the support vectors
	b      float64
	// per training point
	alpha, alphaStar []float64
	iterations       int
	converged        bool
}

// ErrNoData is returned by Fit for an empty training set.
var ErrNoData = errors.New("svr: no training data")

// kernelRows evaluates kernel rows on demand, caching the full Gram matrix
// when it is small enough.
type kernelRows struct {
	x     [][]float64
	kind  KernelKind
	gamma float64
	full  []float64 // l×l or nil
	rowA  []float64
	rowB  []float64
	diag  []float64
	lastA int
	lastB int
	useA  bool
}

// fullGramLimit is the largest training set whose Gram matrix is cached
// whole (4096² float64 = 128 MiB); a variable so tests can force the
// row-on-demand path.
var fullGramLimit = 4096

func newKernelRows(x [][]float64, kind KernelKind, gamma float64) *kernelRows {
	l := len(x)
	kr := &kernelRows{x: x, kind: kind, gamma: gamma, diag: make([]float64, l), lastA: -1, lastB: -1}
	if l <= fullGramLimit {
		kr.full = make([]float64, l*l)
		for i := range l {
			for j := i; j < l; j++ {
				v := kr.eval(x[i], x[j])
				kr.full[i*l+j], kr.full[j*l+i] = v, v
			}
		}
	} else {
		kr.rowA, kr.rowB = make([]float64, l), make([]float64, l)
	}
	for i := range l {
		kr.diag[i] = kr.eval(x[i], x[i])
	}
	return kr
}

func (kr *kernelRows) eval(a, b []float64) float64 {
	var s float64
	if kr.kind == Linear {
		for t := range a {
			s += a[t] * b[t]
		}
		return s
	}
	for t := range a {
		d := a[t] - b[t]
		s += d * d
	}
	return math.Exp(-kr.gamma * s)
}

// row returns k(x_i, x_s) for all s. Without the full Gram matrix the two
// most recent rows are kept.
func (kr *kernelRows) row(i int) []float64 {
	l := len(kr.x)
	if kr.full != nil {
		return kr.full[i*l : i*l+l]
	}
	switch i {
	case kr.lastA:
		return kr.rowA
	case kr.lastB:
		return kr.rowB
	}
	kr.useA = !kr.useA
	dst := kr.rowB
	if kr.useA {
		dst, kr.lastA = kr.rowA, i
	} else {
		kr.lastB = i
	}
	for s := range l {
		dst[s] = kr.eval(kr.x[i], kr.x[s])
	}
	return dst
}

// Fit trains an epsilon-SVR on inputs x (l rows of d values) and targets z.
func Fit(x [][]float64, z []float64, cfg Config) (*Model, error) {
	l := len(x)
	if l == 0 {
		return nil, ErrNoData
	}
	if len(z) != l {
		return nil, fmt.Errorf("svr: fit: %d inputs but %d targets", l, len(z))
	}
	d := len(x[0])
	for i, r := range x {
		if len(r) != d {
			return nil, fmt.Errorf("svr: fit: input %d has %d values, want %d", i, len(r), d)
		}
		for _, v := range r {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("svr: fit: input %d is not finite", i)
			}
		}
		if math.IsNaN(z[i]) || math.IsInf(z[i], 0) {
			return nil, fmt.Errorf("svr: fit: target %d is not finite", i)
		}
	}
	if cfg.C == 0 {
		cfg.C = 1
	}
	if cfg.Epsilon == 0 {
		cfg.Epsilon = 0.1
	}
	if cfg.Gamma == 0 && d > 0 {
		cfg.Gamma = 1 / float64(d)
	}
	if cfg.Tolerance == 0 {
		cfg.Tolerance = 1e-3
	}
	if cfg.MaxIterations == 0 {
		cfg.MaxIterations = max(10_000_000, 100*l)
	}
	switch {
	case !(cfg.C > 0):
		return nil, fmt.Errorf("svr: fit: c: must be > 0, got %g", cfg.C)
	case !(cfg.Epsilon >= 0):
		return nil, fmt.Errorf("svr: fit: epsilon: must be >= 0, got %g", cfg.Epsilon)
	case cfg.Kernel == RBF && !(cfg.Gamma > 0):
		return nil, fmt.Errorf("svr: fit: gamma: must be > 0, got %g", cfg.Gamma)
	case cfg.Kernel != RBF && cfg.Kernel != Linear:
		return nil, fmt.Errorf("svr: fit: kernel: unknown %d", cfg.Kernel)
	case !(cfg.Tolerance > 0):
		return nil, fmt.Errorf("svr: fit: tolerance: must be > 0, got %g", cfg.Tolerance)
	}

	kr := newKernelRows(x, cfg.Kernel, cfg.Gamma)
	C, eps := cfg.C, cfg.Epsilon
	n := 2 * l
	beta := make([]float64, n)
	grad := make([]float64, n) // G = Qβ + p, with β = 0 initially
	for t := range l {
		grad[t] = eps - z[t]
		grad[t+l] = eps + z[t]
	}
	ysign := func(t int) float64 {
		if t < l {
			return 1
		}
		return -1
	}
	inUp := func(t int) bool { // β_t can move along +y_t
		if t < l {
			return beta[t] < C
		}
		return beta[t] > 0
	}
	inLow := func(t int) bool { // β_t can move along −y_t
		if t < l {
			return beta[t] > 0
		}
		return beta[t] < C
	}
	const tau = 1e-12
	m := &Model{kernel: cfg.Kernel, gamma: cfg.Gamma}
	iter := 0
	for ; iter < cfg.MaxIterations; iter++ {
		// i = argmax_{t ∈ I_up} −y_t G_t  (Fan et al. 2005, eq. 16).
		i, gmax := -1, math.Inf(-1)
		for t := range n {
			if inUp(t) {
				if v := -ysign(t) * grad[t]; v > gmax {
					i, gmax = t, v
				}
			}
		}
		// j = argmin_{t ∈ I_low, −y_t G_t < m} −b_it²/ā_it  (WSS 3),
		// with b_it = m + y_t G_t and a_it = K_ii + K_tt − 2K_it.
		j, gmin, best := -1, math.Inf(1), math.Inf(1)
		var ki []float64
		if i >= 0 {
			ki = kr.row(i % l)
		}
		for t := range n {
			if !inLow(t) {
				continue
			}
			v := -ysign(t) * grad[t]
			gmin = math.Min(gmin, v)
			if i < 0 || !(v < gmax) {
				continue
			}
			bit := gmax - v
			a := kr.diag[i%l] + kr.diag[t%l] - 2*ki[t%l]
			if a <= 0 {
				a = tau
			}
			if obj := -bit * bit / a; obj < best {
				j, best = t, obj
			}
		}
		if i < 0 || j < 0 || gmax-gmin <= cfg.Tolerance {
			m.converged = true
			break
		}
		// Move β_i += y_i·δ, β_j −= y_j·δ (keeps yᵀβ fixed). The objective
		// along this line has slope −b_ij and curvature a_ij, so the
		// unconstrained step is δ = b_ij/a_ij, then clipped to the box.
		kj := kr.row(j % l)
		ki = kr.row(i % l) // may have been evicted by row(j) without a full Gram matrix
		a := kr.diag[i%l] + kr.diag[j%l] - 2*ki[j%l]
		if a <= 0 {
			a = tau
		}
		bij := gmax + ysign(j)*grad[j]
		delta := bij / a
		if i < l {
			delta = math.Min(delta, C-beta[i])
		} else {
			delta = math.Min(delta, beta[i])
		}
		if j < l {
			delta = math.Min(delta, beta[j])
		} else {
			delta = math.Min(delta, C-beta[j])
		}
		beta[i] += ysign(i) * delta
		beta[j] -= ysign(j) * delta
		// Snap to the bounds against rounding.
		for _, t := range [2]int{i, j} {
			if beta[t] < 1e-14*C {
				beta[t] = 0
			} else if beta[t] > C*(1-1e-14) {
				beta[t] = C
			}
		}
		// G_s += δ (y_i Q_si − y_j Q_sj) = δ y_s (K_si − K_sj).
		for s := range l {
			dk := delta * (ki[s] - kj[s])
			grad[s] += dk
			grad[s+l] -= dk
		}
	}
	m.iterations = iter

	// Bias: −y_t G_t on free variables; the midpoint of the feasible
	// interval if none is free.
	var sum float64
	var nfree int
	ub, lb := math.Inf(1), math.Inf(-1)
	for t := range n {
		v := -ysign(t) * grad[t]
		if beta[t] > 0 && beta[t] < C {
			sum += v
			nfree++
			continue
		}
		// At a bound the KKT conditions only bound b.
		if inUp(t) {
			lb = math.Max(lb, v)
		} else {
			ub = math.Min(ub, v)
		}
	}
	switch {
	case nfree > 0:
		m.b = sum / float64(nfree)
	case !math.IsInf(ub, 0) && !math.IsInf(lb, 0):
		m.b = 0.5 * (ub + lb)
	case !math.IsInf(ub, 0):
		m.b = ub
	case !math.IsInf(lb, 0):
		m.b = lb
	}

	m.alpha, m.alphaStar = beta[:l:l], beta[l:]
	for i := range l {
		if c := m.alpha[i] - m.alphaStar[i]; c != 0 {
			m.sv = append(m.sv, append([]float64(nil), x[i]...))
			m.coef = append(m.coef, c)
		}
	}
	return m, nil
}

// Predict returns f(x) = Σ (α_i − α*_i) k(x_i, x) + b, in target units. It
// does not allocate.
func (m *Model) Predict(x []float64) float64 {
	f := m.b
	for i, s := range m.sv {
		var v float64
		if m.kernel == Linear {
			for t := range s {
				v += s[t] * x[t]
			}
		} else {
			for t := range s {
				d := s[t] - x[t]
				v += d * d
			}
			v = math.Exp(-m.gamma * v)
		}
		f += m.coef[i] * v
	}
	return f
}

// Bias returns b.
func (m *Model) Bias() float64 { return m.b }

// NumSupportVectors returns the number of training points with α_i ≠ α*_i.
func (m *Model) NumSupportVectors() int { return len(m.sv) }

// Dual returns the dual variables α_i and α*_i of every training point
// (copies), each in [0, C].
func (m *Model) Dual() (alpha, alphaStar []float64) {
	return append([]float64(nil), m.alpha...), append([]float64(nil), m.alphaStar...)
}

// Iterations returns the number of SMO iterations performed.
func (m *Model) Iterations() int { return m.iterations }

// Converged reports whether the stopping rule was met before MaxIterations.
func (m *Model) Converged() bool { return m.converged }

// Saved is what a trained model needs to predict: its kernel, support
// vectors, their coefficients and the bias. It is plain data, for a model
// file.
type Saved struct {
	Kernel KernelKind  `json:"kernel"`
	Gamma  float64     `json:"gamma"`
	SV     [][]float64 `json:"sv"`
	Coef   []float64   `json:"coef"`
	Bias   float64     `json:"bias"`
}

// Save returns the model's predictive part.
func (m *Model) Save() Saved {
	return Saved{Kernel: m.kernel, Gamma: m.gamma, SV: m.sv, Coef: m.coef, Bias: m.b}
}

// Load rebuilds a model that predicts as the saved one did.
func Load(s Saved) (*Model, error) {
	if len(s.SV) != len(s.Coef) {
		return nil, fmt.Errorf("svr: %d support vectors but %d coefficients", len(s.SV), len(s.Coef))
	}
	if s.Kernel != RBF && s.Kernel != Linear {
		return nil, fmt.Errorf("svr: unknown kernel %d", s.Kernel)
	}
	return &Model{kernel: s.Kernel, gamma: s.Gamma, sv: s.SV, coef: s.Coef, b: s.Bias, converged: true}, nil
}
