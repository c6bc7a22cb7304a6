package edgesched

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/learn/rl"
)

// TestTaskRuleRoundTrip: a rule read back scores every option as the one
// written (the same log-probabilities), keeps its header, and its prior
// alone makes the earliest estimate the likeliest; a file of another
// format or a bad header is refused.
func TestTaskRuleRoundTrip(t *testing.T) {
	r, err := NewTaskRule("task-real", 7, 3, 0.05, rl.DefaultChoiceConfig(), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	r.Provenance = Provenance{Seed: 9, Episodes: 24}
	task := Task{Scene: 1, Work: 0.1, SizeMB: 0.05, Deadline: 0.5, Backlog: 0.1}
	opts := []Option{{Target: 1, Estimate: 0.08, Jobs: 2, Inbound: 1}, {Target: 2, Estimate: 0.05}, {Target: 6, Estimate: 0.2, Jobs: 9}}
	var buf bytes.Buffer
	if err := r.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := ReadTaskRule(bytes.NewReader(buf.Bytes()), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if back.Method != "task-real" || back.Provenance.Episodes != 24 || back.Prior != 0.05 || back.Features() != 17 {
		t.Errorf("header read back as %+v", back)
	}
	for range 20 {
		k1, lp1 := r.Choose(&task, opts)
		k2, lp2 := back.Choose(&task, opts)
		if k1 != k2 || lp1 != lp2 {
			t.Fatalf("written: %d (log-probability %g); read back: %d (%g)", k1, lp1, k2, lp2)
		}
	}
	feats, prior := r.Inputs(&task, opts)
	if len(feats) != 3*17 || prior[1] != 0 || !(prior[0] < 0 && prior[2] < prior[0]) {
		t.Errorf("features %d, prior %v", len(feats), prior)
	}
	if _, err := ReadTaskRule(strings.NewReader(strings.Replace(buf.String(), TaskFormat, Format, 1)), rand.New(rand.NewPCG(1, 2))); err == nil {
		t.Error("a file of another format was read")
	}
	if _, err := NewTaskRule("x", 7, 3, -1, rl.DefaultChoiceConfig(), rand.New(rand.NewPCG(1, 2))); err == nil {
		t.Error("a negative prior: no error")
	}
}
