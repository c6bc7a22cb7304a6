package experiment

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/shoal-project/shoal/envs/edgeenv"
)

// TestEdgeDistributionsSmall: a short history gives Table 1's rows for
// every method with an interval per measure, and the files.
func TestEdgeDistributionsSmall(t *testing.T) {
	s := EdgeStudy{Dir: t.TempDir(), Logging: edgeenv.Logging{Seed: 1, Days: []float64{0, 2}, From: 12 * time.Hour, Window: 5 * time.Minute},
		Agents: 3000, Steps: 100, Seeds: 2}
	rows, err := s.Distributions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(edgeenv.Methods) {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if len(r.KL) != len(edgeenv.Measures) || !(r.KL[0].Mean >= 0) {
			t.Errorf("%s: %+v", r.Method, r.KL)
		}
	}
	for _, name := range []string{"distributions.csv", "distributions.json", "distributions.html", "distributions-rich.csv", "distributions-rich.json", "logs/transitions.jsonl", "logs/devices.jsonl"} {
		if _, err := os.Stat(filepath.Join(s.Dir, name)); err != nil {
			t.Error(err)
		}
	}
}

// TestEdgeOffloadRatioSmall: two slices of a short day give a real and a
// virtual ratio per scene and slice, close to each other, and the files.
func TestEdgeOffloadRatioSmall(t *testing.T) {
	s := DefaultEdgeStudy(t.TempDir())
	s.DayWindow, s.Slices = 20*time.Minute, 2
	s.Venv.MLEEpochs, s.Venv.Adversarial = 20, 20
	rows, err := s.OffloadRatio(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2*3 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if math.Abs(r.Real-r.Virtual) > 0.08 {
			t.Errorf("slice %d scene %d: real %.3f, virtual %.3f", r.Slice, r.Scene, r.Real, r.Virtual)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "offload-ratio.html")); err != nil {
		t.Error(err)
	}
}

// TestEdgeGeneralisationSmall: a short log, short training and short
// windows give a row per policy and day; the random engine's gain over
// itself is 0, greedy offloading succeeds more often than random
// weights, and the files are there.
func TestEdgeGeneralisationSmall(t *testing.T) {
	s := DefaultEdgeStudy(t.TempDir())
	s.Seeds = 2
	s.Venv.MLEEpochs, s.Venv.Adversarial = 5, 5
	gen := DefaultGeneralisation()
	gen.LogWindow, gen.Later, gen.Hours, gen.Window = 10*time.Minute, []float64{0, 30}, []float64{12}, 5*time.Minute
	gen.MAPPO.Steps, gen.MAPPO.Horizon, gen.RealSteps = 1024, 30, 1024
	var stages int
	rows, err := s.GeneralisationStudy(context.Background(), gen, func(float64, string) { stages++ })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"random", "greedy", "threshold", "engines-mix", "bc-random", "mappo-random", "ppo-real-random", "bc-mix", "mappo-mix", "ppo-real-mix"}
	if !slices.Equal(gen.Policies(), want) {
		t.Errorf("policies %v, want %v", gen.Policies(), want)
	}
	if len(rows) != len(want)*2 || stages < 2*(4*2+1) {
		t.Fatalf("%d rows, %d progress reports", len(rows), stages)
	}
	for _, r := range rows {
		switch {
		case r.Policy == "random" && r.Improvement.Mean != 0:
			t.Errorf("random's gain over itself: %v", r.Improvement.Mean)
		case r.Policy == "greedy" && !(r.Improvement.Mean > 0):
			t.Errorf("greedy's gain over random %v days later: %v", r.Later, r.Improvement.Mean)
		case !(r.MeanTime.Mean > 0) || !(r.OnTimeOffloaded.Mean > 0):
			t.Errorf("%s %v days later: %+v", r.Policy, r.Later, r)
		}
	}
	for _, name := range []string{"generalisation.csv", "generalisation.json", "generalisation.html", "logs/train-random-1.jsonl", "logs/train-mix-2.jsonl"} {
		if _, err := os.Stat(filepath.Join(s.Dir, name)); err != nil {
			t.Error(err)
		}
	}
}

// TestEdgePerTaskSmall: short logs, one short episode and short windows
// give a row per scenario, policy and day, both environments' fidelity
// and the pipeline's time; greedy-tracked is greedy on a fresh view; the
// files and logs are there.
func TestEdgePerTaskSmall(t *testing.T) {
	s := DefaultEdgeStudy(t.TempDir())
	s.Seeds = 1
	s.Venv.MLEEpochs, s.Venv.Adversarial = 5, 5
	p := DefaultPerTaskStudy()
	p.LogWindow, p.Later, p.Hours, p.Window = 20*time.Minute, []float64{0, 30}, []float64{12}, 5*time.Minute
	p.Training.Episodes, p.Training.Window, p.Training.Batch, p.CloneEpochs, p.Models = 1, 5*time.Minute, 512, 1, 1
	p.MAPPO.Steps, p.MAPPO.Horizon = 1024, 30
	res, err := s.PerTaskStudy(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2*len(PerTaskPolicies)*2 || len(res.Fidelity) != 2*2 || len(res.Pipeline) != 2 {
		t.Fatalf("%d rows, %d fidelity rows, %d pipeline times", len(res.Rows), len(res.Fidelity), len(res.Pipeline))
	}
	byKey := map[string]PerTaskRow{}
	for _, r := range res.Rows {
		byKey[fmt.Sprintf("%s/%s/%g", r.Staleness, r.Policy, r.Later)] = r
		if !(r.MeanTime.Mean > 0) || !(r.OnTimeOffloaded.Mean > 0) {
			t.Errorf("%+v", r)
		}
	}
	if a, b := byKey["0s/greedy/0"], byKey["0s/greedy-tracked/0"]; a.MeanTime.Mean != b.MeanTime.Mean {
		t.Errorf("fresh view: greedy %v, greedy-tracked %v", a.MeanTime, b.MeanTime)
	}
	for _, f := range res.Fidelity {
		if len(f.KL) != len(edgeenv.StepMeasures)+1 || !(f.Pairs.Mean >= 0) {
			t.Errorf("%+v", f)
		}
	}
	for _, name := range []string{"pertask.csv", "pertask.json", "pertask.html", "logs/pertask-0s-1-tasks.jsonl", "logs/pertask-1s-1-heldout.jsonl"} {
		if _, err := os.Stat(filepath.Join(s.Dir, name)); err != nil {
			t.Error(err)
		}
	}
}
