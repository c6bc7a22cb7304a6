package bandit

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestArmNetsLearnEachArmsCost: trained on samples of three arms whose
// costs depend on the context in different ways (one cheapest at low
// contexts, another at high ones), the networks pick the cheapest arm at
// each context, and an arm never trained is preferred over every trained
// one (its prediction is near 0, below their costs).
func TestArmNetsLearnEachArmsCost(t *testing.T) {
	cost := []func(x float64) float64{
		func(x float64) float64 { return 1 + 2*x },     // cheap when x is low
		func(x float64) float64 { return 3 - 2*x },     // cheap when x is high
		func(x float64) float64 { return 2.2 + 0.1*x }, // never the cheapest
	}
	rng := rand.New(rand.NewPCG(1, 2))
	a := NewArmNets(4, 3, rng)
	for range 20000 {
		arm, x := rng.IntN(3), rng.Float64()
		a.Update(arm, x, cost[arm](x), 0.5)
	}
	for _, x := range []float64{0.1, 0.3, 0.7, 0.9} {
		for arm := range 3 {
			if got, want := a.Predict(arm, x), cost[arm](x); math.Abs(got-want) > 0.1 {
				t.Errorf("arm %d at %g: predicts %.3f, cost %.3f", arm, x, got, want)
			}
		}
	}
	trained := func(x float64) int {
		best, low := -1, math.Inf(1)
		for arm := range 3 {
			if c := a.Predict(arm, x); c < low {
				best, low = arm, c
			}
		}
		return best
	}
	if trained(0.2) != 0 || trained(0.8) != 1 {
		t.Errorf("cheapest trained arm: %d at 0.2 (want 0), %d at 0.8 (want 1)", trained(0.2), trained(0.8))
	}
	if a.Best(0.5) != 3 {
		t.Errorf("best arm at 0.5: %d, want the untrained arm 3", a.Best(0.5))
	}
}
