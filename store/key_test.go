package store

import (
	"math"
	"testing"
	"time"
)

// TestComputeKey: the key is what was run: each of its fields changes it,
// and nothing else does (name, code version, times, results, sweep), nor
// the order flags were set in.
func TestComputeKey(t *testing.T) {
	base := sample(1).ComputeKey()
	if len(base) != 64 {
		t.Fatalf("key %q, want 64 hex digits", base)
	}
	same := map[string]func(r *Run){
		"flags' order": func(r *Run) { r.Flags = map[string]string{"load": "0.85", "seeds": "5"} },
		"name":         func(r *Run) { r.Scenario = "renamed" },
		"code version": func(r *Run) { r.CodeVersion = "v2" },
		"times":        func(r *Run) { r.Started, r.Finished = time.Now(), time.Now() },
		"results":      func(r *Run) { r.Summary, r.Classes = nil, nil },
		"sweep, shard": func(r *Run) { r.ID, r.Sweep, r.Shard = "x", "sw", "1/2" },
	}
	differ := map[string]func(r *Run){
		"kind":          func(r *Run) { r.Kind = KindTrain },
		"scenario hash": func(r *Run) { r.ScenarioHash = Hash([]byte("other")) },
		"policy":        func(r *Run) { r.Policy = "lsq" },
		"policy hash":   func(r *Run) { r.PolicyHash = Hash([]byte("p")) },
		"load":          func(r *Run) { r.Load = math.Nextafter(0.85, 1) },
		"root seed":     func(r *Run) { r.RootSeed = 3 },
		"seeds":         func(r *Run) { r.Seeds = 6 },
		"a flag":        func(r *Run) { r.Flags["load"] = "0.9" },
		"no flags":      func(r *Run) { r.Flags = nil },
		"flag split":    func(r *Run) { r.Flags = map[string]string{"seeds": "5\",\"load\":\"0.85"} },
	}
	for name, change := range same {
		r := sample(1)
		if change(r); r.ComputeKey() != base {
			t.Errorf("%s changed the key", name)
		}
	}
	for name, change := range differ {
		r := sample(1)
		if change(r); r.ComputeKey() == base {
			t.Errorf("%s kept the key", name)
		}
	}
	zero, negZero := sample(1), sample(1)
	zero.Load, negZero.Load = 0, math.Copysign(0, -1)
	if zero.ComputeKey() != negZero.ComputeKey() {
		t.Error("load -0 and 0 have different keys")
	}
}
