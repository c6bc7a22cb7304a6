package rl

import (
	"math"
	"testing"
)

// TestReturnScaler: rewards are divided by the standard deviation of the
// discounted return, so a constant reward r with γ = 0 scales to ±1 ... and
// scaled rewards stay within ±10.
func TestReturnScaler(t *testing.T) {
	s := ReturnScaler{Gamma: 0}
	for i := 0; i < 100; i++ {
		r := -1.0
		if i%2 == 0 {
			r = -3
		}
		got := s.Scale(r, false)
		if i > 50 && math.Abs(got-r) > 0.01 {
			// returns alternate -1, -3: standard deviation 1
			t.Fatalf("step %d: scaled %g to %g, want %g", i, r, got, r)
		}
	}
	if got := s.Scale(-1e9, true); got != -10 {
		t.Fatalf("clip: %g", got)
	}
}
