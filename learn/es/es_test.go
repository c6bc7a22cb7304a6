package es

import (
	"context"
	"math"
	"slices"
	"testing"
)

// scaledTasks is a sphere around (1, -1, 2) whose scale and offset
// change with the task by factors up to 10^6, as an episode's latency does
// between worlds: its optimum is still at (1, -1, 2).
func scaledTasks(_ context.Context, x []float64, gen, k int) (float64, error) {
	c := []float64{1, -1, 2}
	scale := math.Pow(10, float64((gen*7+k*3)%7-3))
	var s float64
	for i, v := range x {
		s += (v - c[i]) * (v - c[i])
	}
	return -scale*s + 1000*scale, nil
}

// TestStepFindsKnownOptimum: on a sphere, and on a sphere whose scale
// changes by 10^6 between tasks, the search ends near the known optimum.
func TestStepFindsKnownOptimum(t *testing.T) {
	target := []float64{0.5, -1, 2, 0.25, -0.75}
	sphere := func(_ context.Context, x []float64, _, _ int) (float64, error) {
		var s float64
		for i, v := range x {
			s += (v - target[i]) * (v - target[i])
		}
		return -s, nil
	}
	for _, c := range []struct {
		name string
		f    Objective
		want []float64
		gens int
		tol  float64
	}{
		{"sphere", sphere, target, 400, 0.05},
		{"scaled tasks", scaledTasks, []float64{1, -1, 2}, 600, 0.05},
	} {
		st := NewState(make([]float64, len(c.want)))
		cfg := Config{Seed: 1, Decay: 1e-12, LR: 0.01}
		for range c.gens {
			if _, err := Step(context.Background(), st, cfg, c.f); err != nil {
				t.Fatal(err)
			}
		}
		for i, v := range st.Theta {
			if math.Abs(v-c.want[i]) > c.tol {
				t.Errorf("%s: θ = %.3f, want %v within %g", c.name, st.Theta, c.want, c.tol)
				break
			}
		}
	}
}

// TestStepDeterministicAcrossWorkers: the same seed gives the same
// parameters with one worker or four.
func TestStepDeterministicAcrossWorkers(t *testing.T) {
	run := func(workers int) []float64 {
		st := NewState([]float64{0, 0, 0})
		for range 20 {
			if _, err := Step(context.Background(), st, Config{Seed: 7, Workers: workers}, scaledTasks); err != nil {
				t.Fatal(err)
			}
		}
		return st.Theta
	}
	if a, b := run(1), run(4); !slices.Equal(a, b) {
		t.Fatalf("1 worker: %v; 4 workers: %v", a, b)
	}
}
