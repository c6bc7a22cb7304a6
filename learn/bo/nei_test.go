package bo

import (
	"math"
	"math/rand/v2"
	"testing"
)

func neiData(n int, noise float64, seed uint64) ([][]float64, []float64) {
	rng := rand.New(rand.NewPCG(seed, 0))
	x := make([][]float64, n)
	y := make([]float64, n)
	for i := range x {
		x[i] = []float64{rng.Float64(), rng.Float64()}
		y[i] = math.Sin(6*x[i][0]) + x[i][1] + noise*rng.NormFloat64()
	}
	return x, y
}

func allTrue(n int) []bool {
	b := make([]bool, n)
	for i := range b {
		b[i] = true
	}
	return b
}

// TestNEISamplesMatchPosterior: the joint samples of f at the data have the
// posterior mean and variance that Predict (checked against the closed form
// elsewhere) gives, within Monte-Carlo error.
func TestNEISamplesMatchPosterior(t *testing.T) {
	x, y := neiData(15, 0.3, 1)
	g, err := NewGP(x, y, GPConfig{Lower: []float64{0, 0}, Upper: []float64{1, 1}},
		Hyper{LengthScales: []float64{0.3, 0.5}, SignalVariance: 1, NoiseVariance: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	const S = 20000
	m, err := newNEI(g, allTrue(len(x)), S, rand.New(rand.NewPCG(2, 0)))
	if err != nil {
		t.Fatal(err)
	}
	n := len(x)
	for i := range n {
		var s1, s2 float64
		for k := range S {
			v := g.ymean + g.ystd*m.f[k*n+i]
			s1 += v
			s2 += v * v
		}
		mean := s1 / S
		vr := s2/S - mean*mean
		pm, pv := g.Predict(x[i])
		if se := math.Sqrt(pv / S); math.Abs(mean-pm) > 5*se {
			t.Errorf("point %d: sample mean %g, posterior mean %g (se %g)", i, mean, pm, se)
		}
		if math.Abs(vr-pv) > 5*pv*math.Sqrt(2.0/S) {
			t.Errorf("point %d: sample variance %g, posterior variance %g", i, vr, pv)
		}
	}
}

// TestNEIReducesToEIWithoutNoise: with (almost) noise-free observations every
// sample equals the data, so NEI equals EI with the best observation as
// incumbent.
func TestNEIReducesToEIWithoutNoise(t *testing.T) {
	x, y := neiData(12, 0, 3)
	g, err := NewGP(x, y, GPConfig{Lower: []float64{0, 0}, Upper: []float64{1, 1}},
		Hyper{LengthScales: []float64{0.4, 0.6}, SignalVariance: 1, NoiseVariance: 1e-10})
	if err != nil {
		t.Fatal(err)
	}
	m, err := newNEI(g, allTrue(len(x)), 8, rand.New(rand.NewPCG(4, 0)))
	if err != nil {
		t.Fatal(err)
	}
	best := math.Inf(1)
	for _, v := range y {
		best = math.Min(best, v)
	}
	rng := rand.New(rand.NewPCG(5, 0))
	for range 20 {
		p := []float64{rng.Float64(), rng.Float64()}
		mu, vr := g.Predict(p)
		want, _, _ := LogExpectedImprovement(mu, math.Sqrt(vr), best)
		got := m.logValue(p, nil)
		if math.Abs(got-want) > 1e-3*math.Max(1, math.Abs(want)) {
			t.Errorf("x=%v: log NEI %g, log EI %g", p, got, want)
		}
	}
}

func TestNEIGradient(t *testing.T) {
	x, y := neiData(20, 0.2, 6)
	g, err := NewGP(x, y, GPConfig{Lower: []float64{0, 0}, Upper: []float64{1, 1}},
		Hyper{LengthScales: []float64{0.3, 0.5}, SignalVariance: 1.2, NoiseVariance: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	m, err := newNEI(g, allTrue(len(x)), 16, rand.New(rand.NewPCG(7, 0)))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(8, 0))
	grad := make([]float64, 2)
	for range 10 {
		p := []float64{rng.Float64(), rng.Float64()}
		m.logValue(p, grad)
		for j := range p {
			const eps = 1e-6
			q := append([]float64(nil), p...)
			q[j] += eps
			fp := m.logValue(q, nil)
			q[j] -= 2 * eps
			fm := m.logValue(q, nil)
			if fd := (fp - fm) / (2 * eps); math.Abs(fd-grad[j]) > 1e-4*math.Max(1, math.Abs(fd)) {
				t.Errorf("x=%v dim %d: analytic %g, finite difference %g", p, j, grad[j], fd)
			}
		}
	}
}
