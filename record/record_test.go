package record

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/prom"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/workload"
)

// Record itself, against a real Prometheus, is tested through the command
// line: cmd/shoal's TestRecordThenSimulate.

var t0 = time.Date(2026, 1, 2, 8, 0, 0, 0, time.UTC)

// shop is a recording of web calling api 2.5 times per request, and api
// calling db 0.3 times per call.
func shop() *Recording {
	w := func(s string) prom.Workload {
		return prom.Workload{Service: s, Namespace: "shop", Name: s, Container: s}
	}
	return &Recording{Name: "shop", Prometheus: "http://prometheus:9090", Start: t0, End: t0.Add(time.Minute), Step: 15 * time.Second,
		Ingress: "web", Rates: []float64{10, 12.5, 0.2, 7.3},
		Services: []Service{
			{Workload: w("web"), Replicas: 2, MaxReplicas: 3, CPULimit: 0.5, MemoryLimit: 256, Calls: 600, Completed: 600, CPUSeconds: 6, Demand: 0.01},
			{Workload: w("api"), Caller: "web", PerCall: 2.5, Replicas: 1, MaxReplicas: 1, Calls: 1500, Completed: 1500, CPUSeconds: 3, Demand: 0.002},
			{Workload: w("db"), Caller: "api", PerCall: 0.3, Replicas: 1, MaxReplicas: 1, CPULimit: 2, Calls: 450, Completed: 450, CPUSeconds: 0, Demand: 0},
		},
		Notes: []string{"api: no CPU limit at the start: the scenario gives it 1 core per instance"}}
}

// TestWrittenScenarioLoads: the files a recording writes load with
// scenario.Load: the services as recorded, the call tree with whole calls
// and a probable one, and a source replaying the trace at its rates.
func TestWrittenScenarioLoads(t *testing.T) {
	rec := shop()
	dir := filepath.Join(t.TempDir(), "out")
	if err := rec.Write(dir); err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Load(filepath.Join(dir, ScenarioFile))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "shop" || sc.Horizon != time.Minute || len(sc.Services) != 3 {
		t.Fatalf("scenario %s, horizon %v, %d services", sc.Name, sc.Horizon, len(sc.Services))
	}
	web, api, db := sc.Services[0], sc.Services[1], sc.Services[2]
	if web.Replicas != 2 || web.CPU != 0.5 || web.MemoryMB != 256 || web.MaxReplicas != 6 || api.CPU != 0 || api.MaxReplicas != 2 || db.CPU != 2 {
		t.Errorf("services %+v", sc.Services)
	}
	root := sc.Classes[0].Call
	if root.Service != "web" || root.CPU.Dist != "exp" || root.CPU.Mean != 0.01 || len(root.Stages) != 3 {
		t.Fatalf("root call %+v: want web, 10 ms, then api three times", root)
	}
	for i, st := range root.Stages {
		c := st.Calls[0]
		wantProb := 0.0
		if i == 2 {
			wantProb = 0.5
		}
		if len(st.Calls) != 1 || c.Service != "api" || c.Prob != wantProb || c.CPU.Mean != 0.002 || len(c.Stages) != 1 {
			t.Fatalf("stage %d: %+v: want api (2 ms), probability %g, calling db", i, st, wantProb)
		}
		d := c.Stages[0].Calls[0]
		if d.Service != "db" || d.Prob != 0.3 || d.CPU.Dist != "" {
			t.Errorf("api's call %+v: want db with probability 0.3 and no CPU", d)
		}
	}
	p, err := sc.Sources[0].Arrivals.BuildWith(0, sc.Traces())
	if err != nil {
		t.Fatal(err)
	}
	replay := p.(*workload.SeriesReplay)
	for i, want := range rec.Rates {
		if got := replay.BucketRate(i); math.Abs(got-want) > 1.001/rec.Step.Seconds() { // a request either way
			t.Errorf("step %d replays %g req/s, want %g", i, got, want)
		}
	}
	if got := replay.MeanRate(); math.Abs(got-rec.MeanRate()) > 0.01 {
		t.Errorf("mean rate %g, want %g", got, rec.MeanRate())
	}
	raw, _ := os.ReadFile(filepath.Join(dir, ScenarioFile))
	for _, want := range []string{"# Recorded by 'shoal record' from the Prometheus at http://prometheus:9090", "# api      1         none (1)   25       0.05",
		"# Note: api: no CPU limit", "# Not recorded: I/O"} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("the file has no %q:\n%s", want, raw)
		}
	}
}

// TestTraceKeepsTheCounts: the trace's seconds hold each step's requests,
// rounded without drift, as workload's NASA reader reads them.
func TestTraceKeepsTheCounts(t *testing.T) {
	rec := &Recording{Step: 4 * time.Second, Rates: []float64{0.3, 12.25, 0, 7, 0.1, 0.1, 0.1}}
	tr, err := workload.ReadTrace(bytes.NewReader(rec.Trace()), workload.FormatNASA)
	if err != nil {
		t.Fatal(err)
	}
	if tr.NASA.Len() != 4*len(rec.Rates) {
		t.Fatalf("%d seconds, want %d", tr.NASA.Len(), 4*len(rec.Rates))
	}
	sum, want := 0.0, 0.0
	for i, r := range rec.Rates {
		for _, v := range tr.NASA.Values[4*i : 4*i+4] {
			sum += v
		}
		want += 4 * r
		if math.Abs(sum-want) > 0.5 {
			t.Errorf("after step %d: %g requests, want %g", i, sum, want)
		}
	}
}

// TestConfigErrors: each bad field is a ConfigError naming it.
func TestConfigErrors(t *testing.T) {
	ok := func() Config {
		return Config{Prometheus: "http://127.0.0.1:9090", Start: t0, End: t0.Add(time.Hour), Step: 15 * time.Second,
			Workloads: []prom.Workload{{Service: "a", Namespace: "n", Name: "a"}, {Service: "b", Namespace: "n", Name: "b"},
				{Service: "c", Namespace: "n", Name: "c"}},
			Queries: prom.DefaultQueries()}
	}
	if c := ok(); c.Validate() != nil {
		t.Fatal(c.Validate())
	}
	for _, tc := range []struct {
		field string
		edit  func(*Config)
	}{
		{"prometheus", func(c *Config) { c.Prometheus = "" }},
		{"prometheus", func(c *Config) { c.Prometheus = "127.0.0.1:9090" }},
		{"start", func(c *Config) { c.Start = time.Time{} }},
		{"end", func(c *Config) { c.End = t0 }},
		{"end", func(c *Config) { c.End = t0.Add(time.Second) }},
		{"step", func(c *Config) { c.Step = 1500 * time.Millisecond }},
		{"step", func(c *Config) { c.Step = 0 }},
		{"workloads", func(c *Config) { c.Workloads = nil }},
		{"workloads", func(c *Config) { c.Workloads[1].Service = "a" }},
		{"workloads", func(c *Config) { c.Workloads[1].Namespace = "" }},
		{"ingress", func(c *Config) { c.Ingress = "z" }},
		{"calls", func(c *Config) { c.Calls = []Edge{{"a", "z"}} }},
		{"calls", func(c *Config) { c.Calls = []Edge{{"b", "a"}} }},
		{"calls", func(c *Config) { c.Calls = []Edge{{"b", "b"}} }},
		{"calls", func(c *Config) { c.Calls = []Edge{{"a", "c"}, {"b", "c"}} }},
		{"calls", func(c *Config) { c.Calls = []Edge{{"b", "c"}, {"c", "b"}} }},
		{"queries", func(c *Config) { c.Queries.CPUUse = "" }},
		{"queries", func(c *Config) { c.Queries.Arrivals = "{{.Nope" }},
	} {
		c := ok()
		tc.edit(&c)
		var ce *ConfigError
		if err := c.Validate(); !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%+v: err %v, want one of field %s", c, err, tc.field)
		}
	}
	c := ok()
	c.Calls = []Edge{{"a", "b"}, {"b", "c"}}
	if err := c.Validate(); err != nil {
		t.Errorf("a chain a, b, c: %v", err)
	}
}

// TestTooManyCalls: calls per call that multiply past maxCalls are refused.
func TestTooManyCalls(t *testing.T) {
	rec := shop()
	rec.Services[1].PerCall, rec.Services[2].PerCall = 150, 80
	if _, err := rec.Scenario(); err == nil || !strings.Contains(err.Error(), "calls") {
		t.Errorf("err %v, want too many calls", err)
	}
}
