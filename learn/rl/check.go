package rl

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// CheckOptions controls CheckEnv and CheckMultiEnv.
type CheckOptions struct {
	// Seed seeds the environment and the random actions.
	Seed uint64
	// Episodes is the number of full episodes run with random actions (default 3).
	Episodes int
	// StepCap bounds each episode for environments without a time limit (default 10000).
	StepCap int
}

func (o CheckOptions) withDefaults() CheckOptions {
	if o.Episodes <= 0 {
		o.Episodes = 3
	}
	if o.StepCap <= 0 {
		o.StepCap = 10000
	}
	return o
}

// ErrContract is wrapped by every error CheckEnv and CheckMultiEnv return.
var ErrContract = errors.New("environment breaks the rl contract")

// CheckEnv validates env against the Env contract and returns the first
// violation found (wrapping ErrContract) or nil. It checks that the spaces
// are well formed; that every observation from Reset and Step is a member of
// the observation space; that rewards are finite; that Step does not modify
// the action it is given; that episodes under uniformly random actions end no
// later than MaxEpisodeSteps with truncated set exactly when the limit is
// hit without termination; that Reset works after an episode ended and in
// the middle of one; and that the environment is deterministic for a seed
// (same seed and actions, same observations, rewards and flags).
func CheckEnv(env Env, opts CheckOptions) error {
	opts = opts.withDefaults()
	spec := env.Spec()
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrContract, spec.ID, fmt.Sprintf(format, args...))
	}
	if err := checkSpace(spec.Observation); err != nil {
		return fail("observation space: %v", err)
	}
	if err := checkSpace(spec.Action); err != nil {
		return fail("action space: %v", err)
	}
	if spec.MaxEpisodeSteps < 0 {
		return fail("max episode steps %d < 0", spec.MaxEpisodeSteps)
	}
	actRNG := rand.New(rand.NewPCG(opts.Seed, 0xac7))
	envRNG := rand.New(rand.NewPCG(opts.Seed, 0xe9f))
	act := make([]float64, spec.Action.Dim())
	actCopy := make([]float64, len(act))
	var traj []float64 // first episode, for the determinism check
	var actions [][]float64
	for ep := 0; ep < opts.Episodes; ep++ {
		obs := env.Reset(envRNG)
		if !spec.Observation.Contains(obs) {
			return fail("episode %d: reset observation %v outside %v", ep, obs, spec.Observation)
		}
		if ep == 0 {
			traj = append(traj, obs...)
		}
		limit := spec.MaxEpisodeSteps
		if limit == 0 {
			limit = opts.StepCap
		}
		for t := 1; ; t++ {
			spec.Action.Sample(actRNG, act)
			copy(actCopy, act)
			if ep == 0 {
				actions = append(actions, slices.Clone(act))
			}
			obs, r, term, trunc := env.Step(act)
			if !slices.Equal(act, actCopy) {
				return fail("episode %d step %d: Step modified its action argument", ep, t)
			}
			if !spec.Observation.Contains(obs) {
				return fail("episode %d step %d: observation %v outside %v", ep, t, obs, spec.Observation)
			}
			if math.IsNaN(r) || math.IsInf(r, 0) {
				return fail("episode %d step %d: reward %v is not finite", ep, t, r)
			}
			if ep == 0 {
				traj = append(traj, obs...)
				traj = append(traj, r, b2f(term), b2f(trunc))
			}
			if spec.MaxEpisodeSteps > 0 && t == spec.MaxEpisodeSteps && !term && !trunc {
				return fail("episode %d: not truncated at the episode limit %d", ep, t)
			}
			if term || trunc {
				break
			}
			if t >= limit {
				if spec.MaxEpisodeSteps > 0 {
					return fail("episode %d: ran past the episode limit %d", ep, spec.MaxEpisodeSteps)
				}
				break
			}
		}
	}
	// Reset in the middle of an episode must start a fresh one.
	obs := env.Reset(envRNG)
	if len(actions) > 1 {
		env.Step(actions[0])
		obs = env.Reset(envRNG)
	}
	if !spec.Observation.Contains(obs) {
		return fail("reset in mid-episode: observation %v outside %v", obs, spec.Observation)
	}
	// Determinism: replay the first episode from the same seed.
	replay := slices.Clone(env.Reset(rand.New(rand.NewPCG(opts.Seed, 0xe9f))))
	for _, a := range actions {
		o, r, term, trunc := env.Step(a)
		replay = append(replay, o...)
		replay = append(replay, r, b2f(term), b2f(trunc))
	}
	if !slices.Equal(replay, traj) {
		return fail("not deterministic: the same seed and actions gave a different trajectory")
	}
	return nil
}

// CheckMultiEnv validates env against the MultiEnv contract, with the same
// checks as CheckEnv applied per agent (one observation, action space and
// finite reward per agent, shared episode flags and limit, determinism).
func CheckMultiEnv(env MultiEnv, opts CheckOptions) error {
	opts = opts.withDefaults()
	spec := env.Spec()
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrContract, spec.ID, fmt.Sprintf(format, args...))
	}
	n := spec.Agents()
	if n == 0 {
		return fail("no agents")
	}
	if len(spec.Action) != n {
		return fail("%d observation spaces but %d action spaces", n, len(spec.Action))
	}
	for i := 0; i < n; i++ {
		if err := checkSpace(spec.Observation[i]); err != nil {
			return fail("agent %d observation space: %v", i, err)
		}
		if err := checkSpace(spec.Action[i]); err != nil {
			return fail("agent %d action space: %v", i, err)
		}
	}
	checkObs := func(where string, obs [][]float64) error {
		if len(obs) != n {
			return fail("%s: %d observations for %d agents", where, len(obs), n)
		}
		for i, o := range obs {
			if !spec.Observation[i].Contains(o) {
				return fail("%s: agent %d observation %v outside %v", where, i, o, spec.Observation[i])
			}
		}
		return nil
	}
	actRNG := rand.New(rand.NewPCG(opts.Seed, 0xac7))
	acts := make([][]float64, n)
	for i := range acts {
		acts[i] = make([]float64, spec.Action[i].Dim())
	}
	flat := func(dst []float64, obs [][]float64) []float64 {
		for _, o := range obs {
			dst = append(dst, o...)
		}
		return dst
	}
	var traj []float64
	var actions [][][]float64
	envRNG := rand.New(rand.NewPCG(opts.Seed, 0xe9f))
	for ep := 0; ep < opts.Episodes; ep++ {
		obs := env.Reset(envRNG)
		if err := checkObs(fmt.Sprintf("episode %d reset", ep), obs); err != nil {
			return err
		}
		if ep == 0 {
			traj = flat(traj, obs)
		}
		limit := spec.MaxEpisodeSteps
		if limit == 0 {
			limit = opts.StepCap
		}
		for t := 1; ; t++ {
			cp := make([][]float64, n)
			for i := range acts {
				spec.Action[i].Sample(actRNG, acts[i])
				cp[i] = slices.Clone(acts[i])
			}
			if ep == 0 {
				actions = append(actions, cp)
			}
			obs, rew, term, trunc := env.Step(acts)
			for i := range acts {
				if !slices.Equal(acts[i], cp[i]) {
					return fail("episode %d step %d: Step modified agent %d's action", ep, t, i)
				}
			}
			if err := checkObs(fmt.Sprintf("episode %d step %d", ep, t), obs); err != nil {
				return err
			}
			if len(rew) != n {
				return fail("episode %d step %d: %d rewards for %d agents", ep, t, len(rew), n)
			}
			for i, r := range rew {
				if math.IsNaN(r) || math.IsInf(r, 0) {
					return fail("episode %d step %d: agent %d reward %v is not finite", ep, t, i, r)
				}
			}
			if ep == 0 {
				traj = flat(traj, obs)
				traj = append(traj, rew...)
				traj = append(traj, b2f(term), b2f(trunc))
			}
			if spec.MaxEpisodeSteps > 0 && t == spec.MaxEpisodeSteps && !term && !trunc {
				return fail("episode %d: not truncated at the episode limit %d", ep, t)
			}
			if term || trunc {
				break
			}
			if t >= limit {
				if spec.MaxEpisodeSteps > 0 {
					return fail("episode %d: ran past the episode limit %d", ep, spec.MaxEpisodeSteps)
				}
				break
			}
		}
	}
	obs := env.Reset(envRNG)
	if len(actions) > 1 {
		env.Step(actions[0])
		obs = env.Reset(envRNG)
	}
	if err := checkObs("reset in mid-episode", obs); err != nil {
		return err
	}
	replay := flat(nil, env.Reset(rand.New(rand.NewPCG(opts.Seed, 0xe9f))))
	for _, a := range actions {
		o, r, term, trunc := env.Step(a)
		replay = flat(replay, o)
		replay = append(replay, r...)
		replay = append(replay, b2f(term), b2f(trunc))
	}
	if !slices.Equal(replay, traj) {
		return fail("not deterministic: the same seed and actions gave a different trajectory")
	}
	return nil
}

func checkSpace(s Space) error {
	if s.N < 0 {
		return fmt.Errorf("discrete size %d < 0", s.N)
	}
	if s.N > 0 {
		if len(s.Low) != 0 || len(s.High) != 0 {
			return errors.New("discrete space with box bounds")
		}
		return nil
	}
	if len(s.Low) == 0 {
		return errors.New("empty box")
	}
	if len(s.Low) != len(s.High) {
		return fmt.Errorf("box bounds of lengths %d and %d", len(s.Low), len(s.High))
	}
	for i := range s.Low {
		if math.IsNaN(s.Low[i]) || math.IsNaN(s.High[i]) || s.Low[i] > s.High[i] {
			return fmt.Errorf("dimension %d: bounds [%v, %v]", i, s.Low[i], s.High[i])
		}
	}
	return nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
