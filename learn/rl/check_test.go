package rl

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// toyEnv is a 1-D random walk on [-1, 1] with a configurable defect.
type toyEnv struct {
	defect string
	limit  int
	x      float64
	t      int
	rng    *rand.Rand
	global *rand.Rand // for the "nondeterministic" defect
	obs    [1]float64
	resets int
}

func (e *toyEnv) Spec() Spec {
	return Spec{ID: "toy-" + e.defect, Observation: UniformBox(1, -1, 1), Action: UniformBox(1, -0.1, 0.1), MaxEpisodeSteps: e.limit}
}

func (e *toyEnv) Reset(rng *rand.Rand) []float64 {
	e.rng, e.t = rng, 0
	e.resets++
	e.x = 0.5 * (2*rng.Float64() - 1)
	if e.defect == "bad reset" && e.resets > 1 {
		e.x = 3
	}
	e.obs[0] = e.x
	return e.obs[:]
}

func (e *toyEnv) Step(a []float64) ([]float64, float64, bool, bool) {
	e.t++
	e.x += a[0] + 0.01*e.rng.NormFloat64()
	if e.defect == "nondeterministic" {
		e.x += 0.001 * e.global.Float64()
	}
	term := math.Abs(e.x) > 0.9
	if term {
		e.x = math.Copysign(0.9, e.x)
	}
	e.obs[0] = e.x
	r := -e.x * e.x
	switch e.defect {
	case "nan reward":
		if e.t == 5 {
			r = math.NaN()
		}
	case "out of bounds":
		if e.t == 3 {
			e.obs[0] = 2
		}
	case "mutates action":
		a[0] = 0
	}
	trunc := !term && e.t >= e.limit
	if e.defect == "no truncation" {
		trunc = false
	}
	return e.obs[:], r, term, trunc
}

func TestCheckEnv(t *testing.T) {
	tests := []struct {
		defect string
		want   string // substring of the error, "" for none
	}{
		{"", ""},
		{"nan reward", "not finite"},
		{"out of bounds", "outside Box(1)"},
		{"mutates action", "modified its action"},
		{"no truncation", "not truncated at the episode limit"},
		{"nondeterministic", "not deterministic"},
		{"bad reset", "outside Box(1)"},
	}
	for _, tc := range tests {
		t.Run(tc.defect, func(t *testing.T) {
			env := &toyEnv{defect: tc.defect, limit: 50, global: rand.New(rand.NewPCG(9, 9))}
			err := CheckEnv(env, CheckOptions{Seed: 3})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckEnv: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrContract) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckEnv error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestCheckEnvBadSpaces(t *testing.T) {
	env := &badSpaceEnv{}
	if err := CheckEnv(env, CheckOptions{}); err == nil || !strings.Contains(err.Error(), "observation space") {
		t.Fatalf("CheckEnv on an empty observation box: %v", err)
	}
}

type badSpaceEnv struct{ toyEnv }

func (e *badSpaceEnv) Spec() Spec { return Spec{ID: "bad", Action: Discrete(2)} }

func TestCheckMultiEnv(t *testing.T) {
	good := Independent("pair", &toyEnv{limit: 30}, &toyEnv{limit: 40})
	if got := good.Spec().MaxEpisodeSteps; got != 30 {
		t.Errorf("Independent limit %d, want the shorter 30", got)
	}
	if err := CheckMultiEnv(good, CheckOptions{Seed: 5}); err != nil {
		t.Fatalf("CheckMultiEnv(good): %v", err)
	}
	tests := []struct{ defect, want string }{
		{"nan reward", "agent 1 reward NaN"},
		{"out of bounds", "agent 1 observation [2]"},
		{"nondeterministic", "not deterministic"},
		{"mutates action", "modified agent 1"},
	}
	for _, tc := range tests {
		bad := Independent("pair", &toyEnv{limit: 30}, &toyEnv{defect: tc.defect, limit: 30, global: rand.New(rand.NewPCG(1, 1))})
		err := CheckMultiEnv(bad, CheckOptions{Seed: 5})
		if err == nil || !errors.Is(err, ErrContract) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: CheckMultiEnv error %v, want one containing %q", tc.defect, err, tc.want)
		}
	}
}

func TestSpace(t *testing.T) {
	d := Discrete(3)
	b := Box([]float64{-1, 0}, []float64{1, math.Inf(1)})
	tests := []struct {
		s    Space
		x    []float64
		want bool
	}{
		{d, []float64{0}, true}, {d, []float64{2}, true}, {d, []float64{3}, false}, {d, []float64{1.5}, false}, {d, []float64{-1}, false},
		{b, []float64{0, 5}, true}, {b, []float64{1.01, 5}, false}, {b, []float64{0, -0.1}, false}, {b, []float64{0, math.NaN()}, false}, {b, []float64{0}, false},
	}
	for _, tc := range tests {
		if got := tc.s.Contains(tc.x); got != tc.want {
			t.Errorf("%v.Contains(%v) = %v, want %v", tc.s, tc.x, got, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, 2)
	counts := make([]int, 3)
	for i := 0; i < 3000; i++ {
		b.Sample(rng, x)
		if !b.Contains(x) {
			t.Fatalf("sample %v outside %v", x, b)
		}
		d.Sample(rng, x[:1])
		counts[int(x[0])]++
	}
	for v, c := range counts {
		if c < 900 || c > 1100 {
			t.Errorf("discrete value %d sampled %d times of 3000", v, c)
		}
	}
}

// recorder is a Learner that acts with a constant and records transitions.
type recorder struct {
	act    []float64
	obs    [][]float64
	reward []float64
	resets int
}

func (r *recorder) Explore([]float64) []float64   { return r.act }
func (r *recorder) Act([]float64, bool) []float64 { return r.act }
func (r *recorder) ResetEpisode()                 { r.resets++ }
func (r *recorder) Observe(obs, act []float64, reward float64, next []float64, term, trunc bool) {
	r.obs = append(r.obs, append([]float64(nil), obs...))
	r.reward = append(r.reward, reward)
}

func TestTrainMultiRoutesPerAgent(t *testing.T) {
	a, b := &toyEnv{limit: 5}, &toyEnv{limit: 5}
	env := Independent("pair", a, b)
	la, lb := &recorder{act: []float64{0.1}}, &recorder{act: []float64{-0.1}}
	eps := TrainMulti(env, []Learner{la, lb}, 12, rand.New(rand.NewPCG(1, 1)))
	if len(eps) != 2 || len(la.obs) != 12 || la.resets != 2 {
		t.Fatalf("%d episodes, %d transitions, %d resets; want 2, 12, 2", len(eps), len(la.obs), la.resets)
	}
	// toyEnv's reward is −x², x drifting by the agent's own action: agent
	// a drifts up, b down, so their observations separate.
	if la.obs[4][0] <= la.obs[0][0] || lb.obs[4][0] >= lb.obs[0][0] {
		t.Errorf("agent observations did not follow their own actions: a %v, b %v", la.obs[:5], lb.obs[:5])
	}
	var sum float64
	for _, r := range la.reward[:5] {
		sum += r
	}
	if math.Abs(sum-eps[0][0]) > 1e-12 {
		t.Errorf("episode return %v, sum of agent a's rewards %v", eps[0][0], sum)
	}
}
