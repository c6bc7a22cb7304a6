package experiment

import (
	"math"
	"testing"

	"github.com/shoal-project/shoal/store"
)

// TestStudyRuns: a study's row becomes a run with its Stat fields and its
// other numbers by their JSON names, and nothing else of it.
func TestStudyRuns(t *testing.T) {
	cell := FaaSConfCell{Scenario: "faas-parallel", Level: 2, Tuner: "faasconf", Best: Stat{Mean: 1.5, CI95: 0.25}, Found: 4, Sessions: 5,
		Verified: Stat{Mean: Num(math.NaN()), CI95: Num(math.NaN())}, Met: Stat{Mean: 7, CI95: 1}}
	adapt := FaaSAdaptRow{Method: "firm", Violations: Stat{Mean: 0.1, CI95: 0.05}, Latency: Stat{Mean: 2}, Price: Stat{Mean: 3},
		Low: FaaSWindow{Window: 1, Level: 1, Latency: 9}}
	tmpl := store.Run{Kind: store.KindExperiment, ScenarioHash: "h", Flags: map[string]string{"seeds": "5"}}
	runs, err := StudyRuns([]StudyRow{
		{Scenario: cell.Scenario, Policy: cell.Tuner, Load: cell.Level, RootSeed: 1, Seeds: 5, Row: cell},
		{Scenario: "faas-parallel", Policy: adapt.Method, RootSeed: 1, Seeds: 5, Row: adapt},
	}, tmpl)
	if err != nil || len(runs) != 2 {
		t.Fatalf("%d runs, %v", len(runs), err)
	}
	r := runs[0]
	if r.Kind != store.KindExperiment || r.ScenarioHash != "h" || r.Scenario != "faas-parallel" || r.Policy != "faasconf" || r.Load != 2 ||
		r.RootSeed != 1 || r.Seeds != 5 || r.Flags["seeds"] != "5" {
		t.Errorf("run %+v", r)
	}
	want := map[string]store.Stat{"best": {Mean: 1.5, CI95: 0.25}, "met": {Mean: 7, CI95: 1}, "verified": {Mean: math.NaN(), CI95: math.NaN()},
		"level": {Mean: 2, CI95: math.NaN()}, "found": {Mean: 4, CI95: math.NaN()}, "sessions": {Mean: 5, CI95: math.NaN()},
		"verified_found": {Mean: 0, CI95: math.NaN()}}
	sameStats(t, r.Summary, want)
	sameStats(t, runs[1].Summary, map[string]store.Stat{"violations": {Mean: 0.1, CI95: 0.05}, "latency_s": {Mean: 2}, "price_per_hour": {Mean: 3}})
}

func sameStats(t *testing.T, got, want map[string]store.Stat) {
	t.Helper()
	same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
	for name, w := range want {
		if g, ok := got[name]; !ok || !same(g.Mean, w.Mean) || !same(g.CI95, w.CI95) {
			t.Errorf("%s: %+v, want %+v", name, g, w)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s recorded, not a measure", name)
		}
	}
}
