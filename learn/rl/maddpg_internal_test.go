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
			want := m.actors.record(&tp, j, a.aq, a.ak, states).Value.Data
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

// The cloner draws actors to the targets: the distance falls, and the
// actors' own Act (what runs at deployment) then gives the targets.
func TestClonerDrawsActorsToTargets(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	adj := [][]float64{{0, 1, 0}, {1, 0, 1}, {0, 1, 0}}
	a := NewMFActors(AttMF, adj, 3, 5, 2, []int{16}, 4, rng)
	var obs, acts [][][]float64
	for i := range 8 {
		o, t := make([][]float64, 3), make([][]float64, 3)
		for j := range 3 {
			o[j] = []float64{float64(i) / 8, float64(j), 0.5, -0.5, 1}
			t[j] = []float64{0.5 - float64(j)/4, float64(i)/8 - 0.5}
		}
		obs, acts = append(obs, o), append(acts, t)
	}
	c := NewCloner(a, 1e-2, rng)
	c.SetTargets(obs, acts)
	first := c.Step(32)
	var last float64
	for range 1500 {
		last = c.Step(32)
	}
	if !(last < first/20) {
		t.Fatalf("distance %v after 1500 steps, %v at first", last, first)
	}
	for i, o := range obs {
		for j, act := range a.Act(o) {
			for k, v := range act {
				if d := float64(v) - acts[i][j][k]; d*d > 0.01 {
					t.Fatalf("sample %d agent %d: act %v, target %v", i, j, act, acts[i][j])
				}
			}
		}
	}
}
