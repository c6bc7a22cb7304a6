package rl_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shoal-project/shoal/learn/rl"
)

// neighbourMean is a one-step cooperative task on a chain of agents: each
// observes a private value x_j ~ U(-1, 1) and is rewarded by how close its
// action comes to the mean of its neighbours' values, −(a_j − x̄_N(j))².
// An actor that sees only x_j can do no better than a_j = 0, which costs
// the variance of x̄_N(j): 1/6 for the two-neighbour agents, 1/3 at the
// ends. One that sees its neighbours' mean can reach 0.
type neighbourMean struct {
	n   int
	x   []float64
	obs [][]float64
	rew []float64
}

func newNeighbourMean(n int) *neighbourMean {
	e := &neighbourMean{n: n, x: make([]float64, n), obs: make([][]float64, n), rew: make([]float64, n)}
	for j := range e.obs {
		e.obs[j] = make([]float64, 1)
	}
	return e
}

func (e *neighbourMean) Spec() rl.MultiSpec {
	s := rl.MultiSpec{ID: "neighbour-mean", MaxEpisodeSteps: 1}
	for range e.n {
		s.Observation = append(s.Observation, rl.UniformBox(1, -1, 1))
		s.Action = append(s.Action, rl.UniformBox(1, -1, 1))
	}
	return s
}

func (e *neighbourMean) adjacency() [][]float64 {
	a := make([][]float64, e.n)
	for j := range a {
		a[j] = make([]float64, e.n)
		if j > 0 {
			a[j][j-1] = 1
		}
		if j+1 < e.n {
			a[j][j+1] = 1
		}
	}
	return a
}

func (e *neighbourMean) Reset(rng *rand.Rand) [][]float64 {
	for j := range e.x {
		e.x[j] = 2*rng.Float64() - 1
		e.obs[j][0] = e.x[j]
	}
	return e.obs
}

func (e *neighbourMean) Step(actions [][]float64) ([][]float64, []float64, bool, bool) {
	adj := e.adjacency()
	for j := range e.n {
		sum, w := 0.0, 0.0
		for k, v := range adj[j] {
			sum, w = sum+v*e.x[k], w+v
		}
		d := actions[j][0] - sum/w
		e.rew[j] = -d * d
	}
	return e.obs, e.rew, true, false
}

func maddpgOn(t *testing.T, e *neighbourMean, v rl.MADDPGVariant, seed uint64) *rl.MADDPG {
	t.Helper()
	cfg := rl.DefaultMADDPGConfig()
	cfg.Variant, cfg.Adjacency, cfg.Hidden, cfg.BatchSize, cfg.LearningStarts = v, e.adjacency(), []int{32, 32}, 64, 200
	cfg.ActorLR, cfg.CriticLR = 3e-3, 3e-3
	m, err := rl.NewMADDPG(e.Spec(), cfg, pcg(seed, 1))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The mean-field variants learn to act on their neighbours' values (the
// optimum is 0); plain MADDPG and independent DDPG, whose actors see only
// their own value, cannot beat −(1/6 + 1/6 + 1/3 + 1/3)/4 = −0.25 per
// agent. The mean-field ones must come within a fifth of that from the
// optimum.
func TestMADDPGVariantsOnNeighbourMean(t *testing.T) {
	for _, tc := range []struct {
		v        rl.MADDPGVariant
		min, max float64
	}{{rl.AttMF, -0.05, 0}, {rl.MeanField, -0.05, 0}, {rl.Vanilla, -1, -0.2}, {rl.IndependentDDPG, -1, -0.2}} {
		e := newNeighbourMean(4)
		m := maddpgOn(t, e, tc.v, 1)
		rl.TrainCTDE(e, m, 1500, pcg(2, 2))
		mean, _ := rl.EvaluateCTDE(e, m, 200, pcg(3, 3))
		if perAgent := mean / 4; perAgent < tc.min || perAgent > tc.max {
			t.Errorf("%s: reward per agent %.4f after training, want in [%v, %v]", tc.v, perAgent, tc.min, tc.max)
		} else {
			t.Logf("%s: reward per agent %.4f", tc.v, perAgent)
		}
	}
}

// Acting allocates nothing.
func TestMADDPGActAllocatesNothing(t *testing.T) {
	e := newNeighbourMean(5)
	m := maddpgOn(t, e, rl.AttMF, 1)
	obs := e.Reset(pcg(1, 1))
	if n := testing.AllocsPerRun(100, func() { m.Act(obs, true) }); n != 0 {
		t.Fatalf("%v allocations per Act", n)
	}
	if a := m.Act(obs, true); math.IsNaN(a[0][0]) {
		t.Fatal("NaN action")
	}
}
