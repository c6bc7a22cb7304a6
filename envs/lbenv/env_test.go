package lbenv

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/learn/rl"
	"github.com/shoal-project/shoal/scenario"
)

func moderate(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Embedded(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestContract(t *testing.T) {
	env, err := New(moderate(t, "lb-moderate-cpu"), Config{EpisodeSteps: 40})
	if err != nil {
		t.Fatal(err)
	}
	sp := env.Spec()
	if sp.Agents() != 2 || sp.Observation[0].Dim() != 7*12+5 || sp.Action[1].Dim() != 7 {
		t.Fatalf("spec %+v", sp)
	}
	if err := rl.CheckMultiEnv(env, rl.CheckOptions{Seed: 1, Episodes: 2}); err != nil {
		t.Fatal(err)
	}
}

// meanReward runs one episode with fixed actions and returns agent 0's mean reward.
func meanReward(t *testing.T, env *Env, action []float64, seed uint64) float64 {
	t.Helper()
	env.Reset(rand.New(rand.NewPCG(seed, 0)))
	acts := [][]float64{action, action}
	sum, n := 0.0, 0
	for {
		_, r, _, trunc := env.Step(acts)
		sum += r[0]
		n++
		if trunc {
			return sum / float64(n)
		}
	}
}

// trueWeights is lb-moderate-misconfigured's servers' true capacities
// (cores x speed) as an action: x_j = log10(c_j / m) / WeightDecades with
// m = √(0.5·4.8), so that weights a_j ∝ c_j, centred so that the
// extremes' ratio 9.6 fits in [-1, 1].
func trueWeights(t *testing.T) []float64 {
	t.Helper()
	caps := []float64{1.5, 0.5, 2, 1.2, 2.8, 2, 4.8}
	mean := math.Log10(0.5*4.8) / 2
	right := make([]float64, len(caps))
	for j, c := range caps {
		right[j] = (math.Log10(c) - mean) / lb.WeightDecades
		if math.Abs(right[j]) > 1 {
			t.Fatalf("x[%d] = %g is outside [-1, 1]", j, right[j])
		}
	}
	return right
}

// TestVBFRewardsTrueWeights: on servers whose configured weights are wrong,
// weights proportional to the true capacities (cores x speed) earn a better
// VBF reward than equal weights; the reward carries the signal to learn from.
func TestVBFRewardsTrueWeights(t *testing.T) {
	env, err := New(moderate(t, "lb-moderate-misconfigured"), Config{EpisodeSteps: 400})
	if err != nil {
		t.Fatal(err)
	}
	right := trueWeights(t)
	equal := make([]float64, len(right))
	good, bad := 0.0, 0.0
	for seed := uint64(1); seed <= 3; seed++ {
		good += meanReward(t, env, right, seed)
		bad += meanReward(t, env, equal, seed)
	}
	t.Logf("mean VBF reward: true weights %.4g, equal weights %.4g", good/3, bad/3)
	if !(good > bad) {
		t.Fatalf("true weights earn %g, equal weights %g", good/3, bad/3)
	}
}

func TestEnvRefusesScenariosWithoutLBs(t *testing.T) {
	if _, err := New(moderate(t, "mm1"), Config{}); err == nil {
		t.Error("a scenario without lbs made an environment")
	}
	if _, err := New(moderate(t, "lb-moderate-cpu"), Config{Reward: "nope"}); err == nil {
		t.Error("an unknown reward was accepted")
	}
}
