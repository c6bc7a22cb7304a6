// Package bandit holds the cost models of contextual bandits.
package bandit

import (
	"math"
	"math/rand/v2"
)

// ArmNets regresses each arm's cost on a scalar context with its own
// network of one hidden layer of tanh units and a linear output: Vowpal
// Wabbit's --nn reduction under a contextual bandit with one model per
// action, as Autothrottle's Tower uses it (--cb_explore 81 --nn 3 -l 0.5).
// Updates are AdaGrad steps on the squared error, as VW's default adaptive
// update; an arm never updated predicts about 0, so where costs are at
// least 0 the unseen arms are tried first, as in VW.
type ArmNets struct {
	arms, hidden int
	w, g         []float64 // per arm: hidden input weights, hidden biases, hidden output weights, output bias; AdaGrad's sums
	h            []float64 // hidden activations of the last forward pass
}

// NewArmNets returns arms networks of hidden units, initialised from rng.
func NewArmNets(arms, hidden int, rng *rand.Rand) *ArmNets {
	a := &ArmNets{arms: arms, hidden: hidden, w: make([]float64, arms*(3*hidden+1)), g: make([]float64, arms*(3*hidden+1)), h: make([]float64, hidden)}
	a.Reset(rng)
	return a
}

// Arms is the number of arms.
func (a *ArmNets) Arms() int { return a.arms }

// Reset draws the networks afresh: input weights and biases uniform in
// ±1, output weights uniform in ±1/hidden, output bias 0.
func (a *ArmNets) Reset(rng *rand.Rand) {
	for arm := range a.arms {
		w := a.params(arm)
		for j := range 2 * a.hidden {
			w[j] = 2*rng.Float64() - 1
		}
		for j := 2 * a.hidden; j < 3*a.hidden; j++ {
			w[j] = (2*rng.Float64() - 1) / float64(a.hidden)
		}
		w[3*a.hidden] = 0
	}
	clear(a.g)
}

func (a *ArmNets) params(arm int) []float64 {
	n := 3*a.hidden + 1
	return a.w[arm*n : (arm+1)*n]
}

// Predict is the arm's predicted cost at context x.
func (a *ArmNets) Predict(arm int, x float64) float64 {
	w, h := a.params(arm), a.hidden
	y := w[3*h]
	for j := range h {
		a.h[j] = math.Tanh(w[j]*x + w[h+j])
		y += w[2*h+j] * a.h[j]
	}
	return y
}

// Update takes one AdaGrad step of rate lr towards cost at context x.
func (a *ArmNets) Update(arm int, x, cost, lr float64) {
	n := 3*a.hidden + 1
	w, g, h := a.params(arm), a.g[arm*n:(arm+1)*n], a.hidden
	e := a.Predict(arm, x) - cost // d(e²/2)/dy
	step := func(j int, grad float64) {
		g[j] += grad * grad
		if g[j] > 0 {
			w[j] -= lr * grad / math.Sqrt(g[j])
		}
	}
	for j := range h {
		back := e * w[2*h+j] * (1 - a.h[j]*a.h[j])
		step(2*h+j, e*a.h[j])
		step(j, back*x)
		step(h+j, back)
	}
	step(3*h, e)
}

// Best is the arm of the lowest predicted cost at x (the first of ties).
func (a *ArmNets) Best(x float64) int {
	best, low := 0, math.Inf(1)
	for arm := range a.arms {
		if c := a.Predict(arm, x); c < low {
			best, low = arm, c
		}
	}
	return best
}
