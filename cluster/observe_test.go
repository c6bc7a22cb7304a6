package cluster

import (
	"math"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
)

// TestObserveCountersAndCPU checks a snapshot on a deterministic schedule:
// per-period counters reset, and CPU use is the busy fraction of the cores.
func TestObserveCountersAndCPU(t *testing.T) {
	cfg := &Config{
		Services: []Service{{Name: "s", CPU: 2}},
		Classes:  []Class{{Name: "c", Call: Call{Service: "s", CPU: det(1)}}},
		Sources:  []Source{{Name: "src", Class: "c", Arrivals: poisson(1)}},
	}
	cl := build(t, cfg, Options{Seed: 1})
	// Jobs at 0 and 0.5 s each use one core for 1 s; a job at 3 s uses one
	// core for 1 s, half of it in the second period.
	feed(cl, 0, 0, sec(0.5), sec(3.5))
	for _, tc := range []struct {
		at                    time.Duration
		arrivals, completions int64
		cpu, inFlight         float64
		latSum                float64
	}{
		{sec(2), 2, 2, 1, 0, 2},    // 2 core-s over 2 s
		{sec(4), 1, 0, 0.25, 1, 0}, // 0.5 core-s over 2 s
		{sec(5), 0, 1, 0.5, 0, 1},  // 0.5 core-s over 1 s
		{sec(8), 0, 0, 0, 0, 0},    // idle
		{sec(8), 0, 0, 0, 0, 0},    // empty period
	} {
		s := observe(cl, tc.at)
		st := svcStats(t, s, "s")
		if s.At != tc.at || st.Arrivals != tc.arrivals || st.Completions != tc.completions ||
			math.Abs(st.CPUUse-tc.cpu) > 1e-9 || float64(st.InFlight) != tc.inFlight ||
			math.Abs(st.Latency.Sum-tc.latSum) > 1e-9 {
			t.Errorf("at %v: %+v", tc.at, st)
		}
		if in := st.Instances[0]; math.Abs(in.CPUUse-tc.cpu) > 1e-9 || math.Abs(in.Utilisation-tc.cpu/2) > 1e-9 {
			t.Errorf("at %v: instance %+v", tc.at, in)
		}
	}
}

// TestObserveThrottling checks the CFS counters of a snapshot: one thread
// of 1 s on half a core wants twice its quota in each of the 20 periods it
// runs; on two cores, two such threads never want more than the quota. The
// counters of an instance removed during the period stay in its service's.
func TestObserveThrottling(t *testing.T) {
	for _, c := range []struct {
		cpu                float64
		replicas           int
		at                 []time.Duration
		periods, throttled [2]int64 // at 1 s and at 3 s
	}{
		{0.5, 1, []time.Duration{0}, [2]int64{10, 10}, [2]int64{10, 10}},
		{2, 1, []time.Duration{0, 0}, [2]int64{10, 0}, [2]int64{0, 0}},
		{0.5, 2, []time.Duration{0, 0}, [2]int64{20, 20}, [2]int64{20, 20}}, // one instance removed at 1.5 s
	} {
		cfg := &Config{
			Services: []Service{{Name: "s", CPU: c.cpu, Replicas: c.replicas}},
			Classes:  []Class{{Name: "c", Call: Call{Service: "s", CPU: det(1)}}},
			Sources:  []Source{{Name: "src", Class: "c", Arrivals: poisson(1)}},
		}
		cl := build(t, cfg, Options{Seed: 1})
		feed(cl, 0, c.at...)
		for k, at := range []time.Duration{sec(1), sec(3)} {
			if c.replicas == 2 && k == 1 {
				cl.RunUntil(sec(1.5))
				apply(t, cl, control.SetReplicas{Service: "s", Replicas: 1})
			}
			st := svcStats(t, observe(cl, at), "s")
			var p, th int64
			for _, in := range st.Instances {
				p, th = p+in.CFSPeriods, th+in.CFSThrottled
			}
			if st.CFSPeriods != c.periods[k] || st.CFSThrottled != c.throttled[k] || k == 0 && (p != st.CFSPeriods || th != st.CFSThrottled) {
				t.Errorf("cpu %g x %d at %v: %d periods, %d throttled (instances: %d, %d); want %d, %d",
					c.cpu, c.replicas, at, st.CFSPeriods, st.CFSThrottled, p, th, c.periods[k], c.throttled[k])
			}
		}
	}
}

// TestObserveCost checks cost against allocated cores and GB times seconds
// times the default prices, through a scale-down.
func TestObserveCost(t *testing.T) {
	cfg := &Config{
		Services: []Service{{Name: "s", CPU: 2, MemoryMB: 512, Replicas: 3}},
		Classes:  []Class{{Name: "c", Call: Call{Service: "s", CPU: det(1)}}},
		Sources:  []Source{{Name: "src", Class: "c", Arrivals: poisson(1)}},
	}
	cl := build(t, cfg, Options{Seed: 1})
	feed(cl, 0)
	const vcpu, gb = 0.173 / 3600, 0.0123 / 3600 // $ per vCPU-second, per GB-second
	// 3 instances x (2 cores, 0.5 GB) for 10 s.
	s := observe(cl, sec(10))
	want1 := 3*2*10*vcpu + 3*0.5*10*gb
	if got := svcStats(t, s, "s").Cost; math.Abs(got-want1) > 1e-15 {
		t.Errorf("first period cost %.10g, want %.10g", got, want1)
	}
	apply(t, cl, control.SetReplicas{Service: "s", Replicas: 1}) // idle: gone at once
	s = observe(cl, sec(20))
	want2 := 1*2*10*vcpu + 1*0.5*10*gb
	if got := svcStats(t, s, "s").Cost; math.Abs(got-want2) > 1e-15 {
		t.Errorf("second period cost %.10g, want %.10g", got, want2)
	}
	r := drain(t, cl)
	if math.Abs(r.Cost-(want1+want2)) > 1e-15 {
		t.Errorf("run cost %.10g, want %.10g", r.Cost, want1+want2)
	}
	// Own prices: 1 per vCPU-second, 2 per GB-second.
	cfg.Prices = Prices{VCPUSecond: 1, GBSecond: 2}
	cl = build(t, cfg, Options{Seed: 1})
	feed(cl, 0)
	if got := svcStats(t, observe(cl, sec(10)), "s").Cost; math.Abs(got-(3*2*10+3*0.5*10*2)) > 1e-9 {
		t.Errorf("cost with own prices %g, want 90", got)
	}
}

// TestLBScopedView checks the Distr-LB partial observability: two LB points
// in front of one service each see only their own traffic.
func TestLBScopedView(t *testing.T) {
	cfg := &Config{
		Services: []Service{{Name: "s", Replicas: 2}},
		LBs:      []LBPoint{{Name: "lb1", Service: "s"}, {Name: "lb2", Service: "s"}},
		Classes:  []Class{{Name: "c", Call: Call{Service: "s", CPU: det(10)}}},
		Sources: []Source{
			{Name: "src1", Class: "c", LB: "lb1", Arrivals: poisson(1)},
			{Name: "src2", Class: "c", LB: "lb2", Arrivals: poisson(1)},
		},
	}
	cl := build(t, cfg, Options{Seed: 1, Policy: "rr"})
	feed(cl, 0, sec(1), sec(1), sec(1)) // lb1 (rr): instances 0, 1, 0
	feed(cl, 1, sec(1))                 // lb2 (rr): instance 0
	s := observe(cl, sec(2))
	want := map[string][2]int{"lb1": {2, 1}, "lb2": {1, 0}}
	for _, l := range s.LBs {
		w := want[l.Name]
		if len(l.Backends) != 2 || l.Backends[0].InFlight != w[0] || l.Backends[1].InFlight != w[1] ||
			l.Backends[0].Sent != int64(w[0]) || l.Backends[1].Sent != int64(w[1]) {
			t.Errorf("%s sees %+v, want in flight %v", l.Name, l.Backends, w)
		}
		if got := cl.lbByName[l.Name].view.InFlight; int(got[0]) != w[0] || int(got[1]) != w[1] {
			t.Errorf("%s selector view %v, want %v", l.Name, got, w)
		}
	}
	if in := svcStats(t, s, "s").Instances; in[0].InFlight != 3 || in[1].InFlight != 1 {
		t.Errorf("instances %+v: want 3 and 1 in flight", in)
	}
	s = observe(cl, sec(60))
	for _, l := range s.LBs {
		w := want[l.Name]
		for j, b := range l.Backends {
			if b.InFlight != 0 || b.Sent != 0 || b.Completions != int64(w[j]) || b.Latency.Count != int64(w[j]) {
				t.Errorf("%s backend %d after completion: %+v", l.Name, j, b)
			}
		}
	}
	if names := cl.LBNames(); len(names) != 2 || names[0] != "lb1" || names[1] != "lb2" {
		t.Errorf("LBNames %v", names)
	}
}

// TestObserveCPUOfRemovedInstance checks that the busy time of an instance
// removed during the period still counts in the service's CPU use.
func TestObserveCPUOfRemovedInstance(t *testing.T) {
	cfg := &Config{
		Services: []Service{{Name: "s", Replicas: 2}},
		Classes:  []Class{{Name: "c", Call: Call{Service: "s", CPU: det(1)}}},
		Sources:  []Source{{Name: "src", Class: "c", Arrivals: poisson(1)}},
	}
	cl := build(t, cfg, Options{Seed: 1})
	feed(cl, 0, 0, 0) // one 1 s job on each instance
	cl.RunUntil(sec(0.5))
	apply(t, cl, control.SetReplicas{Service: "s", Replicas: 1})
	s := observe(cl, sec(2))
	if st := svcStats(t, s, "s"); math.Abs(st.CPUUse-1) > 1e-9 || len(st.Instances) != 1 || st.Completions != 2 {
		t.Errorf("cpu %g cores over the period (want 1: 2 core-s in 2 s), %d instances, %d completions", st.CPUUse, len(st.Instances), st.Completions)
	}
}

// TestDrainTwice checks that draining again closes the results again
// without counting anything twice.
func TestDrainTwice(t *testing.T) {
	cl := build(t, lbFarm(0.5), Options{Seed: 1, Horizon: 5 * time.Second})
	cl.RunUntil(5 * time.Second)
	r := drain(t, cl)
	first := *r
	cl.Drain(time.Hour)
	if r.Cost != first.Cost || r.Completed != first.Completed || r.Throughput != first.Throughput || r.Little != first.Little {
		t.Errorf("second drain changed the results: cost %g -> %g", first.Cost, r.Cost)
	}
}

// TestObserveRemaining checks the remaining-work figure (the Distr-LB l_j)
// between events: it must be current, not as of the last event.
func TestObserveRemaining(t *testing.T) {
	cfg := &Config{
		Services: []Service{{Name: "s", Speed: 2}},
		Classes:  []Class{{Name: "c", Call: Call{Service: "s", CPU: det(1), IO: det(1), Phases: 2}}},
		Sources:  []Source{{Name: "src", Class: "c", Arrivals: poisson(1)}},
	}
	cl := build(t, cfg, Options{Seed: 1})
	feed(cl, 0, 0, 0)
	// Two calls, each 0.5 then 0.5 core-seconds of CPU at speed 2: the first
	// phases end at 0.5 s; at 0.1 s each has 0.5-0.1 left of its first phase
	// and 0.5 of its second: 1.8 work units / (1 core x speed 2) = 0.9 s.
	for _, tc := range []struct {
		at   time.Duration
		want float64
	}{{sec(0.1), 0.9}, {sec(0.3), 0.7}, {sec(0.75), 0.5}} {
		s := observe(cl, tc.at)
		if got := svcStats(t, s, "s").Instances[0].Remaining; math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("at %v: remaining %g s, want %g", tc.at, got, tc.want)
		}
	}
	drain(t, cl)
}

// TestObserveClassesAndQuantiles checks the per-class telemetry (what the
// ingress sees of each route) and the latency quantiles of services and
// classes, on a deterministic schedule.
func TestObserveClassesAndQuantiles(t *testing.T) {
	cfg := &Config{
		Services: []Service{{Name: "s", CPU: 64}},
		Classes: []Class{
			{Name: "fast", Call: Call{Service: "s", CPU: det(0.1)}},
			{Name: "slow", Timeout: time.Second, Call: Call{Service: "s", CPU: det(2)}},
		},
		Sources: []Source{
			{Name: "a", Class: "fast", Arrivals: poisson(1)},
			{Name: "b", Class: "slow", Arrivals: poisson(1)},
		},
	}
	cl := build(t, cfg, Options{Seed: 1})
	var at []time.Duration
	for i := 0; i < 9; i++ {
		at = append(at, sec(0.1*float64(i)))
	}
	feed(cl, 0, at...)
	feed(cl, 1, sec(0.5))
	s := observe(cl, sec(4))
	fast, slow := s.Classes[0], s.Classes[1]
	if fast.Name != "fast" || fast.Arrivals != 9 || fast.Completions != 9 || math.Abs(fast.Latency.Mean()-0.1) > 1e-9 {
		t.Errorf("fast: %+v", fast)
	}
	if q := fast.P95; math.Abs(q/0.1-1) > 1.0/32 {
		t.Errorf("fast p95 %g, want 0.1 within a bucket", q)
	}
	if slow.Arrivals != 1 || slow.Completions != 0 || slow.Failures.Timeout != 1 || slow.Latency.Count != 0 {
		t.Errorf("slow: %+v", slow)
	}
	// The service sees 9 calls of 0.1 s and the slow one of 2 s (the client
	// gave up, the service did not): p50 0.1, p95 2.
	st := svcStats(t, s, "s")
	if st.Completions != 10 || math.Abs(st.P50/0.1-1) > 1.0/32 || math.Abs(st.P95/2-1) > 1.0/32 {
		t.Errorf("service: %d completions, p50 %g, p95 %g", st.Completions, st.P50, st.P95)
	}
	s = observe(cl, sec(5))
	if c := s.Classes[0]; c.Arrivals != 0 || c.Completions != 0 || c.P50 != 0 || c.LatencyHist.Count() != 0 {
		t.Errorf("the next period is not empty: %+v", c)
	}
}
