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

// The Aquatope-like tuner, told warm-up measurements, proposes
// configurations of the space.
func TestAquatopeSession(t *testing.T) {
	sc, err := scenario.Lookup("faas-sequential")
	if err != nil {
		t.Fatal(err)
	}
	env, err := faasconfenv.New(sc, faasconfenv.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	rs := RandomTuner{Space: env.Space(), N: len(env.Functions()), Rng: rng}
	var warm []faasconfenv.Measurement
	for range 6 {
		m, _ := env.Measure(0.7, rs.Next(0.7, faasconfenv.Measurement{}, nil, true), rng)
		warm = append(warm, m)
	}
	aq, err := NewAquatopeTuner(env.Space(), len(env.Functions()), env.QoS(), warm, rand.New(rand.NewPCG(4, 4)))
	if err != nil {
		t.Fatal(err)
	}
	s := RunFaaSSession(env, 0.7, aq, 3, rand.New(rand.NewPCG(5, 5)))
	sp := env.Space()
	for _, m := range s.Measurements {
		for _, c := range m.Configs {
			if c.CPU < sp.CPU[0] || c.CPU > sp.CPU[1] || c.Instances < sp.Instances[0] || c.Instances > sp.Instances[1] ||
				c.Concurrency < sp.Concurrency[0] || c.Concurrency > sp.Concurrency[1] {
				t.Fatalf("proposal %+v outside the space", c)
			}
		}
	}
	if len(aq.opt.Observations()) != 6+1+3-1 { // warm-up, the scenario's own, and all but the last proposal
		t.Fatalf("%d observations told", len(aq.opt.Observations()))
	}
}
