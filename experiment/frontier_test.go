package experiment

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/experiment/report"
	"github.com/shoal-project/shoal/experiment/report/browsertest"
)

func TestFrontier(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		cost, quality []float64
		want          []int
	}{
		// a dominates c; b is dearer but better; d is dearest and worse than b.
		{[]float64{1, 2, 1.5, 3}, []float64{10, 5, 12, 6}, []int{0, 1}},
		// Equal cost: only the best.
		{[]float64{1, 1, 1}, []float64{3, 2, 4}, []int{1}},
		// Equal on both: the first stands.
		{[]float64{1, 1}, []float64{2, 2}, []int{0}},
		// One dominates all.
		{[]float64{1, 2, 3}, []float64{1, 2, 3}, []int{0}},
		// Every point trades cost for quality.
		{[]float64{3, 1, 2}, []float64{1, 3, 2}, []int{1, 2, 0}},
		// No finite values: nothing.
		{[]float64{nan, 1}, []float64{1, nan}, nil},
	} {
		if got := Frontier(c.cost, c.quality); !slices.Equal(got, c.want) {
			t.Errorf("Frontier(%v, %v) = %v, want %v", c.cost, c.quality, got, c.want)
		}
	}
}

func point(name string, cost, slo float64) Point {
	return Point{name, Summary{Cost: Stat{Mean: Num(cost), CI95: 0.01}, SLOViolations: Stat{Mean: Num(slo), CI95: 0.001},
		P99: Stat{Mean: 1}}}
}

func TestQualityCostVerdict(t *testing.T) {
	f := QualityCost("t", []Point{point("hpa", 0.48, 0.0126), point("kpa", 0.6, 0.03), point("drpc", 1.22, 0.009)})
	if !strings.HasPrefix(f.Caption, "Best at each cost: hpa from $0.48 (1.26% SLO violations), drpc from $1.22 (0.9% SLO violations).") {
		t.Errorf("caption %q", f.Caption)
	}
	if f.YLabel != "SLO violations (%)" || f.XLabel != "cost ($)" || f.Kind != report.KindScatter {
		t.Errorf("axes %q against %q, kind %q", f.YLabel, f.XLabel, f.Kind)
	}
	hollow := map[string]bool{}
	for _, s := range f.Series {
		hollow[s.Name] = s.Hollow
	}
	if hollow["hpa"] || !hollow["kpa"] || hollow["drpc"] {
		t.Errorf("frontier markers %v, want kpa alone hollow", hollow)
	}
	if last := f.Series[len(f.Series)-1]; !last.Connect || len(last.X) != 2 {
		t.Errorf("frontier line %+v", last)
	}

	// No SLO: the p99. One cost: the best of them.
	a, b := point("sed", 1.315, math.NaN()), point("oracle", 1.315, math.NaN())
	a.Summary.P99.Mean, b.Summary.P99.Mean = 6.65, 5.88
	f = QualityCost("t", []Point{a, b})
	if want := "Every policy has the same cost ($1.31): the best is sed, p99 6.65 s. Bound, not deployable: oracle, p99 5.88 s (sed is 13.1% above it)."; !strings.HasPrefix(f.Caption, want) || f.YLabel != "p99 response time (s)" {
		t.Errorf("caption %q, want %q, y %q", f.Caption, want, f.YLabel)
	}
	if f.Series[1].Note != "bound" || !f.Series[1].Hollow {
		t.Errorf("the oracle is drawn as %+v, want a hollow bound", f.Series[1])
	}
	f = QualityCost("t", []Point{point("hpa", 0.4, 0.01), point("kpa", 0.6, 0.03)})
	if !strings.HasPrefix(f.Caption, "hpa is the best at every cost: $0.4, SLO violations 1%.") {
		t.Errorf("caption %q", f.Caption)
	}

	// Without an SLO, a policy that fails requests is no cheap win.
	b.Name = "p2c"
	a.Summary.Success.Mean, b.Summary.Success.Mean = 1, 0.78
	b.Summary.Cost.Mean = 1
	f = QualityCost("t", []Point{a, b})
	if want := "sed is the best at every cost: $1.31, p99 6.65 s. Left off for failing more requests: p2c (22%)."; !strings.HasPrefix(f.Caption, want) {
		t.Errorf("caption %q, want %q", f.Caption, want)
	}
	if f.Series[1].Note != "22% failed" || !f.Series[1].Hollow {
		t.Errorf("the failing point: %+v", f.Series[1])
	}
}

// A policy run at several settings shares a colour (its Group) and gets
// its own frontier over its settings, beside the frontier of all points.
func TestQualityCostDrawsABaselinesFrontier(t *testing.T) {
	f := QualityCost("t", []Point{point("hpa:target=30", 1.0, 0.01), point("hpa:target=60", 0.6, 0.03), point("hpa", 0.5, 0.05),
		point("hpa:target=45", 0.8, 0.04), point("kpa", 0.7, 0.02)})
	var hpa *report.Series
	for i, s := range f.Series {
		switch {
		case s.Connect && s.Name == "hpa":
			hpa = &f.Series[i]
		case !s.Connect && strings.HasPrefix(s.Name, "hpa") && s.Group != "hpa":
			t.Errorf("%s: group %q, want hpa", s.Name, s.Group)
		case !s.Connect && s.Name == "kpa" && s.Group != "":
			t.Errorf("kpa, run at one setting, is in group %q", s.Group)
		}
	}
	// hpa:target=45 (0.8, 0.04) is beaten by hpa:target=60 (0.6, 0.03).
	if hpa == nil || !slices.Equal(hpa.X, []float64{0.5, 0.6, 1.0}) || !slices.Equal(hpa.Y, []float64{5, 3, 1}) {
		t.Fatalf("the HPA's frontier: %+v, want costs 0.5, 0.6, 1 at 5%%, 3%%, 1%%", hpa)
	}
}

// TestReportShowsWhatMatters: a report shows the measures that mean
// something for its scenario: in-flight per server, fairness and makespan
// only where a balancer chooses servers; failure kinds only where some
// occurred.
func TestReportShowsWhatMatters(t *testing.T) {
	run := func(name string, policies ...string) (*Result, *report.Report) {
		sc := short(t, name, 1)
		sc.Horizon, sc.Warmup = time.Minute, 5*time.Second
		res, err := (&Comparison{Scenario: sc, Policies: policies, Seeds: 2}).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return res, res.Report(nil)
	}
	has := func(rep *report.Report, what string) bool {
		for _, tb := range rep.Tables {
			if slices.Contains(tb.Columns, what) {
				return true
			}
		}
		for _, f := range rep.Figures {
			if strings.HasPrefix(f.Title, what) {
				return true
			}
		}
		return false
	}
	res, rep := run("lb-moderate-cpu", "rr", "sed")
	if !res.Balancing || len(rep.Summary) != 1 || !strings.Contains(rep.Summary[0].Caption, "the best is sed") {
		t.Errorf("lb-moderate-cpu: balancing %v, summary %+v", res.Balancing, rep.Summary)
	}
	for _, want := range []string{"Requests in flight per server", "fairness (Jain)", "makespan (s)", "p99 (s)", "cost ($)"} {
		if !has(rep, want) {
			t.Errorf("lb-moderate-cpu's report lacks %q", want)
		}
	}
	for _, not := range []string{"egress (GB)", "OOM %", "SLO violations %", "scaling actions"} {
		if has(rep, not) {
			t.Errorf("lb-moderate-cpu's report shows %q", not)
		}
	}
	res, rep = run("trainticket", "static", "hpa")
	if res.Balancing {
		t.Error("trainticket has no balancer")
	}
	for _, not := range []string{"Requests in flight per server", "fairness (Jain)", "makespan (s)", "egress (GB)"} {
		if has(rep, not) {
			t.Errorf("trainticket's report shows %q", not)
		}
	}
	for _, want := range []string{"SLO violations %", "vCPU-s"} {
		if !has(rep, want) {
			t.Errorf("trainticket's report lacks %q", want)
		}
	}
	folded := 0
	for _, tb := range rep.Tables {
		if strings.HasPrefix(tb.Caption, "Request class ") && tb.Collapsed {
			folded++
		}
		if len(tb.Columns) > 8 {
			t.Errorf("table %q has %d columns", tb.Caption, len(tb.Columns))
		}
	}
	if folded != len(res.Policies[0].Classes) {
		t.Errorf("%d folded class tables for %d classes", folded, len(res.Policies[0].Classes))
	}
}

// TestReportLayoutInBrowser: the reports of a load-balancing, a
// microservice and a serverless scenario, laid out by headless Chromium at
// 1280 px, open with the summary chart and have no table wider than the
// page (folded ones opened).
func TestReportLayoutInBrowser(t *testing.T) {
	bin := browsertest.Chromium(t)
	for _, c := range []struct {
		scenario string
		policies []string
	}{
		{"lb-moderate-cpu", nil},
		{"trainticket-surge", []string{"static", "hpa", "kpa", "keda", "openfaas"}},
		{"faas-sequential", nil},
	} {
		sc := short(t, c.scenario, 1)
		sc.Horizon, sc.Warmup, sc.Drain = time.Minute, 5*time.Second, time.Minute
		res, err := (&Comparison{Scenario: sc, Policies: c.policies, Seeds: 2}).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := res.WriteFiles(dir, []report.KV{{Key: "command", Value: "shoal sim " + c.scenario + " --seeds 2 --horizon 1m"}}); err != nil {
			t.Fatal(err)
		}
		l := browsertest.Measure(t, bin, filepath.Join(dir, "report.html"), 1280)
		t.Logf("%s: %d policies, %+v", c.scenario, len(res.Policies), l)
		if l.SummaryCharts != 1 || l.PageOverflow > 0 {
			t.Errorf("%s: %d summary charts, page %d px too wide; want 1 and 0", c.scenario, l.SummaryCharts, l.PageOverflow)
		}
		for _, tb := range l.Tables {
			if tb.Overflow > 0 {
				t.Errorf("%s: table %q is %d px too wide", c.scenario, tb.Caption, tb.Overflow)
			}
		}
	}
}

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n          int
		noun, want string
	}{{1, "seed", "1 seed"}, {3, "seed", "3 seeds"}, {0, "point", "0 points"}, {2, "policy", "2 policies"}, {1, "policy", "1 policy"}, {2, "day", "2 days"}} {
		if got := Count(c.n, c.noun); got != c.want {
			t.Errorf("Count(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}
