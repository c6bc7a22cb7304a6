package experiment

import (
	"context"
	"testing"
	"time"

	"github.com/shoal-project/shoal/scenario"
)

// The SLATE-like optimiser, fitting its models from the measured series as
// it routes, serves Online Boutique faster on the mean and the p99 than the
// fixed routes an Istio user would configure: every call at home, spread
// evenly, or 30% spread away.
func TestSlateBeatsTheFixedRoutes(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates a multi-cloud system")
	}
	sc, err := scenario.Lookup("online-boutique")
	if err != nil {
		t.Fatal(err)
	}
	sc.Horizon = 6 * time.Minute
	res, err := (&Comparison{Scenario: sc, Policies: []string{"local", "even", "spread:0.3", "slate"}, Seeds: 1}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := res.Policies[3].Summary
	t.Logf("slate: mean %.3f s, p99 %.3f s", float64(got.Mean.Mean), float64(got.P99.Mean))
	for _, p := range res.Policies[:3] {
		t.Logf("%s: mean %.3f s, p99 %.3f s", p.Policy, float64(p.Summary.Mean.Mean), float64(p.Summary.P99.Mean))
		if got.Mean.Mean >= p.Summary.Mean.Mean || got.P99.Mean >= p.Summary.P99.Mean {
			t.Errorf("slate: mean %.3f s, p99 %.3f s; %s: %.3f s, %.3f s", float64(got.Mean.Mean), float64(got.P99.Mean), p.Policy, float64(p.Summary.Mean.Mean), float64(p.Summary.P99.Mean))
		}
	}
}
