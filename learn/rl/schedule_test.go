package rl

import (
	"math"
	"testing"
)

// TestSchedule checks Stable-Baselines3's training schedule semantics.
func TestSchedule(t *testing.T) {
	tests := []struct {
		name                      string
		starts, freq, grad, steps int
		episode                   int // episode length (done every episode steps)
		want                      int // total gradient updates
		firstAt                   int // step of the first update round
	}{
		{"every step", 100, 1, 1, 1000, 200, 900, 101},
		{"every 4 steps, 2 updates", 0, 4, 2, 100, 50, 50, 4},
		{"per episode, as many as steps (zoo TD3)", 10_000, 0, -1, 20_000, 200, 10_000, 10_200},
		{"per episode, fixed", 0, 0, 5, 1000, 100, 50, 100},
	}
	for _, tc := range tests {
		s := schedule{learningStarts: tc.starts, trainFreq: tc.freq, gradientSteps: tc.grad}
		total, first := 0, 0
		for step := 1; step <= tc.steps; step++ {
			n := s.observe(step%tc.episode == 0)
			if n > 0 && first == 0 {
				first = step
			}
			total += n
		}
		if total != tc.want || first != tc.firstAt {
			t.Errorf("%s: %d updates, first at step %d; want %d at %d", tc.name, total, first, tc.want, tc.firstAt)
		}
	}
}

// TestActionScale checks the affine map between box bounds and [-1, 1].
func TestActionScale(t *testing.T) {
	s, err := newActionScale(Box([]float64{-2, 0}, []float64{2, 10}))
	if err != nil {
		t.Fatal(err)
	}
	env := make([]float64, 2)
	s.toEnv(env, []float32{-1, 0.5})
	if env[0] != -2 || env[1] != 7.5 {
		t.Errorf("toEnv(-1, 0.5) = %v, want [-2 7.5]", env)
	}
	unit := make([]float64, 2)
	s.toUnit(unit, []float64{1, 2.5})
	if unit[0] != 0.5 || unit[1] != -0.5 {
		t.Errorf("toUnit(1, 2.5) = %v, want [0.5 -0.5]", unit)
	}
	if _, err := newActionScale(Box([]float64{0}, []float64{math.Inf(1)})); err == nil {
		t.Error("newActionScale accepted an infinite bound")
	}
}
