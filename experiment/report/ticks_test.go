package report

import (
	"math"
	"slices"
	"testing"
)

func nan() float64 { return math.NaN() }
func inf() float64 { return math.Inf(1) }

func TestNiceStep(t *testing.T) {
	for _, tc := range []struct {
		raw  float64
		want decStep
	}{
		{0.2, decStep{2, -1}},
		{0.17, decStep{2, -1}},
		{0.21, decStep{2, -1}},
		{0.33, decStep{5, -1}},
		{1.4, decStep{1, 0}},
		{1.5, decStep{2, 0}},
		{7.5, decStep{1, 1}},
		{1, decStep{1, 0}},
		{1000, decStep{1, 3}}, // math.Log10(1000) rounds below 3
		{3.2, decStep{5, 0}},
		{6, decStep{5, 0}},
		{1e-7, decStep{1, -7}},
		{4.5e12, decStep{5, 12}},
	} {
		if got := niceStep(tc.raw); got != tc.want {
			t.Errorf("niceStep(%g) = %v, want %v", tc.raw, got, tc.want)
		}
	}
}

func TestNiceRange(t *testing.T) {
	for _, tc := range []struct {
		lo, hi   float64
		target   int
		nlo, nhi float64
		ticks    []float64
	}{
		{0, 1, 5, 0, 1, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{0.013, 0.87, 5, 0, 1, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{0.013, 0.87, 10, 0, 0.9, []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}},
		{-3.7, 12.2, 5, -5, 15, []float64{-5, 0, 5, 10, 15}},
		{1000, 1001, 4, 1000, 1001, []float64{1000, 1000.2, 1000.4, 1000.6, 1000.8, 1001}},
		{1000, 1001, 2, 1000, 1001, []float64{1000, 1000.5, 1001}},
		{-0.3, -0.1, 4, -0.3, -0.1, []float64{-0.3, -0.25, -0.2, -0.15, -0.1}},
		{1190, 1197.5, 5, 1190, 1198, []float64{1190, 1192, 1194, 1196, 1198}},
	} {
		nlo, nhi, ticks, _ := niceRange(tc.lo, tc.hi, tc.target)
		if nlo != tc.nlo || nhi != tc.nhi || !slices.Equal(ticks, tc.ticks) {
			t.Errorf("niceRange(%g, %g, %d) = %g, %g, %v; want %g, %g, %v",
				tc.lo, tc.hi, tc.target, nlo, nhi, ticks, tc.nlo, tc.nhi, tc.ticks)
		}
	}
}

func TestLinearTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		target int
		want   []float64
		labels []string
	}{
		{0, 1, 5, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}, []string{"0", "0.2", "0.4", "0.6", "0.8", "1.0"}},
		{0.013, 0.87, 5, []float64{0.2, 0.4, 0.6, 0.8}, []string{"0.2", "0.4", "0.6", "0.8"}},
		{0, 3600, 8, []float64{0, 500, 1000, 1500, 2000, 2500, 3000, 3500}, []string{"0", "500", "1000", "1500", "2000", "2500", "3000", "3500"}},
		{0, 42000, 5, []float64{0, 10000, 20000, 30000, 40000}, []string{"0", "10k", "20k", "30k", "40k"}},
		{0, 2.5e6, 5, []float64{0, 5e5, 1e6, 1.5e6, 2e6, 2.5e6}, []string{"0", "0.5M", "1.0M", "1.5M", "2.0M", "2.5M"}},
		{-10, 10, 4, []float64{-10, -5, 0, 5, 10}, []string{"−10", "−5", "0", "5", "10"}},
		{0, 1e-4, 5, []float64{0, 2e-5, 4e-5, 6e-5, 8e-5, 1e-4}, []string{"0", "2e−5", "4e−5", "6e−5", "8e−5", "1e−4"}},
		{1e15, 5e15, 4, []float64{1e15, 2e15, 3e15, 4e15, 5e15}, []string{"1e15", "2e15", "3e15", "4e15", "5e15"}},
	} {
		got, s := linearTicks(tc.lo, tc.hi, tc.target)
		if !slices.Equal(got, tc.want) {
			t.Errorf("linearTicks(%g, %g, %d) = %v, want %v", tc.lo, tc.hi, tc.target, got, tc.want)
			continue
		}
		if labels := linearLabels(got, s); !slices.Equal(labels, tc.labels) {
			t.Errorf("labels of %g..%g = %q, want %q", tc.lo, tc.hi, labels, tc.labels)
		}
	}
}

func TestLogTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		target int
		major  []float64
		labels []string
		minors int
	}{
		{1e-3, 10, 10, []float64{1e-3, 1e-2, 0.1, 1, 10}, []string{"0.001", "0.01", "0.1", "1", "10"}, 8 * 4},
		{1, 1e9, 5, []float64{1, 1e2, 1e4, 1e6, 1e8}, []string{"10⁰", "10²", "10⁴", "10⁶", "10⁸"}, 0},
		{1, 100, 8, []float64{1, 2, 5, 10, 20, 50, 100}, []string{"1", "2", "5", "10", "20", "50", "100"}, 0},
		{1, 100, 3, []float64{1, 10, 100}, []string{"1", "10", "100"}, 16},
		{0.8, 2300, 6, []float64{1, 10, 100, 1000}, []string{"1", "10", "100", "1000"}, 8*3 + 1 + 2},
		{3e-7, 2e-5, 4, nil, nil, 0},
		{2, 8, 6, []float64{2, 5}, []string{"2", "5"}, 0},
		// Narrower than the 1-2-5 grid: linear ticks inside the range.
		{2.1, 4.9, 4, []float64{2.5, 3, 3.5, 4, 4.5}, []string{"2.5", "3.0", "3.5", "4.0", "4.5"}, 0},
		{2.1, 4.9, 2, []float64{3, 4}, []string{"3", "4"}, 0},
	} {
		major, minor, _, s := logTicks(tc.lo, tc.hi, tc.target)
		if tc.labels == nil { // just check the count bound and decades
			if len(major) > tc.target || len(major) < 2 {
				t.Errorf("logTicks(%g, %g, %d) = %v: want 2..%d ticks", tc.lo, tc.hi, tc.target, major, tc.target)
			}
			continue
		}
		if !slices.Equal(major, tc.major) {
			t.Errorf("logTicks(%g, %g, %d) = %v, want %v", tc.lo, tc.hi, tc.target, major, tc.major)
			continue
		}
		_, _, linear, _ := logTicks(tc.lo, tc.hi, tc.target)
		labels := logLabels(major)
		if linear {
			labels = linearLabels(major, s)
		}
		if !slices.Equal(labels, tc.labels) {
			t.Errorf("labels of log %g..%g = %q, want %q", tc.lo, tc.hi, labels, tc.labels)
		}
		if len(minor) != tc.minors {
			t.Errorf("logTicks(%g, %g, %d): %d minor ticks, want %d", tc.lo, tc.hi, tc.target, len(minor), tc.minors)
		}
	}
}

func TestLogLabelsMantissa(t *testing.T) {
	got := logLabels([]float64{2e4, 5e4, 1e5})
	want := []string{"2×10⁴", "5×10⁴", "10⁵"}
	if !slices.Equal(got, want) {
		t.Errorf("logLabels = %q, want %q", got, want)
	}
	if got := logLabels([]float64{1e-6, 1e-3}); !slices.Equal(got, []string{"10⁻⁶", "10⁻³"}) {
		t.Errorf("logLabels(1e-6, 1e-3) = %q", got)
	}
}

func TestFloorLog10(t *testing.T) {
	for p := -300; p <= 300; p++ {
		v := math.Pow10(p)
		if got := floorLog10(v); got != p {
			t.Fatalf("floorLog10(1e%d) = %d", p, got)
		}
		if got := floorLog10(v * 0.999999); got != p-1 {
			t.Fatalf("floorLog10(0.999999e%d) = %d", p, got)
		}
	}
}
