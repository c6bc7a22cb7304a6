package rl

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shoal-project/shoal/learn/nn"
)

// The allocation-free actor input of Act is the one training records on a
// tape: the same attention-weighted mean of the neighbours' states.
func TestMADDPGActorInputMatchesTape(t *testing.T) {
	const n, ds = 4, 3
	spec := MultiSpec{}
	for range n {
		spec.Observation = append(spec.Observation, UniformBox(ds, -1, 1))
		spec.Action = append(spec.Action, UniformBox(2, -1, 1))
	}
	adj := [][]float64{{0, 1, 1, 0}, {1, 0, 0.5, 0}, {1, 0.5, 0, 1}, {0, 0, 1, 0}}
	for _, v := range []MADDPGVariant{AttMF, MeanField} {
		cfg := DefaultMADDPGConfig()
		cfg.Variant, cfg.Adjacency, cfg.Hidden, cfg.BatchSize = v, adj, []int{8}, 2
		m, err := NewMADDPG(spec, cfg, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(3, 4))
		s := make([]float32, n*ds)
		for i := range s {
			s[i] = float32(2*rng.Float64() - 1)
		}
		var tp nn.Tape[float32]
		states := input(&tp, n, ds, s) // one sample: B = 1
		for j, a := range m.agents {
			want := m.actorIn(&tp, j, a.aq, a.ak, states).Value.Data
			got := make([]float32, 2*ds)
			m.actors.input(got, j, s)
			for i := range want {
				if math.Abs(float64(got[i]-want[i])) > 1e-5 {
					t.Fatalf("%s agent %d: actor input %v, on the tape %v", v, j, got, want)
				}
			}
		}
	}
}
