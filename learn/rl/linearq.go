package rl

import "math/rand/v2"

// LinearQ is approximate Q-learning with a linear value function
// (Sutton and Barto 2018, section 10.1, semi-gradient one-step Q-learning;
// Watkins and Dayan 1992 for the tabular case): Q(s, a) = w_a · φ(s) over a
// feature vector φ(s) of length Features, one weight vector per discrete
// action. With one-hot features it is tabular Q-learning. The update is
//
//	δ = r + γ max_{a' allowed} Q(s', a') − Q(s, a)
//	w_a ← w_a + α δ φ(s)
//
// Allowed actions are a bit mask (bit a set: action a allowed), so
// selection and updates allocate nothing.
type LinearQ struct {
	Features, Actions int
	// W holds w_a at W[a*Features : (a+1)*Features].
	W []float64
}

// NewLinearQ returns a zero-initialised value function; actions must be at
// most 64.
func NewLinearQ(features, actions int) *LinearQ {
	if actions < 1 || actions > 64 || features < 1 {
		panic("rl: NewLinearQ: need 1..64 actions and at least one feature")
	}
	return &LinearQ{Features: features, Actions: actions, W: make([]float64, features*actions)}
}

// AllActions is the mask allowing every one of n actions.
func AllActions(n int) uint64 { return 1<<n - 1 }

// Value is Q(s, a) for features phi.
func (q *LinearQ) Value(phi []float64, a int) float64 {
	w := q.W[a*q.Features : (a+1)*q.Features]
	v := 0.0
	for k, x := range phi {
		v += w[k] * x
	}
	return v
}

// Greedy returns the allowed action with the highest value (the lowest
// index among ties) and that value; with no action allowed, -1 and 0.
func (q *LinearQ) Greedy(phi []float64, allowed uint64) (int, float64) {
	best, bestV := -1, 0.0
	for a := range q.Actions {
		if allowed&(1<<a) == 0 {
			continue
		}
		if v := q.Value(phi, a); best < 0 || v > bestV {
			best, bestV = a, v
		}
	}
	return best, bestV
}

// EpsilonGreedy returns a uniformly random allowed action with probability
// eps, the greedy one otherwise.
func (q *LinearQ) EpsilonGreedy(phi []float64, allowed uint64, eps float64, rng *rand.Rand) int {
	if rng.Float64() < eps {
		n := 0
		for a := range q.Actions {
			if allowed&(1<<a) != 0 {
				n++
			}
		}
		if n > 0 {
			k := rng.IntN(n)
			for a := range q.Actions {
				if allowed&(1<<a) != 0 {
					if k == 0 {
						return a
					}
					k--
				}
			}
		}
	}
	a, _ := q.Greedy(phi, allowed)
	return a
}

// Update applies one Q-learning step for the transition (phi, a, r, next)
// whose next state allows nextAllowed (0: terminal, no bootstrap) and
// returns the TD error δ.
func (q *LinearQ) Update(phi []float64, a int, r float64, next []float64, nextAllowed uint64, alpha, gamma float64) float64 {
	target := r
	if nextAllowed != 0 {
		_, v := q.Greedy(next, nextAllowed)
		target += gamma * v
	}
	delta := target - q.Value(phi, a)
	w := q.W[a*q.Features : (a+1)*q.Features]
	for k, x := range phi {
		w[k] += alpha * delta * x
	}
	return delta
}
