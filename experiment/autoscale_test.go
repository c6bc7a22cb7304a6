package experiment

import (
	"bytes"
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/workload"
)

// stepLoad is the autoscaled test scenario with arrivals stepping from 5 to
// 30 req/s at 60 s: 0.5 then 3 cores of work for one replica of one core.
func stepLoad(t *testing.T) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Load("../scenario/testdata/good/autoscaled.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc.SetHorizon(5 * time.Minute)
	sc.Drain = time.Minute
	sc.ControlPeriod = 5 * time.Second
	rates := make([]float64, 30)
	for i := range rates {
		rates[i] = 5
		if i >= 6 {
			rates[i] = 30
		}
	}
	if err := sc.SetArrivals(workload.ProcessSpec{Kind: "series", Step: 10 * time.Second, Rates: rates}); err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestAutoscalersInAComparison: the same arrivals for every policy; static
// keeps one replica and drowns, the HPA scales out to about ceil(3 cores /
// 60%) = 5 replicas (the CPU target; max 6) and serves within its SLO most
// of the time; the outcome files list the scaling.
func TestAutoscalersInAComparison(t *testing.T) {
	cmp := Comparison{Scenario: stepLoad(t), Policies: []string{"static", "hpa", "kpa", "keda", "openfaas"}, Seeds: 2}
	res, err := cmp.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	static, hpa, kpa := &res.Policies[0], &res.Policies[1], &res.Policies[2]
	for s := range static.Runs {
		if a := static.Runs[s].Arrivals; hpa.Runs[s].Arrivals != a || kpa.Runs[s].Arrivals != a {
			t.Errorf("seed %d: arrivals %d, %d, %d", s, a, hpa.Runs[s].Arrivals, kpa.Runs[s].Arrivals)
		}
	}
	if static.Summary.ScalingActions.Mean != 0 || len(static.Runs[0].Scaling) != 0 {
		t.Errorf("static scaled: %v", static.Runs[0].Scaling)
	}
	peak := slicesMax(hpa.Services[0].Series.Replicas)
	if peak < 5 || peak > 6 {
		t.Errorf("hpa peak replicas %g, want 5 or 6", peak)
	}
	// Every autoscaler scales s out to serve 3 cores of work: at least 4
	// replicas (75% or more utilisation is what their targets allow).
	for _, p := range res.Policies[1:] {
		if peak := slicesMax(p.Services[0].Series.Replicas); peak < 4 || p.Summary.ScalingActions.Mean < 1 {
			t.Errorf("%s: peak replicas %g, %v scaling actions", p.Policy, peak, p.Summary.ScalingActions.Mean)
		}
	}
	if !(hpa.Summary.SLOViolations.Mean < static.Summary.SLOViolations.Mean/2) {
		t.Errorf("SLO violations: hpa %v, static %v", hpa.Summary.SLOViolations.Mean, static.Summary.SLOViolations.Mean)
	}
	if !(hpa.Summary.VCPUSeconds.Mean > static.Summary.VCPUSeconds.Mean) {
		t.Errorf("vCPU-s: hpa %v, static %v", hpa.Summary.VCPUSeconds.Mean, static.Summary.VCPUSeconds.Mean)
	}
	// Static: one replica of s and one of fixed, 1 core each, over the window.
	if v, w := float64(static.Summary.VCPUSeconds.Mean), 2*(res.windowSeconds()); math.Abs(v-w) > 1e-6 {
		t.Errorf("static vCPU-s %g, want %g", v, w)
	}

	dir := t.TempDir()
	if err := res.WriteFiles(dir, nil); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, filepath.Join(dir, "scaling.csv"))
	n := 0
	for _, r := range rows[1:] {
		if r[1] == "hpa" && r[2] == "1" {
			n++
		}
	}
	if n != hpa.Runs[0].ScalingActions+countBefore(hpa.Runs[0], res.warmup()) {
		t.Errorf("scaling.csv has %d hpa rows for seed 1, the run %d actions", n, hpa.Runs[0].ScalingActions)
	}
	if rows := readCSV(t, filepath.Join(dir, "classes.csv")); len(rows) != 1+5*2 {
		t.Errorf("classes.csv: %d rows", len(rows))
	}
	html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	for _, want := range []string{"Replicas over time", "End-to-end response time over time", "SLO violations %", "Resources over the measurement window"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

func (r *Result) windowSeconds() float64 {
	h, _ := time.ParseDuration(r.Horizon)
	w, _ := time.ParseDuration(r.Warmup)
	return (h - w).Seconds()
}

func (r *Result) warmup() time.Duration { w, _ := time.ParseDuration(r.Warmup); return w }

// countBefore counts a run's scale events before the warm-up's end.
func countBefore(run RunResult, warmup time.Duration) int {
	n := 0
	for _, e := range run.Scaling {
		if e.At < warmup {
			n++
		}
	}
	return n
}

func slicesMax(x []float64) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, v)
	}
	return m
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// Scale from zero, fairly: the Sequential workflow idles for five minutes
// (the KPA takes its functions to zero) and its requests come back. With
// the functions' activators the requests of the cold start wait for an
// instance and are served; without them they are refused.
func TestScaleFromZeroWithTheActivator(t *testing.T) {
	success := map[bool]float64{}
	for _, activator := range []bool{true, false} {
		sc, err := scenario.Lookup("faas-sequential")
		if err != nil {
			t.Fatal(err)
		}
		sc.SetHorizon(10 * time.Minute)
		sc.Drain = 2 * time.Minute
		rates := make([]float64, 20) // 30 s steps: 2 min at 5 req/s, 5 min idle, 3 min at 5 req/s
		for i := range rates {
			if i < 4 || i >= 14 {
				rates[i] = 5
			}
		}
		if err := sc.SetArrivals(workload.ProcessSpec{Kind: "series", Step: 30 * time.Second, Rates: rates}); err != nil {
			t.Fatal(err)
		}
		if !activator {
			for i := range sc.Services {
				sc.Services[i].Activator = nil
			}
		}
		res, err := (&Comparison{Scenario: sc, Policies: []string{"kpa"}, Seeds: 2}).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		s := res.Policies[0].Summary
		success[activator] = float64(s.Success.Mean)
		t.Logf("activator %v: success %.4f, refused for want of an instance %.4f", activator, float64(s.Success.Mean), float64(s.NoCapacityRate.Mean))
		if activator && s.NoCapacityRate.Mean != 0 {
			t.Errorf("with the activator, %v of the requests were refused", s.NoCapacityRate.Mean)
		}
	}
	if !(success[true] > success[false]) {
		t.Fatalf("success %v with the activator, %v without", success[true], success[false])
	}
}
