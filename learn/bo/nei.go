package bo

import (
	"errors"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// nei is the Monte-Carlo noisy expected improvement of Letham, Karrer,
// Ottoni & Bakshy (2019, "Constrained Bayesian Optimization with Noisy
// Experiments", Bayesian Analysis 14(2), section 4, eq. 9–10):
//
//	NEI(x) = E_{f_D ~ p(f_D | D)} [ EI(x | D ∪ {(x_i, f_i)}, best = min_{feasible i} f_i) ],
//
// the expectation over joint posterior samples f_D of the latent function at
// the observed points of EI under a GP conditioned noiselessly on the sample.
// The noiseless GP shares the kernel matrix across samples, so the predictive
// variance is common and only the mean differs: one Cholesky factorisation
// serves every sample. The samples are drawn once per Ask (common random
// numbers) so the acquisition is a deterministic function of x. Feasibility
// of the observed points is taken from their observed constraint values
// (Letham et al. sample the constraints too).
type nei struct {
	g      *GP
	s      int               // number of samples
	u      blas64.Triangular // upper Cholesky factor of K_f + nugget·I (standardised units)
	f      []float64         // s×n: the posterior samples f_s (standardised units)
	alphas []float64         // s×n: (K_f + nugget·I)⁻¹ f_s
	best   []float64         // s: incumbent of each sample (standardised units)
	ks, w  []float64         // n: k*, and (K_f+nugget)⁻¹ k*
	dk     []float64         // n×d: ∂k*_i/∂x_t (unit-box coordinates)
	logs   []float64         // s: log EI per sample
	dMu    []float64         // s: d log EI/dμ per sample
	dSD    []float64         // s: d log EI/dσ per sample
}

// newNEI draws s joint posterior samples of the latent objective at the
// observed points of g and prepares the noiseless fantasy models.
// feasible marks the observed points that may be incumbents.
func newNEI(g *GP, feasible []bool, s int, rng *rand.Rand) (*nei, error) {
	n, d := g.n, g.d
	sn2 := g.h.NoiseVariance + g.jitter
	// Posterior covariance of f at the data: Σ = K_f − K_f (K_f + σn²I)⁻¹ K_f
	// = σn² I − σn⁴ (K_f + σn²I)⁻¹; posterior mean m = K_f α = y − σn² α.
	kinvT := blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: n, Stride: n, Data: append([]float64(nil), g.u.Data...)}
	kinv, ok := lapack64.Potri(kinvT)
	if !ok {
		return nil, errors.New("noisy ei: inverting the covariance failed")
	}
	sig := make([]float64, n*n)
	var L blas64.Triangular
	jit := 0.0
	for try := 0; ; try++ {
		for i := range n {
			for j := i; j < n; j++ {
				v := -sn2 * sn2 * kinv.Data[i*n+j]
				if i == j {
					v += sn2 + jit
				}
				sig[i*n+j] = v
			}
		}
		L, ok = lapack64.Potrf(blas64.Symmetric{Uplo: blas.Upper, N: n, Stride: n, Data: sig})
		if ok {
			break
		}
		if try == maxJitterTries {
			return nil, errors.New("noisy ei: posterior covariance not positive definite")
		}
		if jit == 0 {
			jit = 1e-10 * g.h.SignalVariance
		} else {
			jit *= 10
		}
	}
	mean := make([]float64, n)
	for i := range n {
		mean[i] = g.yn[i] - sn2*g.alpha[i]
	}

	// Noiseless fantasy model: K_f + nugget·I with the same kernel.
	kf := make([]float64, n*n)
	il := make([]float64, d)
	for t, l := range g.h.LengthScales {
		il[t] = 1 / (l * l)
	}
	kvs, gvs := make([]float64, n*n), make([]float64, n*n)
	nug := 1e-6 * g.h.SignalVariance
	var uf blas64.Triangular
	for try := 0; ; try++ {
		g.fillCov(kf, kvs, gvs, il, g.h.SignalVariance, nug)
		uf, ok = lapack64.Potrf(blas64.Symmetric{Uplo: blas.Upper, N: n, Stride: n, Data: kf})
		if ok {
			break
		}
		if try == maxJitterTries {
			return nil, errors.New("noisy ei: noiseless covariance not positive definite")
		}
		nug *= 10
	}

	m := &nei{g: g, s: s, u: uf, f: make([]float64, s*n), alphas: make([]float64, s*n), best: make([]float64, s),
		ks: make([]float64, n), w: make([]float64, n), dk: make([]float64, n*d),
		logs: make([]float64, s), dMu: make([]float64, s), dSD: make([]float64, s)}
	z := make([]float64, n)
	for k := range s {
		for i := range z {
			z[i] = rng.NormFloat64()
		}
		// f = m + Lᵀ z with Σ = LᵀL (L is the upper factor).
		blas64.Trmv(blas.Trans, L, blas64.Vector{N: n, Inc: 1, Data: z})
		f := m.alphas[k*n : k*n+n]
		best := math.Inf(1)
		for i := range n {
			f[i] = mean[i] + z[i]
			if feasible[i] {
				best = math.Min(best, f[i])
			}
		}
		m.best[k] = best
		copy(m.f[k*n:k*n+n], f)
		lapack64.Potrs(uf, blas64.General{Rows: n, Cols: 1, Stride: 1, Data: f})
	}
	return m, nil
}

// logValue returns log NEI at x (x in the GP's input units; the result is in
// log output units) and, if grad is non-nil, its gradient with respect to x.
func (m *nei) logValue(x, grad []float64) float64 {
	g := m.g
	n, d := g.n, g.d
	sf2 := g.h.SignalVariance
	for t := range d {
		g.xn[t] = (x[t] - g.lo[t]) / g.scale[t]
	}
	for i := range n {
		xi := g.x[i*d : i*d+d]
		var r2 float64
		for t := range d {
			dt := g.xn[t] - xi[t]
			r2 += dt * dt * g.invL2[t]
		}
		kv, gv := unitKernel(g.kind, r2)
		m.ks[i] = sf2 * kv
		if grad != nil {
			for t := range d {
				m.dk[i*d+t] = 2 * sf2 * gv * (g.xn[t] - xi[t]) * g.invL2[t]
			}
		}
	}
	copy(m.w, m.ks)
	blas64.Trsv(blas.Trans, m.u, blas64.Vector{N: n, Inc: 1, Data: m.w})
	var vv float64
	for _, t := range m.w {
		vv += t * t
	}
	vr := sf2 - vv
	floor := 1e-12 * sf2
	floored := vr < floor
	if floored {
		vr = floor
	}
	sd := math.Sqrt(vr)
	mx := math.Inf(-1)
	for k := range m.s {
		a := m.alphas[k*n : k*n+n]
		var mu float64
		for i := range n {
			mu += m.ks[i] * a[i]
		}
		m.logs[k], m.dMu[k], m.dSD[k] = LogExpectedImprovement(mu, sd, m.best[k])
		mx = math.Max(mx, m.logs[k])
	}
	var sum float64
	for k := range m.s {
		m.logs[k] = math.Exp(m.logs[k] - mx) // reuse as unnormalised weights
		sum += m.logs[k]
	}
	val := mx + math.Log(sum/float64(m.s)) + math.Log(g.ystd)
	if grad == nil {
		return val
	}
	// ∇ log mean EI = Σ_k w_k (dlogEI_k/dμ ∇μ_k + dlogEI_k/dσ ∇σ), w = softmax.
	if !floored {
		blas64.Trsv(blas.NoTrans, m.u, blas64.Vector{N: n, Inc: 1, Data: m.w})
	}
	for t := range d {
		grad[t] = 0
	}
	var wsd float64
	for k := range m.s {
		wsd += m.logs[k] / sum * m.dSD[k]
	}
	for i := range n {
		// Σ_k w_k dlogEI_k/dμ α_ki, and the variance term −2 w_i.
		var cm float64
		for k := range m.s {
			cm += m.logs[k] / sum * m.dMu[k] * m.alphas[k*n+i]
		}
		cv := 0.0
		if !floored {
			cv = wsd * (-2 * m.w[i]) / (2 * sd)
		}
		for t := range d {
			grad[t] += (cm + cv) * m.dk[i*d+t]
		}
	}
	for t := range d {
		grad[t] /= g.scale[t]
	}
	return val
}
