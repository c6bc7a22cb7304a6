package lbenv

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/control/lb"
)

// An untrained general policy, whose network outputs 0, is probing-sed
// exactly: the same mean and p99 on the same worlds.
func TestUntrainedGeneralIsProbingSED(t *testing.T) {
	f := DefaultFamily()
	f.Requests = 3000
	rng := rand.New(rand.NewPCG(3, 5))
	pol, err := lb.NewGeneralPolicy([]int{8}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		sc, err := f.Draw(rng, i)
		if err != nil {
			t.Fatal(err)
		}
		m0, p0, err := RunGeneral(sc, nil)
		if err != nil {
			t.Fatal(err)
		}
		m1, p1, err := RunGeneral(sc, pol)
		if err != nil {
			t.Fatal(err)
		}
		if m0 != m1 || p0 != p1 {
			t.Errorf("world %d: probing-sed %g/%g, untrained general %g/%g", i, m0, p0, m1, p1)
		}
	}
}

// tinyGeneral is a training run of a few seconds.
func tinyGeneral(workers int, checkpoint string, generations int) GeneralConfig {
	f := DefaultFamily()
	f.Requests, f.Servers, f.LBs = 400, [2]int{4, 8}, [2]int{1, 3}
	cfg := GeneralConfig{Family: f, Generations: generations, Hidden: []int{4}, Seed: 9, Workers: workers,
		ValidateEvery: 1, ValidationWorlds: 3, Checkpoint: checkpoint}
	cfg.ES.Pairs = 3
	return cfg
}

// Training is deterministic for a seed, whatever the number of workers,
// and a run resumed from its checkpoint ends where an uninterrupted one
// does.
func TestTrainGeneralDeterministicAndResumes(t *testing.T) {
	ctx := context.Background()
	run := func(cfg GeneralConfig) *lb.GeneralPolicy {
		p, err := TrainGeneral(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	one, two := run(tinyGeneral(1, "", 3)), run(tinyGeneral(2, "", 3))
	if !slices.Equal(one.Params(), two.Params()) || one.Provenance.Selected != two.Provenance.Selected {
		t.Fatalf("1 worker kept generation %d, 2 workers %d, or their parameters differ", one.Provenance.Selected, two.Provenance.Selected)
	}
	if slices.Equal(one.Params(), lbUntrained(t).Params()) && one.Provenance.Selected != 0 {
		t.Fatal("a generation was kept but the parameters are the untrained ones")
	}
	ckpt := filepath.Join(t.TempDir(), "general.ckpt")
	run(tinyGeneral(2, ckpt, 2))
	cont, generations := tinyGeneral(2, ckpt, 3), 0
	cont.Progress = func(p GeneralProgress) {
		if generations++; !p.Resumed || p.Index != 3 {
			t.Errorf("resumed run: generation %d, resumed %v", p.Index, p.Resumed)
		}
	}
	resumed := run(cont)
	if generations != 1 {
		t.Errorf("the resumed run ran %d generations, want the 1 left", generations)
	}
	if !slices.Equal(one.Params(), resumed.Params()) || resumed.Provenance.Episodes != one.Provenance.Episodes {
		t.Fatalf("resumed run: generation %d, %d episodes; uninterrupted: generation %d, %d episodes",
			resumed.Provenance.Selected, resumed.Provenance.Episodes, one.Provenance.Selected, one.Provenance.Episodes)
	}
	other := tinyGeneral(2, ckpt, 3)
	other.Seed++
	if _, err := TrainGeneral(ctx, other); err == nil || !strings.Contains(err.Error(), "another training") {
		t.Fatalf("a checkpoint of another seed was resumed: %v", err)
	}
}

func lbUntrained(t *testing.T) *lb.GeneralPolicy {
	p, err := lb.NewGeneralPolicy([]int{4}, 9)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
