package rl_test

import (
	"bufio"
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shoal-project/shoal/learn/nn"
	"github.com/shoal-project/shoal/learn/rl"
	"github.com/shoal-project/shoal/learn/rl/envs"
)

// A TD3 agent saved mid-training and loaded into a fresh agent (its random
// source restored) trains on exactly as the original does.
func TestTD3CheckpointResumesExactly(t *testing.T) {
	cfg := rl.DefaultTD3Config()
	cfg.Hidden, cfg.BatchSize, cfg.LearningStarts, cfg.TrainFreq, cfg.GradientSteps = []int{16}, 16, 50, 1, 1
	spec := envs.NewPendulum().Spec()
	src := rand.NewPCG(1, 1)
	a, err := rl.NewTD3(spec, cfg, rand.New(src))
	if err != nil {
		t.Fatal(err)
	}
	rl.Train(envs.NewPendulum(), a, 250, pcg(2, 2)) // mid-episode: the schedule's counters matter
	var ckpt bytes.Buffer
	if err := a.Save(&ckpt); err != nil {
		t.Fatal(err)
	}
	rngState, _ := src.MarshalBinary()

	src2 := rand.NewPCG(9, 9) // another seed: everything must come from the checkpoint
	b, err := rl.NewTD3(spec, cfg, rand.New(src2))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(bytes.NewReader(append(ckpt.Bytes(), "trailer"...)))
	if err := b.Load(br); err != nil {
		t.Fatal(err)
	}
	if rest, _ := br.ReadString(0); rest != "trailer" {
		t.Fatalf("Load read into what follows the checkpoint: %q left", rest)
	}
	if err := src2.UnmarshalBinary(rngState); err != nil {
		t.Fatal(err)
	}
	if a.Updates == 0 || b.Updates != a.Updates || b.Replay().Len() != a.Replay().Len() {
		t.Fatalf("updates %d/%d, replay %d/%d", a.Updates, b.Updates, a.Replay().Len(), b.Replay().Len())
	}
	ra := rl.Train(envs.NewPendulum(), a, 250, pcg(3, 3))
	rb := rl.Train(envs.NewPendulum(), b, 250, pcg(3, 3))
	if len(ra) == 0 || len(ra) != len(rb) || ra[0] != rb[0] {
		t.Fatalf("returns after resuming %v, uninterrupted %v", rb, ra)
	}
	for i, p := range a.Actor().Params() {
		if q := b.Actor().Params()[i]; !slices.Equal(p.Value.Data, q.Value.Data) {
			t.Fatalf("actor tensor %s differs after 250 more steps", p.Name)
		}
	}
}

func TestTD3CheckpointRefusesOtherShapes(t *testing.T) {
	cfg := rl.DefaultTD3Config()
	cfg.Hidden = []int{16}
	a, _ := rl.NewTD3(envs.NewPendulum().Spec(), cfg, pcg(1, 1))
	var ckpt bytes.Buffer
	if err := a.Save(&ckpt); err != nil {
		t.Fatal(err)
	}
	cfg.Hidden = []int{32}
	b, _ := rl.NewTD3(envs.NewPendulum().Spec(), cfg, pcg(1, 1))
	if err := b.Load(bytes.NewReader(ckpt.Bytes())); !errors.Is(err, nn.ErrMismatch) {
		t.Fatalf("loading a 16-unit agent into a 32-unit one: %v", err)
	}
	if err := a.Load(bytes.NewReader(ckpt.Bytes()[:ckpt.Len()-3])); !errors.Is(err, nn.ErrFormat) {
		t.Fatalf("truncated checkpoint: %v", err)
	}
}

// NewTD3On trains the networks it is given, in place, from where they are.
func TestTD3OnTrainsGivenNetworks(t *testing.T) {
	cfg := rl.DefaultTD3Config()
	cfg.Hidden, cfg.BatchSize, cfg.LearningStarts, cfg.TrainFreq, cfg.GradientSteps = []int{16}, 16, 20, 1, 1
	spec := envs.NewPendulum().Spec()
	a, _ := rl.NewTD3(spec, cfg, pcg(1, 1))
	rl.Train(envs.NewPendulum(), a, 60, pcg(2, 2))
	b, err := rl.NewTD3On(spec, cfg, a.Actor(), a.Critics(), pcg(3, 3))
	if err != nil {
		t.Fatal(err)
	}
	probe := []float64{0.3, -0.9, 1.5}
	if got, want := b.Act(probe, true)[0], a.Act(probe, true)[0]; got != want {
		t.Fatalf("the new agent acts %v, the networks it was given %v", got, want)
	}
	before := slices.Clone(a.Actor().Params()[0].Value.Data)
	rl.Train(envs.NewPendulum(), b, 60, pcg(4, 4))
	if slices.Equal(before, a.Actor().Params()[0].Value.Data) || b.Updates == 0 {
		t.Fatal("training the new agent left the given actor unchanged")
	}
	cfg.Hidden = []int{8}
	if _, err := rl.NewTD3On(spec, cfg, a.Actor(), a.Critics(), pcg(3, 3)); err == nil {
		t.Fatal("a 16-unit actor accepted for an 8-unit agent")
	}
}
