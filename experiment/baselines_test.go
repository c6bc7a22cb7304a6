package experiment

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoal-project/shoal/envs/coscalenv"
	"github.com/shoal-project/shoal/envs/firmenv"
	"github.com/shoal-project/shoal/learn/forecast"
	"github.com/shoal-project/shoal/scenario"
)

// TestBaselinesCompare runs briefly trained FIRM and CoScal policies next
// to HPA on TrainTicket: both run, are timed and report their parameters.
func TestBaselinesCompare(t *testing.T) {
	sc, err := scenario.Lookup("trainticket")
	if err != nil {
		t.Fatal(err)
	}
	fcfg := firmenv.DefaultConfig()
	fcfg.LabelEpisodes, fcfg.Episodes, fcfg.EpisodeLength = 1, 1, 2*time.Minute
	fcfg.DDPG.LearningStarts, fcfg.DDPG.BatchSize = 8, 8
	ft, err := firmenv.Train(context.Background(), sc, fcfg)
	if err != nil {
		t.Fatal(err)
	}
	ccfg := coscalenv.DefaultConfig()
	ccfg.Episodes, ccfg.EpisodeLength, ccfg.ForecastSeries = 1, 2*time.Minute, 3
	ccfg.Forecast = forecast.Config{Window: 6, Hidden: 4, Horizon: 2, Epochs: 1, Log: true}
	ct, err := coscalenv.Train(context.Background(), sc, ccfg)
	if err != nil {
		t.Fatal(err)
	}
	// The study reuses the policies it finds in its policy directory.
	study := DRPCStudy{PolicyDir: t.TempDir(), TrainSeed: 7}
	for name, write := range map[string]func(io.Writer) error{"firm": ft.Policy.Write, "coscal": ct.Policy.Write} {
		if err := writeFile(filepath.Join(study.PolicyDir, name+"-seed7.policy"), write); err != nil {
			t.Fatal(err)
		}
	}
	sc.SetHorizon(2 * time.Minute)
	learned, params, err := study.baselines(context.Background(), sc, sc)
	if err != nil {
		t.Fatal(err)
	}
	if params["firm"] != ft.Policy.Parameters() || params["coscal"] != ct.Policy.Parameters() {
		t.Fatalf("parameters %v, want firm %d and coscal %d", params, ft.Policy.Parameters(), ct.Policy.Parameters())
	}
	learned["hpa"] = TimedAutoscalers(sc, "hpa")
	cmp := Comparison{Scenario: sc, Seeds: 1, Policies: []string{"hpa", "firm", "coscal"}, Learned: learned}
	_, figs, err := DRPCComparison(context.Background(), cmp, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 3 {
		t.Fatalf("figures for %v", figs)
	}
	for _, f := range figs[1:] {
		if !(f.DecisionNS.Mean > 0) || f.Parameters != params[f.Policy] || !(f.Success[2].Mean > 100) {
			t.Errorf("%s: decision %v ns, %d parameters (want %d), success in period 3 %v req/s",
				f.Policy, f.DecisionNS.Mean, f.Parameters, params[f.Policy], f.Success[2].Mean)
		}
	}
}
