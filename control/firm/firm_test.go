package firm

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/callgraph"
	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/metrics"
)

// testGraph: front → [ search | user ] → order.
func testGraph() *callgraph.Graph {
	return &callgraph.Graph{Roots: []callgraph.Call{{Service: "front", Stages: []callgraph.Stage{
		{Calls: []callgraph.Call{{Service: "search"}, {Service: "user"}}},
		{Calls: []callgraph.Call{{Service: "order"}}},
	}}}}
}

var testNames = []string{"front", "search", "user", "order"}

func testDeps() []drpc.Deployment {
	var d []drpc.Deployment
	for _, n := range testNames {
		d = append(d, drpc.Deployment{Name: n, MinReplicas: 1, MaxReplicas: 5, CPUMin: 0.25, CPUMax: 2, Period: drpc.Duration(5 * time.Second)})
	}
	return d
}

// testSnapshot: every service has 2 ready replicas of 1 core; lat and util
// are per service in testNames order.
func testSnapshot(lat, util []float64) *metrics.Snapshot {
	s := &metrics.Snapshot{Period: 5 * time.Second}
	for k, n := range testNames {
		s.Services = append(s.Services, metrics.ServiceStats{Name: n, Replicas: 2, Ready: 2, CPULimit: 1, Arrivals: 500, Completions: 500,
			CPUUse: 2 * util[k], Latency: metrics.LatencySum{Count: 500, Sum: 500 * lat[k]}, P50: lat[k], P95: 2 * lat[k]})
	}
	return s
}

// cpuClassifier flags a service whose CPU utilisation is above 0.8.
func cpuClassifier() Classifier { return Classifier{W: []float64{0, 0, 1}, B: -0.8} }

// TestCulprit: the culprit is the most utilised service on the critical
// path, never one off it, and none when no service scores above 0.
func TestCulprit(t *testing.T) {
	d := NewDetector(testGraph(), testDeps(), []string{"front"}, 500*time.Millisecond, 4)
	c := cpuClassifier()
	// user is off the path (search is slower) though the busiest.
	if !d.Observe(testSnapshot([]float64{0.2, 0.08, 0.03, 0.05}, []float64{0.5, 0.85, 0.99, 0.9})) {
		t.Fatal("Observe: a service is missing")
	}
	if d.OnPath(2) || !d.OnPath(0) || !d.OnPath(1) || !d.OnPath(3) {
		t.Fatalf("on path: %v %v %v %v, want front, search, order", d.OnPath(0), d.OnPath(1), d.OnPath(2), d.OnPath(3))
	}
	if got := d.Culprit(&c); got != 3 {
		t.Errorf("culprit %d, want 3 (order: 0.9 on the path)", got)
	}
	if !d.Observe(testSnapshot([]float64{0.2, 0.08, 0.03, 0.05}, []float64{0.5, 0.6, 0.99, 0.7})) {
		t.Fatal("Observe: a service is missing")
	}
	if got := d.Culprit(&c); got != -1 {
		t.Errorf("culprit %d, want none (only user is busy, off the path)", got)
	}
	if ci := d.Features(1)[FeatCI]; ci != 2 {
		t.Errorf("CI %v, want p95/p50 = 2", ci)
	}
}

// TestRelativeImportance: a service whose response time follows the
// application's has RI 1, one that moves against it -1.
func TestRelativeImportance(t *testing.T) {
	d := NewDetector(testGraph(), testDeps(), []string{"front"}, time.Second, 4)
	for k := range 4 {
		x := float64(k)
		d.Observe(testSnapshot([]float64{0.1 + 0.1*x, 0.05 + 0.02*x, 0.09 - 0.02*x, 0.03}, []float64{0.5, 0.5, 0.5, 0.5}))
	}
	if ri := d.Features(1)[FeatRI]; math.Abs(ri-1) > 1e-9 {
		t.Errorf("search RI %v, want 1", ri)
	}
	if ri := d.Features(2)[FeatRI]; math.Abs(ri+1) > 1e-9 {
		t.Errorf("user RI %v, want -1", ri)
	}
	if ri := d.Features(3)[FeatRI]; ri != 0 {
		t.Errorf("order RI %v, want 0 (constant)", ri)
	}
}

// testPolicy returns a policy whose actor outputs (cpu, replicas) whatever
// the state.
func testPolicy(t testing.TB, cpu, replicas float64) *Policy {
	p, err := NewPolicy(Policy{Period: drpc.Duration(5 * time.Second), Deployments: testDeps(), Ingress: []string{"front"},
		SLO: drpc.Duration(500 * time.Millisecond), Steps: drpc.Steps{CPU: 0.1, Replicas: 1}, Window: 4, Alpha: 0.5,
		Classifier: cpuClassifier(), Hidden: []int{4}}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	last := p.actor.Layers[len(p.actor.Layers)-1]
	clear(last.W.Value.Data)
	last.B.Value.Data[aCPU], last.B.Value.Data[aReplicas] = float32(math.Atanh(cpu)), float32(math.Atanh(replicas))
	return p
}

// TestOneActionPerStep: the actor asks for more CPU and more replicas;
// only the larger, replicas, is applied, to the culprit alone.
func TestOneActionPerStep(t *testing.T) {
	c := NewController(testPolicy(t, 0.7, 0.9), testGraph())
	acts := c.Decide(5*time.Second, testSnapshot([]float64{0.2, 0.08, 0.03, 0.05}, []float64{0.9, 0.85, 0.99, 0.95}))
	if len(acts) != 1 {
		t.Fatalf("actions %v, want exactly one", acts)
	}
	if a, ok := acts[0].(control.SetReplicas); !ok || a.Service != "order" || a.Replicas != 3 {
		t.Errorf("action %#v, want order to 3 replicas", acts[0])
	}
	// CPU the larger: the CPU limit alone changes.
	c = NewController(testPolicy(t, -0.9, 0.6), testGraph())
	acts = c.Decide(5*time.Second, testSnapshot([]float64{0.2, 0.08, 0.03, 0.05}, []float64{0.9, 0.85, 0.99, 0.95}))
	if len(acts) != 1 {
		t.Fatalf("actions %v, want exactly one", acts)
	}
	if a, ok := acts[0].(control.SetResources); !ok || a.Service != "order" || math.Abs(a.CPU-0.91) > 1e-6 {
		t.Errorf("action %#v, want order's CPU to 0.91 (1 − 0.9 x 0.1)", acts[0])
	}
}

func TestPolicyRoundTrip(t *testing.T) {
	p := testPolicy(t, 0.3, -0.2)
	p.Provenance.Scenario = "test"
	var a, b bytes.Buffer
	if err := p.Write(&a); err != nil {
		t.Fatal(err)
	}
	q, err := ReadPolicy(bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Write(&b); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("read back and written again: differs (%v)", err)
	}
	if q.Parameters() != p.Parameters() || q.Parameters() != 6*4+4+4*2+2+4 {
		t.Errorf("parameters %d, want %d", q.Parameters(), 6*4+4+4*2+2+4)
	}
	bad := strings.Replace(a.String(), `"version":1`, `"version":9`, 1)
	if _, err := ReadPolicy(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "version 9") {
		t.Errorf("version 9: err %v, want a version error", err)
	}
	if _, err := ReadPolicy(strings.NewReader(a.String()[:a.Len()-3])); err == nil {
		t.Error("a truncated file was accepted")
	}
}

// TestDecisionAllocatesNothing: a period with a culprit whose action a rail
// stops (replicas at their maximum), and one without a culprit.
func TestDecisionAllocatesNothing(t *testing.T) {
	c := NewController(testPolicy(t, 0, 0.9), testGraph())
	snap := testSnapshot([]float64{0.2, 0.08, 0.03, 0.05}, []float64{0.9, 0.85, 0.99, 0.95})
	snap.Services[3].Replicas, snap.Services[3].Ready, snap.Services[3].CPUUse = 5, 5, 5*0.95
	c.Decide(5*time.Second, snap)
	if n := testing.AllocsPerRun(100, func() { c.Decide(5*time.Second, snap) }); n != 0 {
		t.Errorf("%v allocations per period with a culprit, want 0", n)
	}
	if c.Stats().Culprits == 0 {
		t.Fatal("no culprit found")
	}
	quiet := testSnapshot([]float64{0.2, 0.08, 0.03, 0.05}, []float64{0.1, 0.1, 0.1, 0.1})
	if n := testing.AllocsPerRun(100, func() { c.Decide(5*time.Second, quiet) }); n != 0 {
		t.Errorf("%v allocations per quiet period, want 0", n)
	}
}

// BenchmarkDecision is one period's decision: critical path, features,
// culprit, actor and guard rails (the DRPC paper puts FIRM's at 4e-3 s of CPU).
func BenchmarkDecision(b *testing.B) {
	c := NewController(testPolicy(b, 0, 0.9), testGraph())
	snap := testSnapshot([]float64{0.2, 0.08, 0.03, 0.05}, []float64{0.9, 0.85, 0.99, 0.95})
	snap.Services[3].Replicas, snap.Services[3].Ready, snap.Services[3].CPUUse = 5, 5, 5*0.95
	b.ReportAllocs()
	for b.Loop() {
		c.Decide(5*time.Second, snap)
	}
}
