package lbenv

import (
	"math/rand/v2"
	"testing"

	"github.com/shoal-project/shoal/learn/venv"
)

// run plays episodes with agent 0's action from first (random when nil)
// and agent 1's random, and returns agent 0's transitions (its
// observation, action, next observation, and its reward as the outcome).
func run(env *Env, first []float64, episodes int, rng *rand.Rand) []venv.Transition {
	var out []venv.Transition
	for range episodes {
		obs := env.Reset(rng)
		for {
			acts := make([][]float64, len(obs))
			for i := range acts {
				acts[i] = make([]float64, env.Backends())
				for j := range acts[i] {
					acts[i][j] = 2*rng.Float64() - 1
				}
			}
			if first != nil {
				acts[0] = first
			}
			state := append([]float64(nil), obs[0]...)
			next, r, _, trunc := env.Step(acts)
			out = append(out, venv.Transition{State: state, Action: acts[0], Next: append([]float64(nil), next[0]...), Outcome: []float64{r[0]}})
			obs = next
			if trunc {
				return out
			}
		}
	}
	return out
}

// TestVirtualEnvironmentFromLBLogs: learn/venv is not the edge world's
// alone. Learned from the load-balancing world's logs under random
// weights, the virtual environment ranks two fixed weightings of an LB
// agent as the real world does: weights in proportion to the servers'
// true capacities earn a better reward than equal weights.
func TestVirtualEnvironmentFromLBLogs(t *testing.T) {
	env, err := New(moderate(t, "lb-moderate-misconfigured"), Config{EpisodeSteps: 100})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	var log []venv.Transition
	for range 40 {
		log = append(log, run(env, nil, 1, rng)...)
	}
	cfg := venv.DefaultConfig()
	cfg.MLEEpochs, cfg.Adversarial = 30, 50
	m, err := venv.Train(log, cfg)
	if err != nil {
		t.Fatal(err)
	}
	right := trueWeights(t)
	equal := make([]float64, len(right))
	var real, virt [2]float64
	for k, a := range [][]float64{right, equal} {
		for _, x := range run(env, a, 3, rng) {
			real[k] += x.Outcome[0]
		}
		for range 300 { // 10-step rollouts from logged states
			s := log[rng.IntN(len(log))].State
			for range 10 {
				next, o := m.Step(s, a, rng)
				virt[k] += o[0]
				s = next
			}
		}
	}
	t.Logf("reward, true weights against equal: real %.4g vs %.4g, virtual %.4g vs %.4g", real[0]/300, real[1]/300, virt[0]/3000, virt[1]/3000)
	if !(real[0] > real[1]) || !(virt[0] > virt[1]) {
		t.Errorf("true weights against equal: real %.4g vs %.4g, virtual %.4g vs %.4g", real[0]/300, real[1]/300, virt[0]/3000, virt[1]/3000)
	}
}
