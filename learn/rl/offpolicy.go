package rl

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/nn"
)

// Learner is an agent trained by interacting with an environment: Explore
// picks the behaviour action for obs (exploration included), Observe reports
// the resulting transition (and trains when the agent's schedule says so),
// Act is the inference path. Action slices returned are owned by the agent
// and valid until its next call; they are in the environment's action units.
type Learner interface {
	Explore(obs []float64) []float64
	Observe(obs, act []float64, reward float64, next []float64, terminated, truncated bool)
	Act(obs []float64, deterministic bool) []float64
}

// Train runs l in env for steps environment steps, resetting env with rng
// whenever an episode ends, and returns the undiscounted return of every
// finished episode in order.
func Train(env Env, l Learner, steps int, rng *rand.Rand) []float64 {
	var returns []float64
	obs := clone(env.Reset(rng))
	ret := 0.0
	for t := 0; t < steps; t++ {
		a := l.Explore(obs)
		next, r, term, trunc := env.Step(a)
		ret += r
		l.Observe(obs, a, r, next, term, trunc)
		if term || trunc {
			returns = append(returns, ret)
			ret = 0
			copy(obs, env.Reset(rng))
			if rs, ok := l.(interface{ ResetEpisode() }); ok {
				rs.ResetEpisode()
			}
		} else {
			copy(obs, next)
		}
	}
	return returns
}

// Evaluate runs episodes of policy in env (reset from rng) and returns the
// mean and standard deviation of the undiscounted episode returns.
func Evaluate(env Env, policy func(obs []float64) []float64, episodes int, rng *rand.Rand) (mean, std float64) {
	rets := make([]float64, episodes)
	for ep := range rets {
		obs := env.Reset(rng)
		for {
			next, r, term, trunc := env.Step(policy(obs))
			rets[ep] += r
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

// EvaluateLearner evaluates the deterministic policy of a Learner, resetting
// its per-episode state (recurrent agents) at every episode start.
func EvaluateLearner(env Env, l Learner, episodes int, rng *rand.Rand) (mean, std float64) {
	rs, _ := l.(interface{ ResetEpisode() })
	wrapped := &resetNotifier{Env: env, onReset: func() {
		if rs != nil {
			rs.ResetEpisode()
		}
	}}
	return Evaluate(wrapped, func(obs []float64) []float64 { return l.Act(obs, true) }, episodes, rng)
}

type resetNotifier struct {
	Env
	onReset func()
}

func (r *resetNotifier) Reset(rng *rand.Rand) []float64 {
	r.onReset()
	return r.Env.Reset(rng)
}

func clone(x []float64) []float64 { return append([]float64(nil), x...) }

// actionScale maps between a box action space and the [-1, 1] units networks
// work in: a = low + (u + 1)(high − low)/2, as Stable-Baselines3 does.
type actionScale struct{ low, high []float64 }

func newActionScale(s Space) (actionScale, error) {
	if s.IsDiscrete() {
		return actionScale{}, fmt.Errorf("continuous-action algorithm given %v", s)
	}
	for i := range s.Low {
		if math.IsInf(s.Low[i], 0) || math.IsInf(s.High[i], 0) {
			return actionScale{}, fmt.Errorf("action dimension %d has an infinite bound", i)
		}
	}
	return actionScale{low: s.Low, high: s.High}, nil
}

// toEnv writes the env action for unit action u (in [-1, 1]) into dst.
func (s actionScale) toEnv(dst []float64, u []float32) {
	for i, v := range u {
		dst[i] = s.low[i] + (float64(v)+1)*0.5*(s.high[i]-s.low[i])
	}
}

// toUnit writes the unit action of env action a into dst.
func (s actionScale) toUnit(dst, a []float64) {
	for i, v := range a {
		dst[i] = 2*(v-s.low[i])/(s.high[i]-s.low[i]) - 1
	}
}

// schedule decides when an off-policy agent trains, in Stable-Baselines3's
// terms: nothing before LearningStarts steps; then every TrainFreq steps (or
// at every episode end when TrainFreq is 0) run GradientSteps updates (or as
// many as environment steps since the last round when it is -1).
type schedule struct {
	learningStarts, trainFreq, gradientSteps int
	steps, sinceTrain                        int
}

// observe counts one environment step and returns the number of gradient
// updates to run now.
func (s *schedule) observe(done bool) int {
	s.steps++
	s.sinceTrain++
	if s.steps <= s.learningStarts {
		s.sinceTrain = 0
		return 0
	}
	round := false
	if s.trainFreq > 0 {
		round = s.sinceTrain >= s.trainFreq
	} else {
		round = done
	}
	if !round {
		return 0
	}
	n := s.gradientSteps
	if n < 0 {
		n = s.sinceTrain
	}
	s.sinceTrain = 0
	return n
}

// fillNormal fills x with standard normal draws.
func fillNormal(rng *rand.Rand, x []float32) {
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
}

// newMLP builds a float32 MLP in → hidden... → out.
func newMLP(rng *rand.Rand, name string, in int, hidden []int, out int, act, outAct nn.Activation) *nn.MLP[float32] {
	sizes := append(append([]int{in}, hidden...), out)
	return nn.NewMLP[float32](rng, name, sizes, act, outAct)
}

// params concatenates parameter lists.
func params(ms ...interface{ Params() []*nn.Node[float32] }) []*nn.Node[float32] {
	var ps []*nn.Node[float32]
	for _, m := range ms {
		ps = append(ps, m.Params()...)
	}
	return ps
}

// input records a rows×cols tape input filled from data.
func input(tp *nn.Tape[float32], rows, cols int, data []float32) *nn.Node[float32] {
	n := tp.Input(rows, cols)
	copy(n.Value.Data, data)
	return n
}

// TrainMulti runs one Learner per agent of env (independent learners, as
// the Distr-LB agents are) for steps joint steps, resetting env with rng at
// episode ends, and returns every finished episode's per-agent returns.
func TrainMulti(env MultiEnv, learners []Learner, steps int, rng *rand.Rand) [][]float64 {
	n := env.Spec().Agents()
	if len(learners) != n {
		panic(fmt.Sprintf("rl: TrainMulti: %d learners for %d agents", len(learners), n))
	}
	obs := make([][]float64, n)
	acts := make([][]float64, n)
	for i, o := range env.Reset(rng) {
		obs[i] = clone(o)
	}
	var episodes [][]float64
	ret := make([]float64, n)
	for t := 0; t < steps; t++ {
		for i, l := range learners {
			acts[i] = clone(l.Explore(obs[i]))
		}
		next, rew, term, trunc := env.Step(acts)
		for i, l := range learners {
			ret[i] += rew[i]
			l.Observe(obs[i], acts[i], rew[i], next[i], term, trunc)
		}
		if term || trunc {
			episodes = append(episodes, clone(ret))
			clear(ret)
			for i, o := range env.Reset(rng) {
				copy(obs[i], o)
			}
			for _, l := range learners {
				if rs, ok := l.(interface{ ResetEpisode() }); ok {
					rs.ResetEpisode()
				}
			}
		} else {
			for i := range obs {
				copy(obs[i], next[i])
			}
		}
	}
	return episodes
}
