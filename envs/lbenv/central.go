package lbenv

import (
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/rl"
)

// Central presents the environment to one centralised agent (the paper's
// Centr-LB comparison, section 4): it observes every LB point's observation,
// concatenated in agent order, sets every LB point's weights with one action
// vector, and is rewarded with the mean of the per-LB rewards.
type Central struct {
	env  *Env
	spec rl.Spec
	obs  []float64
	acts [][]float64
}

// NewCentral wraps env for a centralised agent.
func NewCentral(env *Env) *Central {
	ms := env.Spec()
	dim, n := ms.Observation[0].Dim(), env.Backends()
	m := ms.Agents()
	c := &Central{env: env, obs: make([]float64, m*dim)}
	c.spec = rl.Spec{ID: ms.ID + "/central", MaxEpisodeSteps: ms.MaxEpisodeSteps,
		Observation: rl.UniformBox(m*dim, math.Inf(-1), math.Inf(1)), Action: rl.UniformBox(m*n, -1, 1)}
	c.acts = make([][]float64, m)
	return c
}

// Spec implements rl.Env.
func (c *Central) Spec() rl.Spec { return c.spec }

// Reset implements rl.Env.
func (c *Central) Reset(rng *rand.Rand) []float64 { return c.join(c.env.Reset(rng)) }

// Step implements rl.Env.
func (c *Central) Step(action []float64) ([]float64, float64, bool, bool) {
	n := c.env.Backends()
	for i := range c.acts {
		c.acts[i] = action[i*n : (i+1)*n]
	}
	obs, rew, term, trunc := c.env.Step(c.acts)
	sum := 0.0
	for _, r := range rew {
		sum += r
	}
	return c.join(obs), sum / float64(len(rew)), term, trunc
}

func (c *Central) join(obs [][]float64) []float64 {
	k := 0
	for _, o := range obs {
		k += copy(c.obs[k:], o)
	}
	return c.obs
}
