package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/envs/drpcenv"
	"github.com/shoal-project/shoal/scenario"
)

// TestEqualCostInterpolatesDRPCsFrontier: DRPC's quality at a baseline's
// cost is its frontier's, linear between budgets, held beyond the dearest
// budget, and unknown below the cheapest; a dominated budget is left out.
func TestEqualCostInterpolatesDRPCsFrontier(t *testing.T) {
	row := func(method string, cost, q float64) ParetoRow {
		return ParetoRow{Method: method, Knob: "k", VCPUSeconds: Stat{Mean: Num(cost)}, SLOOrDegraded: Stat{Mean: Num(q)}}
	}
	rows := []ParetoRow{row("drpc", 100, 0.10), row("drpc", 300, 0.06), row("drpc", 200, 0.05),
		row("hpa", 150, 0.20), row("hpa", 50, 0.30), row("hpa", 400, 0.04), row("kpa", 250, 0.05)}
	eq := equalCost("w", rows)
	want := []struct{ drpc, reduction float64 }{{0.075, 0.625}, {math.NaN(), math.NaN()}, {0.05, -0.25}, {0.05, 0}}
	if len(eq) != len(want) {
		t.Fatalf("%d comparisons, want %d", len(eq), len(want))
	}
	if _, err := json.Marshal(eq); err != nil { // outside DRPC's range is NaN
		t.Fatalf("the comparisons do not encode: %v", err)
	}
	near := func(a, b float64) bool { return math.IsNaN(a) && math.IsNaN(b) || math.Abs(a-b) < 1e-12 }
	for i, w := range want {
		if !near(float64(eq[i].DRPC), w.drpc) || !near(float64(eq[i].Reduction), w.reduction) {
			t.Errorf("%s at %v: drpc %v reduction %v, want %v and %v", eq[i].Baseline, eq[i].Cost, eq[i].DRPC, eq[i].Reduction, w.drpc, w.reduction)
		}
	}
}

// TestParetoRowsPoolTrainingSeeds: DRPC's training seeds at one budget
// pool into one row over all their runs; quality counts a degraded
// request as a violation; the frontier marks the points no cheaper one
// beats.
func TestParetoRowsPoolTrainingSeeds(t *testing.T) {
	run := func(viol, deg, vcpu int64) RunResult {
		return RunResult{SLORequests: 100, Arrivals: 100, SLOOrDegraded: viol + deg, SLOViolations: viol, Degraded: deg, VCPUSeconds: Num(vcpu)}
	}
	res := &Result{Policies: []PolicyResult{
		{Policy: "hpa@75", Runs: []RunResult{run(10, 0, 100), run(12, 0, 100)}},
		{Policy: "hpa@30", Runs: []RunResult{run(9, 0, 300), run(9, 0, 300)}},
		{Policy: "drpc@40/s1", Runs: []RunResult{run(2, 4, 120), run(4, 4, 140)}},
		{Policy: "drpc@40/s2", Runs: []RunResult{run(6, 4, 160), run(8, 4, 180)}},
	}}
	points := []paretoPoint{{Method: "hpa", Setting: 75, Name: "hpa@75"}, {Method: "hpa", Setting: 30, Name: "hpa@30"},
		{Method: "drpc", Setting: 40, Name: "drpc@40/s1"}, {Method: "drpc", Setting: 40, Name: "drpc@40/s2"}}
	rows := paretoRows("w", points, res)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	d := rows[2]
	if d.Method != "drpc" || d.Runs != 4 || float64(d.SLOOrDegraded.Mean) != 0.09 || float64(d.SLOViolations.Mean) != 0.05 ||
		float64(d.VCPUSeconds.Mean) != 150 || !(d.VCPUSeconds.CI95 > 0) {
		t.Fatalf("drpc's row: %+v", d)
	}
	if !rows[0].OnFrontier || rows[1].OnFrontier || !rows[2].OnFrontier {
		t.Errorf("frontier: hpa@75 %v, hpa@30 %v, drpc %v; want true, false, true", rows[0].OnFrontier, rows[1].OnFrontier, rows[2].OnFrontier)
	}
}

// TestSelectionKeepsTheBetterSeed: with selection episodes, one training
// seed per budget is kept, the one drpcenv.Beats prefers on them, and the
// choice is written to selection.csv; without, every seed is kept.
func TestSelectionKeepsTheBetterSeed(t *testing.T) {
	sc, err := scenario.Lookup("trainticket")
	if err != nil {
		t.Fatal(err)
	}
	var pols []*drpc.Policy
	for _, seed := range []uint64{1, 2} {
		cfg := drpcenv.DefaultConfig()
		cfg.Seed, cfg.Episodes, cfg.EpisodeLength, cfg.ImitationEpisodes = seed, 1, time.Minute, 1
		cfg.TD3.LearningStarts, cfg.TD3.BatchSize = 100, 16
		tr, err := drpcenv.Train(context.Background(), sc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		pols = append(pols, tr.Policy)
	}
	p := DRPCPareto{TrainSeeds: []uint64{1, 2}, Dir: t.TempDir()}
	if keep, rows, err := p.selectSeed(context.Background(), sc, 40, pols); err != nil || len(keep) != 2 || rows != nil {
		t.Fatalf("without selection: keep %v, rows %v, %v", keep, rows, err)
	}
	p.SelectEpisodes = 2
	keep, rows, err := p.selectSeed(context.Background(), sc, 40, pols)
	if err != nil || len(keep) != 1 || len(rows) != 2 {
		t.Fatalf("with selection: keep %v, rows %+v, %v", keep, rows, err)
	}
	k, o := rows[keep[0]], rows[1-keep[0]]
	ep := func(r SelectionRow) drpcenv.Episode { return drpcenv.Episode{Reward: r.Reward, Cost: r.VCPUs} }
	if !k.Kept || o.Kept || k.Seed != p.TrainSeeds[keep[0]] || drpcenv.Beats(ep(o), ep(k), 40) || !(k.Reward > 0) {
		t.Fatalf("kept %+v over %+v", k, o)
	}
	var out bytes.Buffer
	if err := p.writeSelection(&out, rows); err != nil {
		t.Fatal(err)
	}
	csv, err := os.ReadFile(filepath.Join(p.Dir, "selection.csv"))
	if err != nil || strings.Count(string(csv), "\n") != 3 || !strings.Contains(out.String(), "kept") {
		t.Fatalf("selection.csv %q (%v); printed %q", csv, err, out.String())
	}
}

// TestUnseenWorkloadsAreWhatTheySay: the unseen and validation workloads
// hold the rates and trace windows their descriptions state, the unseen
// segment lies in the held-out half and the validation one in the first,
// and only the validation workloads stay out of the default list.
func TestUnseenWorkloadsAreWhatTheySay(t *testing.T) {
	p := DefaultDRPCPareto()
	byName := map[string]DRPCParetoWorkload{}
	for _, w := range DRPCParetoWorkloads() {
		byName[w.Name] = w
	}
	share := func(name, class string, step int) (float64, float64) {
		sc, err := byName[name].scenario(&p)
		if err != nil {
			t.Fatal(err)
		}
		var total, mine float64
		for _, src := range sc.Sources {
			total += src.Arrivals.Rates[step]
			if src.Class == class {
				mine += src.Arrivals.Rates[step]
			}
		}
		if sc.Horizon != 30*time.Minute {
			t.Errorf("%s: horizon %v", name, sc.Horizon)
		}
		return mine / total, total
	}
	for _, c := range []struct {
		name, class  string
		from, to, rq float64
	}{{"mixshift", "cancel", 0.10, 0.35, 240}, {"mixshift", "query", 0.60, 0.35, 240}, {"mixshift-validation", "admin", 0.05, 0.20, 220}, {"mixshift-validation", "buy", 0.25, 0.10, 220}} {
		f, r0 := share(c.name, c.class, 0)
		l, r3 := share(c.name, c.class, 3)
		if math.Abs(f-c.from) > 1e-9 || math.Abs(l-c.to) > 1e-9 || r0 != c.rq || r3 != c.rq {
			t.Errorf("%s: %s %.3f -> %.3f of %g -> %g req/s, want %.2f -> %.2f of %g", c.name, c.class, f, l, r0, r3, c.from, c.to, c.rq)
		}
	}
	for name, half := range map[string][2]time.Duration{"alibaba-segment": {2500 * time.Minute, 5000 * time.Minute}, "alibaba-validation": {0, 2500 * time.Minute}} {
		sc, err := byName[name].scenario(&p)
		if err != nil {
			t.Fatal(err)
		}
		for _, src := range sc.Sources {
			a := src.Arrivals
			if a.Start < half[0] || a.Start+a.Window > half[1] || a.Window/time.Duration(a.Speedup) != sc.Horizon {
				t.Errorf("%s: trace minutes %v-%v at %gx for %v, outside %v-%v", name, a.Start, a.Start+a.Window, a.Speedup, sc.Horizon, half[0], half[1])
			}
		}
	}
	// Each runs: a minute under the HPA serves the stated rate.
	for name, rate := range map[string]float64{"mixshift": 240, "mixshift-validation": 220, "alibaba-segment": 0, "alibaba-validation": 0} {
		sc, err := byName[name].scenario(&p)
		if err != nil {
			t.Fatal(err)
		}
		sc.SetHorizon(time.Minute)
		res, err := (&Comparison{Scenario: sc, Policies: []string{"hpa"}, Seeds: 1, Workers: 1}).Run(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := float64(res.Policies[0].Summary.Throughput.Mean)
		if !(got > 100) || rate > 0 && math.Abs(got/rate-1) > 0.1 {
			t.Errorf("%s: %.0f successful req/s in its first minute, want %g", name, got, rate)
		}
	}
	if def := p.Workloads; !slices.Contains(def, "mixshift") || !slices.Contains(def, "alibaba-segment") || slices.ContainsFunc(def, func(w string) bool { return strings.HasSuffix(w, "validation") }) {
		t.Errorf("default workloads %v: want the unseen ones and no validation one", def)
	}
}

// TestAtItsCostInterpolatesEachFrontier: a policy file's point is set
// against each method's frontier at its vCPU-seconds, linear between the
// frontier's points (a dominated setting left out), and against nothing
// cheaper than a frontier's cheapest point.
func TestAtItsCostInterpolatesEachFrontier(t *testing.T) {
	row := func(method string, cost, q float64) ParetoRow {
		return ParetoRow{Method: method, Knob: "file.policy", VCPUSeconds: Stat{Mean: Num(cost)}, SLOOrDegraded: Stat{Mean: Num(q)}}
	}
	rows := []ParetoRow{row("hpa", 10, 0.3), row("hpa", 20, 0.1), row("hpa", 22, 0.2), row("hpa", 30, 0.05),
		row("autothrottle", 26, 0.02), row("policy", 25, 0.06)}
	got := atItsCost("w", rows)
	if len(got) != 2 || got[0].Method != "hpa" || got[1].Method != "autothrottle" {
		t.Fatalf("rows %+v, want hpa's and autothrottle's", got)
	}
	if f, r := float64(got[0].Frontier), float64(got[0].Reduction); math.Abs(f-0.075) > 1e-12 || math.Abs(r-0.2) > 1e-12 {
		t.Errorf("hpa's frontier at 25: %g (reduction %g), want 0.075 (0.2)", f, r)
	}
	if f := float64(got[1].Frontier); !math.IsNaN(f) {
		t.Errorf("autothrottle's frontier below its cheapest point: %g, want NaN", f)
	}
}
