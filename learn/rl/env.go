package rl

import "math/rand/v2"

// Spec describes a single-agent environment: its name, spaces and episode limit.
type Spec struct {
	// ID names the task, e.g. "Pendulum-v1".
	ID string
	// Observation is the observation space.
	Observation Space
	// Action is the action space.
	Action Space
	// MaxEpisodeSteps is the step at which an episode is truncated (0: no limit).
	MaxEpisodeSteps int
}

// Env is a single-agent environment in the Gymnasium sense, with its episode
// time limit built in.
//
// Reset starts an episode: it draws the initial state from rng and keeps rng
// for any randomness during the episode. Step applies an action (a member of
// Spec().Action; discrete actions are a one-element slice holding the index)
// and returns the next observation, the reward for the transition, whether
// the episode reached a terminal state (terminated) and whether it was cut by
// the time limit or another condition outside the MDP (truncated). After
// either flag is true the caller must Reset before stepping again.
//
// Returned observation slices are owned by the environment and are valid
// until the next call to Reset or Step; copy them to keep them.
type Env interface {
	Spec() Spec
	Reset(rng *rand.Rand) (obs []float64)
	Step(action []float64) (obs []float64, reward float64, terminated, truncated bool)
}

// MultiSpec describes a multi-agent environment with per-agent spaces.
type MultiSpec struct {
	// ID names the task.
	ID string
	// Observation[i] and Action[i] are agent i's spaces; both have one entry per agent.
	Observation []Space
	// Action holds the per-agent action spaces.
	Action []Space
	// MaxEpisodeSteps is the step at which an episode is truncated (0: no limit).
	MaxEpisodeSteps int
}

// Agents is the number of agents.
func (s MultiSpec) Agents() int { return len(s.Observation) }

// CloneJoint copies a joint observation or action (one slice per agent),
// for example one an environment or learner owns and reuses.
func CloneJoint(x [][]float64) [][]float64 {
	y := make([][]float64, len(x))
	for i, v := range x {
		y[i] = append([]float64(nil), v...)
	}
	return y
}

// MultiEnv is a multi-agent environment stepped by all agents at once
// (PettingZoo's parallel API). Observations, actions and rewards are per
// agent; termination and truncation are shared by all agents. Slices returned
// are owned by the environment and valid until the next Reset or Step.
type MultiEnv interface {
	Spec() MultiSpec
	Reset(rng *rand.Rand) (obs [][]float64)
	Step(actions [][]float64) (obs [][]float64, rewards []float64, terminated, truncated bool)
}

// Independent returns a MultiEnv made of independent single-agent
// environments stepped in lockstep: agent i observes, acts in and is rewarded
// by envs[i]. The episode ends for everyone when any environment terminates
// or truncates. It is the simplest multi-agent task and a test fixture for
// multi-agent learners.
func Independent(id string, envs ...Env) MultiEnv {
	m := &independent{envs: envs, obs: make([][]float64, len(envs)), rew: make([]float64, len(envs))}
	m.spec.ID = id
	for _, e := range envs {
		s := e.Spec()
		m.spec.Observation = append(m.spec.Observation, s.Observation)
		m.spec.Action = append(m.spec.Action, s.Action)
		if s.MaxEpisodeSteps > 0 && (m.spec.MaxEpisodeSteps == 0 || s.MaxEpisodeSteps < m.spec.MaxEpisodeSteps) {
			m.spec.MaxEpisodeSteps = s.MaxEpisodeSteps
		}
	}
	return m
}

type independent struct {
	spec MultiSpec
	envs []Env
	obs  [][]float64
	rew  []float64
}

func (m *independent) Spec() MultiSpec { return m.spec }

func (m *independent) Reset(rng *rand.Rand) [][]float64 {
	for i, e := range m.envs {
		m.obs[i] = e.Reset(rng)
	}
	return m.obs
}

func (m *independent) Step(actions [][]float64) ([][]float64, []float64, bool, bool) {
	var term, trunc bool
	for i, e := range m.envs {
		o, r, te, tr := e.Step(actions[i])
		m.obs[i], m.rew[i] = o, r
		term = term || te
		trunc = trunc || tr
	}
	return m.obs, m.rew, term, trunc && !term
}
