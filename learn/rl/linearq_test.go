package rl

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLinearQUpdate checks one update against the value computed by hand.
func TestLinearQUpdate(t *testing.T) {
	q := NewLinearQ(2, 3)
	copy(q.W, []float64{1, 0, 0, 2, 0.5, 0.5}) // w_0 = (1, 0), w_1 = (0, 2), w_2 = (0.5, 0.5)
	phi, next := []float64{1, 1}, []float64{0, 1}
	// Q(s, 2) = 1; max over allowed {0, 2} of Q(s', ·) = max(0, 0.5) = 0.5;
	// δ = 1 + 0.9·0.5 − 1 = 0.45; w_2 += 0.1·0.45·(1, 1) = (0.545, 0.545).
	delta := q.Update(phi, 2, 1, next, 1<<0|1<<2, 0.1, 0.9)
	if math.Abs(delta-0.45) > 1e-12 {
		t.Errorf("δ = %v, want 0.45", delta)
	}
	if w := q.W[4:6]; math.Abs(w[0]-0.545) > 1e-12 || math.Abs(w[1]-0.545) > 1e-12 {
		t.Errorf("w_2 = %v, want [0.545 0.545]", w)
	}
	// A terminal transition does not bootstrap: δ = r − Q = 0 − 2.
	if d := q.Update(next, 1, 0, phi, 0, 0.5, 0.9); d != -2 {
		t.Errorf("terminal δ = %v, want -2", d)
	}
	// Now w_1 = (0, 1): Q(s, 0) = Q(s, 1) = 1, and ties go to the lower index.
	if a, _ := q.Greedy(phi, 1<<0|1<<1); a != 0 {
		t.Errorf("greedy = %d, want 0", a)
	}
}

// TestLinearQLearnsBandit: on a two-state chain it finds the action that
// pays, and ε-greedy draws only allowed actions.
func TestLinearQLearnsBandit(t *testing.T) {
	q := NewLinearQ(2, 3)
	rng := rand.New(rand.NewPCG(1, 2))
	s := [][]float64{{1, 0}, {0, 1}}
	for range 2000 {
		i := rng.IntN(2)
		a := q.EpsilonGreedy(s[i], 1<<0|1<<1, 0.3, rng)
		if a == 2 {
			t.Fatal("ε-greedy drew a masked action")
		}
		r := 0.0
		if a == i { // state i pays for action i
			r = 1
		}
		q.Update(s[i], a, r, s[1-i], 1<<0|1<<1, 0.1, 0.5)
	}
	for i := range 2 {
		if a, _ := q.Greedy(s[i], AllActions(2)); a != i {
			t.Errorf("state %d: greedy %d, want %d", i, a, i)
		}
	}
}
