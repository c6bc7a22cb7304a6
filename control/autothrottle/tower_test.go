package autothrottle

import (
	"math"
	"testing"
	"time"

	"github.com/shoal-project/shoal/metrics"
)

// TestCostsFollowTheRelease: minutes that met the SLO cost their
// allocation scaled among them; minutes that missed cost 2 plus their p99
// scaled among them, so any miss costs more than any allocation.
func TestCostsFollowTheRelease(t *testing.T) {
	got := Costs([]Sample{{P99: 0.5, Alloc: 10}, {P99: 0.9, Alloc: 30}, {P99: 1, Alloc: 20}, {P99: 1.5, Alloc: 5}, {P99: 3, Alloc: 5}, {P99: 2, Alloc: 50}}, 1)
	want := []float64{0, 1, 0.5, 2, 3, 2 + 1.0/3}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("costs %v, want %v", got, want)
			break
		}
	}
	if c := Costs([]Sample{{P99: 0.5, Alloc: 10}, {P99: 2, Alloc: 1}}, 1); c[0] != 0.5 || c[1] != 2.5 {
		t.Errorf("one of each: %v, want [0.5 2.5]", c)
	}
}

// TestTowerPicksTheCheapestTargetsThatMeetTheSLO: with every action tried
// at 200 and at 600 req/s, where higher targets (fewer cores) always meet
// the SLO at 200 req/s but at 600 only while the two targets' indices sum
// to at most 4, the Tower's model picks the highest targets at 200 req/s
// and the cheapest that meet the SLO at 600; the first minutes of a run
// are not samples.
func TestTowerPicksTheCheapestTargetsThatMeetTheSLO(t *testing.T) {
	var samples []Sample
	for a := range 81 {
		i, j := a/9, a%9
		for rep := range 2 {
			samples = append(samples, Sample{RPS: 200 + float64(rep), Action: a, P99: 0.4, Alloc: 40 - float64(i+j)})
			p99 := 0.6
			if i+j > 4 {
				p99 = 1 + 0.1*float64(i+j)
			}
			samples = append(samples, Sample{RPS: 600 - float64(rep), Action: a, P99: p99, Alloc: 80 - 2*float64(i+j)})
		}
	}
	cfg := DefaultTower()
	cfg.Explore = 0
	tw := NewTower(cfg, samples, 1)
	tw.learn()
	if a := tw.nets.Best(200 / tw.cfg.RPSScale); a != 80 {
		i, j := a/9, a%9
		t.Errorf("at 200 req/s: action %d (targets %g, %g), want 80 (0.3, 0.3)", a, tw.cfg.Targets[i], tw.cfg.Targets[j])
	}
	if a := tw.nets.Best(600 / tw.cfg.RPSScale); a/9+a%9 != 4 {
		t.Errorf("at 600 req/s: action %d (indices %d + %d), want indices summing to 4", a, a/9, a%9)
	}
	// A run: a minute's requests and latencies make its sample; the first
	// three are dropped.
	tw = NewTower(DefaultTower(), nil, 1)
	snap := &metrics.Snapshot{Period: time.Minute, Classes: []metrics.ClassStats{{Arrivals: 12000}},
		Services: []metrics.ServiceStats{{Name: "s", Replicas: 2, CPULimit: 1.5}}}
	snap.Classes[0].LatencyHist.Record(0.25)
	for m := 1; m <= 5; m++ {
		tw.observe(snap, map[string]int{"s": 0})
		tw.decide(time.Duration(m) * time.Minute)
	}
	if len(tw.Samples) != 1 || tw.Samples[0].RPS != 200 || tw.Samples[0].Alloc != 3 || math.Abs(tw.Samples[0].P99-0.25) > 0.25*metrics.LatencyHistRelativeWidth {
		t.Errorf("samples after five minutes: %+v, want one of 200 req/s, 3 cores, p99 0.25 s", tw.Samples)
	}
}

// TestClustersSplitByUse: two busy services and three idle ones split
// where the squared distances within the two groups are least.
func TestClustersSplitByUse(t *testing.T) {
	got := Clusters(map[string]float64{"a": 3.1, "b": 2.9, "c": 0.2, "d": 0.1, "e": 0.3})
	want := map[string]int{"a": 0, "b": 0, "c": 1, "d": 1, "e": 1}
	for n, k := range want {
		if got[n] != k {
			t.Errorf("clusters %v, want %v", got, want)
			break
		}
	}
}
