package experiment

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/envs/faasconfenv"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/scenario"
)

// A random-search session measures the given number of configurations and
// reports the cheapest that met the QoS.
func TestRandomSession(t *testing.T) {
	env := sequentialEnv(t)
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
	env := sequentialEnv(t)
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

// The effectiveness study reuses a policy from its directory, runs every
// method at every level and writes its table and files.
func TestFaaSConfStudy(t *testing.T) {
	sc, err := scenario.Lookup("faas-sequential")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := faasconfenv.DefaultTrainConfig()
	cfg.Logged, cfg.OfflineUpdates, cfg.Online, cfg.Learner.BatchSize, cfg.Learner.Hidden = 2, 5, 0, 8, []int{8}
	tr, err := faasconfenv.Train(context.Background(), sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "policies"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := modelfile.WriteFile(filepath.Join(dir, "policies", "faasconf-faas-sequential-seed1.policy"), tr.Policy.Write); err != nil {
		t.Fatal(err)
	}
	s := FaaSConfStudy{Scenarios: []string{"faas-sequential"}, Seeds: 2, Iterations: 2, Warm: 2, TrainSeed: 1,
		Dir: filepath.Join(dir, "out"), PolicyDir: filepath.Join(dir, "policies")}
	var table bytes.Buffer
	cells, err := s.Run(context.Background(), &table)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 5*len(FaaSConfTuners) || cells[0].Tuner != "faasconf" || cells[0].Sessions != 2 {
		t.Fatalf("%d cells, first %+v", len(cells), cells[0])
	}
	if lines := strings.Count(table.String(), "\n"); lines != 6 {
		t.Fatalf("table of %d lines:\n%s", lines, table.String())
	}
	csv, err := os.ReadFile(filepath.Join(dir, "out", "effectiveness.csv"))
	if err != nil || strings.Count(string(csv), "\n") != 1+len(cells) {
		t.Fatalf("csv: %v\n%s", err, csv)
	}
}

func sequentialEnv(t *testing.T) *faasconfenv.Env {
	t.Helper()
	sc, err := scenario.Lookup("faas-sequential")
	if err != nil {
		t.Fatal(err)
	}
	env, err := faasconfenv.New(sc, faasconfenv.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return env
}
