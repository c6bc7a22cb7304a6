package edgeenv

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/edge"
)

// TestLogThenLearnAgents: the random engine's history of two short
// windows reads back, and a method learns agents from the devices alone:
// the mixture's virtual agents are close to the real ones on every
// measure, and every method's row is there.
func TestLogThenLearnAgents(t *testing.T) {
	var tr, dev bytes.Buffer
	l := Logging{Seed: 1, Days: []float64{0, 3}, Window: 10 * time.Minute}
	if err := Log(edge.Default(), l, &tr, &dev); err != nil {
		t.Fatal(err)
	}
	trans, err := edge.ReadLog(&tr)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * 60 * edge.Agents; len(trans) != want {
		t.Errorf("%d transitions, want %d (2 windows x 60 steps x %d agents)", len(trans), want, edge.Agents)
	}
	recs, err := ReadDevices(&dev)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 200 {
		t.Fatalf("%d device records", len(recs))
	}
	rows, err := Agents(recs, 20000, 300, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(Methods) || rows[1].Method != "gmm" {
		t.Fatalf("rows %+v", rows)
	}
	for i, k := range rows[1].KL {
		if k > 0.1 {
			t.Errorf("gmm: %s KL %g", Measures[i], k)
		}
	}
	if _, err := ReadDevices(strings.NewReader(`{"scene": 5}`)); err == nil {
		t.Error("scene 5: no error")
	}
}
