package coscalenv

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/coscal"
	"github.com/shoal-project/shoal/envs/drpcenv"
	"github.com/shoal-project/shoal/learn/forecast"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/workload"
)

// TestTrainSmoke: a short run fits a forecaster, learns Q-values, ends with
// a greedy episode and writes a policy that reads back to the same bytes;
// the same seed gives the same policy.
func TestTrainSmoke(t *testing.T) {
	sc, err := scenario.Lookup("trainticket")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Seed, cfg.Episodes, cfg.EpisodeLength, cfg.ForecastSeries = 3, 2, 2*time.Minute, 5
	cfg.Forecast = forecast.Config{Window: 6, Hidden: 4, Horizon: 2, Epochs: 2, Log: true}
	var files [2][]byte
	for k := range files {
		tr, err := Train(context.Background(), sc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Curve) != 2 || tr.Curve[1].Epsilon != 0 || tr.Curve[0].Epsilon != 1 {
			t.Fatalf("curve %+v: want two episodes, exploring then greedy", tr.Curve)
		}
		learned := 0
		for _, v := range tr.Policy.Table {
			if v != 0 {
				learned++
			}
		}
		if learned == 0 {
			t.Fatal("no Q-value moved")
		}
		var buf bytes.Buffer
		if err := tr.Policy.Write(&buf); err != nil {
			t.Fatal(err)
		}
		files[k] = buf.Bytes()
		p, err := coscal.ReadPolicy(bytes.NewReader(files[k]))
		if err != nil {
			t.Fatal(err)
		}
		var again bytes.Buffer
		if err := p.Write(&again); err != nil || !bytes.Equal(again.Bytes(), files[k]) {
			t.Fatalf("read back and written again: differs (%v)", err)
		}
		t.Logf("provenance %+v", tr.Policy.Provenance)
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Error("the same seed gave different policies")
	}
}

// TestIngressSeriesOfEveryTrainingWorkload: the forecaster's training
// series follow the workloads drpcenv.Surges draws, steady ones (a Poisson
// rate, a quarter of them) included.
func TestIngressSeriesOfEveryTrainingWorkload(t *testing.T) {
	sc, err := scenario.Lookup("trainticket")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	draw := drpcenv.Surges(sc)
	rng := rand.New(rand.NewPCG(1, 2))
	kinds := map[string]int{}
	for range 40 {
		spec := draw(rng)
		kinds[spec.Kind]++
		series := ingressSeries(spec, cfg, rng)
		if len(series) != int(cfg.EpisodeLength/cfg.Period) {
			t.Fatalf("%s: %d periods", spec.Kind, len(series))
		}
		if spec.Kind == workload.KindPoisson {
			mean := 0.0
			for _, row := range series {
				mean += row[0] / float64(len(series))
			}
			if math.Abs(mean-spec.Rate) > 0.05*spec.Rate {
				t.Errorf("steady %g req/s: the series' mean is %g", spec.Rate, mean)
			}
		}
	}
	if kinds[workload.KindPoisson] == 0 || kinds[workload.KindSeries] == 0 {
		t.Fatalf("workload kinds drawn: %v", kinds)
	}
}
