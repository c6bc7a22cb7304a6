package workload

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// sharedTraces is one catalog for the tests that only read embedded traces (read-only use).
var sharedTraces = NewTraces("")

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// arrivals runs p from 0 until horizon (or exhaustion) and returns the instants.
func arrivals(t testing.TB, p Process, rng *rand.Rand, horizon time.Duration) []time.Duration {
	t.Helper()
	var out []time.Duration
	prev := time.Duration(0)
	for {
		at, ok := p.Next(prev, rng)
		if !ok || at >= horizon {
			return out
		}
		if at < prev {
			t.Fatalf("arrival %d at %v before previous %v", len(out), at, prev)
		}
		out = append(out, at)
		prev = at
	}
}

// within asserts |got − want| <= k·sd.
func within(t *testing.T, what string, got, want, sd, k float64) {
	t.Helper()
	if math.Abs(got-want) > k*sd {
		t.Errorf("%s = %.6g, want %.6g ± %.3g (%.0f sd)", what, got, want, k*sd, k)
	}
}

func TestPoissonCountAndCV(t *testing.T) {
	for _, rate := range []float64{0.5, 50, 5000} {
		p, err := NewPoisson(rate)
		if err != nil {
			t.Fatal(err)
		}
		T := 2e5 / rate // about 200000 arrivals
		at := arrivals(t, p, newRNG(1), time.Duration(T*1e9))
		n := float64(len(at))
		within(t, "poisson count", n, rate*T, math.Sqrt(rate*T), 5)
		// Inter-arrival times: mean 1/rate, CV 1 (exponential).
		var s, s2 float64
		prev := time.Duration(0)
		for _, a := range at {
			g := (a - prev).Seconds()
			s += g
			s2 += g * g
			prev = a
		}
		m := s / n
		cv := math.Sqrt(s2/n-m*m) / m
		within(t, "poisson mean gap", m, 1/rate, 1/rate/math.Sqrt(n), 5)
		within(t, "poisson gap cv", cv, 1, 0.01, 3) // sd of the sample CV of an exponential ≈ 1/√n
	}
}

func TestPoissonDeterministic(t *testing.T) {
	p, _ := NewPoisson(10)
	a := arrivals(t, p, newRNG(7), time.Minute)
	b := arrivals(t, p, newRNG(7), time.Minute)
	c := arrivals(t, p, newRNG(8), time.Minute)
	if len(a) != len(b) {
		t.Fatalf("same seed gave %d and %d arrivals", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed differs at %d: %v vs %v", i, a[i], b[i])
		}
	}
	if len(c) == len(a) && c[0] == a[0] {
		t.Errorf("different seeds gave the same first arrival %v", a[0])
	}
}

// twoStateIDC is the index of dispersion Var N(t)/E N(t) of a stationary 2-phase MMPP with
// rates l1, l2 and leaving rates s1, s2 (per second):
//
//	IDC(t) = 1 + 2(λ1−λ2)² π1π2 / λ̄ · (1/r − (1 − e^{−rt})/(r² t)),  r = s1+s2,
//
// from the covariance (λ1−λ2)² π1π2 e^{−r s} of the modulating rate; its t→∞ limit is the
// Fischer & Meier-Hellstern formula 1 + 2(λ1−λ2)² s1 s2 / (r² (λ1 s2 + λ2 s1)).
func twoStateIDC(l1, l2, s1, s2, t float64) float64 {
	r := s1 + s2
	p1, p2 := s2/r, s1/r
	mean := p1*l1 + p2*l2
	return 1 + 2*(l1-l2)*(l1-l2)*p1*p2/mean*(1/r-(1-math.Exp(-r*t))/(r*r*t))
}

func TestMMPPTwoState(t *testing.T) {
	l1, l2 := 5.0, 50.0
	d1, d2 := 4*time.Second, 1*time.Second // mean dwell: leaving rates 0.25, 1
	s1, s2 := 1/d1.Seconds(), 1/d2.Seconds()
	m, err := NewMMPPDwell([]float64{l1, l2}, []time.Duration{d1, d2})
	if err != nil {
		t.Fatal(err)
	}
	// Stationary mixture: π1 = s2/(s1+s2) = dwell1/(dwell1+dwell2).
	pi := m.Stationary()
	if math.Abs(pi[0]-0.8) > 1e-12 || math.Abs(pi[1]-0.2) > 1e-12 {
		t.Fatalf("stationary = %v, want [0.8 0.2]", pi)
	}
	wantMean := 0.8*l1 + 0.2*l2
	if math.Abs(m.MeanRate()-wantMean) > 1e-12 {
		t.Fatalf("MeanRate = %v, want %v", m.MeanRate(), wantMean)
	}
	const T, win = 200000.0, 20.0
	at := arrivals(t, m, newRNG(3), time.Duration(T*1e9))
	counts := make([]float64, int(T/win))
	for _, a := range at {
		counts[int(a.Seconds()/win)]++
	}
	var cs, cs2 float64
	for _, c := range counts {
		cs += c
		cs2 += c * c
	}
	k := float64(len(counts))
	mean := cs / k
	idc := (cs2/k - mean*mean) / mean
	wantIDC := twoStateIDC(l1, l2, s1, s2, win)
	// The long-run count has variance IDC(T)·λ̄T.
	within(t, "mmpp long-run rate", float64(len(at))/T, wantMean, math.Sqrt(twoStateIDC(l1, l2, s1, s2, T)*wantMean*T)/T, 4)
	if !(idc > 1) {
		t.Errorf("index of dispersion %v, want > 1", idc)
	}
	if math.Abs(idc/wantIDC-1) > 0.06 {
		t.Errorf("index of dispersion over %vs = %.3f, want %.3f (closed form) within 6%%", win, idc, wantIDC)
	}
}

func TestMMPPGeneratorStationary(t *testing.T) {
	// A 3-phase cycle 0→1→2→0 with rates a, b, c: the chain spends time ∝ 1/(leaving rate).
	q := [][]float64{{0, 2, 0}, {0, 0, 0.5}, {1, 0, 0}}
	rates := []float64{10, 0, 40}
	m, err := NewMMPP(rates, q)
	if err != nil {
		t.Fatal(err)
	}
	w := []float64{1 / 2.0, 1 / 0.5, 1 / 1.0}
	sum := w[0] + w[1] + w[2]
	want := 0.0
	for i, p := range m.Stationary() {
		if math.Abs(p-w[i]/sum) > 1e-12 {
			t.Errorf("π[%d] = %v, want %v", i, p, w[i]/sum)
		}
		want += w[i] / sum * rates[i]
	}
	if math.Abs(m.MeanRate()-want) > 1e-12 {
		t.Errorf("MeanRate = %v, want %v", m.MeanRate(), want)
	}
	const T = 100000.0
	n := float64(len(arrivals(t, m, newRNG(5), time.Duration(T*1e9))))
	// Generous bound: the count variance is several times Poisson's for this modulation.
	within(t, "3-phase mmpp long-run rate", n/T, want, 10*math.Sqrt(want*T)/T, 4)

	if _, err := NewMMPP([]float64{1, 1}, [][]float64{{0, 1}, {0, 0}}); err == nil {
		t.Error("absorbing phase: want an error")
	}
	if _, err := NewMMPP([]float64{1, 1, 1}, [][]float64{{0, 1, 0}, {1, 0, 0}, {0, 0, 0}}); err == nil {
		t.Error("phase 2 absorbing / reducible chain: want an error")
	}
	if _, err := NewMMPP([]float64{1, 1, 1, 1}, [][]float64{{0, 1, 0, 0}, {1, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 1, 0}}); err == nil {
		t.Error("two closed classes: want an error")
	}
}

func TestMMPPRescaleByBuild(t *testing.T) {
	spec := ProcessSpec{Kind: KindMMPP, States: []MMPPState{{Rate: 1, Dwell: time.Second}, {Rate: 3, Dwell: 3 * time.Second}}}
	p, err := spec.Build(0)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.MeanRate(); math.Abs(got-2.5) > 1e-12 { // π = (1/4, 3/4)
		t.Fatalf("MeanRate = %v, want 2.5", got)
	}
	p, err = spec.Build(100)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.MeanRate(); math.Abs(got-100) > 1e-9 {
		t.Fatalf("rescaled MeanRate = %v, want 100", got)
	}
	n := float64(len(arrivals(t, p, newRNG(9), 1000*time.Second)))
	within(t, "rescaled mmpp count", n, 100*1000, 5*math.Sqrt(100*1000), 4)
}

// diurnalIntegral is ∫_a^b base(1 + A cos(2π(t−peak)/P)) dt.
func diurnalIntegral(base, amp, period, peak, a, b float64) float64 {
	w := 2 * math.Pi / period
	return base*(b-a) + base*amp/w*(math.Sin(w*(b-peak))-math.Sin(w*(a-peak)))
}

func TestDiurnalPhaseBins(t *testing.T) {
	const base, amp, periods = 20.0, 0.8, 500
	period, peak := 100*time.Second, 30*time.Second
	d, err := NewDiurnal(base, amp, period, peak)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Rate(peak + 3*period); math.Abs(got-base*(1+amp)) > 1e-9 {
		t.Errorf("rate at peak = %v, want %v", got, base*(1+amp))
	}
	if got := d.Rate(peak + period/2); math.Abs(got-base*(1-amp)) > 1e-9 {
		t.Errorf("rate at trough = %v, want %v", got, base*(1-amp))
	}
	at := arrivals(t, d, newRNG(11), periods*period)
	const bins = 20
	counts := make([]float64, bins)
	P := period.Seconds()
	for _, a := range at {
		x := math.Mod(a.Seconds(), P) / P
		counts[int(x*bins)]++
	}
	chi2 := 0.0
	for i, c := range counts {
		want := periods * diurnalIntegral(base, amp, P, peak.Seconds(), float64(i)*P/bins, float64(i+1)*P/bins)
		within(t, "diurnal bin count", c, want, math.Sqrt(want), 5)
		chi2 += (c - want) * (c - want) / want
	}
	// χ² with 20 degrees of freedom: P(χ² > 45.3) = 0.001.
	if chi2 > 45.3 {
		t.Errorf("χ² of phase bins = %.1f over 20 bins, want < 45.3", chi2)
	}
	within(t, "diurnal total", float64(len(at)), base*P*periods, math.Sqrt(base*P*periods), 5)
}

func TestSeriesReplayBuckets(t *testing.T) {
	s := &RateSeries{Step: 10 * time.Second, Values: []float64{2, 0, 10, 5, 0.5}}
	sum := 0.0
	for _, v := range s.Values {
		sum += v
	}
	cases := []struct {
		name  string
		o     ReplayOptions
		step  float64   // simulated seconds per bucket
		rates []float64 // simulated req/s per bucket
	}{
		{"plain", ReplayOptions{Loop: true}, 10, []float64{2, 0, 10, 5, 0.5}},
		{"speedup", ReplayOptions{Loop: true, Speedup: 5}, 2, []float64{10, 0, 50, 25, 2.5}},
		{"scale", ReplayOptions{Loop: true, Scale: 3}, 10, []float64{6, 0, 30, 15, 1.5}},
		{"target", ReplayOptions{Loop: true, Speedup: 2, TargetRate: 7}, 5, []float64{2 * 7 / (sum / 5), 0, 10 * 7 / (sum / 5), 5 * 7 / (sum / 5), 0.5 * 7 / (sum / 5)}},
		{"window", ReplayOptions{Loop: true, Start: 15 * time.Second, Window: 16 * time.Second}, 10, []float64{0, 10, 5}}, // [15s, 31s) widens to buckets 1..3,
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := NewSeriesReplay(s, c.o)
			if err != nil {
				t.Fatal(err)
			}
			if r.Step() != time.Duration(c.step*1e9) || r.Peak() != slices.Max(c.rates) {
				t.Errorf("step %v, peak %v; want %vs, %v", r.Step(), r.Peak(), c.step, slices.Max(c.rates))
			}
			for i := range 2 * len(c.rates) { // the second pass of the loop
				if got, want := r.BucketRate(i), c.rates[i%len(c.rates)]; math.Abs(got-want) > 1e-9 {
					t.Errorf("bucket %d: rate %v, want %v", i, got, want)
				}
			}
			mean := 0.0
			for _, v := range c.rates {
				mean += v
			}
			mean /= float64(len(c.rates))
			if math.Abs(r.MeanRate()-mean) > 1e-9 {
				t.Errorf("MeanRate = %v, want %v", r.MeanRate(), mean)
			}
			if c.o.TargetRate > 0 && math.Abs(r.MeanRate()-c.o.TargetRate) > 1e-9 {
				t.Errorf("MeanRate = %v, want the target %v", r.MeanRate(), c.o.TargetRate)
			}
			const passes = 2000
			span := c.step * float64(len(c.rates))
			at := arrivals(t, r, newRNG(13), time.Duration(passes*span*1e9))
			counts := make([]float64, len(c.rates))
			for _, a := range at {
				counts[int(math.Mod(a.Seconds(), span)/c.step)]++
			}
			for i, rate := range c.rates {
				want := rate * c.step * passes
				if want == 0 {
					if counts[i] != 0 {
						t.Errorf("bucket %d has rate 0 but %v arrivals", i, counts[i])
					}
					continue
				}
				within(t, "bucket count", counts[i], want, math.Sqrt(want), 5)
			}
			within(t, "replayed mean rate", float64(len(at))/(passes*span), mean, math.Sqrt(mean*passes*span)/(passes*span), 5)
		})
	}
}

func TestSeriesReplayEnds(t *testing.T) {
	s := &RateSeries{Step: time.Second, Values: []float64{3, 0, 4}}
	total := 0
	rng := newRNG(17)
	const reps = 5000
	for range reps {
		r, err := NewSeriesReplay(s, ReplayOptions{})
		if err != nil {
			t.Fatal(err)
		}
		at := arrivals(t, r, rng, time.Hour)
		for _, a := range at {
			if a >= 3*time.Second || (a >= time.Second && a < 2*time.Second) {
				t.Fatalf("arrival at %v outside the non-zero buckets of a 3 s trace", a)
			}
		}
		total += len(at)
	}
	within(t, "arrivals per pass", float64(total)/reps, 7, math.Sqrt(7.0/reps), 5)
	if r, _ := NewSeriesReplay(s, ReplayOptions{}); r.BucketRate(2) != 4 || r.BucketRate(3) != 0 || r.BucketRate(-1) != 0 {
		t.Errorf("bucket rates %v, %v, %v; want 4, then 0 after the end and before the start", r.BucketRate(2), r.BucketRate(3), r.BucketRate(-1))
	}
	// Relative shapes need a rate.
	if _, err := NewSeriesReplay(&RateSeries{Step: time.Second, Values: []float64{1}, Relative: true}, ReplayOptions{}); err == nil {
		t.Error("relative series without target or scale: want an error")
	}
	if _, err := NewSeriesReplay(s, ReplayOptions{Start: time.Second, Window: time.Second}); err == nil {
		t.Error("window over zero rates only: want an error")
	}
}

func TestInstantReplayExact(t *testing.T) {
	rec := []time.Duration{0, time.Second, 1500 * time.Millisecond, 4 * time.Second}
	cases := []struct {
		name string
		o    ReplayOptions
		want []time.Duration
	}{
		{"as recorded", ReplayOptions{}, rec},
		{"speedup 2", ReplayOptions{Speedup: 2}, []time.Duration{0, 500 * time.Millisecond, 750 * time.Millisecond, 2 * time.Second}},
		// 4 instants over a period of 4 s + one mean gap (4/3 s): 0.75 req/s; target 1.5 compresses 2×.
		{"target", ReplayOptions{TargetRate: 0.75 * 2}, []time.Duration{0, 500 * time.Millisecond, 750 * time.Millisecond, 2 * time.Second}},
		{"window", ReplayOptions{Start: time.Second, Window: 2 * time.Second}, []time.Duration{0, 500 * time.Millisecond}},
		{"loop", ReplayOptions{Loop: true, Window: 5 * time.Second},
			[]time.Duration{0, time.Second, 1500 * time.Millisecond, 4 * time.Second, 5 * time.Second, 6 * time.Second, 6500 * time.Millisecond, 9 * time.Second, 10 * time.Second}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := NewInstantReplay(rec, c.o)
			if err != nil {
				t.Fatal(err)
			}
			at := arrivals(t, r, nil, 10*time.Second+1)
			if len(at) != len(c.want) {
				t.Fatalf("got %v, want %v", at, c.want)
			}
			for i := range at {
				if at[i] != c.want[i] {
					t.Fatalf("got %v, want %v", at, c.want)
				}
			}
		})
	}
}

// A constant-rate series must be exactly a Poisson process: the exponential "area" carries over
// bucket boundaries, so gaps spanning many short buckets are still exponential (CV 1, mean 1/rate).
func TestSeriesReplayConstantIsPoisson(t *testing.T) {
	vals := make([]float64, 1000)
	for i := range vals {
		vals[i] = 4
	}
	r, err := NewSeriesReplay(&RateSeries{Step: 100 * time.Millisecond, Values: vals}, ReplayOptions{Loop: true})
	if err != nil {
		t.Fatal(err)
	}
	at := arrivals(t, r, newRNG(23), 25000*time.Second)
	var s, s2 float64
	prev := time.Duration(0)
	for _, a := range at {
		g := (a - prev).Seconds()
		s += g
		s2 += g * g
		prev = a
	}
	n := float64(len(at))
	m := s / n
	within(t, "count", n, 4*25000, math.Sqrt(4*25000), 5)
	within(t, "gap cv", math.Sqrt(s2/n-m*m)/m, 1, 1/math.Sqrt(n), 5)
}

// Two processes built from the same spec and driven by the same seed give the same arrivals.
func TestBuildDeterministic(t *testing.T) {
	for _, spec := range []ProcessSpec{
		{Kind: KindMMPP, States: []MMPPState{{Rate: 1, Dwell: time.Second}, {Rate: 30, Dwell: time.Second}}},
		{Kind: KindDiurnal, Rate: 5, Amplitude: 1, Period: time.Minute},
		{Kind: KindTrace, Trace: FormatWikipedia, Rate: 10, Speedup: 3600, Loop: true},
	} {
		run := func() []time.Duration {
			p, err := spec.BuildWith(0, sharedTraces)
			if err != nil {
				t.Fatal(err)
			}
			return arrivals(t, p, newRNG(99), 5*time.Minute)
		}
		a, b := run(), run()
		if len(a) == 0 || len(a) != len(b) {
			t.Fatalf("%s: %d and %d arrivals", spec.Kind, len(a), len(b))
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%s: arrival %d differs: %v vs %v", spec.Kind, i, a[i], b[i])
			}
		}
	}
}

// A looping replay at a rate far below one arrival per pass skips whole passes exactly: the
// number of arrivals in a long horizon is still Poisson with mean rate·T.
func TestSeriesReplaySkipsPasses(t *testing.T) {
	s := &RateSeries{Step: time.Second, Values: []float64{1, 0, 3}}
	r, err := NewSeriesReplay(s, ReplayOptions{Loop: true, TargetRate: 0.01}) // 0.03 arrivals per 3 s pass
	if err != nil {
		t.Fatal(err)
	}
	const T = 2e6
	at := arrivals(t, r, newRNG(31), T*time.Second)
	within(t, "count", float64(len(at)), 0.01*T, math.Sqrt(0.01*T), 5)
	inFirst := 0
	for _, a := range at {
		switch x := math.Mod(a.Seconds(), 3); {
		case x >= 1 && x < 2:
			t.Fatalf("arrival at %v in a zero-rate bucket", a)
		case x < 1:
			inFirst++
		}
	}
	within(t, "share in bucket 0", float64(inFirst)/float64(len(at)), 0.25, math.Sqrt(0.25*0.75/float64(len(at))), 5)
}

func TestRateLimits(t *testing.T) {
	if _, err := NewPoisson(2e9); err == nil {
		t.Error("poisson above MaxRate: want an error")
	}
	if _, err := NewMMPPDwell([]float64{0, 1e-3}, []time.Duration{time.Microsecond, time.Microsecond}); err == nil {
		t.Error("mmpp with a million phase changes per arrival: want an error")
	}
	if _, err := NewMMPPDwell([]float64{1, 2}, []time.Duration{time.Nanosecond, time.Second}); err == nil {
		t.Error("mmpp dwell of 1ns: want an error")
	}
}

func TestConstant(t *testing.T) {
	c, err := NewConstant(4)
	if err != nil {
		t.Fatal(err)
	}
	var at time.Duration
	for i := 1; i <= 3; i++ {
		at, _ = c.Next(at, nil)
		if want := time.Duration(i) * 250 * time.Millisecond; at != want {
			t.Fatalf("arrival %d at %v, want %v", i, at, want)
		}
	}
	if c.MeanRate() != 4 {
		t.Fatalf("mean rate %v", c.MeanRate())
	}
	for _, r := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := NewConstant(r); err == nil {
			t.Errorf("rate %v accepted", r)
		}
	}
}
