package rl

import (
	"fmt"
	"math/rand/v2"
)

// Rollout is the on-policy buffer of PPO: Steps × Envs transitions collected
// with the current policy, then turned into advantages by generalised
// advantage estimation (Schulman et al. 2016, "High-Dimensional Continuous
// Control Using Generalized Advantage Estimation", eq. 16):
//
//	δ_t = r_t + γ V(s_{t+1}) (1 − terminal_{t+1}) − V(s_t)
//	Â_t = δ_t + γλ (1 − done_t) Â_{t+1},   R_t = Â_t + V(s_t)
//
// Slot (t, e) is step t of environment e. An episode cut by a time limit
// (truncated) is not terminal: the caller passes V of the final observation
// as the bootstrap value, and the advantage recursion stops there.
type Rollout struct {
	Steps, Envs, ObsDim, ActDim int
	// Obs and Act hold (t*Envs+e)*dim rows of observations and actions.
	Obs, Act []float32
	// LogProb is log π_old(a|s), Value is V(s), Reward is r, per slot.
	LogProb, Value, Reward []float64
	// Done marks slots whose transition ended the episode (terminated or
	// truncated); Bootstrap holds V(s_{t+1}) for truncated ones, 0 otherwise.
	Done      []bool
	Bootstrap []float64
	// Adv and Ret are the GAE advantages Â and returns R after ComputeGAE.
	Adv, Ret []float64
	perm     []int
}

// NewRollout returns a buffer for steps × envs transitions.
func NewRollout(steps, envs, obsDim, actDim int) *Rollout {
	if steps < 1 || envs < 1 || obsDim < 1 || actDim < 1 {
		panic(fmt.Sprintf("rl: NewRollout(%d, %d, %d, %d): sizes must be >= 1", steps, envs, obsDim, actDim))
	}
	n := steps * envs
	return &Rollout{
		Steps: steps, Envs: envs, ObsDim: obsDim, ActDim: actDim,
		Obs: make([]float32, n*obsDim), Act: make([]float32, n*actDim),
		LogProb: make([]float64, n), Value: make([]float64, n), Reward: make([]float64, n),
		Done: make([]bool, n), Bootstrap: make([]float64, n),
		Adv: make([]float64, n), Ret: make([]float64, n),
		perm: make([]int, n),
	}
}

// Len is Steps × Envs.
func (r *Rollout) Len() int { return r.Steps * r.Envs }

// Set stores step t of environment e: observation s_t, action a_t, its
// log-probability under the behaviour policy, V(s_t), reward r_t, and how the
// step ended. bootstrap is V(s_{t+1}) of the final observation when the step
// was truncated and not terminated; it is ignored otherwise.
func (r *Rollout) Set(t, e int, obs, act []float64, logProb, value, reward float64, terminated, truncated bool, bootstrap float64) {
	i := t*r.Envs + e
	put(r.Obs[i*r.ObsDim:(i+1)*r.ObsDim], obs)
	put(r.Act[i*r.ActDim:(i+1)*r.ActDim], act)
	r.LogProb[i], r.Value[i], r.Reward[i] = logProb, value, reward
	r.Done[i] = terminated || truncated
	r.Bootstrap[i] = 0
	if truncated && !terminated {
		r.Bootstrap[i] = bootstrap
	}
}

// ComputeGAE fills Adv and Ret with discount gamma and GAE parameter
// lambda. lastValue[e] is V of environment e's observation after the last
// step (used unless that step ended the episode).
func (r *Rollout) ComputeGAE(gamma, lambda float64, lastValue []float64) {
	for e := 0; e < r.Envs; e++ {
		next := 0.0 // Â_{t+1}
		for t := r.Steps - 1; t >= 0; t-- {
			i := t*r.Envs + e
			var vNext float64
			switch {
			case r.Done[i]:
				vNext = r.Bootstrap[i]
			case t == r.Steps-1:
				vNext = lastValue[e]
			default:
				vNext = r.Value[i+r.Envs]
			}
			delta := r.Reward[i] + gamma*vNext - r.Value[i]
			if r.Done[i] {
				next = 0
			}
			next = delta + gamma*lambda*next
			r.Adv[i] = next
			r.Ret[i] = next + r.Value[i]
		}
	}
}

// Shuffle returns a random permutation of the slot indices 0..Len()-1
// (owned by the buffer; valid until the next Shuffle), to be cut into
// minibatches.
func (r *Rollout) Shuffle(rng *rand.Rand) []int {
	for i := range r.perm {
		r.perm[i] = i
	}
	rng.Shuffle(len(r.perm), func(i, j int) { r.perm[i], r.perm[j] = r.perm[j], r.perm[i] })
	return r.perm
}

// RolloutBatch is a minibatch gathered from a Rollout (float32 for
// learn/nn); the zero value sizes itself.
type RolloutBatch struct {
	N, ObsDim, ActDim int
	Obs, Act          []float32
	LogProb, Adv, Ret []float32
	Value             []float32
}

// Gather fills dst with the slots idx; if normalize is set the advantages
// are standardised over the minibatch (zero mean, unit variance), as PPO
// implementations do.
func (r *Rollout) Gather(dst *RolloutBatch, idx []int, normalize bool) {
	n := len(idx)
	dst.N, dst.ObsDim, dst.ActDim = n, r.ObsDim, r.ActDim
	dst.Obs = grow(dst.Obs, n*r.ObsDim)
	dst.Act = grow(dst.Act, n*r.ActDim)
	dst.LogProb = grow(dst.LogProb, n)
	dst.Adv = grow(dst.Adv, n)
	dst.Ret = grow(dst.Ret, n)
	dst.Value = grow(dst.Value, n)
	var mean, sq float64
	for _, i := range idx {
		mean += r.Adv[i]
	}
	mean /= float64(n)
	for _, i := range idx {
		d := r.Adv[i] - mean
		sq += d * d
	}
	std := 1.0
	if n > 1 {
		std = sqrt(sq/float64(n-1)) + 1e-8
	}
	for k, i := range idx {
		copy(dst.Obs[k*r.ObsDim:(k+1)*r.ObsDim], r.Obs[i*r.ObsDim:(i+1)*r.ObsDim])
		copy(dst.Act[k*r.ActDim:(k+1)*r.ActDim], r.Act[i*r.ActDim:(i+1)*r.ActDim])
		dst.LogProb[k] = float32(r.LogProb[i])
		dst.Ret[k] = float32(r.Ret[i])
		dst.Value[k] = float32(r.Value[i])
		a := r.Adv[i]
		if normalize {
			a = (a - mean) / std
		}
		dst.Adv[k] = float32(a)
	}
}
