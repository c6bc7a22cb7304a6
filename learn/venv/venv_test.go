package venv

import (
	"bufio"
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// linear is a known system: s' = 0.8 s + 0.5 a + N(0, 0.1²) per
// coordinate, outcome s0 + s1 + N(0, 0.05²).
func linear(s []float64, a float64, rng *rand.Rand) (next, out []float64) {
	next = []float64{0.8*s[0] + 0.5*a + 0.1*rng.NormFloat64(), 0.8*s[1] - 0.5*a + 0.1*rng.NormFloat64()}
	return next, []float64{next[0] + next[1] + 0.05*rng.NormFloat64()}
}

func logs(n, length int, rng *rand.Rand) []Transition {
	var out []Transition
	for range n {
		s := []float64{rng.NormFloat64(), rng.NormFloat64()}
		for range length {
			a := 2*rng.Float64() - 1
			next, o := linear(s, a, rng)
			out = append(out, Transition{State: s, Action: []float64{a}, Next: next, Outcome: o})
			s = next
		}
	}
	return out
}

// TestLearnsAKnownSystem: the model learned from a known system's logs
// predicts its next state's mean, and 10-step rollouts under random
// actions spread as the system's own do.
func TestLearnsAKnownSystem(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cfg := DefaultConfig()
	cfg.MLEEpochs, cfg.Adversarial = 20, 150
	m, err := Train(logs(200, 20, rng), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// One step: the mean of 200 samples against 0.8 s + 0.5 a.
	s, a := []float64{1, -0.5}, 0.6
	var mean float64
	for range 200 {
		next, _ := m.Step(s, []float64{a}, rng)
		mean += next[0] / 200
	}
	if want := 0.8*1 + 0.5*0.6; math.Abs(mean-want) > 0.1 {
		t.Errorf("next state's mean %.3f, want %.3f", mean, want)
	}
	// Rollouts: the spread of s0 after 10 steps, model against system.
	var vm, vs float64
	const n = 2000
	for range n {
		x := []float64{rng.NormFloat64(), rng.NormFloat64()}
		y := append([]float64(nil), x...)
		for range 10 {
			a := []float64{2*rng.Float64() - 1}
			x, _ = m.Step(x, a, rng)
			y, _ = linear(y, a[0], rng)
		}
		vm += x[0] * x[0] / n
		vs += y[0] * y[0] / n
	}
	t.Logf("after 10 steps: model %.3f, system %.3f", vm, vs)
	if math.Abs(vm/vs-1) > 0.25 {
		t.Errorf("after 10 steps the model's s0 has second moment %.3f, the system's %.3f", vm, vs)
	}
	if _, err := Train(logs(1, 1, rng), cfg); err == nil {
		t.Error("one transition: no error")
	}
}

// TestWriteRead: a model read back steps exactly as the one written, two
// models follow each other in one stream, and a header that does not fit
// its weights is refused.
func TestWriteRead(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cfg := DefaultConfig()
	cfg.MLEEpochs, cfg.Adversarial = 2, 0
	m, err := Train(logs(20, 10, rng), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for range 2 {
		if err := m.Write(&buf); err != nil {
			t.Fatal(err)
		}
	}
	br := bufio.NewReader(bytes.NewReader(buf.Bytes()))
	for i := range 2 {
		got, err := Read(br)
		if err != nil {
			t.Fatalf("model %d: %v", i, err)
		}
		s, a := []float64{0.3, -1}, []float64{0.2}
		n1, o1 := m.Step(s, a, rand.New(rand.NewPCG(5, 6)))
		n2, o2 := got.Step(s, a, rand.New(rand.NewPCG(5, 6)))
		if !slices.Equal(n1, n2) || !slices.Equal(o1, o2) {
			t.Errorf("model %d steps to %v %v, written %v %v", i, n2, o2, n1, o1)
		}
	}
	bad := bytes.Replace(buf.Bytes(), []byte(`"hidden":128`), []byte(`"hidden":64`), 1)
	if _, err := Read(bytes.NewReader(bad)); err == nil {
		t.Error("hidden 64 on 128-unit weights: no error")
	}
}

// TestEnsembleDisagreesAwayFromTheLog: members trained on one log agree
// on a logged state and action, and disagree at least three times as
// much on a state ten deviations away from every logged one; one member
// is Train itself.
func TestEnsembleDisagreesAwayFromTheLog(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	data := logs(50, 10, rng)
	cfg := DefaultConfig()
	cfg.MLEEpochs, cfg.Adversarial, cfg.Models = 10, 0, 4
	e, err := TrainEnsemble(data, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Models) != 4 {
		t.Fatalf("%d members", len(e.Models))
	}
	var near, far float64
	for i := range 20 {
		tr := data[i*20]
		_, _, u := e.Step(tr.State, tr.Action, rng)
		near += u / 20
		_, _, u = e.Step([]float64{10 + tr.State[0], -10 + tr.State[1]}, tr.Action, rng)
		far += u / 20
	}
	t.Logf("disagreement: %.3f on logged states, %.3f ten deviations away", near, far)
	if !(far > 3*near) {
		t.Errorf("disagreement %.3f away from the log, %.3f on it: want at least 3x", far, near)
	}
	single, err := Train(data, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, a := []float64{0.3, -1}, []float64{0.2}
	n0, o0 := e.Models[0].Step(s, a, rand.New(rand.NewPCG(1, 1)))
	n1, o1 := single.Step(s, a, rand.New(rand.NewPCG(1, 1)))
	if !slices.Equal(n0, n1) || !slices.Equal(o0, o1) {
		t.Errorf("member 0 steps to %v %v, Train's model to %v %v", n0, o0, n1, o1)
	}
}
