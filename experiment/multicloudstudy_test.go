package experiment

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestMultiCloudStudySmall runs every part of the study on Bookinfo with a
// small data set: the files are written, every route ran, and the
// rebalances were timed.
func TestMultiCloudStudySmall(t *testing.T) {
	s := DefaultMultiCloudStudy(t.TempDir())
	s.Scenarios, s.Seeds, s.OnlinePeriods, s.Moments = []string{"bookinfo"}, 1, 20, 2
	s.Train.Collection.Periods, s.Train.Epochs = 100, 2
	ctx := context.Background()
	models, err := s.Models(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(models) != 2*(6+1) {
		t.Errorf("%d model rows, want 2 kinds x (6 services + mean)", len(models))
	}
	conv, err := s.Convergence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(conv) != 2*20 || conv[19].Min.Mean > conv[0].Min.Mean {
		t.Errorf("%d convergence points; first %v, last %v", len(conv), conv[0].Min, conv[19].Min)
	}
	rows, err := s.Overall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 9 || len(Gains(rows)) != 3 { // six baselines (slate among them) and three learned routes
		t.Fatalf("%d routes, %d gains", len(rows), len(Gains(rows)))
	}
	for _, r := range rows {
		timed := r.Policy == "multicloud-nn" || r.Policy == "multicloud-svr" || r.Policy == "multicloud" || r.Policy == "bo-system"
		if timed != (r.Rebal.Mean > 0) {
			t.Errorf("%s: %v rebalances", r.Policy, r.Rebal.Mean)
		}
	}
	times, err := s.Time(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(times) != 3 || times[2].Span != float64(3*10*10) {
		t.Errorf("time rows %+v", times)
	}
	front, err := s.Frontier(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 + len(EgressShares) + len(DistributeShares) + 2*len(FrontierPrices); len(front) != want {
		t.Errorf("%d frontier rows, want %d", len(front), want)
	}
	for _, r := range front {
		if r.Family == "local" && r.EgressPerHour.Mean != 0 || r.Family == "even" && !(r.EgressPerHour.Mean > 0) {
			t.Errorf("%s: %v GB per hour", r.Policy, r.EgressPerHour.Mean)
		}
	}
	for _, name := range []string{"models", "convergence", "overall", "time", "frontier"} {
		for _, ext := range []string{".csv", ".json", ".html"} {
			if _, err := os.Stat(filepath.Join(s.Dir, name+ext)); err != nil {
				t.Error(err)
			}
		}
	}
	// The cached models are reused, and refused when the study wants others.
	s.TrainSeed = 2
	if _, err := s.Models(ctx); err == nil {
		t.Error("models of another training seed: no error")
	}
}

// TestBeaten counts a baseline's frontier points that a learned setting
// beats with no more egress and a lower mean, per benchmark.
func TestBeaten(t *testing.T) {
	row := func(sc, policy string, egress, mean float64) FrontierRow {
		return FrontierRow{Scenario: sc, Policy: policy, Family: family(policy), EgressPerHour: Stat{Mean: Num(egress)}, Mean: Stat{Mean: Num(mean)}}
	}
	rows := []FrontierRow{
		row("a", "spread:0.1", 1, 0.10), row("a", "spread:0.3", 3, 0.08), row("a", "spread:0.5", 5, 0.09), // 0.5 is off spread's frontier
		row("a", "multicloud:egress=0", 4, 0.07), row("a", "multicloud:egress=1000", 2, 0.075),
		row("b", "spread:0.1", 1, 0.01), row("b", "multicloud:egress=0", 0.5, 0.5),
	}
	if b, n := Beaten(rows, "a", "multicloud", "spread"); b != 1 || n != 2 {
		t.Errorf("benchmark a: %d of %d of spread's frontier points beaten, want 1 of 2 (spread:0.1 at 1 GB/h has no cheaper learned setting)", b, n)
	}
	if b, n := Beaten(rows, "b", "multicloud", "spread"); b != 0 || n != 1 {
		t.Errorf("benchmark b: %d of %d, want 0 of 1", b, n)
	}
	fig := frontierFigure("a", "mean (ms)", rows[:5], func(r *FrontierRow) Stat { return r.Mean })
	var lines []string
	for _, s := range fig.Series {
		if s.Connect {
			lines = append(lines, s.Name)
		}
	}
	if !slices.Equal(lines, []string{"frontier", "multicloud", "spread"}) {
		t.Errorf("frontier lines %v, want the overall one and each route's", lines)
	}
}
