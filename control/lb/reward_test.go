package lb

import (
	"math"
	"testing"
)

func TestScore(t *testing.T) {
	l := []float64{1, 2, 3}
	for _, tc := range []struct {
		r    Reward
		want float64
	}{
		{VBF, -2.0 / 3},
		{VBFLog, -2.0/3 - math.Log(2.0/3+1e-3)},
		{Jain, 36.0 / (3 * 14)},
		{PBF, (1.0 / 3) * (2.0 / 3) * 1},
		{Makespan, -3},
	} {
		if got := Score(tc.r, l); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: %g, want %g", tc.r, got, tc.want)
		}
	}
}
