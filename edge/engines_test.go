package edge

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// runPolicy drives a world for steps under a logging engine and sums each
// scene's outcomes.
func runPolicy(t *testing.T, w *World, p Policy, steps int) [Scenes]GroupStats {
	t.Helper()
	var acts [Agents][]float64
	var tot [Scenes]GroupStats
	for range steps {
		for a := range Agents {
			acts[a] = p.Act(a, nil, acts[a])
		}
		st, err := w.Step(acts)
		if err != nil {
			t.Fatal(err)
		}
		for g := range Scenes {
			tot[g].Add(st.Groups[g])
		}
	}
	return tot
}

// TestGreedyWeightsNearGreedy: greedy acting through the weights, once a
// step, finishes every scene's tasks sooner than random weights, and
// within half again of the per-task greedy rule.
func TestGreedyWeightsNearGreedy(t *testing.T) {
	random := run(t, "", 120)
	greedy := run(t, Greedy, 120)
	w := world(t, 1, 12*time.Hour)
	weights := runPolicy(t, w, GreedyWeights{World: w, Rand: rand.New(rand.NewPCG(1, 1))}, 120)
	for g := range Scenes {
		r, gr, gw := random[g].MeanTime(), greedy[g].MeanTime(), weights[g].MeanTime()
		t.Logf("scene %d: random %.3f s, greedy %.3f s, greedy through weights %.3f s", g, r, gr, gw)
		if gw >= r || gw > 1.5*gr {
			t.Errorf("scene %d: greedy through weights %.3f s, random %.3f s, greedy %.3f s", g, gw, r, gr)
		}
	}
}

// TestHoldPolicyHolds: weights change after 1 to MaxHold steps.
func TestHoldPolicyHolds(t *testing.T) {
	p := &HoldPolicy{Rand: rand.New(rand.NewPCG(2, 2)), MaxHold: 5}
	var prev, a []float64
	run, runs := 0, []int{}
	for range 400 {
		a = p.Act(0, nil, a)
		if prev != nil && !slices.Equal(a, prev) {
			runs = append(runs, run)
			run = 0
		}
		run++
		prev = append(prev[:0], a...)
	}
	if slices.Min(runs) < 1 || slices.Max(runs) > 5 || slices.Max(runs) < 4 {
		t.Fatalf("held weights for %d to %d steps, want 1 to 5", slices.Min(runs), slices.Max(runs))
	}
}

// TestMixStretches: a mix runs one engine per stretch of 10-60 steps, each
// engine about as often as its weight says, and refuses unknown engines.
func TestMixStretches(t *testing.T) {
	w := world(t, 1, 12*time.Hour)
	m, err := NewMix(w, rand.New(rand.NewPCG(3, 3)), []Stretch{{"greedy", 3}, {"random", 1}})
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string]int{}
	var lengths []int
	cur, n := "", 0
	var acts [Agents][]float64
	for range 3000 {
		for a := range Agents {
			acts[a] = m.Act(a, nil, acts[a])
		}
		if m.Current() != cur && n > 0 {
			lengths = append(lengths, n)
			n = 0
		}
		cur, n = m.Current(), n+1
		steps[cur]++
	}
	if share := float64(steps["greedy"]) / 3000; share < 0.6 || share > 0.9 || steps["hold"] > 0 {
		t.Errorf("steps per engine %v, want about three in four greedy", steps)
	}
	// Two stretches of one engine in a row count as one run here.
	if slices.Min(lengths) < 10 {
		t.Errorf("a stretch of %d steps", slices.Min(lengths))
	}
	for _, bad := range [][]Stretch{{{"fastest", 1}}, {{"greedy", 0}}, {{"random", -1}}} {
		if _, err := NewMix(w, rand.New(rand.NewPCG(1, 1)), bad); err == nil || !strings.Contains(err.Error(), "engine") {
			t.Errorf("mix %v: %v", bad, err)
		}
	}
}

// TestParseMix reads NAME:WEIGHT lists and names what is wrong.
func TestParseMix(t *testing.T) {
	mix, err := ParseMix("greedy:0.6, threshold:0.2,hold")
	if err != nil || !slices.Equal(mix, []Stretch{{"greedy", 0.6}, {"threshold", 0.2}, {"hold", 1}}) {
		t.Fatalf("%v, %v", mix, err)
	}
	for in, want := range map[string]string{"greedy:x": "not a number", "fastest": "unknown engine", "": "unknown engine"} {
		if _, err := ParseMix(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}
