package svr

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLinearClosedForm: two points (0,0) and (1,1), linear kernel, ε = 0.1.
// With a large C the flattest function with both points inside the tube is
// f(x) = 0.8x + 0.1 (w is minimal when f(0) = 0.1 and f(1) = 0.9). With
// C = 0.5 the primal ½w² + C·max(0, 0.8 − w) is minimised by w = C = 0.5,
// objective 0.125 + 0.15 = 0.275.
func TestLinearClosedForm(t *testing.T) {
	x := [][]float64{{0}, {1}}
	z := []float64{0, 1}
	m, err := Fit(x, z, Config{Kernel: Linear, C: 100, Epsilon: 0.1, Tolerance: 1e-9})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ x, want float64 }{{0, 0.1}, {1, 0.9}, {2, 1.7}, {-1, -0.7}} {
		if got := m.Predict([]float64{c.x}); math.Abs(got-c.want) > 1e-8 {
			t.Errorf("C=100: f(%g) = %.10g, want %g", c.x, got, c.want)
		}
	}
	m, err = Fit(x, z, Config{Kernel: Linear, C: 0.5, Epsilon: 0.1, Tolerance: 1e-9})
	if err != nil {
		t.Fatal(err)
	}
	w := m.Predict([]float64{1}) - m.Predict([]float64{0})
	if math.Abs(w-0.5) > 1e-8 {
		t.Errorf("C=0.5: slope %g, want 0.5", w)
	}
	if p := primal(m, x, z, 0.5, 0.1); math.Abs(p-0.275) > 1e-8 {
		t.Errorf("C=0.5: primal objective %g, want 0.275", p)
	}
}

// primal returns ½||w||² + C Σ max(0, |f(x_i) − z_i| − ε), with
// ||w||² = (α−α*)ᵀ K (α−α*).
func primal(m *Model, x [][]float64, z []float64, C, eps float64) float64 {
	a, as := m.Dual()
	kr := newKernelRows(x, m.kernel, m.gamma)
	l := len(x)
	var ww, slack float64
	for i := range l {
		for j := range l {
			ww += (a[i] - as[i]) * (a[j] - as[j]) * kr.full[i*l+j]
		}
		slack += math.Max(0, math.Abs(m.Predict(x[i])-z[i])-eps)
	}
	return 0.5*ww + C*slack
}

// dual returns the dual objective (to be maximised):
// −½ (α−α*)ᵀK(α−α*) − ε Σ(α+α*) + Σ z_i (α_i−α*_i).
func dual(m *Model, x [][]float64, z []float64, eps float64) float64 {
	a, as := m.Dual()
	kr := newKernelRows(x, m.kernel, m.gamma)
	l := len(x)
	var ww, lin float64
	for i := range l {
		for j := range l {
			ww += (a[i] - as[i]) * (a[j] - as[j]) * kr.full[i*l+j]
		}
		lin += -eps*(a[i]+as[i]) + z[i]*(a[i]-as[i])
	}
	return -0.5*ww + lin
}

func sineData(n int, noise float64, rng *rand.Rand) ([][]float64, []float64) {
	x := make([][]float64, n)
	z := make([]float64, n)
	for i := range x {
		v := 2 * math.Pi * float64(i) / float64(n-1)
		x[i] = []float64{v}
		z[i] = math.Sin(v)
		if noise > 0 {
			z[i] += noise * rng.NormFloat64()
		}
	}
	return x, z
}

// TestKKTAndDualityGap checks on sine data (noise-free and noisy, several C)
// the KKT conditions of the SVR dual at the SMO solution and that the
// primal–dual gap (weak duality makes it >= 0; it is 0 only at the optimum), an optimality certificate independent of the solver, is
// small.
func TestKKTAndDualityGap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name       string
		noise, C   float64
		eps, gamma float64
	}{
		{"noise-free C=100", 0, 100, 0.05, 1},
		{"noisy C=1", 0.2, 1, 0.1, 1},
		{"noisy C=10 narrow tube", 0.1, 10, 0.01, 2},
	} {
		x, z := sineData(60, c.noise, rng)
		const tol = 1e-8
		m, err := Fit(x, z, Config{C: c.C, Epsilon: c.eps, Gamma: c.gamma, Tolerance: tol})
		if err != nil {
			t.Fatal(err)
		}
		if !m.Converged() {
			t.Fatalf("%s: not converged after %d iterations", c.name, m.Iterations())
		}
		a, as := m.Dual()
		var sum float64
		const slack = 1e-4 // KKT residual tolerance in target units
		for i := range x {
			sum += a[i] - as[i]
			if a[i] < 0 || a[i] > c.C || as[i] < 0 || as[i] > c.C {
				t.Errorf("%s: point %d: dual variables (%g, %g) outside [0, C]", c.name, i, a[i], as[i])
			}
			if a[i] > 0 && as[i] > 0 {
				t.Errorf("%s: point %d: α and α* both positive (%g, %g)", c.name, i, a[i], as[i])
			}
			r := m.Predict(x[i]) - z[i] // residual f(x_i) − z_i
			switch {
			case a[i] == 0 && as[i] == 0:
				if math.Abs(r) > c.eps+slack {
					t.Errorf("%s: point %d: non-support vector outside the tube, |r| = %g > ε = %g", c.name, i, math.Abs(r), c.eps)
				}
			case a[i] > 0 && a[i] < c.C:
				if math.Abs(r+c.eps) > slack {
					t.Errorf("%s: point %d: free α but r = %g, want −ε", c.name, i, r)
				}
			case as[i] > 0 && as[i] < c.C:
				if math.Abs(r-c.eps) > slack {
					t.Errorf("%s: point %d: free α* but r = %g, want +ε", c.name, i, r)
				}
			case a[i] == c.C:
				if r > -c.eps+slack {
					t.Errorf("%s: point %d: α = C but r = %g > −ε", c.name, i, r)
				}
			case as[i] == c.C:
				if r < c.eps-slack {
					t.Errorf("%s: point %d: α* = C but r = %g < ε", c.name, i, r)
				}
			}
		}
		if math.Abs(sum) > 1e-9*c.C*float64(len(x)) {
			t.Errorf("%s: Σ(α−α*) = %g, want 0", c.name, sum)
		}
		p, d := primal(m, x, z, c.C, c.eps), dual(m, x, z, c.eps)
		// Each point's KKT violation is at most ~tol, which can cost C·tol of
		// slack per point in the primal.
		if gap := p - d; gap < -1e-9 || gap > 1e-6*math.Abs(p)+c.C*tol*float64(len(x)) {
			t.Errorf("%s: duality gap %g (primal %g, dual %g)", c.name, gap, p, d)
		}
		t.Logf("%s: %d SVs of %d, %d iterations, primal %.6g dual %.6g", c.name, m.NumSupportVectors(), len(x), m.Iterations(), p, d)
	}
}

// TestSineFit: on noise-free sin(x), x ∈ [0, 2π], every training point lies
// within ε (+ the stopping tolerance) and the test error is small.
func TestSineFit(t *testing.T) {
	x, z := sineData(40, 0, nil)
	const eps = 0.02
	m, err := Fit(x, z, Config{C: 100, Epsilon: eps, Gamma: 0.5, Tolerance: 1e-4})
	if err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if r := math.Abs(m.Predict(x[i]) - z[i]); r > eps+1e-3 {
			t.Errorf("training point %d outside the tube: |r| = %g", i, r)
		}
	}
	var maxErr float64
	for k := range 200 {
		v := 2 * math.Pi * (float64(k) + 0.5) / 200
		maxErr = math.Max(maxErr, math.Abs(m.Predict([]float64{v})-math.Sin(v)))
	}
	if maxErr > 0.05 {
		t.Errorf("max test error %g > 0.05", maxErr)
	}
	if m.NumSupportVectors() >= len(x) {
		t.Errorf("all %d points are support vectors; the ε-tube should leave some out", len(x))
	}
}

// TestRowOnDemandMatchesFullGram forces the row-on-demand kernel path (used
// above fullGramLimit points) on a small problem: rows and the whole fit must
// equal the cached-Gram results bit for bit.
func TestRowOnDemandMatchesFullGram(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([][]float64, 50)
	for i := range x {
		x[i] = []float64{rng.Float64(), rng.Float64()}
	}
	full := newKernelRows(x, RBF, 2)
	demand := &kernelRows{x: x, kind: RBF, gamma: 2, diag: full.diag, lastA: -1, lastB: -1,
		rowA: make([]float64, 50), rowB: make([]float64, 50)}
	for _, i := range []int{3, 7, 3, 9, 7, 7, 3} {
		fr, dr := full.row(i), demand.row(i)
		for s := range fr {
			if fr[s] != dr[s] {
				t.Fatalf("row %d col %d: %g vs %g", i, s, fr[s], dr[s])
			}
		}
	}
	z := make([]float64, len(x))
	for i := range z {
		z[i] = math.Sin(5*x[i][0]) * x[i][1]
	}
	cfg := Config{C: 5, Epsilon: 0.05, Gamma: 2, Tolerance: 1e-6}
	a, err := Fit(x, z, cfg)
	if err != nil {
		t.Fatal(err)
	}
	saved := fullGramLimit
	fullGramLimit = 0
	defer func() { fullGramLimit = saved }()
	b, err := Fit(x, z, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.Bias() != b.Bias() || a.Iterations() != b.Iterations() || a.NumSupportVectors() != b.NumSupportVectors() {
		t.Errorf("on-demand fit differs: bias %g vs %g, iterations %d vs %d", a.Bias(), b.Bias(), a.Iterations(), b.Iterations())
	}
}

func TestFitErrors(t *testing.T) {
	cases := []struct {
		name string
		x    [][]float64
		z    []float64
		cfg  Config
	}{
		{"empty", nil, nil, Config{}},
		{"mismatch", [][]float64{{1}}, []float64{1, 2}, Config{}},
		{"ragged", [][]float64{{1}, {1, 2}}, []float64{1, 2}, Config{}},
		{"negative C", [][]float64{{1}}, []float64{1}, Config{C: -1}},
		{"negative epsilon", [][]float64{{1}}, []float64{1}, Config{Epsilon: -1}},
		{"nan target", [][]float64{{1}}, []float64{math.NaN()}, Config{}},
	}
	for _, c := range cases {
		if _, err := Fit(c.x, c.z, c.cfg); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

func BenchmarkFit(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([][]float64, 500)
	z := make([]float64, 500)
	for i := range x {
		x[i] = []float64{rng.Float64(), rng.Float64(), rng.Float64(), rng.Float64()}
		z[i] = math.Sin(4*x[i][0]) + x[i][1]*x[i][2] + 0.05*rng.NormFloat64()
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Fit(x, z, Config{C: 10, Epsilon: 0.05, Gamma: 2}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPredict(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([][]float64, 500)
	z := make([]float64, 500)
	for i := range x {
		x[i] = []float64{rng.Float64(), rng.Float64(), rng.Float64(), rng.Float64()}
		z[i] = math.Sin(4*x[i][0]) + x[i][1]*x[i][2] + 0.05*rng.NormFloat64()
	}
	m, err := Fit(x, z, Config{C: 10, Epsilon: 0.05, Gamma: 2})
	if err != nil {
		b.Fatal(err)
	}
	p := []float64{0.3, 0.4, 0.5, 0.6}
	b.ReportAllocs()
	for b.Loop() {
		m.Predict(p)
	}
}
