package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Two-sided Student t critical values from standard tables (e.g. NIST/SEMATECH e-Handbook, Table
// 1.3.6.7.2), printed to 3 decimals.
func TestStudentTQuantileTable(t *testing.T) {
	cases := []struct {
		p    float64
		df   int
		want float64
	}{
		{0.975, 1, 12.706},
		{0.975, 2, 4.303},
		{0.975, 4, 2.776},
		{0.975, 9, 2.262},
		{0.975, 29, 2.045},
		{0.975, 100, 1.984},
		{0.95, 10, 1.812},
		{0.995, 5, 4.032},
		{0.9, 3, 1.638},
		{0.999, 20, 3.552},
	}
	for _, c := range cases {
		got := StudentTQuantile(c.p, c.df)
		if math.Abs(got-c.want) > 5e-4 {
			t.Errorf("StudentTQuantile(%g, %d) = %.5f, table %.3f", c.p, c.df, got, c.want)
		}
		if neg := StudentTQuantile(1-c.p, c.df); math.Abs(neg+got) > 1e-9*got {
			t.Errorf("symmetry: q(%g) = %g, q(%g) = %g", 1-c.p, neg, c.p, got)
		}
	}
	// df = 1 is the Cauchy distribution: quantile tan(pi (p - 1/2)).
	for _, p := range []float64{0.6, 0.75, 0.9, 0.99} {
		if got, want := StudentTQuantile(p, 1), math.Tan(math.Pi*(p-0.5)); relErr(got, want) > 1e-9 {
			t.Errorf("df 1, p %g: %g, Cauchy %g", p, got, want)
		}
	}
	// df = 2 has the closed form (2p-1) sqrt(2 / (4p(1-p))).
	for _, p := range []float64{0.6, 0.75, 0.9, 0.99} {
		want := (2*p - 1) * math.Sqrt(2/(4*p*(1-p)))
		if got := StudentTQuantile(p, 2); relErr(got, want) > 1e-9 {
			t.Errorf("df 2, p %g: %g, closed form %g", p, got, want)
		}
	}
}

func TestMeanCI(t *testing.T) {
	// {1,2,3,4,5}: mean 3, s = sqrt(2.5), half = t_{4,0.975} * sqrt(2.5)/sqrt(5) = 2.776445 * 0.7071068.
	m, h := MeanCI([]float64{1, 2, 3, 4, 5}, 0.95)
	if m != 3 || math.Abs(h-2.776445*math.Sqrt(0.5)) > 1e-5 {
		t.Errorf("MeanCI = %g ± %g, want 3 ± %g", m, h, 2.776445*math.Sqrt(0.5))
	}
	// Constant data: zero width.
	if m, h := MeanCI([]float64{7, 7, 7}, 0.9); m != 7 || h != 0 {
		t.Errorf("constant: %g ± %g", m, h)
	}
	if m, h := MeanCI([]float64{4}, 0.95); m != 4 || !math.IsNaN(h) {
		t.Errorf("n=1: %g ± %g, want 4 ± NaN", m, h)
	}
	if m, h := MeanCI(nil, 0.95); !math.IsNaN(m) || !math.IsNaN(h) {
		t.Errorf("n=0: %g ± %g, want NaN ± NaN", m, h)
	}
}

// TestMeanCICoverage checks the defining property of the interval: over many experiments of n=5
// normal samples, the 95% interval covers the true mean in 95% of them (binomial standard error
// 0.49% with 2000 experiments; bound at 4 standard errors).
func TestMeanCICoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 43))
	const experiments, n, mu, sigma = 2000, 5, 10.0, 3.0
	covered := 0
	xs := make([]float64, n)
	for range experiments {
		for i := range xs {
			xs[i] = mu + sigma*rng.NormFloat64()
		}
		m, h := MeanCI(xs, 0.95)
		if math.Abs(m-mu) <= h {
			covered++
		}
	}
	frac := float64(covered) / experiments
	if math.Abs(frac-0.95) > 4*math.Sqrt(0.95*0.05/experiments) {
		t.Errorf("coverage %.4f, want 0.95", frac)
	}
}

func TestWelford(t *testing.T) {
	// Textbook example: {2,4,4,4,5,5,7,9} has mean 5, population variance 4, sample variance 32/7.
	var w Welford
	for _, x := range []float64{2, 4, 4, 4, 5, 5, 7, 9} {
		w.Add(x)
	}
	if w.Count() != 8 || w.Mean() != 5 || math.Abs(w.PopVar()-4) > 1e-14 || math.Abs(w.Var()-32.0/7) > 1e-14 ||
		math.Abs(w.StdDev()-math.Sqrt(32.0/7)) > 1e-14 {
		t.Errorf("n %d mean %g popvar %g var %g", w.Count(), w.Mean(), w.PopVar(), w.Var())
	}
	// Large offset: Welford keeps precision where the naive sum-of-squares formula fails.
	var big Welford
	for _, x := range []float64{2, 4, 4, 4, 5, 5, 7, 9} {
		big.Add(1e9 + x)
	}
	if math.Abs(big.PopVar()-4) > 1e-6 {
		t.Errorf("offset 1e9: popvar %g, want 4", big.PopVar())
	}
	// Merge equals adding everything, against a two-pass reference.
	rng := rand.New(rand.NewPCG(8, 9))
	var a, b, all Welford
	xs := make([]float64, 1000)
	for i := range xs {
		xs[i] = rng.NormFloat64()*2 + 100
		if i < 300 {
			a.Add(xs[i])
		} else {
			b.Add(xs[i])
		}
		all.Add(xs[i])
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	mean := s / float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	a.Merge(b)
	for name, w := range map[string]Welford{"merged": a, "streamed": all} {
		if w.Count() != 1000 || relErr(w.Mean(), mean) > 1e-13 || relErr(w.Var(), ss/999) > 1e-11 {
			t.Errorf("%s: n %d mean %.15g var %.15g, want %.15g %.15g", name, w.Count(), w.Mean(), w.Var(), mean, ss/999)
		}
	}
	var e Welford
	e.Merge(all)
	if e != all {
		t.Errorf("merge into empty: %+v, want %+v", e, all)
	}
	all.Reset()
	if all.Count() != 0 || all.Var() != 0 || all.Mean() != 0 {
		t.Errorf("Reset: %+v", all)
	}
	if a := testing.AllocsPerRun(100, func() { w.Add(1) }); a != 0 {
		t.Errorf("Welford.Add allocates %v", a)
	}
}
