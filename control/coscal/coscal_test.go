package coscal

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/learn/forecast"
	"github.com/shoal-project/shoal/metrics"
)

func TestState(t *testing.T) {
	for _, c := range []struct {
		u    float64
		want int
	}{{0, 0}, {0.24, 0}, {0.25, 1}, {0.6, 2}, {0.75, 3}, {1.7, 3}, {-1, 0}} {
		if got := Level(c.u); got != c.want {
			t.Errorf("Level(%v) = %d, want %d", c.u, got, c.want)
		}
	}
	if Trend(1.2, 0.1) != trendUp || Trend(0.85, 0.1) != trendDn || Trend(1.05, 0.1) != trendFlt {
		t.Error("Trend: want up above 1.1, down below 0.9, flat between")
	}
	if s := State(3, trendUp, true); s != States-1 {
		t.Errorf("State(3, up, missed) = %d, want %d (the last)", s, States-1)
	}
	opt := &drpc.Deployment{Optional: true}
	if m := Allowed(&drpc.Deployment{}, false); m != 1<<ActBrownoutOn-1 {
		t.Errorf("mandatory: mask %b, want no brownout", m)
	}
	if m := Allowed(opt, false); m&(1<<ActBrownoutOn) == 0 || m&(1<<ActBrownoutOff) != 0 {
		t.Errorf("optional, on: mask %b, want brownout on only", m)
	}
	if m := Allowed(opt, true); m&(1<<ActBrownoutOn) != 0 || m&(1<<ActBrownoutOff) == 0 {
		t.Errorf("optional, browned out: mask %b, want brownout off only", m)
	}
}

func testDeps() []drpc.Deployment {
	return []drpc.Deployment{
		{Name: "front", MinReplicas: 1, MaxReplicas: 5, CPUMin: 0.5, CPUMax: 2},
		{Name: "news", MinReplicas: 1, MaxReplicas: 5, CPUMin: 0.5, CPUMax: 2, Optional: true},
	}
}

// testSnapshot: both services at 2 ready replicas of 1 core with CPU
// utilisation util, front's p95 p95 and rate req/s.
func testSnapshot(util, p95, rate float64) *metrics.Snapshot {
	s := &metrics.Snapshot{Period: 5 * time.Second, Classes: []metrics.ClassStats{{Name: "query", Arrivals: int64(5 * rate)}}}
	for _, n := range []string{"front", "news"} {
		s.Services = append(s.Services, metrics.ServiceStats{Name: n, Replicas: 2, Ready: 2, CPULimit: 1, CPUUse: 2 * util,
			Arrivals: int64(5 * rate), P95: p95})
	}
	return s
}

func testPolicy(t testing.TB, fc *forecast.GRUForecaster) *Policy {
	p, err := NewPolicy(Policy{Period: drpc.Duration(5 * time.Second), Deployments: testDeps(), Ingress: []string{"front"},
		SLO: drpc.Duration(500 * time.Millisecond), Steps: drpc.Steps{CPU: 0.1, Replicas: 1}, TrendBand: 0.1}, fc)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// set sets the value of action a in state s.
func set(p *Policy, s, a int, v float64) { p.Table[a*States+s] = v }

// TestControllerFollowsTable: each deployment takes the table's greedy
// action of those it may take in its state, through the guard rails;
// brownout is remembered.
func TestControllerFollowsTable(t *testing.T) {
	p := testPolicy(t, nil)
	busy := State(3, trendFlt, true) // 90% busy, flat (no forecaster, same rate), SLO missed
	set(p, busy, ActBrownoutOn, 2)   // news may, front may not
	set(p, busy, ActReplicasUp, 1)
	c := NewController(p)
	snap := testSnapshot(0.9, 0.8, 100)
	acts := c.Decide(5*time.Second, snap) // the first period has no trend yet: flat
	want := []control.Action{control.SetReplicas{Service: "front", Replicas: 3}, control.SetBrownout{Service: "news", On: true}}
	if len(acts) != 2 || acts[0] != want[0] || acts[1] != want[1] {
		t.Fatalf("actions %v, want %v", acts, want)
	}
	// Browned out, brownout on is no longer allowed: news too adds replicas.
	want[1] = control.SetReplicas{Service: "news", Replicas: 3}
	if acts := c.Decide(10*time.Second, snap); len(acts) != 2 || acts[0] != want[0] || acts[1] != want[1] {
		t.Errorf("actions %v, want %v", acts, want)
	}
}

func testForecaster(t testing.TB) *forecast.GRUForecaster {
	rng := rand.New(rand.NewPCG(1, 2))
	var series [][]float64
	for k := range 200 {
		series = append(series, []float64{100 + float64(k%20)})
	}
	f, err := forecast.Fit(series, forecast.Config{Window: 4, Hidden: 4, Horizon: 2, Epochs: 1}, rng)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestPolicyRoundTrip(t *testing.T) {
	for _, fc := range []*forecast.GRUForecaster{nil, testForecaster(t)} {
		p := testPolicy(t, fc)
		set(p, 5, ActCPUDown, 0.5)
		var a, b bytes.Buffer
		if err := p.Write(&a); err != nil {
			t.Fatal(err)
		}
		q, err := ReadPolicy(bytes.NewReader(a.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Write(&b); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("forecaster %v: read back and written again: differs (%v)", fc != nil, err)
		}
		if q.Parameters() != p.Parameters() {
			t.Errorf("parameters %d, want %d", q.Parameters(), p.Parameters())
		}
	}
	bad := `{"format":"shoal-coscal-policy","version":1,"algorithm":"coscal","period":"5s","deployments":[{"name":"a"}],"table":[1,2]}` + "\n"
	if _, err := ReadPolicy(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "table: 2 values") {
		t.Errorf("short table: err %v, want a table error", err)
	}
}

// TestDecisionAllocatesNothing: a period of decisions with the GRU
// forecaster, none changing anything.
func TestDecisionAllocatesNothing(t *testing.T) {
	c := NewController(testPolicy(t, testForecaster(t)))
	snap := testSnapshot(0.5, 0.1, 100)
	for k := range 10 {
		c.Decide(time.Duration(k)*5*time.Second, snap)
	}
	if n := testing.AllocsPerRun(100, func() { c.Decide(time.Minute, snap) }); n != 0 {
		t.Errorf("%v allocations per period, want 0", n)
	}
}

// BenchmarkDecision is one period: the forecast and every deployment's
// table look-up and guard rails.
func BenchmarkDecision(b *testing.B) {
	c := NewController(testPolicy(b, testForecaster(b)))
	snap := testSnapshot(0.5, 0.1, 100)
	for k := range 10 {
		c.Decide(time.Duration(k)*5*time.Second, snap)
	}
	b.ReportAllocs()
	for b.Loop() {
		c.Decide(time.Minute, snap)
	}
}
