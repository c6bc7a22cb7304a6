package metrics

import (
	"math"
	"testing"
)

// Hand-computed from the definitions (Distr-LB paper Def. 1, 2, 5; Jain's index).
func TestFairness(t *testing.T) {
	cases := []struct {
		name                 string
		x                    []float64
		jain, vbf, pbf, span float64
	}{
		{"equal", []float64{3, 3, 3, 3}, 1, 0, 1, 3},
		{"one-hot of 4", []float64{0, 0, 5, 0}, 0.25, -75.0 / 16, 0, 5},           // mean 1.25; (3*1.5625+14.0625)/4
		{"1,2,3", []float64{1, 2, 3}, 36.0 / 42, -2.0 / 3, 2.0 / 9, 3},            // ratios 1/3, 2/3, 1
		{"1,2,4", []float64{1, 2, 4}, 49.0 / 63, -(16.0 + 1 + 25) / 27, 0.125, 4}, // mean 7/3; ratios 1/4, 1/2, 1
		{"all zero", []float64{0, 0, 0}, 1, 0, 1, 0},
		{"single", []float64{2.5}, 1, 0, 1, 2.5},
		{"empty", nil, 1, 0, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Jain(c.x); math.Abs(got-c.jain) > 1e-12 {
				t.Errorf("Jain = %g, want %g", got, c.jain)
			}
			if got := VarianceFairness(c.x); math.Abs(got-c.vbf) > 1e-12 {
				t.Errorf("VarianceFairness = %g, want %g", got, c.vbf)
			}
			if got := ProductFairness(c.x); math.Abs(got-c.pbf) > 1e-12 {
				t.Errorf("ProductFairness = %g, want %g", got, c.pbf)
			}
			if got := Makespan(c.x); got != c.span {
				t.Errorf("Makespan = %g, want %g", got, c.span)
			}
		})
	}
}

// Eq. (5) of the paper gives VBF in two forms; they must agree.
func TestVarianceFairnessSecondForm(t *testing.T) {
	x := []float64{0.3, 1.7, 2.2, 0.9, 4.1}
	var s, s2 float64
	for _, v := range x {
		s += v
		s2 += v * v
	}
	n := float64(len(x))
	want := -s2/n + (s/n)*(s/n)
	if got := VarianceFairness(x); math.Abs(got-want) > 1e-12 {
		t.Errorf("VarianceFairness = %g, -(1/N) sum l^2 + mean^2 = %g", got, want)
	}
	// Jain of one-hot vectors is 1/n for every n.
	for n := 1; n <= 16; n++ {
		x := make([]float64, n)
		x[n-1] = 2
		if got := Jain(x); math.Abs(got-1/float64(n)) > 1e-15 {
			t.Errorf("Jain(one-hot of %d) = %g", n, got)
		}
	}
	// Scale invariance of Jain and PBF; VBF scales with the square.
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = 1000 * v
	}
	if relErr(Jain(y), Jain(x)) > 1e-14 || relErr(ProductFairness(y), ProductFairness(x)) > 1e-12 ||
		relErr(VarianceFairness(y), 1e6*VarianceFairness(x)) > 1e-12 {
		t.Errorf("scaling: Jain %g/%g PBF %g/%g VBF %g/%g", Jain(y), Jain(x), ProductFairness(y), ProductFairness(x),
			VarianceFairness(y), VarianceFairness(x))
	}
}
