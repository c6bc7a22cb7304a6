package experiment

import (
	"context"
	"os"
	"path/filepath"
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
	for _, name := range []string{"models", "convergence", "overall", "time"} {
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
