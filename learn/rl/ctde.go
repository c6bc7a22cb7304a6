package rl

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// MultiLearner is a multi-agent learner trained centrally and executed in a
// decentralised way (CTDE): during training it sees every agent's
// observation, action and reward at once (and may use them jointly, as
// QMIX's mixing network does), while each agent's action depends only on
// that agent's own observation history.
//
// Explore returns the behaviour actions for the joint observation obs
// (obs[i] is agent i's observation; exploration included), Act the
// inference actions (deterministic: greedy), Observe reports the joint
// transition (and trains on the learner's schedule), ResetEpisode clears
// per-episode state (observation histories) at an episode start. Recurrent
// learners append obs to their histories in Explore and Act, so call one of
// them exactly once per environment step. Returned action slices (one per
// agent, in each agent's action space; a discrete action is a one-element
// slice holding the index) are owned by the learner and valid until its next
// call.
type MultiLearner interface {
	ResetEpisode()
	Explore(obs [][]float64) [][]float64
	Act(obs [][]float64, deterministic bool) [][]float64
	Observe(obs, acts [][]float64, rewards []float64, next [][]float64, terminated, truncated bool)
}

// TrainCTDE runs l in env for steps joint steps, resetting env with rng at
// every episode end (and l at every episode start), and returns the team
// return (the undiscounted sum over steps of the sum of the agents'
// rewards) of every finished episode in order. It follows TrainMulti's
// conventions with one learner for the whole team.
func TrainCTDE(env MultiEnv, l MultiLearner, steps int, rng *rand.Rand) []float64 {
	n := env.Spec().Agents()
	obs := make([][]float64, n)
	acts := make([][]float64, n)
	for i, o := range env.Reset(rng) {
		obs[i] = clone(o)
	}
	l.ResetEpisode()
	var returns []float64
	ret := 0.0
	for t := 0; t < steps; t++ {
		for i, a := range l.Explore(obs) {
			acts[i] = append(acts[i][:0], a...)
		}
		next, rew, term, trunc := env.Step(acts)
		for _, r := range rew {
			ret += r
		}
		l.Observe(obs, acts, rew, next, term, trunc)
		if term || trunc {
			returns = append(returns, ret)
			ret = 0
			for i, o := range env.Reset(rng) {
				copy(obs[i], o)
			}
			l.ResetEpisode()
		} else {
			for i := range obs {
				copy(obs[i], next[i])
			}
		}
	}
	return returns
}

// EvaluateCTDE runs episodes of l's deterministic policy in env (reset from
// rng; l reset at every episode start) and returns the mean and standard
// deviation of the team returns. Episodes of environments without a time
// limit must terminate on their own.
func EvaluateCTDE(env MultiEnv, l MultiLearner, episodes int, rng *rand.Rand) (mean, std float64) {
	rets := make([]float64, episodes)
	for ep := range rets {
		obs := env.Reset(rng)
		l.ResetEpisode()
		for {
			next, rew, term, trunc := env.Step(l.Act(obs, true))
			for _, r := range rew {
				rets[ep] += r
			}
			if term || trunc {
				break
			}
			obs = next
		}
	}
	for _, r := range rets {
		mean += r
	}
	mean /= float64(episodes)
	for _, r := range rets {
		std += (r - mean) * (r - mean)
	}
	return mean, math.Sqrt(std / float64(episodes))
}

// DiscreteActions returns env with every agent's action space replaced by
// Discrete(len(table)): action k stands for the environment action
// table[k], which must belong to every agent's action space. It lets
// discrete-action learners such as QMIX drive environments with box actions
// (the load-balancer weights of envs/lbenv, for example). The table
// is copied.
func DiscreteActions(env MultiEnv, table [][]float64) (MultiEnv, error) {
	spec := env.Spec()
	if len(table) == 0 {
		return nil, fmt.Errorf("discrete actions for %s: empty table", spec.ID)
	}
	d := &discreteActions{env: env, spec: spec}
	d.spec.Action = make([]Space, spec.Agents())
	for i, s := range spec.Action {
		for k, a := range table {
			if !s.Contains(a) {
				return nil, fmt.Errorf("discrete actions for %s: table[%d] = %v is not in agent %d's action space %v", spec.ID, k, a, i, s)
			}
		}
		d.spec.Action[i] = Discrete(len(table))
	}
	for _, a := range table {
		d.table = append(d.table, clone(a))
	}
	d.acts = make([][]float64, spec.Agents())
	return d, nil
}

type discreteActions struct {
	env   MultiEnv
	spec  MultiSpec
	table [][]float64
	acts  [][]float64
}

func (d *discreteActions) Spec() MultiSpec { return d.spec }

func (d *discreteActions) Reset(rng *rand.Rand) [][]float64 { return d.env.Reset(rng) }

func (d *discreteActions) Step(actions [][]float64) ([][]float64, []float64, bool, bool) {
	for i, a := range actions {
		if !d.spec.Action[i].Contains(a) {
			panic(fmt.Sprintf("rl: %s: agent %d action %v outside %v", d.spec.ID, i, a, d.spec.Action[i]))
		}
		d.acts[i] = d.table[int(a[0])]
	}
	return d.env.Step(d.acts)
}
