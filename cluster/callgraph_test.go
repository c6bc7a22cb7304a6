package cluster

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/workload"
)

// graph is a configuration whose class "c" executes root on services a..e
// (one instance each, plenty of cores so calls do not contend).
func graph(root Call) *Config {
	var svcs []Service
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		svcs = append(svcs, Service{Name: n, CPU: 64})
	}
	return &Config{
		Services: svcs,
		Classes:  []Class{{Name: "c", Call: root}},
		Sources:  []Source{{Name: "src", Class: "c", Arrivals: poisson(1)}},
	}
}

// TestCallGraphLatency checks response times of deterministic call graphs
// against hand-computed sums: stages add up, a parallel stage costs the
// maximum of its calls, and each call's own work comes first.
func TestCallGraphLatency(t *testing.T) {
	for _, tc := range []struct {
		name string
		root Call
		want time.Duration
	}{
		{"single", Call{Service: "a", CPU: det(0.25)}, sec(0.25)},
		{"cpu then io", Call{Service: "a", CPU: det(0.25), IO: det(0.5)}, sec(0.75)},
		{"sequential stages", Call{Service: "a", CPU: det(0.125), Stages: []Stage{
			{Calls: []Call{{Service: "b", CPU: det(0.25)}}},
			{Calls: []Call{{Service: "c", CPU: det(0.5)}}},
		}}, sec(0.875)},
		{"parallel fan-out = own + max", Call{Service: "a", CPU: det(0.25), Stages: []Stage{
			{Calls: []Call{{Service: "b", CPU: det(0.5)}, {Service: "c", CPU: det(0.125)}, {Service: "d", IO: det(0.375)}}},
		}}, sec(0.75)},
		{"nested: own + max(b+max(d,e), c)", Call{Service: "a", CPU: det(0.125), Stages: []Stage{
			{Calls: []Call{
				{Service: "b", CPU: det(0.25), Stages: []Stage{{Calls: []Call{{Service: "d", CPU: det(0.5)}, {Service: "e", CPU: det(0.125)}}}}},
				{Service: "c", CPU: det(0.625)},
			}},
			{Calls: []Call{{Service: "e", IO: det(0.0625)}}},
		}}, sec(0.125 + 0.75 + 0.0625)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := build(t, graph(tc.root), Options{Seed: 1})
			fin := record(cl)
			feed(cl, 0, sec(1), sec(10))
			r := drain(t, cl)
			if len(*fin) != 2 || r.Completed != 2 {
				t.Fatalf("finished %d, completed %d, want 2", len(*fin), r.Completed)
			}
			for _, d := range *fin {
				if !near(d.latency(), tc.want, 2) {
					t.Errorf("latency %v, want %v", d.latency(), tc.want)
				}
			}
		})
	}
}

// TestProbabilisticCalls checks that a call with prob p is made in a
// fraction p of requests, and that a choice stage picks each branch with
// probability proportional to its weight (within 4 standard deviations).
func TestProbabilisticCalls(t *testing.T) {
	root := Call{Service: "a", CPU: det(1e-4), Stages: []Stage{
		{Calls: []Call{{Service: "b", CPU: det(1e-4), Prob: 0.3}}},
		{Choice: true, Calls: []Call{
			{Service: "c", CPU: det(1e-4), Prob: 0.2},
			{Service: "d", CPU: det(1e-4), Prob: 0.6},
			{Service: "e", CPU: det(1e-4), Prob: 0.2},
		}},
	}}
	cfg := graph(root)
	cfg.Sources[0].Arrivals = poisson(100)
	cl := build(t, cfg, Options{Seed: 7, Horizon: 200 * time.Second})
	cl.RunUntil(200 * time.Second)
	r := drain(t, cl)
	var s = observe(cl, cl.Now())
	n := svcStats(t, s, "a").Arrivals
	if n != r.Arrivals || n < 15000 {
		t.Fatalf("root arrivals %d, results %d", n, r.Arrivals)
	}
	for _, w := range []struct {
		svc string
		p   float64
	}{{"b", 0.3}, {"c", 0.2}, {"d", 0.6}, {"e", 0.2}} {
		k := svcStats(t, s, w.svc).Arrivals
		t.Logf("%s: %d of %d calls (%.4f, want %.2f)", w.svc, k, n, float64(k)/float64(n), w.p)
		if !binomialOK(k, n, w.p, 4) {
			t.Errorf("%s called %d times of %d, want fraction %.2f", w.svc, k, n, w.p)
		}
	}
	// A choice stage makes exactly one call per request.
	if got := svcStats(t, s, "c").Arrivals + svcStats(t, s, "d").Arrivals + svcStats(t, s, "e").Arrivals; got != n {
		t.Errorf("choice stage made %d calls for %d requests", got, n)
	}
}

// TestBrownout checks callee-side brownout: calls to a browned-out optional
// service are skipped (in plain and choice stages), the request is degraded,
// not failed, turning it off restores the calls, and only optional services
// can be browned out.
func TestBrownout(t *testing.T) {
	root := Call{Service: "a", CPU: det(0.125), Stages: []Stage{
		{Calls: []Call{{Service: "b", CPU: det(0.5), Optional: true}, {Service: "c", CPU: det(0.25)}}},
		{Choice: true, Calls: []Call{{Service: "d", CPU: det(0.25), Optional: true}}},
	}}
	cfg := graph(root)
	cfg.Services[1].Optional, cfg.Services[3].Optional = true, true // b, d
	cl := build(t, cfg, Options{Seed: 1})
	fin := record(cl)
	feed(cl, 0, sec(1), sec(3), sec(5))
	cl.RunUntil(sec(2))
	apply(t, cl, control.SetBrownout{Service: "b", On: true})
	apply(t, cl, control.SetBrownout{Service: "d", On: true})
	s := observe(cl, sec(4))
	if b, d := svcStats(t, s, "b"), svcStats(t, s, "d"); b.Skipped != 1 || d.Skipped != 1 || !b.Brownout || !d.Brownout {
		t.Errorf("while browned out: b skipped %d (brownout %v), d skipped %d (brownout %v); want 1 each", b.Skipped, b.Brownout, d.Skipped, d.Brownout)
	}
	if a := svcStats(t, s, "a"); a.Degraded != 1 {
		t.Errorf("a answered %d degraded calls, want 1", a.Degraded)
	}
	if c := s.Classes[0]; c.Arrivals != 2 || c.Completions != 2 || c.Degraded != 1 {
		t.Errorf("class period: %d arrivals, %d completions, %d degraded; want 2, 2, 1", c.Arrivals, c.Completions, c.Degraded)
	}
	apply(t, cl, control.SetBrownout{Service: "b", On: false})
	apply(t, cl, control.SetBrownout{Service: "d", On: false})
	r := drain(t, cl)
	want := []time.Duration{sec(0.875), sec(0.375), sec(0.875)}
	for i, d := range *fin {
		if !near(d.latency(), want[i], 2) || d.fail != failNone || d.degraded != (i == 1) {
			t.Errorf("request %d: latency %v fail %d degraded %v, want %v, degraded only the second", i, d.latency(), d.fail, d.degraded, want[i])
		}
	}
	if r.Completed != 3 || r.Degraded != 1 || r.Classes[0].Degraded != 1 || r.Failures.Total() != 0 {
		t.Errorf("completed %d, degraded %d (class %d), failures %+v; want 3, 1, 1, none", r.Completed, r.Degraded, r.Classes[0].Degraded, r.Failures)
	}
	s = observe(cl, cl.Now())
	for svc, n := range map[string]int64{"a": 1, "b": 1, "c": 1, "d": 1} {
		if got := svcStats(t, s, svc).Arrivals; got != n {
			t.Errorf("%s: %d calls after brownout, want %d", svc, got, n)
		}
	}
	if err := cl.Apply(cl.Now(), control.SetBrownout{Service: "c", On: true}); err == nil || !contains(err.Error(), `"c"`) {
		t.Errorf("brownout of a service that is not optional: %v", err)
	}
	if err := cl.Apply(cl.Now(), control.SetBrownout{Service: "zz"}); err == nil {
		t.Error("brownout of an unknown service: no error")
	}
}

// TestDegradedCountsAsViolation: with brownout as a cost, a request
// violates if it was slow or degraded, and one both slow and degraded
// counts once. The second of three requests is degraded and takes 0.375 s,
// the others 0.875 s (TestBrownout).
func TestDegradedCountsAsViolation(t *testing.T) {
	root := Call{Service: "a", CPU: det(0.125), Stages: []Stage{
		{Calls: []Call{{Service: "b", CPU: det(0.5), Optional: true}, {Service: "c", CPU: det(0.25)}}},
	}}
	for _, tc := range []struct {
		slo                                  time.Duration
		slow, slowDegraded, violations, both int64
	}{
		{sec(0.5), 2, 0, 2, 3}, // the degraded request was fast: it adds one
		{sec(0.3), 3, 1, 3, 3}, // it was slow too: it counts once
	} {
		cfg := graph(root)
		cfg.Services[1].Optional, cfg.SLO = true, tc.slo
		cl := build(t, cfg, Options{Seed: 1})
		feed(cl, 0, sec(1), sec(3), sec(5))
		cl.RunUntil(sec(2))
		apply(t, cl, control.SetBrownout{Service: "b", On: true})
		cl.RunUntil(sec(4))
		apply(t, cl, control.SetBrownout{Service: "b", On: false})
		r := drain(t, cl)
		c := r.Classes[0]
		if c.Slow != tc.slow || c.SlowDegraded != tc.slowDegraded || r.SLOViolations() != tc.violations || r.SLOViolationsOrDegraded() != tc.both {
			t.Errorf("SLO %v: slow %d, slow and degraded %d, violations %d, violations or degraded %d; want %d, %d, %d, %d",
				tc.slo, c.Slow, c.SlowDegraded, r.SLOViolations(), r.SLOViolationsOrDegraded(), tc.slow, tc.slowDegraded, tc.violations, tc.both)
		}
	}
}

// TestBrownoutKeepsCommonRandomNumbers checks that skipping a call leaves
// the demands of the others as they were: the calls to the services that
// are never browned out are the same, demand for demand, with and without
// brownout.
func TestBrownoutKeepsCommonRandomNumbers(t *testing.T) {
	exp := func(m float64) workload.DistSpec { return workload.DistSpec{Dist: "exp", Mean: m} }
	root := Call{Service: "a", CPU: exp(0.01), Stages: []Stage{
		{Calls: []Call{
			{Service: "b", CPU: exp(0.01), Optional: true, Prob: 0.5},
			{Service: "c", CPU: exp(0.01), Stages: []Stage{{Calls: []Call{{Service: "d", CPU: exp(0.01)}}}}},
			{Service: "b", Optional: true, Stages: []Stage{{Calls: []Call{{Service: "e", CPU: exp(0.01)}}}}},
		}},
		{Calls: []Call{{Service: "d", IO: exp(0.01)}}},
	}}
	run := func(brownout bool) []string {
		cfg := graph(root)
		cfg.Services[1].Optional = true
		cfg.Sources[0].Arrivals = poisson(50)
		cl := build(t, cfg, Options{Seed: 3, Horizon: 20 * time.Second})
		var calls []string
		cl.onStart = func(c *call) {
			if s := c.node.svc.name; s != "b" && s != "e" {
				calls = append(calls, fmt.Sprintf("%s %.17g %.17g", s, c.cpu, c.io))
			}
		}
		if brownout {
			cl.RunUntil(5 * time.Second)
			apply(t, cl, control.SetBrownout{Service: "b", On: true})
		}
		cl.RunUntil(20 * time.Second)
		r := drain(t, cl)
		if brownout != (r.Degraded > 0) {
			t.Errorf("brownout %v: %d degraded requests", brownout, r.Degraded)
		}
		slices.Sort(calls)
		return calls
	}
	a, b := run(false), run(true)
	if len(a) < 1000 || !slices.Equal(a, b) {
		t.Errorf("brownout changed the other calls: %d vs %d", len(a), len(b))
	}
}

// TestFailurePropagation checks which failures fail a request: a rejected
// required call does (and stops later stages: fail fast), a rejected
// optional call does not, and neither does a required call failing under an
// optional one.
func TestFailurePropagation(t *testing.T) {
	// Service b takes one call at a time and queues none: the second of two
	// simultaneous requests is rejected there.
	busyB := func(root Call) *Config {
		cfg := graph(root)
		cfg.Services[1].Concurrency = 1
		return cfg
	}
	for _, tc := range []struct {
		name      string
		root      Call
		fails     int64 // failed requests (of 2)
		cCalls    int64 // calls that reached c
		secondLat time.Duration
	}{
		{"required rejected fails the request, later stages skipped", Call{Service: "a", Stages: []Stage{
			{Calls: []Call{{Service: "b", CPU: det(1)}}},
			{Calls: []Call{{Service: "c", CPU: det(0.5)}}},
		}}, 1, 1, 0},
		{"optional rejected does not, but degrades it", Call{Service: "a", Stages: []Stage{
			{Calls: []Call{{Service: "b", CPU: det(1), Optional: true}}},
			{Calls: []Call{{Service: "c", CPU: det(0.5)}}},
		}}, 0, 2, sec(0.5)},
		{"required under optional does not, but degrades it", Call{Service: "a", Stages: []Stage{
			{Calls: []Call{{Service: "d", Optional: true, Stages: []Stage{{Calls: []Call{{Service: "b", CPU: det(1)}}}}}}},
			{Calls: []Call{{Service: "c", CPU: det(0.5)}}},
		}}, 0, 2, sec(0.5)},
		{"required under required does", Call{Service: "a", Stages: []Stage{
			{Calls: []Call{{Service: "d", Stages: []Stage{{Calls: []Call{{Service: "b", CPU: det(1)}}}}}}},
			{Calls: []Call{{Service: "c", CPU: det(0.5)}}},
		}}, 1, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := build(t, busyB(tc.root), Options{Seed: 1})
			fin := record(cl)
			feed(cl, 0, sec(1), sec(1))
			r := drain(t, cl)
			if r.Failures.Rejected != tc.fails || r.Failures.Total() != tc.fails || r.Completed != 2-tc.fails {
				t.Errorf("failures %+v, completed %d; want %d rejected", r.Failures, r.Completed, tc.fails)
			}
			if wantDeg := 1 - tc.fails; r.Degraded != wantDeg || r.Classes[0].Degraded != wantDeg {
				t.Errorf("%d degraded (class %d), want %d", r.Degraded, r.Classes[0].Degraded, wantDeg)
			}
			s := observe(cl, cl.Now())
			if got := svcStats(t, s, "c").Arrivals; got != tc.cCalls {
				t.Errorf("c got %d calls, want %d", got, tc.cCalls)
			}
			if got := svcStats(t, s, "b").Failures.Rejected; got != 1 {
				t.Errorf("b rejected %d, want 1", got)
			}
			// The request that lost at b finishes first.
			if first := (*fin)[0]; !near(first.latency(), tc.secondLat, 2) {
				t.Errorf("first finished after %v, want %v", first.latency(), tc.secondLat)
			}
		})
	}
}

// TestRTT checks that crossing locations adds exactly the round-trip time,
// split between the way there and back (odd nanoseconds included).
func TestRTT(t *testing.T) {
	for _, tc := range []struct {
		name string
		rtt  time.Duration
		src  string // source location
		want time.Duration
	}{
		{"a->b across 10ms", 10 * time.Millisecond, "x", sec(0.75) + 10*time.Millisecond},
		{"client across too", 10 * time.Millisecond, "y", sec(0.75) + 20*time.Millisecond},
		{"odd nanoseconds", 7, "y", sec(0.75) + 14},
		{"no rtt", 0, "y", sec(0.75)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &Config{
				Locations: []Location{{Name: "x", RTT: map[string]time.Duration{"y": tc.rtt}}, {Name: "y"}},
				Services:  []Service{{Name: "a", Location: "x"}, {Name: "b", Location: "y"}},
				Classes: []Class{{Name: "c", Call: Call{Service: "a", CPU: det(0.25), Stages: []Stage{
					{Calls: []Call{{Service: "b", CPU: det(0.5)}}}}}}},
				Sources: []Source{{Name: "src", Class: "c", Location: tc.src, Arrivals: poisson(1)}},
			}
			cl := build(t, cfg, Options{Seed: 1})
			fin := record(cl)
			feed(cl, 0, sec(1))
			drain(t, cl)
			if got := (*fin)[0].latency(); got != tc.want {
				t.Errorf("latency %v, want exactly %v", got, tc.want)
			}
		})
	}
}
