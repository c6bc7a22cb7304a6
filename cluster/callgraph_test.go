package cluster

import (
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
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

// TestBrownout checks that brownout of the caller cuts its optional calls
// (and only those) and that turning it off restores them.
func TestBrownout(t *testing.T) {
	root := Call{Service: "a", CPU: det(0.125), Stages: []Stage{
		{Calls: []Call{{Service: "b", CPU: det(0.5), Optional: true}, {Service: "c", CPU: det(0.25)}}},
		{Choice: true, Calls: []Call{{Service: "d", CPU: det(0.25), Optional: true}}},
	}}
	cl := build(t, graph(root), Options{Seed: 1})
	fin := record(cl)
	feed(cl, 0, sec(1), sec(3), sec(5))
	cl.RunUntil(sec(2))
	if err := cl.Apply(cl.Now(), control.SetBrownout{Service: "a", On: true}); err != nil {
		t.Fatal(err)
	}
	cl.RunUntil(sec(4))
	if err := cl.Apply(cl.Now(), control.SetBrownout{Service: "a", On: false}); err != nil {
		t.Fatal(err)
	}
	drain(t, cl)
	want := []time.Duration{sec(0.875), sec(0.375), sec(0.875)}
	for i, d := range *fin {
		if !near(d.latency(), want[i], 2) || d.fail != failNone {
			t.Errorf("request %d: latency %v fail %d, want %v", i, d.latency(), d.fail, want[i])
		}
	}
	s := observe(cl, cl.Now())
	for svc, n := range map[string]int64{"a": 3, "b": 2, "c": 3, "d": 2} {
		if got := svcStats(t, s, svc).Arrivals; got != n {
			t.Errorf("%s: %d calls, want %d", svc, got, n)
		}
	}
	if err := cl.Apply(cl.Now(), control.SetBrownout{Service: "zz"}); err == nil {
		t.Error("brownout of an unknown service: no error")
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
		{"optional rejected does not", Call{Service: "a", Stages: []Stage{
			{Calls: []Call{{Service: "b", CPU: det(1), Optional: true}}},
			{Calls: []Call{{Service: "c", CPU: det(0.5)}}},
		}}, 0, 2, sec(0.5)},
		{"required under optional does not", Call{Service: "a", Stages: []Stage{
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
