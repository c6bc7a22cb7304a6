package autothrottleenv

import (
	"context"
	"testing"
	"time"

	"github.com/shoal-project/shoal/scenario"
)

// TestWarmupSamplesEveryAction: a short warm-up on TrainTicket splits the
// managed services in two clusters, the exploring episodes try the
// actions evenly (each minute pair one sample, none tried twice before all
// once) and the greedy ones add a sample a minute after the first three.
func TestWarmupSamplesEveryAction(t *testing.T) {
	sc, err := scenario.Lookup("trainticket")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig(sc)
	cfg.ExploreEpisodes, cfg.GreedyEpisodes, cfg.EpisodeLength = 2, 1, 10*time.Minute
	cfg.Tower.Resamples = 500
	var last int
	cfg.Progress = func(ep, samples int, _ float64) { last = samples }
	p, err := Train(context.Background(), sc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := [2]int{}
	for _, k := range p.Clusters {
		n[k]++
	}
	if len(p.Clusters) != len(sc.ManagedServices()) || n[0] == 0 || n[1] == 0 {
		t.Errorf("clusters %v of %d managed services", n, len(sc.ManagedServices()))
	}
	// Exploring: minutes 4-9 of each 10 are three second minutes of a hold.
	explored := p.Samples[:6]
	seen := map[int]bool{}
	for _, s := range explored {
		if seen[s.Action] {
			t.Errorf("action %d tried twice among the first %d", s.Action, len(explored))
		}
		seen[s.Action] = true
		if !(s.RPS > 0 && s.P99 > 0 && s.Alloc > 0) {
			t.Errorf("sample %+v", s)
		}
	}
	if len(p.Samples) != 6+6 || last != len(p.Samples) {
		t.Errorf("%d samples (progress said %d), want 6 explored and 6 of the greedy episode's minutes 4-9", len(p.Samples), last)
	}
}
