package bo

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// inv3 inverts a 3×3 matrix by cofactors (an independent reference, no gonum).
func inv3(a [3][3]float64) [3][3]float64 {
	c := func(i, j int) float64 {
		r0, r1 := (i+1)%3, (i+2)%3
		c0, c1 := (j+1)%3, (j+2)%3
		return a[r0][c0]*a[r1][c1] - a[r0][c1]*a[r1][c0]
	}
	det := a[0][0]*c(0, 0) + a[0][1]*c(0, 1) + a[0][2]*c(0, 2)
	var inv [3][3]float64
	for i := range 3 {
		for j := range 3 {
			inv[j][i] = c(i, j) / det // adjugate is the transposed cofactor matrix
		}
	}
	return inv
}

// TestGPPosteriorClosedForm checks mean = m + k*ᵀ(K+σn²I)⁻¹(y−m) and
// variance = k(x,x) − k*ᵀ(K+σn²I)⁻¹k* on a 3-point problem, computed with a
// hand-written 3×3 inverse, for both kernels, where m is the sample mean that
// the GP's output standardisation removes.
func TestGPPosteriorClosedForm(t *testing.T) {
	x := [][]float64{{0.1}, {0.5}, {0.8}}
	y := []float64{1.0, -0.5, 2.0}
	h := Hyper{LengthScales: []float64{0.3}, SignalVariance: 1.5, NoiseVariance: 0.01}
	m := (y[0] + y[1] + y[2]) / 3
	var ss float64
	for _, v := range y {
		ss += (v - m) * (v - m)
	}
	s2 := ss / 2 // sample variance used for standardisation
	for _, kind := range []KernelKind{RBF, Matern52} {
		k := func(a, b float64) float64 {
			r := math.Abs(a-b) / 0.3
			if kind == RBF {
				return 1.5 * s2 * math.Exp(-r*r/2)
			}
			return 1.5 * s2 * (1 + math.Sqrt(5)*r + 5*r*r/3) * math.Exp(-math.Sqrt(5)*r)
		}
		var K [3][3]float64
		for i := range 3 {
			for j := range 3 {
				K[i][j] = k(x[i][0], x[j][0])
			}
			K[i][i] += 0.01 * s2
		}
		Ki := inv3(K)
		g, err := NewGP(x, y, GPConfig{Kernel: kind, Lower: []float64{0}, Upper: []float64{1}}, h)
		if err != nil {
			t.Fatal(err)
		}
		for _, xs := range []float64{0, 0.1, 0.3, 0.65, 1} {
			ks := [3]float64{k(xs, 0.1), k(xs, 0.5), k(xs, 0.8)}
			var mean, quad float64
			for i := range 3 {
				for j := range 3 {
					mean += ks[i] * Ki[i][j] * (y[j] - m)
					quad += ks[i] * Ki[i][j] * ks[j]
				}
			}
			mean += m
			vr := 1.5*s2 - quad
			gm, gv := g.Predict([]float64{xs})
			if math.Abs(gm-mean) > 1e-10 || math.Abs(gv-vr) > 1e-10 {
				t.Errorf("%v x=%g: got (%.12g, %.12g), closed form (%.12g, %.12g)", kind, xs, gm, gv, mean, vr)
			}
		}
	}
}

// TestGPTwoPointExample checks a 2-point example by hand: RBF, ℓ=1, σf²=1,
// σn²=0, y = ±1 (mean 0, sample std √2), x = 0 and 1. With ρ = e^{−1/2},
// the standardised posterior mean at x=0.5 is 0 by symmetry and the variance
// is 1 − 2 e^{−1/4}·e^{−1/4}/(1+ρ) (since k* = (e^{−1/8}, e^{−1/8}) and
// 1ᵀ K⁻¹ 1 = 2/(1+ρ)).
func TestGPTwoPointExample(t *testing.T) {
	g, err := NewGP([][]float64{{0}, {1}}, []float64{1, -1}, GPConfig{Kernel: RBF, Lower: []float64{0}, Upper: []float64{1}},
		Hyper{LengthScales: []float64{1}, SignalVariance: 1, NoiseVariance: 1e-12})
	if err != nil {
		t.Fatal(err)
	}
	rho := math.Exp(-0.5)
	ks := math.Exp(-0.125)
	wantVar := 2 * (1 - 2*ks*ks/(1+rho)) // times ystd² = 2
	m, v := g.Predict([]float64{0.5})
	if math.Abs(m) > 1e-9 || math.Abs(v-wantVar) > 1e-9 {
		t.Errorf("got (%g, %g), want (0, %g)", m, v, wantVar)
	}
	// At a training point the mean interpolates and the variance vanishes.
	m, v = g.Predict([]float64{0})
	if math.Abs(m-1) > 1e-6 || v > 1e-6 {
		t.Errorf("at x=0: got (%g, %g), want (1, 0)", m, v)
	}
}

// TestLogMarginalLikelihoodClosedForm compares with log N(y; 0, K) for a
// 2×2 K written out by hand.
func TestLogMarginalLikelihoodClosedForm(t *testing.T) {
	x := [][]float64{{0.2, 0.4}, {0.7, 0.1}}
	y := []float64{0.3, -1.1}
	h := Hyper{LengthScales: []float64{0.5, 2}, SignalVariance: 1.3, NoiseVariance: 0.2}
	r2 := (0.5/0.5)*(0.5/0.5) + (0.3/2)*(0.3/2)
	k12 := 1.3 * math.Exp(-r2/2)
	a, b := 1.3+0.2, k12
	det := a*a - b*b
	quad := (a*y[0]*y[0] - 2*b*y[0]*y[1] + a*y[1]*y[1]) / det
	want := -0.5*quad - 0.5*math.Log(det) - math.Log(2*math.Pi)
	got, err := LogMarginalLikelihood(nil, RBF, x, y, h)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got-want) > 1e-12 {
		t.Errorf("lml = %.15g, want %.15g", got, want)
	}
}

// TestLogMarginalLikelihoodGradient checks the analytic gradient against
// central finite differences in the log parameters.
func TestLogMarginalLikelihoodGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, d = 12, 3
	x := make([][]float64, n)
	y := make([]float64, n)
	for i := range x {
		x[i] = []float64{rng.Float64(), rng.Float64(), rng.Float64()}
		y[i] = math.Sin(5*x[i][0]) + x[i][1]*x[i][2] + 0.1*rng.NormFloat64()
	}
	for _, kind := range []KernelKind{RBF, Matern52} {
		for trial := range 3 {
			h := Hyper{LengthScales: make([]float64, d), SignalVariance: 0.5 + rng.Float64(), NoiseVariance: 0.01 + 0.2*rng.Float64()}
			for j := range h.LengthScales {
				h.LengthScales[j] = 0.1 + rng.Float64()
			}
			grad := make([]float64, d+2)
			if _, err := LogMarginalLikelihood(grad, kind, x, y, h); err != nil {
				t.Fatal(err)
			}
			p := make([]float64, d+2)
			h.logParams(p)
			for j := range p {
				const eps = 1e-5
				pp := append([]float64(nil), p...)
				pp[j] += eps
				fp, _ := LogMarginalLikelihood(nil, kind, x, y, hyperFromLog(pp))
				pp[j] -= 2 * eps
				fm, _ := LogMarginalLikelihood(nil, kind, x, y, hyperFromLog(pp))
				fd := (fp - fm) / (2 * eps)
				if math.Abs(fd-grad[j]) > 1e-6*math.Max(1, math.Abs(fd)) {
					t.Errorf("%v trial %d param %d: analytic %.10g, finite difference %.10g", kind, trial, j, grad[j], fd)
				}
			}
		}
	}
}

// TestFitGPMaximisesLikelihood checks that the ML fit (no prior) is at least
// as good as 200 random hyperparameter settings inside the bounds, and that
// it predicts a smooth function well.
func TestFitGPMaximisesLikelihood(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 30
	x := make([][]float64, n)
	y := make([]float64, n)
	f := func(a, b float64) float64 { return math.Sin(3*a) + 0.5*math.Cos(2*b) }
	for i := range x {
		x[i] = []float64{rng.Float64() * 2, rng.Float64() * 2}
		y[i] = f(x[i][0], x[i][1])
	}
	for _, kind := range []KernelKind{RBF, Matern52} {
		cfg := DefaultGPConfig()
		cfg.Kernel = kind
		cfg.NoPrior = true
		g, err := FitGP(x, y, cfg, rng)
		if err != nil {
			t.Fatal(err)
		}
		fitted := g.LogLikelihood()
		for range 200 {
			h := Hyper{LengthScales: []float64{
				math.Exp(math.Log(0.01) + rng.Float64()*math.Log(2000)),
				math.Exp(math.Log(0.01) + rng.Float64()*math.Log(2000)),
			},
				SignalVariance: math.Exp(math.Log(0.01) + rng.Float64()*math.Log(1e4)),
				NoiseVariance:  math.Exp(math.Log(1e-6) + rng.Float64()*math.Log(1e6)),
			}
			g2, err := NewGP(x, y, cfg, h)
			if err != nil {
				continue
			}
			if g2.LogLikelihood() > fitted+1e-6 {
				t.Errorf("%v: random hyperparameters %+v have lml %g > fitted %g", kind, h, g2.LogLikelihood(), fitted)
			}
		}
		var sse float64
		for range 100 {
			a, b := rng.Float64()*2, rng.Float64()*2
			m, _ := g.Predict([]float64{a, b})
			sse += (m - f(a, b)) * (m - f(a, b))
		}
		if rmse := math.Sqrt(sse / 100); rmse > 0.05 {
			t.Errorf("%v: test rmse %g > 0.05 (hyper %+v)", kind, rmse, g.Hyper())
		}
	}
}

// TestGPJitterEscalation conditions on repeated inputs with zero noise: the
// covariance is singular, so a jitter must be added and predictions stay finite.
func TestGPJitterEscalation(t *testing.T) {
	x := [][]float64{{0.5}, {0.5}, {0.5}, {0.2}}
	y := []float64{1, 1, 1, 0}
	g, err := NewGP(x, y, GPConfig{Kernel: RBF, Lower: []float64{0}, Upper: []float64{1}},
		Hyper{LengthScales: []float64{0.3}, SignalVariance: 1, NoiseVariance: 0})
	if err != nil {
		t.Fatal(err)
	}
	if g.Jitter() <= 0 {
		t.Errorf("jitter = %g, want > 0 for a singular covariance", g.Jitter())
	}
	m, v := g.Predict([]float64{0.5})
	if math.Abs(m-1) > 1e-3 || v < 0 || v > 1e-3 {
		t.Errorf("predict at repeated point = (%g, %g), want (≈1, ≈0)", m, v)
	}
}

// TestPredictGrad checks the input gradients of mean and variance by finite differences.
func TestPredictGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([][]float64, 15)
	y := make([]float64, 15)
	for i := range x {
		x[i] = []float64{rng.Float64()*4 - 2, rng.Float64(), rng.Float64() * 10}
		y[i] = x[i][0]*x[i][0] + math.Sin(x[i][2]) + rng.NormFloat64()*0.1
	}
	for _, kind := range []KernelKind{RBF, Matern52} {
		g, err := NewGP(x, y, GPConfig{Kernel: kind}, Hyper{LengthScales: []float64{0.4, 0.7, 0.3}, SignalVariance: 1.2, NoiseVariance: 0.05})
		if err != nil {
			t.Fatal(err)
		}
		dm, dv := make([]float64, 3), make([]float64, 3)
		for range 5 {
			p := []float64{rng.Float64()*4 - 2, rng.Float64(), rng.Float64() * 10}
			g.PredictGrad(dm, dv, p)
			for j := range p {
				eps := 1e-6 * (1 + math.Abs(p[j]))
				q := append([]float64(nil), p...)
				q[j] += eps
				mp, vp := g.Predict(q)
				q[j] -= 2 * eps
				mm, vm := g.Predict(q)
				fdm, fdv := (mp-mm)/(2*eps), (vp-vm)/(2*eps)
				if math.Abs(fdm-dm[j]) > 1e-5*math.Max(1, math.Abs(fdm)) || math.Abs(fdv-dv[j]) > 1e-5*math.Max(1, math.Abs(fdv)) {
					t.Errorf("%v dim %d: analytic (%g, %g), finite difference (%g, %g)", kind, j, dm[j], dv[j], fdm, fdv)
				}
			}
		}
	}
}

func TestGPErrors(t *testing.T) {
	cases := []struct {
		name string
		x    [][]float64
		y    []float64
		cfg  GPConfig
	}{
		{"no data", nil, nil, GPConfig{}},
		{"length mismatch", [][]float64{{1}}, []float64{1, 2}, GPConfig{}},
		{"ragged", [][]float64{{1}, {1, 2}}, []float64{1, 2}, GPConfig{}},
		{"nan output", [][]float64{{1}, {2}}, []float64{1, math.NaN()}, GPConfig{}},
		{"bad box", [][]float64{{1}, {2}}, []float64{1, 2}, GPConfig{Lower: []float64{0}}},
		{"bad kernel", [][]float64{{1}, {2}}, []float64{1, 2}, GPConfig{Kernel: KernelKind(9)}},
	}
	for _, c := range cases {
		_, err := FitGP(c.x, c.y, c.cfg, rand.New(rand.NewPCG(1, 1)))
		if err == nil {
			t.Errorf("%s: no error", c.name)
		}
		if c.name == "no data" && !errors.Is(err, ErrNoData) {
			t.Errorf("%s: error %v is not ErrNoData", c.name, err)
		}
	}
}

func TestPredictDoesNotAllocate(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	x := make([][]float64, 20)
	y := make([]float64, 20)
	for i := range x {
		x[i] = []float64{rng.Float64(), rng.Float64()}
		y[i] = rng.NormFloat64()
	}
	g, err := NewGP(x, y, GPConfig{}, Hyper{LengthScales: []float64{0.3, 0.3}, SignalVariance: 1, NoiseVariance: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	p, dm, dv := []float64{0.3, 0.4}, make([]float64, 2), make([]float64, 2)
	if a := testing.AllocsPerRun(100, func() { g.PredictGrad(dm, dv, p) }); a != 0 {
		t.Errorf("PredictGrad allocates %v times", a)
	}
}
