package rl

import (
	"math/rand/v2"
	"testing"
)

// TestChoiceLearnsTheBestCandidate: on a bandit whose reward is the picked
// candidate's first feature (the second is noise), from 2-5 candidates, the
// policy learns to pick the largest: 90% of fresh draws after training,
// against about 40% by chance.
func TestChoiceLearnsTheBestCandidate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c, err := NewChoice(5, 2, DefaultChoiceConfig(), rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	draw := func() ([]float64, int, int) {
		n := 2 + rng.IntN(4)
		feats := make([]float64, 2*n)
		best := 0
		for j := range n {
			feats[2*j], feats[2*j+1] = rng.Float64(), rng.Float64()
			if feats[2*j] > feats[2*best] {
				best = j
			}
		}
		return feats, n, best
	}
	right := func() float64 {
		hits := 0
		for range 1000 {
			feats, n, best := draw()
			if k, _ := c.Choose(feats, nil, n, true); k == best {
				hits++
			}
		}
		return float64(hits) / 1000
	}
	before := right()
	for range 60 {
		var batch []ChoiceSample
		mean := 0.0
		for range 256 {
			feats, n, _ := draw()
			k, lp := c.Choose(feats, nil, n, false)
			batch = append(batch, ChoiceSample{Feats: feats, N: n, Pick: k, LogProb: lp, Adv: feats[2*k]})
			mean += feats[2*k] / 256
		}
		for i := range batch {
			batch[i].Adv -= mean
		}
		c.Update(batch)
	}
	if after := right(); after < 0.9 {
		t.Errorf("picks the best candidate %.0f%% of the time after training (%.0f%% before), want 90%%", 100*after, 100*before)
	}
	if _, err := NewChoice(0, 2, DefaultChoiceConfig(), rng); err == nil {
		t.Error("no candidates: no error")
	}
}

// TestChoiceImitates: cloning a teacher that picks the candidate of the
// largest first feature, from 2-5 candidates, the policy picks as it does
// on 90% of fresh draws, and its negative log-likelihood falls.
func TestChoiceImitates(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	c, err := NewChoice(5, 2, DefaultChoiceConfig(), rand.New(rand.NewPCG(7, 8)))
	if err != nil {
		t.Fatal(err)
	}
	draw := func() ChoiceSample {
		n := 2 + rng.IntN(4)
		s := ChoiceSample{Feats: make([]float64, 2*n), N: n}
		for j := range n {
			s.Feats[2*j], s.Feats[2*j+1] = rng.Float64(), rng.Float64()
			if s.Feats[2*j] > s.Feats[2*s.Pick] {
				s.Pick = j
			}
		}
		return s
	}
	var logged []ChoiceSample
	for range 4000 {
		logged = append(logged, draw())
	}
	first := c.Imitate(logged, 1)
	last := c.Imitate(logged, 20)
	hits := 0
	for range 1000 {
		s := draw()
		if k, _ := c.Choose(s.Feats, nil, s.N, true); k == s.Pick {
			hits++
		}
	}
	if hits < 900 || !(last < first) {
		t.Errorf("agrees with the teacher on %d of 1000, NLL %.3f after one pass and %.3f after 21", hits, first, last)
	}
}
