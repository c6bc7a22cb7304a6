package workload

import (
	"math"
	"testing"
	"time"
)

func TestDistMomentsMatchClosedForms(t *testing.T) {
	mustD := func(d Dist, err error) Dist {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	paretoM2 := func(a, lo, hi float64) float64 {
		k := 1 - math.Pow(lo/hi, a)
		return a * math.Pow(lo, a) * (math.Pow(hi, 2-a) - math.Pow(lo, 2-a)) / ((2 - a) * k)
	}
	emp := []float64{1, 2, 2, 3, 10}
	// Interpolated: segments [1,2],[2,2],[2,3],[3,10] each with probability 1/4, uniform inside.
	segMean := (1.5 + 2 + 2.5 + 6.5) / 4
	segM2 := ((1 + 2 + 4) + (4 + 4 + 4) + (4 + 6 + 9) + (9 + 30 + 100)) / 3.0 / 4
	cases := []struct {
		name     string
		d        Dist
		mean, cv float64
		cvTol    float64 // relative tolerance on the sample CV
	}{
		{"exp", mustD(NewExponential(0.02)), 0.02, 1, 0.02},
		{"lognormal cv0.5", mustD(NewLogNormal(3, 0.5)), 3, 0.5, 0.02},
		{"lognormal cv2", mustD(NewLogNormal(0.1, 2)), 0.1, 2, 0.15},
		{"det", mustD(NewDeterministic(0.7)), 0.7, 0, 0},
		{"uniform", mustD(NewUniform(2, 6)), 4, (6 - 2) / math.Sqrt(12) / 4, 0.02},
		{"pareto a1.5", mustD(NewBoundedPareto(1.5, 1, 1000)), -1, math.NaN(), 0.1},
		{"pareto a1", mustD(NewBoundedPareto(1, 1, 100)), 100 * math.Log(100) / 99, math.NaN(), 0.05},
		{"empirical", mustD(NewEmpirical(emp, false)), 18.0 / 5, math.Sqrt((1+4+4+9+100)/5.0-3.6*3.6) / 3.6, 0.02},
		{"empirical interp", mustD(NewEmpirical(emp, true)), segMean, math.Sqrt(segM2-segMean*segMean) / segMean, 0.02},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if bp, ok := c.d.(*BoundedPareto); ok {
				// Independent check of the closed-form mean by numerical integration of x·f(x).
				num := paretoMeanNumeric(bp.alpha, bp.lo, bp.hi)
				if c.mean < 0 {
					c.mean = num
				}
				if math.Abs(bp.Mean()/num-1) > 1e-6 {
					t.Fatalf("pareto Mean() = %v, numeric integral %v", bp.Mean(), num)
				}
				c.cv = math.Sqrt(paretoM2(bp.alpha, bp.lo, bp.hi)-c.mean*c.mean) / c.mean
				if bp.alpha == 1 {
					c.cv = math.Sqrt(bp.lo*bp.hi-c.mean*c.mean) / c.mean // E[X²] = L·H for α = 1
				}
			}
			if math.Abs(c.d.Mean()-c.mean) > 1e-12*c.mean {
				t.Fatalf("Mean() = %v, want %v", c.d.Mean(), c.mean)
			}
			rng := newRNG(21)
			const n = 400000
			var s, s2 float64
			for range n {
				x := c.d.Sample(rng)
				if !(x >= 0) {
					t.Fatalf("sample %v is negative or NaN", x)
				}
				s += x
				s2 += x * x
			}
			m := s / n
			sd := math.Sqrt(math.Max(0, s2/n-m*m))
			within(t, "sample mean", m, c.mean, math.Max(c.cv*c.mean/math.Sqrt(n), 1e-10*c.mean), 5)
			if c.cv == 0 {
				if sd != 0 {
					t.Errorf("sample sd = %v, want 0", sd)
				}
				return
			}
			if cv := sd / m; math.Abs(cv/c.cv-1) > c.cvTol {
				t.Errorf("sample cv = %.4f, want %.4f within %.0f%%", cv, c.cv, 100*c.cvTol)
			}
		})
	}
}

// paretoMeanNumeric integrates x·f(x) of the bounded Pareto with Simpson's rule on a log grid.
func paretoMeanNumeric(a, lo, hi float64) float64 {
	k := 1 - math.Pow(lo/hi, a)
	// Substitute x = e^u: ∫ x f(x) dx = ∫ e^{2u} f(e^u) du.
	g := func(u float64) float64 {
		x := math.Exp(u)
		return x * x * a * math.Pow(lo, a) * math.Pow(x, -a-1) / k
	}
	const n = 20000
	u0, u1 := math.Log(lo), math.Log(hi)
	h := (u1 - u0) / n
	s := g(u0) + g(u1)
	for i := 1; i < n; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		s += w * g(u0+float64(i)*h)
	}
	return s * h / 3
}

func TestLogNormalParams(t *testing.T) {
	// σ² = ln(1+cv²), μ = ln(mean) − σ²/2, so exp(μ+σ²/2) = mean and exp(σ²)−1 = cv².
	for _, c := range []struct{ mean, cv float64 }{{1, 1}, {0.01, 0.3}, {250, 4}} {
		d, err := NewLogNormal(c.mean, c.cv)
		if err != nil {
			t.Fatal(err)
		}
		mu, sigma := d.Params()
		if got := math.Exp(mu + sigma*sigma/2); math.Abs(got/c.mean-1) > 1e-12 {
			t.Errorf("mean %v cv %v: exp(μ+σ²/2) = %v", c.mean, c.cv, got)
		}
		if got := math.Sqrt(math.Exp(sigma*sigma) - 1); math.Abs(got/c.cv-1) > 1e-12 {
			t.Errorf("mean %v cv %v: sqrt(exp(σ²)−1) = %v", c.mean, c.cv, got)
		}
	}
}

func TestDistConstructorsReject(t *testing.T) {
	errs := []error{}
	add := func(_ Dist, err error) { errs = append(errs, err) }
	add(NewExponential(0))
	add(NewExponential(math.Inf(1)))
	add(NewLogNormal(1, 0))
	add(NewLogNormal(-1, 1))
	add(NewDeterministic(-1))
	add(NewUniform(3, 2))
	add(NewUniform(-1, 2))
	add(NewBoundedPareto(1, 2, 2))
	add(NewBoundedPareto(0, 1, 2))
	add(NewEmpirical(nil, false))
	add(NewEmpirical([]float64{1, math.NaN()}, false))
	for i, err := range errs {
		if err == nil {
			t.Errorf("case %d: want an error", i)
		}
	}
}

func TestEmpiricalInterpolationStaysInRange(t *testing.T) {
	d, err := NewEmpirical([]float64{5, 1, 3}, true)
	if err != nil {
		t.Fatal(err)
	}
	rng := newRNG(2)
	lo, hi := math.Inf(1), math.Inf(-1)
	for range 100000 {
		x := d.Sample(rng)
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	if lo < 1 || hi > 5 || lo > 1.01 || hi < 4.99 {
		t.Errorf("samples span [%v, %v], want to fill [1, 5]", lo, hi)
	}
	one, _ := NewEmpirical([]float64{4}, true)
	if one.Sample(rng) != 4 || one.Mean() != 4 {
		t.Error("single-value empirical must be constant")
	}
}

func TestSampleAndNextDoNotAllocate(t *testing.T) {
	rng := newRNG(1)
	dists := map[string]Dist{}
	add := func(name string, d Dist, err error) {
		if err != nil {
			t.Fatal(err)
		}
		dists[name] = d
	}
	e, err := NewExponential(1)
	add("exp", e, err)
	l, err := NewLogNormal(1, 1)
	add("lognormal", l, err)
	u, err := NewUniform(0, 1)
	add("uniform", u, err)
	p, err := NewBoundedPareto(1.2, 1, 10)
	add("pareto", p, err)
	em, err := NewEmpirical([]float64{1, 2, 3}, true)
	add("empirical", em, err)
	dists["scaled"] = Scaled{D: e, Factor: 2}
	for name, d := range dists {
		if a := testing.AllocsPerRun(1000, func() { d.Sample(rng) }); a != 0 {
			t.Errorf("%s Sample allocates %v", name, a)
		}
	}
	procs := map[string]Process{}
	pp, _ := NewPoisson(10)
	procs["poisson"] = pp
	mm, _ := NewMMPPDwell([]float64{1, 10}, []time.Duration{time.Second, time.Second})
	procs["mmpp"] = mm
	di, _ := NewDiurnal(10, 0.5, 1e11, 0)
	procs["diurnal"] = di
	sr, _ := NewSeriesReplay(&RateSeries{Step: 1e9, Values: []float64{1, 0, 5}}, ReplayOptions{Loop: true})
	procs["series"] = sr
	ir, _ := NewInstantReplay([]time.Duration{0, time.Second}, ReplayOptions{Loop: true})
	procs["instants"] = ir
	for name, p := range procs {
		var prev time.Duration
		if a := testing.AllocsPerRun(1000, func() {
			prev, _ = p.Next(prev, rng)
		}); a != 0 {
			t.Errorf("%s Next allocates %v", name, a)
		}
	}
}
