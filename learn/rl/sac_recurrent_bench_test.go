package rl_test

import (
	"testing"

	"github.com/shoal-project/shoal/learn/rl"
)

// lbSpec is the Distr-LB agent's shape: 7 backends × 12 features + 5
// global features observed, one weight per backend as the action.
func lbSpec() rl.Spec {
	return rl.Spec{ID: "distr-lb", Observation: rl.UniformBox(7*12+5, -10, 10), Action: rl.UniformBox(7, -1, 1)}
}

// BenchmarkRecurrentSACUpdateLB is one RecurrentSAC.Update on the Distr-LB
// shape (observation 89, action 7) with DefaultRecurrentSACConfig (64-64
// heads, GRU 64, windows of 8, minibatches of 64) and the 50,000-transition
// replay of lbenv.LBSACConfig. The buffer holds 2000 random transitions in
// episodes of 50 steps, so windows include masked (pre-episode) steps as in
// training.
func BenchmarkRecurrentSACUpdateLB(b *testing.B) {
	spec := lbSpec()
	c := rl.DefaultRecurrentSACConfig()
	c.BufferSize = 50_000
	c.LearningStarts = 1 << 30 // fill without training
	a, err := rl.NewRecurrentSAC(spec, c, pcg(1, 1))
	if err != nil {
		b.Fatal(err)
	}
	rng := pcg(3, 4)
	obs, next, act := make([]float64, spec.Observation.Dim()), make([]float64, spec.Observation.Dim()), make([]float64, spec.Action.Dim())
	spec.Observation.Sample(rng, obs)
	for i := 0; i < 2000; i++ {
		spec.Action.Sample(rng, act)
		spec.Observation.Sample(rng, next)
		end := i%50 == 49
		a.Observe(obs, act, rng.NormFloat64(), next, false, end)
		copy(obs, next)
		if end {
			spec.Observation.Sample(rng, obs)
		}
	}
	a.Update()
	cpuLoop(b, a.Update)
}
