package experiment

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/envs/drpcenv"
	"github.com/shoal-project/shoal/scenario"
)

func TestQuadraticFit(t *testing.T) {
	var xs, ys []float64
	for x := 0.0; x <= 10; x++ {
		xs, ys = append(xs, x), append(ys, 2*x*x-3*x+1)
	}
	if a := quadratic(xs, ys); math.Abs(a-2) > 1e-9 {
		t.Errorf("exact parabola: a = %v, want 2", a)
	}
	if a := quadratic([]float64{1, 1, 1}, []float64{1, 2, 3}); !math.IsNaN(a) {
		t.Errorf("one distinct x: a = %v, want NaN", a)
	}
}

// TestDRPCComparison runs HPA and a briefly trained DRPC policy on
// TrainTicket and checks the paper's figures are all there.
func TestDRPCComparison(t *testing.T) {
	sc, err := scenario.Lookup("trainticket")
	if err != nil {
		t.Fatal(err)
	}
	cfg := drpcenv.DefaultConfig()
	cfg.Episodes, cfg.EpisodeLength, cfg.ImitationEpisodes = 1, time.Minute, 1
	cfg.TD3.LearningStarts, cfg.TD3.BatchSize = 100, 16
	tr, err := drpcenv.Train(context.Background(), sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sc.SetHorizon(2 * time.Minute)
	cmp := Comparison{Scenario: sc, Seeds: 2, Policies: []string{"hpa", "drpc"},
		Learned: map[string]Learned{"hpa": TimedAutoscalers(sc, "hpa"), "drpc": DRPCPolicy(tr.Policy, sc)}}
	_, figs, err := DRPCComparison(context.Background(), cmp, map[string]int{"drpc": tr.Policy.Parameters()})
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 2 || figs[0].Policy != "hpa" || figs[1].Policy != "drpc" {
		t.Fatalf("figures for %v", figs)
	}
	for _, f := range figs {
		if len(f.Success) != 5 || len(f.Percentiles) != len(DRPCPercentiles) {
			t.Errorf("%s: %d periods, %d percentiles", f.Policy, len(f.Success), len(f.Percentiles))
		}
		for k := 1; k < len(f.Percentiles); k++ {
			if f.Percentiles[k].Mean < f.Percentiles[k-1].Mean {
				t.Errorf("%s: percentiles decrease: %v", f.Policy, f.Percentiles)
			}
		}
		if !(f.DecisionNS.Mean > 0) || !(f.Success[2].Mean > 100) {
			t.Errorf("%s: decision %v ns, success in period 3 %v req/s", f.Policy, f.DecisionNS.Mean, f.Success[2].Mean)
		}
	}
	if f := figs[1]; !(f.ViolationsOrDegraded.Mean >= f.SLOViolations.Mean) || math.IsNaN(float64(f.ViolationsOrDegraded.Mean)) {
		t.Errorf("drpc: violations or degraded %v, below its violations %v", f.ViolationsOrDegraded.Mean, f.SLOViolations.Mean)
	}
	if !math.IsNaN(float64(figs[0].Reward.Mean)) || !(figs[1].Reward.Mean > 0 && figs[1].Reward.Mean <= 1) {
		t.Errorf("mean reward: hpa %v (want none), drpc %v (want in (0, 1])", figs[0].Reward.Mean, figs[1].Reward.Mean)
	}
	if !math.IsNaN(float64(figs[0].Fallbacks.Mean)) || math.IsNaN(float64(figs[1].Fallbacks.Mean)) || figs[1].Parameters == 0 {
		t.Errorf("fallbacks: hpa %v, drpc %v; drpc parameters %d", figs[0].Fallbacks.Mean, figs[1].Fallbacks.Mean, figs[1].Parameters)
	}
	var out bytes.Buffer
	if err := WriteDRPCTables(&out, figs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Fig. 3", "Table 4", "99.99th", "quadratic", "\ndrpc "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("tables lack %q:\n%s", want, out.String())
		}
	}
}
