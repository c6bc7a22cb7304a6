package faasconf

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/learn/rl"
	"github.com/shoal-project/shoal/metrics"
)

func TestDecodeEncode(t *testing.T) {
	s := MLSpace()
	if c := s.Decode([]float64{-1, 1, 0, 5}); c != (Config{CPU: 0.25, MemoryMB: 2024, Instances: 5, Concurrency: 10}) {
		t.Fatalf("decode: %+v", c) // 0 is the middle of 1-8: 4.5 rounds to 5; 5 clips to 1
	}
	c := Config{CPU: 1.2, MemoryMB: 512, Instances: 3, Concurrency: 7}
	a := make([]float64, ActionDim)
	s.Encode(a, c)
	if back := s.Decode(a); math.Abs(back.CPU-c.CPU) > 1e-12 || math.Abs(back.MemoryMB-c.MemoryMB) > 1e-9 ||
		back.Instances != c.Instances || back.Concurrency != c.Concurrency {
		t.Fatalf("round trip of %+v: %+v", c, back)
	}
	if err := (Space{CPU: [2]float64{1, 0.5}, MemoryMB: [2]float64{1, 2}, Instances: [2]int{1, 2}, Concurrency: [2]int{1, 2}}).Validate(); err == nil {
		t.Error("cpu bounds out of order accepted")
	}
	hw := s.HardwareOnly()
	if err := hw.Validate(); err != nil || hw.Hybrid() || !s.Hybrid() {
		t.Fatalf("hardware-only space: %v, hybrid %v", err, hw.Hybrid())
	}
	if c := hw.Decode([]float64{0, 0, 0, 1}); c.Concurrency != 0 {
		t.Errorf("hardware-only decode sets concurrency %d, want 0 (no limit)", c.Concurrency)
	}
	if err := (Space{CPU: s.CPU, MemoryMB: s.MemoryMB, Instances: s.Instances, Concurrency: [2]int{0, 4}}).Validate(); err == nil {
		t.Error("concurrency bounds from 0 accepted")
	}
}

// Equation 2 with the Azure premium prices: 2 instances of 1 vCPU and
// 1024 MB, plus 1 of 0.5 vCPU and 512 MB.
func TestPrice(t *testing.T) {
	got := Price([]Config{{CPU: 1, MemoryMB: 1024, Instances: 2}, {CPU: 0.5, MemoryMB: 512, Instances: 1}})
	want := 2*(0.173+0.0123) + (0.0865 + 0.00615)
	if math.Abs(got-want) > 1e-12 {
		t.Fatalf("price %v, want %v", got, want)
	}
}

func TestActionsOnlyForChanges(t *testing.T) {
	s := &metrics.ServiceStats{CPULimit: 1, MemoryLimit: 512, Replicas: 2, Concurrency: 4}
	if a := Actions(nil, "f", s, Config{CPU: 1, MemoryMB: 512, Instances: 2, Concurrency: 4}); len(a) != 0 {
		t.Fatalf("no change: %v", a)
	}
	a := Actions(nil, "f", s, Config{CPU: 1, MemoryMB: 512, Instances: 3, Concurrency: 2})
	if len(a) != 2 || a[0] != (control.SetReplicas{Service: "f", Replicas: 3}) || a[1] != (control.SetConcurrency{Service: "f", Limit: 2}) {
		t.Fatalf("actions %v", a)
	}
}

func TestObserveAndQoS(t *testing.T) {
	q := QoS{Latency: 2 * time.Second, MinServed: 0.99}
	snap := &metrics.Snapshot{Classes: []metrics.ClassStats{
		{Arrivals: 62, Completions: 60, Latency: metrics.LatencySum{Count: 60, Sum: 60}}, // 2 still in progress
		{Arrivals: 40, Completions: 39, Failures: metrics.Failures{Rejected: 1}, Latency: metrics.LatencySum{Count: 39, Sum: 117}},
	}}
	w := WindowOf(snap)
	if w.Requests != 100 || w.Served != 99 || math.Abs(w.MeanLatency()-177.0/99) > 1e-12 || !q.Met(w) {
		t.Fatalf("window %+v, mean %v, met %v", w, w.MeanLatency(), q.Met(w))
	}
	if q.MinServed = 0.995; q.Met(w) {
		t.Fatal("99% served met a 99.5% target")
	}
	s := &metrics.ServiceStats{Ready: 2, Replicas: 2, CPULimit: 1, MemoryLimit: 512, Concurrency: 4, CPUUse: 1, MemoryUse: 256,
		P95: 1, InFlight: 4, Queued: 2, Arrivals: 300, Latency: metrics.LatencySum{Count: 300, Sum: 120},
		Failures: metrics.Failures{Rejected: 30}}
	f := make([]float64, Features)
	Observe(f, s, 30*time.Second, MLSpace(), w, QoS{Latency: 2 * time.Second})
	// 10 calls/s x 0.4 s = 4 in progress on 2 x 4 slots: 0.5.
	want := []float64{0.5, 0.25, 0.5, 0.75, 0.5, 0.1}
	for i, v := range want {
		if math.Abs(f[i]-v) > 1e-12 {
			t.Errorf("feature %d = %v, want %v", i, f[i], v)
		}
	}
	if math.Abs(f[10]-177.0/99/2) > 1e-12 || math.Abs(f[11]-0.01) > 1e-12 {
		t.Errorf("workflow features %v, %v", f[10], f[11])
	}
	// A function that completed nothing has no latency: saturated when
	// calls arrived, idle when none did; never NaN.
	s = &metrics.ServiceStats{Ready: 1, Replicas: 1, CPULimit: 1, MemoryLimit: 512, Concurrency: 4, Arrivals: 5, P95: math.NaN()}
	Observe(f, s, 30*time.Second, MLSpace(), Window{Requests: 5}, QoS{Latency: 2 * time.Second})
	if f[2] != 10 || f[4] != 10 {
		t.Errorf("no completions of 5 arrivals: latency features %v, %v, want 10", f[2], f[4])
	}
	s.Arrivals = 0
	Observe(f, s, 30*time.Second, MLSpace(), Window{}, QoS{Latency: 2 * time.Second})
	for i, v := range f {
		if math.IsNaN(v) || math.IsInf(v, 0) || (i == 2 || i == 4) && v != 0 {
			t.Errorf("idle function: feature %d = %v", i, v)
		}
	}
}

// The safe range is the mean ± 2 std of the cheapest fifth of the
// configurations that met the QoS; an action priced outside it is replaced.
func TestSESRange(t *testing.T) {
	s := NewSES()
	act := func(v float64) [][]float64 { return [][]float64{{v, v, v, v}} }
	for i := 1; i <= 10; i++ { // met at prices 1..10: τ = {1, 2}, mean 1.5, std 0.5
		s.Add(Record{Workload: 10, Action: act(float64(i) / 10), Price: float64(i), Met: true})
	}
	s.Add(Record{Workload: 10, Action: act(0), Price: 0.1, Met: false})
	lb, ub, ok := s.Bounds(10)
	if !ok || math.Abs(lb-0.5) > 1e-12 || math.Abs(ub-2.5) > 1e-12 {
		t.Fatalf("bounds [%v, %v] %v, want [0.5, 2.5]", lb, ub, ok)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	if a, replaced := s.Filter(10, act(0.9), 2, rng); replaced || a[0][0] != 0.9 {
		t.Fatal("an action inside the range was replaced")
	}
	a, replaced := s.Filter(10, act(0.9), 9, rng)
	if !replaced || (math.Abs(a[0][0]-0.1) > 0.5 && math.Abs(a[0][0]-0.2) > 0.5) {
		t.Fatalf("an action priced 9 became %v (replaced %v), want near τ's 0.1 or 0.2", a, replaced)
	}
	// Another workload without records takes the nearest one's range.
	if lb2, ub2, ok := s.Bounds(12); !ok || lb2 != lb || ub2 != ub {
		t.Fatalf("workload 12: [%v, %v] %v, want workload 10's", lb2, ub2, ok)
	}
	// The range stays until three violations; then it is set again from
	// the latest records: τ = the cheapest 3 of 12, {1, 2, 3}.
	s.Add(Record{Workload: 10, Action: act(1), Price: 3, Met: true})
	for range 2 {
		s.Add(Record{Workload: 10, Action: act(1), Price: 20, Met: false})
	}
	if lb3, ub3, _ := s.Bounds(10); lb3 != lb || ub3 != ub {
		t.Fatalf("after 2 violations the range moved to [%v, %v]", lb3, ub3)
	}
	s.Add(Record{Workload: 10, Action: act(1), Price: 20, Met: false})
	sd := math.Sqrt(2.0 / 3)
	if lb3, ub3, _ := s.Bounds(10); math.Abs(lb3-(2-2*sd)) > 1e-12 || math.Abs(ub3-(2+2*sd)) > 1e-12 {
		t.Fatalf("after 3 violations: [%v, %v], want 2 ± 2·%.4f", lb3, ub3, sd)
	}
}

func testPolicy(t *testing.T) *Policy {
	t.Helper()
	p, err := NewPolicy(Policy{Variant: rl.AttMF, Functions: []string{"a", "b"}, Adjacency: [][]float64{{0, 1}, {1, 0}},
		Space: MLSpace(), QoS: QoS{Latency: time.Second, MinServed: 0.99}, Window: modelfile.Duration(30 * time.Second),
		BaseRate: 10, Levels: []float64{0.5, 1}, Hidden: []int{8}, AttentionDim: 4}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testSnapshot(rate int64) *metrics.Snapshot {
	svc := func(name string) metrics.ServiceStats {
		return metrics.ServiceStats{Name: name, Replicas: 2, Ready: 2, CPULimit: 1, MemoryLimit: 512, Concurrency: 4,
			Arrivals: 30 * rate, Completions: 30 * rate, Latency: metrics.LatencySum{Count: 30 * rate, Sum: 3 * float64(rate)}}
	}
	return &metrics.Snapshot{Period: 30 * time.Second, Services: []metrics.ServiceStats{svc("a"), svc("b")},
		Classes: []metrics.ClassStats{{Arrivals: 30 * rate, Completions: 30 * rate, Latency: metrics.LatencySum{Count: 30 * rate, Sum: 6 * float64(rate)}}}}
}

// A policy survives its file; its controller configures every function
// from the actors, and the safe exploration replaces a configuration
// priced outside the range that history sets.
func TestPolicyAndController(t *testing.T) {
	p := testPolicy(t)
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	q, err := ReadPolicy(&buf)
	if err != nil {
		t.Fatal(err)
	}
	obs := [][]float64{make([]float64, Features), make([]float64, Features)}
	obs[0][3] = 0.7
	if a, b := p.Actors().Act(obs)[0][0], q.Actors().Act(obs)[0][0]; a != b {
		t.Fatalf("actor 0 after the file: %v, before %v", b, a)
	}
	c, _ := NewController(q, Options{NoSES: true, Restless: true})
	if lvl := c.Level(testSnapshot(10)); lvl != 1 {
		t.Fatalf("10 req/s over a base of 10: level %v, want 1", lvl)
	}
	acts := c.Decide(0, testSnapshot(10))
	if len(acts) == 0 {
		t.Fatal("no action from a freshly initialised policy")
	}
	// History: at level 1 only configurations priced 0.01 met the QoS, so
	// the safe range is [0.01, 0.01] and the actors' proposal is replaced.
	cheap := [][]float64{{-1, -1, -1, -1}, {-1, -1, -1, -1}}
	q.History = []Record{{Workload: 1, Action: cheap, Price: 0.01, Met: true}}
	c, _ = NewController(q, Options{Restless: true})
	c.Decide(0, testSnapshot(10))
	if st := c.Stats(); st.Replaced != 1 || c.configs[0].Instances != 1 || c.configs[0].CPU > 0.4 {
		t.Fatalf("stats %+v, configs %+v: want the cheap safe configuration", st, c.configs)
	}
	// The platform's own configuration that ran in the first window (two
	// instances of 1 core and 512 MB per function) joined the history.
	rs := c.ses.Records()
	if want := 4 * (VCPUHour + GBHour/2); len(rs) != 2 || !rs[1].Met || math.Abs(rs[1].Price-want) > 1e-12 {
		t.Fatalf("history %+v, want the running configuration (%v $/h, met) after the policy's", rs, want)
	}
}

// A percentile QoS counts the unserved requests as over its latency: with
// 100 requests, p99 is the 99th latency, and two refusals make it +Inf; it
// reads as it prints.
func TestPercentileQoS(t *testing.T) {
	var w Window
	for i := 1; i <= 99; i++ {
		w.Hist.Record(float64(i) / 100) // 0.01 .. 0.99 s
	}
	w.Requests, w.Served = 100, 99
	q, err := ParseQoS("p99:1s")
	if err != nil || q.Percentile != 0.99 || q.Latency != time.Second || q.MinServed != 0.99 {
		t.Fatalf("ParseQoS(p99:1s) = %+v, %v", q, err)
	}
	if got := q.Measure(w); math.Abs(got-0.99) > 0.99*metrics.LatencyHistRelativeWidth || !q.Met(w) {
		t.Fatalf("p99 of 0.01..0.99 s and one refusal: %v, met %v", got, q.Met(w))
	}
	w.Requests = 101 // two unserved of 101: the 100th request is one of them
	if got := q.Measure(w); !math.IsInf(got, 1) || q.Met(w) {
		t.Fatalf("two unserved of 101: p99 %v, met %v", got, q.Met(w))
	}
	if p95, _ := ParseQoS("p95:1s"); p95.Measure(w) > 1 {
		t.Errorf("p95 with two unserved of 101: %v", p95.Measure(w))
	}
	if q, err := ParseQoS("p99:1.1x,served:99.5%"); err != nil || q.MinServed != 0.995 || q.Slack != 1.1 || q.Percentile != 0.99 {
		t.Errorf("ParseQoS(p99:1.1x,served:99.5%%) = %+v, %v", q, err)
	}
	for _, s := range []string{"p99:1s", "p95:250ms", "mean:2.7s", "p99:3s,served:99.5%"} {
		if q, err := ParseQoS(s); err != nil || q.String() != s {
			t.Errorf("ParseQoS(%q) = %v, %v", s, q, err)
		}
	}
	for _, s := range []string{"p100", "p0:1s", "max", "p99:-1s", "mean:fast", "p99,served:101%", "mean,served:all"} {
		if _, err := ParseQoS(s); err == nil {
			t.Errorf("ParseQoS(%q) took it", s)
		}
	}
}
