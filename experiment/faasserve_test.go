package experiment

import (
	"context"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/envs/faasconfenv"
	"github.com/shoal-project/shoal/scenario"
)

// A briefly trained FaaSConf policy served in the simulator, as `shoal sim`
// serves it, does not break the service: it serves within half a point of
// the scenario's own configuration, with no OOM kill and no request
// without capacity. (Before configurations were made safe and the
// exploration settled, a trained policy served 36.6% of Sequential's
// requests: 24.4% OOM-killed, 38.2% without capacity.)
func TestFaaSConfServesSafely(t *testing.T) {
	sc, err := scenario.Lookup("faas-sequential")
	if err != nil {
		t.Fatal(err)
	}
	cfg := faasconfenv.DefaultTrainConfig()
	cfg.Logged, cfg.OfflineUpdates, cfg.Online, cfg.Seed = 20, 300, 10, 3
	tr, err := faasconfenv.Train(context.Background(), sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sc.SetHorizon(20 * time.Minute)
	learned := FaaSConfPolicy(tr.Policy, faasconf.Options{})
	cmp := Comparison{Scenario: sc, Seeds: 2, Policies: []string{"static", "faasconf"}, Learned: map[string]Learned{"faasconf": learned}}
	res, err := cmp.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	static, learnt := res.Policies[0], res.Policies[1]
	if s, f := float64(static.Summary.Success.Mean), float64(learnt.Summary.Success.Mean); f < s-0.005 {
		t.Errorf("faasconf served %.2f%% of the requests, the scenario's own configuration %.2f%%", 100*f, 100*s)
	}
	for _, r := range learnt.Runs {
		if r.Failures.OOM > 0 || r.Failures.NoCapacity > 0 {
			t.Errorf("seed %d: %d OOM kills, %d requests without capacity", r.Seed, r.Failures.OOM, r.Failures.NoCapacity)
		}
	}
}
