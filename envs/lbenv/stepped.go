package lbenv

import (
	"math/rand/v2"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/learn/rl"
)

// stepSize is the change of x (weights 10^(x/2)) per discrete step: 10 steps
// cross the whole range [-1, 1].
const stepSize = 0.2

// Stepped presents the environment with discrete actions, for learners that
// need them (QMIX): each agent keeps x in [-1, 1]^n (weights 10^(x/2), equal at
// the start of an episode) and every period either keeps it or moves one
// backend's x up or down by a step (lb.StepAction). The observation's
// previous-action part holds x.
type Stepped struct {
	env   *Env
	delta float64
	spec  rl.MultiSpec
	x     [][]float64
}

// NewStepped wraps env with steps of delta.
func NewStepped(env *Env, delta float64) *Stepped {
	s := &Stepped{env: env, delta: delta, spec: env.Spec()}
	s.spec.Action = nil
	for range s.spec.Observation {
		s.spec.Action = append(s.spec.Action, rl.Discrete(lb.StepActions(env.Backends())))
		s.x = append(s.x, make([]float64, env.Backends()))
	}
	return s
}

// Spec implements rl.MultiEnv.
func (s *Stepped) Spec() rl.MultiSpec { return s.spec }

// Reset implements rl.MultiEnv.
func (s *Stepped) Reset(rng *rand.Rand) [][]float64 {
	for _, x := range s.x {
		clear(x)
	}
	return s.env.Reset(rng)
}

// Step implements rl.MultiEnv: actions[i][0] is agent i's step index.
func (s *Stepped) Step(actions [][]float64) ([][]float64, []float64, bool, bool) {
	for i, a := range actions {
		lb.StepAction(s.x[i], int(a[0]), s.delta)
	}
	return s.env.Step(s.x)
}
