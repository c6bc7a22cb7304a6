package experiment

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/scenario"
)

func short(t *testing.T, name string, seed uint64) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Embedded(name)
	if err != nil {
		t.Fatal(err)
	}
	sc.Seed = seed
	sc.Horizon, sc.Warmup, sc.Drain = 5*time.Minute, 15*time.Second, 5*time.Minute
	return sc
}

func jsonOf(t *testing.T, sc *scenario.Scenario, workers int) []byte {
	t.Helper()
	cmp := Comparison{Scenario: sc, Policies: []string{"lsq", "sed", "oracle"}, Seeds: 2, Workers: workers}
	res, err := cmp.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := res.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestDeterministic: one seed gives identical bytes whatever the number of
// workers; another seed gives other results.
func TestDeterministic(t *testing.T) {
	a := jsonOf(t, short(t, "lb-moderate-cpu", 7), 1)
	b := jsonOf(t, short(t, "lb-moderate-cpu", 7), 2)
	c := jsonOf(t, short(t, "lb-moderate-cpu", 8), 2)
	if !bytes.Equal(a, b) {
		t.Fatal("same seed, different output")
	}
	if bytes.Equal(a, c) {
		t.Fatal("different seeds, same output")
	}
}

// TestCommonRandomNumbers: every policy sees the same arrivals, so the
// number of arrivals of each seed is the same for every policy.
func TestCommonRandomNumbers(t *testing.T) {
	cmp := Comparison{Scenario: short(t, "lb-moderate-misconfigured", 3), Policies: []string{"ecmp", "lsq", "oracle"}, Seeds: 3}
	res, err := cmp.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 3; s++ {
		want := res.Policies[0].Runs[s].Arrivals
		for _, p := range res.Policies[1:] {
			if got := p.Runs[s].Arrivals; got != want {
				t.Errorf("seed %d: %s saw %d arrivals, %s %d", s, p.Policy, got, res.Policies[0].Policy, want)
			}
		}
		if res.Policies[1].Runs[s].Arrivals == res.Policies[1].Runs[(s+1)%3].Arrivals {
			t.Errorf("seeds %d and %d saw the same number of arrivals", s, (s+1)%3)
		}
	}
	// The Oracle knows what the others do not: it must beat ECMP clearly.
	if o, e := res.Policies[2].Summary.Mean.Mean, res.Policies[0].Summary.Mean.Mean; !(o < e/2) {
		t.Errorf("oracle mean %g not below half of ecmp's %g", o, e)
	}
}

func TestUnknownPolicy(t *testing.T) {
	cmp := Comparison{Scenario: short(t, "mm1", 1), Policies: []string{"nope"}}
	if _, err := cmp.Run(context.Background()); err == nil || !strings.Contains(err.Error(), `unknown policy "nope"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cmp := Comparison{Scenario: short(t, "lb-large-poisson", 1), Seeds: 2}
	if _, err := cmp.Run(ctx); err == nil {
		t.Fatal("a cancelled comparison succeeded")
	}
}

func TestWriteFiles(t *testing.T) {
	cmp := Comparison{Scenario: short(t, "mm1", 1), Seeds: 3}
	res, err := cmp.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := res.WriteFiles(dir, nil); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(filepath.Join(dir, "runs.csv"))
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) != 1+3 || rows[1][1] != "rr" || rows[3][2] != "3" {
		t.Fatalf("runs.csv: %v %v", rows, err)
	}
	html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	for _, want := range []string{"<svg", "mm1", "Completion time distribution", "Which policy, at what cost"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// M/M/1 with lambda 8, mu 10: mean 0.5 s; three 5-minute seeds land near it.
	if m := float64(res.Policies[0].Summary.Mean.Mean); m < 0.3 || m > 0.7 {
		t.Errorf("mm1 mean %g, want about 0.5", m)
	}
}

func TestWindowMeans(t *testing.T) {
	x, y := windowMeans([]float64{1, 2, 3, 4, 5}, []float64{2, 4, 6, 8, 10}, 2)
	if len(x) != 2 || x[0] != 3 || x[1] != 5 || y[0] != 4 || y[1] != 9 {
		t.Fatalf("x %v y %v", x, y)
	}
}

// TestDegradedAndRetries checks that degraded requests and retries reach
// the summary, the per-class table and the CSV files: an optional service
// that rejects (429) degrades requests, and a required one that rejects
// has its calls retried.
func TestDegradedAndRetries(t *testing.T) {
	sc, err := scenario.Decode(strings.NewReader(`
name: degraded
horizon: 1m
seeds: 2
services:
  - {name: web, cpu: 8}
  - {name: api, concurrency: 1, queue: 0, retries: 2, retry_on: [429]}
  - {name: news, optional: true, concurrency: 1, queue: 0}
classes:
  - name: page
    call:
      service: web
      stages:
        - calls: [{service: api, cpu: {dist: exp, mean: 0.02}}, {service: news, optional: true, cpu: {dist: exp, mean: 0.05}}]
sources: [{name: src, class: page, arrivals: {kind: poisson, rate: 20}}]
`), "degraded.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := (&Comparison{Scenario: sc}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p := res.Policies[0]
	run := p.Runs[0]
	if run.Degraded == 0 || run.Retries == 0 || run.Classes[0].Degraded != run.Degraded {
		t.Fatalf("degraded %d (class %d), retries %d", run.Degraded, run.Classes[0].Degraded, run.Retries)
	}
	if d := float64(p.Summary.Degraded.Mean); d <= 0 || d >= 1 || p.Classes[0].Degraded.Mean != p.Summary.Degraded.Mean || p.Summary.Retries.Mean <= 0 {
		t.Errorf("summary: degraded %v (class %v), retries per request %v", p.Summary.Degraded.Mean, p.Classes[0].Degraded.Mean, p.Summary.Retries.Mean)
	}
	dir := t.TempDir()
	if err := res.WriteFiles(dir, nil); err != nil {
		t.Fatal(err)
	}
	col := func(rows [][]string, name string) string {
		i := slices.Index(rows[0], name)
		if i < 0 {
			t.Fatalf("no column %s in %v", name, rows[0])
		}
		return rows[1][i]
	}
	runs, classes := readCSV(t, filepath.Join(dir, "runs.csv")), readCSV(t, filepath.Join(dir, "classes.csv"))
	if col(runs, "degraded") != fmt.Sprint(run.Degraded) || col(runs, "retries") != fmt.Sprint(run.Retries) || col(classes, "degraded") != fmt.Sprint(run.Degraded) {
		t.Errorf("csv: degraded %s, retries %s, class degraded %s", col(runs, "degraded"), col(runs, "retries"), col(classes, "degraded"))
	}
	var b bytes.Buffer
	if err := res.WriteTable(&b); err != nil || !strings.Contains(b.String(), "degraded %") || !strings.Contains(b.String(), "retries/req") {
		t.Errorf("table lacks the columns (%v):\n%s", err, b.String())
	}
}
