package report

import (
	"math"
	"slices"
	"testing"
)

func TestECDF(t *testing.T) {
	s := ECDF("x", []float64{3, 1, nan(), 2, 2, inf()}, 0)
	if !slices.Equal(s.X, []float64{1, 1, 2, 3}) || !slices.Equal(s.Y, []float64{0, 0.25, 0.75, 1}) {
		t.Errorf("ECDF = %v, %v; want [1 1 2 3], [0 0.25 0.75 1]", s.X, s.Y)
	}
	if e := ECDF("e", []float64{nan()}, 10); len(e.X) != 0 || e.Name != "e" {
		t.Errorf("ECDF of no finite samples = %+v", e)
	}
}

// TestECDFReduced checks the reduced ECDF of evenly spread samples against
// the uniform distribution function F(x) = x, and that every kept point
// carries the exact empirical value.
func TestECDFReduced(t *testing.T) {
	const n = 100000
	samples := make([]float64, n)
	for i := range n {
		samples[(i*7919)%n] = (float64(i) + 0.5) / n // a permutation of the grid
	}
	s := ECDF("u", samples, 500)
	if len(s.X) < 400 || len(s.X) > 502 {
		t.Fatalf("%d points, want about 500", len(s.X))
	}
	if s.X[len(s.X)-1] != samples[slices.Index(samples, (n-0.5)/n)] || s.Y[len(s.Y)-1] != 1 {
		t.Errorf("last point (%g, %g), want the maximum with F = 1", s.X[len(s.X)-1], s.Y[len(s.Y)-1])
	}
	for i := 1; i < len(s.X); i++ {
		// Exact: F(x) = (number of samples <= x)/n = x + 0.5/n on this grid.
		if math.Abs(s.Y[i]-(s.X[i]+0.5/n)) > 1e-9 {
			t.Fatalf("point %d: F(%g) = %g, want %g", i, s.X[i], s.Y[i], s.X[i]+0.5/n)
		}
		if s.X[i] < s.X[i-1] || s.Y[i] <= s.Y[i-1] {
			t.Fatalf("not increasing at %d", i)
		}
		if s.Y[i]-s.Y[i-1] > 1.0/500+1e-9 {
			t.Fatalf("gap %g in probability at %d, want <= 1/500", s.Y[i]-s.Y[i-1], i)
		}
	}
	if samples[0] != 0.5/n || samples[7919] != 1.5/n {
		t.Error("ECDF modified its input")
	}
}

func TestMeanCI(t *testing.T) {
	for _, tc := range []struct {
		mean, half float64
		want       string
	}{
		{12.3456, 0.0123, "12.346 ± 0.012"},
		{1190.4, 12.3, "1190 ± 12"},
		{1190.4, 123, "1190 ± 123"},
		{0.5, 0.25, "0.50 ± 0.25"},
		{-0.0001, 0.01, "0.000 ± 0.010"},
		{-3.21, 0.5, "-3.21 ± 0.50"},
		{2.5, 0, "2.5"},
		{2.5, nan(), "2.5"},
		{123456, -1, "1.235e+05"},
		{nan(), 1, "NaN"},
	} {
		if got := MeanCI(tc.mean, tc.half); got != tc.want {
			t.Errorf("MeanCI(%g, %g) = %q, want %q", tc.mean, tc.half, got, tc.want)
		}
	}
}

func TestBest(t *testing.T) {
	v := []float64{3, nan(), 1, 1, inf(), 7}
	if got := Best(v, false); got != 2 {
		t.Errorf("Best smallest = %d, want 2", got)
	}
	if got := Best(v, true); got != 5 {
		t.Errorf("Best largest = %d, want 5", got)
	}
	if got := Best([]float64{nan()}, false); got != -1 {
		t.Errorf("Best of NaN = %d, want -1", got)
	}
}
