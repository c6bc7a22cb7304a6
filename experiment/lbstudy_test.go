package experiment

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/envs/lbenv"
)

// TestLBStudyTrainsOnceAndReports: a study trains each learner once, saves
// the policy and its learning curve, evaluates it beside the baselines on
// the same seeds, and a second run reuses the saved policy with identical
// results.
func TestLBStudyTrainsOnceAndReports(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	study := LBStudy{Name: "tiny", Cases: []LBCase{{Scenario: "lb-moderate-cpu", Load: 0.7}},
		Learners:  []LBLearner{{Name: "distr-lb/vbf", Algorithm: lbenv.DistrLB, Reward: lb.VBF}},
		Baselines: []string{"sed", "oracle"}, Episodes: 1, Seeds: 2, Horizon: time.Minute, Dir: dir, Log: &log}
	res, err := study.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(dir, "policies", "lb-moderate-cpu@0.7-distr-lb-vbf.slb")
	for _, f := range []string{pol, strings.TrimSuffix(pol, ".slb") + ".curve.csv", filepath.Join(dir, "lb-moderate-cpu@0.7", "report.html"), filepath.Join(dir, "summary.txt")} {
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err)
		}
	}
	c := res.Cases[0]
	if got := len(c.Compare.Policies); got != 3 || c.Compare.Policies[2].Policy != "distr-lb/vbf" || len(c.Training[0].Curve) != 1 {
		t.Fatalf("policies %d, training %+v", got, c.Training)
	}
	var table bytes.Buffer
	if err := res.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "(vs sed)") || !strings.Contains(table.String(), "1.000") {
		t.Fatalf("table:\n%s", table.String())
	}
	html, _ := os.ReadFile(filepath.Join(dir, "lb-moderate-cpu@0.7", "report.html"))
	if !strings.Contains(string(html), "Learning curves") {
		t.Fatal("report has no learning curves")
	}

	log.Reset()
	again, err := study.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "reusing") || strings.Contains(log.String(), "trained in") {
		t.Fatalf("second run retrained:\n%s", log.String())
	}
	if v, w := c.Training[0].Curve[0].Validation, again.Cases[0].Training[0].Curve[0].Validation; !(v > 0) || v != w {
		t.Fatalf("validation %g, read back %g", v, w)
	}
	a, b := c.Compare.Policies[2].Runs, again.Cases[0].Compare.Policies[2].Runs
	for i := range a {
		if a[i].Mean != b[i].Mean || a[i].P99 != b[i].P99 {
			t.Fatalf("seed %d: %v/%v then %v/%v", a[i].Seed, a[i].Mean, a[i].P99, b[i].Mean, b[i].P99)
		}
	}
}

func TestDistrLBStudiesAreValid(t *testing.T) {
	for name, s := range DistrLBStudies() {
		if s.Name != name || len(s.Cases) == 0 || len(s.Learners) == 0 {
			t.Errorf("%s: %+v", name, s)
		}
	}
	if _, err := LookupDistrLBStudy("tables"); err == nil || !strings.Contains(err.Error(), "table3") {
		t.Errorf("unknown study: %v", err)
	}
}

// TestDistrLBLearnsServerSpeeds: Distr-LB agents (without their GRU, to
// keep the test short) trained for 40 episodes on the moderate setup learn
// weights that serve the heterogeneous servers better than the classical
// selectors that ignore speeds (LSQ) or trust the configured weights
// blindly (WCMP), on evaluation seeds that training never saw.
func TestDistrLBLearnsServerSpeeds(t *testing.T) {
	study := LBStudy{Name: "learns", Cases: []LBCase{{Scenario: "lb-moderate-cpu"}},
		Learners:  []LBLearner{{Name: "distr-lb", Algorithm: lbenv.DistrLB, Reward: lb.VBF, NoGRU: true}},
		Baselines: []string{"lsq", "wcmp", "oracle"}, Episodes: 40, Seeds: 3, Horizon: 10 * time.Minute, TrainSeed: 1, Dir: t.TempDir()}
	res, err := study.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := res.Cases[0].Compare
	learned := r.policy("distr-lb").Summary.Mean.Mean
	for _, base := range []string{"lsq", "wcmp"} {
		if b := r.policy(base).Summary.Mean.Mean; !(learned < 0.9*b) {
			t.Errorf("distr-lb mean completion time %v, %s %v: want at least 10%% lower", learned, base, b)
		}
	}
	t.Logf("mean completion time: distr-lb %v, lsq %v, wcmp %v, oracle %v", learned,
		r.policy("lsq").Summary.Mean.Mean, r.policy("wcmp").Summary.Mean.Mean, r.policy("oracle").Summary.Mean.Mean)
}
