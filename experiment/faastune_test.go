package experiment

import (
	"math/rand/v2"
	"testing"

	"github.com/shoal-project/shoal/envs/faasconfenv"
	"github.com/shoal-project/shoal/scenario"
)

// A random-search session measures the given number of configurations and
// reports the cheapest that met the QoS.
func TestRandomSession(t *testing.T) {
	sc, err := scenario.Lookup("faas-sequential")
	if err != nil {
		t.Fatal(err)
	}
	env, err := faasconfenv.New(sc, faasconfenv.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s := RunFaaSSession(env, 0.7, RandomTuner{Space: env.Space(), N: len(env.Functions()), Rng: rand.New(rand.NewPCG(1, 1))}, 8, rand.New(rand.NewPCG(2, 2)))
	if len(s.Measurements) != 8 {
		t.Fatalf("%d measurements, want 8", len(s.Measurements))
	}
	best, met := 0.0, 0
	for _, m := range s.Measurements {
		if m.Met {
			met++
			if best == 0 || m.Price < best {
				best = m.Price
			}
		}
		if m.Level != 0.7 {
			t.Fatalf("measured at level %v", m.Level)
		}
	}
	if s.Met != met || s.Best != best || met == 0 {
		t.Fatalf("session met %d best %v; measurements say %d, %v", s.Met, s.Best, met, best)
	}
}
