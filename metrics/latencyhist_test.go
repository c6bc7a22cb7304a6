package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestLatencyHistQuantiles checks LatencyHist's quantiles against the exact
// sample quantiles of log-normal latencies: within half a bucket.
func TestLatencyHistQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 7, 1000, 100000} {
		var h LatencyHist
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = 0.05 * math.Exp(rng.NormFloat64())
			h.Record(xs[i])
		}
		slices.Sort(xs)
		if h.Count() != int64(n) {
			t.Fatalf("count %d, want %d", h.Count(), n)
		}
		for _, q := range []float64{0, 0.5, 0.9, 0.95, 0.99, 1} {
			want := exactQuantile(xs, q)
			if got := h.Quantile(q); relErr(got, want) > LatencyHistRelativeWidth/2+1e-12 {
				t.Errorf("n %d, q %g: %g, want %g within %g", n, q, got, want, LatencyHistRelativeWidth/2)
			}
		}
	}
}

// TestLatencyHistEdges checks the end buckets, merging, resetting and the
// empty histogram.
func TestLatencyHistEdges(t *testing.T) {
	var h LatencyHist
	if h.Quantile(0.5) != 0 {
		t.Error("empty: quantile not 0")
	}
	for _, v := range []float64{0, -1, math.NaN(), 1e-9} {
		h.Record(v)
	}
	if q := h.Quantile(1); q >= 1e-5 {
		t.Errorf("values below the range: quantile %g, want the first bucket", q)
	}
	var big LatencyHist
	big.Record(1e9)
	big.Record(math.Inf(1))
	if q := big.Quantile(0.5); q < 2000 || q > 2100 {
		t.Errorf("values above the range: quantile %g, want the last bucket (just below 2^11 s)", q)
	}
	h.Merge(&big)
	if h.Count() != 6 || h.Quantile(0.5) >= 1e-5 || h.Quantile(0.9) < 2000 {
		t.Errorf("merged: count %d, median %g, p90 %g", h.Count(), h.Quantile(0.5), h.Quantile(0.9))
	}
	h.Reset()
	if h != (LatencyHist{}) {
		t.Error("reset left counts")
	}
	defer func() {
		if recover() == nil {
			t.Error("Quantile(1.5) did not panic")
		}
	}()
	h.Quantile(1.5)
}

func TestLatencyHistAllocs(t *testing.T) {
	var h, o LatencyHist
	if n := testing.AllocsPerRun(100, func() {
		h.Record(0.01)
		o.Merge(&h)
		_ = o.Quantile(0.95)
		h.Reset()
	}); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
