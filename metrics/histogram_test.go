package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// exactQuantile is the sample quantile Histogram.Quantile estimates: the value of rank ceil(q*n)
// (rank 1 for q = 0) in sorted order.
func exactQuantile(sorted []float64, q float64) float64 {
	r := int(math.Ceil(q * float64(len(sorted)) * (1 - 1e-15)))
	if r < 1 {
		r = 1
	}
	return sorted[r-1]
}

func relErr(got, want float64) float64 {
	if want == 0 {
		return math.Abs(got)
	}
	return math.Abs(got-want) / math.Abs(want)
}

// Quantile's promise: within half a bucket of the exact sample quantile (plus rounding).
const quantileTol = HistogramRelativeWidth/2 + 1e-12

func TestBucketLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		// log-uniform over the whole range
		v := math.Exp(math.Log(HistogramLowest) + rng.Float64()*(math.Log(HistogramHighest)-math.Log(HistogramLowest)))
		i := bucketIndex(v)
		lo, hi := bucketLow(i), bucketHigh(i)
		if !(lo <= v && v < hi) {
			t.Fatalf("v=%g in bucket %d = [%g, %g)", v, i, lo, hi)
		}
		if w := (hi - lo) / lo; w > HistogramRelativeWidth*(1+1e-12) {
			t.Fatalf("bucket %d relative width %g > %g", i, w, HistogramRelativeWidth)
		}
	}
	// The promised resolution: relative bucket width <= 1%.
	if HistogramRelativeWidth > 0.01 {
		t.Fatalf("HistogramRelativeWidth = %g > 1%%", HistogramRelativeWidth)
	}
	// The documented range contains 1e-6 .. 1e6 s.
	if HistogramLowest > 1e-6 || HistogramHighest < 1e6 {
		t.Fatalf("range [%g, %g) does not contain [1e-6, 1e6]", HistogramLowest, HistogramHighest)
	}
	// Adjacent buckets tile the line.
	for i := 0; i+1 < numBuckets; i++ {
		if bucketHigh(i) != bucketLow(i+1) {
			t.Fatalf("gap between bucket %d and %d: %g vs %g", i, i+1, bucketHigh(i), bucketLow(i+1))
		}
	}
	edges := []struct {
		v    float64
		want int
	}{
		{0, 0},
		{1e-300, 0},
		{5e-324, 0},
		{HistogramLowest, 0},
		{math.Nextafter(HistogramLowest, 0), 0},
		{1, (0 - minExp) * subCount},
		{math.Nextafter(HistogramHighest, 0), numBuckets - 1},
		{HistogramHighest, numBuckets - 1},
		{1e300, numBuckets - 1},
		{math.Inf(1), numBuckets - 1},
	}
	for _, e := range edges {
		if got := bucketIndex(e.v); got != e.want {
			t.Errorf("bucketIndex(%g) = %d, want %d", e.v, got, e.want)
		}
	}
}

// TestQuantileClosedForm records the exact quantile grid F^-1((i-0.5)/n) of known distributions, so
// the sample quantile is known in closed form, and checks Quantile against it within half a bucket.
func TestQuantileClosedForm(t *testing.T) {
	const n = 200000
	dists := []struct {
		name string
		inv  func(p float64) float64 // closed-form quantile function
		mean float64
	}{
		{"uniform(0.002,0.010)", func(p float64) float64 { return 0.002 + p*0.008 }, 0.006},
		{"exponential(rate 4)", func(p float64) float64 { return -math.Log1p(-p) / 4 }, 0.25},
		{"lognormal(mu -3, sigma 2)", func(p float64) float64 {
			return math.Exp(-3 + 2*math.Sqrt2*math.Erfinv(2*p-1))
		}, math.Exp(-3 + 2)},
	}
	qs := []float64{0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999}
	for _, d := range dists {
		t.Run(d.name, func(t *testing.T) {
			var h Histogram
			var sum float64
			for i := 1; i <= n; i++ {
				v := d.inv((float64(i) - 0.5) / n)
				h.Record(v)
				sum += v
			}
			for _, q := range qs {
				r := math.Ceil(q * n * (1 - 1e-15))
				sample := d.inv((r - 0.5) / n) // exact rank-r value of the grid
				got := h.Quantile(q)
				if e := relErr(got, sample); e > quantileTol {
					t.Errorf("Quantile(%g) = %.8g, sample quantile %.8g: rel err %.3g > %.3g", q, got, sample, e, quantileTol)
				}
				// Against the distribution's own quantile: bucket error plus the grid's discretisation.
				closed := d.inv(q)
				disc := relErr(sample, closed)
				if e := relErr(got, closed); e > quantileTol+disc+1e-9 {
					t.Errorf("Quantile(%g) = %.8g, closed form %.8g: rel err %.3g", q, got, closed, e)
				}
			}
			if h.Mean() != sum/n {
				t.Errorf("Mean = %.17g, want exactly %.17g", h.Mean(), sum/n)
			}
			// The grid's mean converges to the distribution's (closed form) mean.
			if e := relErr(h.Mean(), d.mean); e > 2e-3 {
				t.Errorf("Mean = %g, distribution mean %g (rel err %g)", h.Mean(), d.mean, e)
			}
			if h.Quantile(0) != h.Min() || h.Quantile(1) != h.Max() {
				t.Errorf("Quantile(0), Quantile(1) = %g, %g; want Min, Max = %g, %g", h.Quantile(0), h.Quantile(1), h.Min(), h.Max())
			}
			if h.Min() != d.inv(0.5/n) || h.Max() != d.inv((n-0.5)/n) {
				t.Errorf("Min, Max = %g, %g; want %g, %g", h.Min(), h.Max(), d.inv(0.5/n), d.inv((n-0.5)/n))
			}
		})
	}
}

// TestQuantileRandom draws random samples and checks Quantile against the sorted samples (the
// histogram's promise) and against the closed-form quantile of the exponential distribution within
// bucket error plus 4 standard errors of the sample quantile.
func TestQuantileRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	const n = 100000
	const rate = 20.0 // mean 50 ms
	var h Histogram
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = rng.ExpFloat64() / rate
		h.Record(xs[i])
	}
	slices.Sort(xs)
	for _, q := range []float64{0.01, 0.1, 0.5, 0.9, 0.99, 0.999} {
		got := h.Quantile(q)
		if e := relErr(got, exactQuantile(xs, q)); e > quantileTol {
			t.Errorf("Quantile(%g) = %g, sorted sample %g: rel err %g", q, got, exactQuantile(xs, q), e)
		}
		closed := -math.Log1p(-q) / rate
		// Standard error of the sample quantile: sqrt(q(1-q)/n) / f(x_q), f the density.
		se := math.Sqrt(q*(1-q)/n) / (rate * math.Exp(-rate*closed))
		if math.Abs(got-closed) > quantileTol*closed+4*se {
			t.Errorf("Quantile(%g) = %g, closed form %g ± %g", q, got, closed, 4*se)
		}
	}
}

// TestQuantileRanks checks the rank definition on 1..100, where the q-quantile is 100q exactly,
// including decimal q whose product with n rounds above the integer (0.07*100 = 7.000000000000001).
func TestQuantileRanks(t *testing.T) {
	var h Histogram
	for i := 100; i >= 1; i-- {
		h.Record(float64(i))
	}
	for k := 1; k <= 100; k++ {
		q := float64(k) / 100
		if got := h.Quantile(q); relErr(got, float64(k)) > quantileTol {
			t.Errorf("Quantile(%g) = %g, want %d", q, got, k)
		}
	}
	for _, c := range []struct{ q, want float64 }{{0.07, 7}, {0.0701, 8}, {0.29, 29}, {0.57, 57}, {0.001, 1}} {
		if got := h.Quantile(c.q); relErr(got, c.want) > quantileTol {
			t.Errorf("Quantile(%g) = %g, want %g", c.q, got, c.want)
		}
	}
}

func TestOutOfRangeExact(t *testing.T) {
	var h Histogram
	vals := []float64{1e-9, 0, 3e-3, 2e7, 5e6}
	var sum float64
	for _, v := range vals {
		h.Record(v)
		sum += v
	}
	if h.Count() != 5 || h.Sum() != sum || h.Min() != 0 || h.Max() != 2e7 || h.Mean() != sum/5 {
		t.Fatalf("count %d sum %g min %g max %g mean %g", h.Count(), h.Sum(), h.Min(), h.Max(), h.Mean())
	}
	// rank 3 of 5 is 3e-3
	if got := h.Quantile(0.5); relErr(got, 3e-3) > quantileTol {
		t.Errorf("median = %g, want 3e-3", got)
	}
	// rank 4 (5e6) lands in the overflow bucket: clamped to [Min, Max].
	if got := h.Quantile(0.8); got < bucketLow(numBuckets-1) || got > 2e7 {
		t.Errorf("Quantile(0.8) = %g, want in the last bucket [%g, 2e7]", got, bucketLow(numBuckets-1))
	}
	// Negative values count as 0.
	var g Histogram
	g.Record(-1e-18)
	if g.Count() != 1 || g.Min() != 0 || g.Sum() != 0 {
		t.Errorf("negative record: count %d min %g sum %g", g.Count(), g.Min(), g.Sum())
	}
}

func TestEmpty(t *testing.T) {
	var h Histogram
	if h.Count() != 0 || h.Mean() != 0 || h.Quantile(0.99) != 0 || h.Min() != 0 || h.Max() != 0 {
		t.Fatal("empty histogram should report zeros")
	}
	if pts := h.CDF(nil, 0); len(pts) != 0 {
		t.Fatalf("empty CDF has %d points", len(pts))
	}
}

func TestPanics(t *testing.T) {
	cases := map[string]func(){
		"Record NaN":     func() { var h Histogram; h.Record(math.NaN()) },
		"Quantile -0.1":  func() { var h Histogram; h.Quantile(-0.1) },
		"Quantile 1.5":   func() { var h Histogram; h.Quantile(1.5) },
		"Quantile NaN":   func() { var h Histogram; h.Quantile(math.NaN()) },
		"RecordN -1":     func() { var h Histogram; h.RecordN(1, -1) },
		"StudentT df 0":  func() { StudentTQuantile(0.9, 0) },
		"StudentT p 1":   func() { StudentTQuantile(1, 3) },
		"MeanCI level 1": func() { MeanCI([]float64{1, 2}, 1) },
		"Reducer cap 0":  func() { NewSampleReducer(0) },
		"Reducer unit 0": func() { r := NewSampleReducer(2); var d [5]float64; r.Reduce(0, 0, &d) },
		"Reducer NaN":    func() { NewSampleReducer(2).Add(0, math.NaN()) },
		"TimeAverage backwards": func() {
			var a TimeAverage
			a.Set(2, 1)
			a.Set(1, 1)
		},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		})
	}
}

// sameHistogram compares everything observable, and the bucket counts.
func sameHistogram(t *testing.T, got, want *Histogram) {
	t.Helper()
	if got.Count() != want.Count() || got.Min() != want.Min() || got.Max() != want.Max() {
		t.Fatalf("count/min/max = %d/%g/%g, want %d/%g/%g", got.Count(), got.Min(), got.Max(), want.Count(), want.Min(), want.Max())
	}
	if relErr(got.Sum(), want.Sum()) > 1e-12 {
		t.Fatalf("sum = %.17g, want %.17g", got.Sum(), want.Sum())
	}
	for o := range numOctaves {
		if got.octCount[o] != want.octCount[o] {
			t.Fatalf("octave %d count %d, want %d", o, got.octCount[o], want.octCount[o])
		}
	}
	if got.counts != want.counts {
		t.Fatalf("bucket counts differ")
	}
	for q := 0.0; q <= 1; q += 0.01 {
		if got.Quantile(q) != want.Quantile(q) {
			t.Fatalf("Quantile(%g) = %g, want %g", q, got.Quantile(q), want.Quantile(q))
		}
	}
}

func TestMergeEqualsRecordingAll(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var a, b, all Histogram
	for i := range 50000 {
		v := math.Exp(rng.NormFloat64()*3 - 4) // spans many octaves
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
		all.Record(v)
	}
	var m Histogram
	m.Merge(&a)
	m.Merge(&b)
	sameHistogram(t, &m, &all)

	// Merge into a non-empty histogram, and of an empty one.
	a.Merge(&b)
	a.Merge(&Histogram{})
	sameHistogram(t, &a, &all)

	// Self-merge doubles every count.
	var twice Histogram
	twice.Merge(&all)
	twice.Merge(&all)
	var self Histogram
	self.CopyFrom(&all)
	self.Merge(&self)
	sameHistogram(t, &self, &twice)

	// RecordN(v, k) == k × Record(v).
	var rn, r1 Histogram
	rn.RecordN(0.25, 7)
	rn.RecordN(0.5, 0)
	for range 7 {
		r1.Record(0.25)
	}
	sameHistogram(t, &rn, &r1)
}

func TestResetAndCopyFrom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var h, fresh Histogram
	for range 1000 {
		h.Record(rng.Float64())
	}
	h.Reset()
	sameHistogram(t, &h, &fresh)
	for range 1000 {
		v := rng.Float64() * 10
		h.Record(v)
		fresh.Record(v)
	}
	sameHistogram(t, &h, &fresh)
	var c Histogram
	c.Record(123) // overwritten
	c.CopyFrom(&h)
	sameHistogram(t, &c, &h)
	c.Record(1) // a copy does not share storage
	if h.Count() != 1000 {
		t.Fatalf("CopyFrom shares storage: source count %d", h.Count())
	}
	// Plain assignment is a full, independent copy too.
	v := h
	v.Reset()
	v.Record(2)
	if h.Count() != 1000 || v.Count() != 1 || h.Quantile(0.5) == v.Quantile(0.5) {
		t.Fatalf("assignment shares storage: source count %d, copy count %d", h.Count(), v.Count())
	}
}

func TestCDF(t *testing.T) {
	const n = 100000
	var h Histogram
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = -math.Log1p(-(float64(i)+0.5)/n) / 2 // exponential(rate 2) quantile grid, sorted
		h.Record(xs[i])
	}
	for _, maxPoints := range []int{0, 1, 2, 50, 300, 1 << 20} {
		pts := h.CDF(make([]Point, 3), maxPoints) // dst contents are discarded
		if len(pts) == 0 || (maxPoints > 0 && len(pts) > maxPoints) {
			t.Fatalf("maxPoints %d: %d points", maxPoints, len(pts))
		}
		if maxPoints > 1 && maxPoints < 1000 && len(pts) != maxPoints {
			t.Errorf("maxPoints %d: got %d points, want exactly maxPoints", maxPoints, len(pts))
		}
		last := pts[len(pts)-1]
		if last.Y != 1 || last.X != h.Max() {
			t.Errorf("maxPoints %d: last point %+v, want (Max=%g, 1)", maxPoints, last, h.Max())
		}
		for i, p := range pts {
			if i > 0 && !(p.X > pts[i-1].X && p.Y > pts[i-1].Y) {
				t.Fatalf("maxPoints %d: not strictly increasing at %d: %+v after %+v", maxPoints, i, p, pts[i-1])
			}
			if p.Y <= 0 || p.Y > 1 {
				t.Fatalf("Y = %g outside (0, 1]", p.Y)
			}
			if i == len(pts)-1 {
				continue
			}
			// Y is the exact fraction of values below the bucket's upper bound X.
			below, _ := slices.BinarySearch(xs, p.X)
			if want := float64(below) / n; math.Abs(p.Y-want) > 1e-12 {
				t.Fatalf("point %+v: fraction of values < X is %g", p, want)
			}
			// and the closed-form CDF agrees within sampling resolution and bucket width.
			if F := 1 - math.Exp(-2*p.X); math.Abs(p.Y-F) > 1.0/n+0.01 {
				t.Fatalf("point %+v: closed-form CDF %g", p, F)
			}
		}
	}
	// Few non-empty buckets: one point per bucket.
	var g Histogram
	g.Record(1)
	g.Record(1)
	g.Record(2)
	pts := g.CDF(nil, 10)
	if len(pts) != 2 || pts[0].Y != 2.0/3 || pts[1] != (Point{2, 1}) {
		t.Fatalf("CDF of {1,1,2} = %+v", pts)
	}
}

func TestHistogramAllocs(t *testing.T) {
	var h Histogram
	vals := []float64{1e-7, 1e-5, 3e-4, 0.02, 0.5, 7, 300, 2e4, 5e7}
	i := 0
	if a := testing.AllocsPerRun(1000, func() { h.Record(vals[i%len(vals)]); i++ }); a != 0 {
		t.Errorf("Record allocates %v per call", a)
	}
	if a := testing.AllocsPerRun(100, func() { _ = h.Quantile(0.99) }); a != 0 {
		t.Errorf("Quantile allocates %v per call", a)
	}
	var c Histogram
	c.CopyFrom(&h)
	if a := testing.AllocsPerRun(100, func() { c.CopyFrom(&h) }); a != 0 {
		t.Errorf("CopyFrom into warmed histogram allocates %v per call", a)
	}
	dst := make([]Point, 0, 64)
	if a := testing.AllocsPerRun(100, func() { dst = h.CDF(dst, 64) }); a != 0 {
		t.Errorf("CDF with capacity allocates %v per call", a)
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	vals := make([]float64, 4096)
	for i := range vals {
		vals[i] = rng.ExpFloat64() * 0.05
	}
	var h Histogram
	for _, v := range vals {
		h.Record(v)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		h.Record(vals[i&4095])
	}
}

func BenchmarkHistogramQuantile(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	var h Histogram
	for range 100000 {
		h.Record(math.Exp(rng.NormFloat64()*2 - 3))
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = h.Quantile(0.99)
	}
}

func BenchmarkHistogramMerge(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	var src, dst Histogram
	for range 100000 {
		src.Record(math.Exp(rng.NormFloat64()*2 - 3))
	}
	b.ReportAllocs()
	for b.Loop() {
		dst.Merge(&src)
	}
}
