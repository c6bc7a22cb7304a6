package drpcenv

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/scenario"
)

// TestTrainWritesARunnablePolicy trains for a few short episodes and checks
// the policy: its students and teacher survive a round trip through the
// file, the trained feature range is set, and every phase ran.
func TestTrainWritesARunnablePolicy(t *testing.T) {
	sc, err := scenario.Lookup("trainticket")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Seed, cfg.Episodes, cfg.EpisodeLength, cfg.ImitationEpisodes, cfg.ForecastEpisodes = 3, 2, time.Minute, 3, 4
	cfg.TD3.LearningStarts, cfg.TD3.BatchSize = 200, 32
	tr, err := Train(context.Background(), sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	for _, e := range tr.Curve {
		phases = append(phases, e.Phase)
	}
	if len(tr.Curve) != 9 || phases[0] != phaseForecast || phases[4] != phaseTeacher || phases[6] != phaseImitation || phases[8] != phaseDAgger {
		t.Fatalf("phases %v", phases)
	}
	p := tr.Policy
	if len(p.Deployments) != 40 || p.Provenance.Updates == 0 || p.Low == nil || p.Provenance.ImitationMSE <= 0 {
		t.Fatalf("policy: %d deployments, %d updates, low %v, mse %v", len(p.Deployments), p.Provenance.Updates, p.Low, p.Provenance.ImitationMSE)
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	q, err := drpc.ReadPolicy(&buf)
	if err != nil {
		t.Fatal(err)
	}
	in := make([]float32, drpc.LocalFeatures)
	for k := range in {
		in[k] = 0.1 * float32(k)
	}
	a := p.Student(7).NewPredictor().Predict(make([]float32, drpc.ActionDim), in)
	b := q.Student(7).NewPredictor().Predict(make([]float32, drpc.ActionDim), in)
	if !equal(a, b) {
		t.Fatalf("student 7 after the round trip: %v, before %v", b, a)
	}
	if p.Forecaster() == nil || q.Forecaster() == nil {
		t.Fatal("the workload predictor did not survive the round trip")
	}
	recent := make([][]float64, p.Forecaster().Window())
	for k := range recent {
		recent[k] = []float64{200 + 10*float64(k)}
	}
	fa, fb := make([]float64, p.Forecaster().Horizon()), make([]float64, q.Forecaster().Horizon())
	p.Forecaster().Predict(fa, recent)
	q.Forecaster().Predict(fb, recent)
	for k := range fa {
		if fa[k] != fb[k] {
			t.Fatalf("forecast after the round trip %v, before %v", fb, fa)
		}
	}
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
