package rl_test

import (
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/rl"
)

// cueEnv is a memory task: the first observation shows a cue c = ±1, the
// next Delay observations show 0 (plus a timer), and the reward at the last
// step is c·a. An agent that remembers the cue earns 1 per episode; a
// memoryless one earns 0 in expectation.
type cueEnv struct {
	Delay int
	cue   float64
	t     int
	obs   [2]float64
}

func (e *cueEnv) Spec() rl.Spec {
	return rl.Spec{ID: "Cue", Observation: rl.Box([]float64{-1, 0}, []float64{1, 1}), Action: rl.UniformBox(1, -1, 1), MaxEpisodeSteps: e.Delay + 1}
}

func (e *cueEnv) Reset(rng *rand.Rand) []float64 {
	e.cue = 1
	if rng.IntN(2) == 0 {
		e.cue = -1
	}
	e.t = 0
	e.obs = [2]float64{e.cue, 0}
	return e.obs[:]
}

func (e *cueEnv) Step(a []float64) ([]float64, float64, bool, bool) {
	e.t++
	e.obs = [2]float64{0, float64(e.t) / float64(e.Delay)}
	if e.t > e.Delay {
		return e.obs[:], e.cue * a[0], true, false
	}
	return e.obs[:], 0, false, false
}
