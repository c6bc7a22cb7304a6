package cluster

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/workload"
)

// checkInvariants verifies the bookkeeping that every event must preserve.
func checkInvariants(cl *Cluster) error {
	nodeCPU := map[*node]float64{}
	for _, s := range cl.services {
		alloc := 0.0
		for j, in := range s.slots {
			for _, p := range s.lbs {
				if p.view.InFlight[j] < 0 {
					return fmt.Errorf("%s slot %d: lb %s in flight %d", s.name, j, p.name, p.view.InFlight[j])
				}
				if in == nil && (p.view.InFlight[j] != 0 || p.view.Up[j]) {
					return fmt.Errorf("%s free slot %d: lb %s in flight %d, up %v", s.name, j, p.name, p.view.InFlight[j], p.view.Up[j])
				}
				ready := in != nil && in.state == stReady
				if a := p.adm; a != nil {
					up := ready && (a.hashing || p.view.InFlight[j] < a.max) // hashing: full backends stay up
					if a.ready[j] != ready || p.view.Up[j] != up || p.view.InFlight[j] > a.max {
						return fmt.Errorf("%s slot %d: lb %s ready %v (instance %v), up %v, in flight %d of %d", s.name, j, p.name, a.ready[j], ready, p.view.Up[j], p.view.InFlight[j], a.max)
					}
				} else if in != nil && p.view.Up[j] != ready {
					return fmt.Errorf("%s slot %d: up %v in state %d", s.name, j, p.view.Up[j], in.state)
				}
			}
			if in == nil {
				continue
			}
			if in.slot != j || in.admitted != len(in.calls) || in.admitted < 0 || in.queued() < 0 || in.transit < 0 {
				return fmt.Errorf("%s instance %d: slot %d/%d, admitted %d, tracked %d, queued %d, transit %d",
					s.name, in.id, in.slot, j, in.admitted, len(in.calls), in.queued(), in.transit)
			}
			for k, c := range in.calls {
				if c.aidx != k || !c.held || c.inst != in {
					return fmt.Errorf("%s instance %d: admitted call %d out of step", s.name, in.id, k)
				}
			}
			if allocated(in.state) {
				alloc += in.cpuLimit
			}
			if in.node != nil {
				nodeCPU[in.node] += in.cpuLimit
			}
			if (in.node == nil) != (in.state == stPending) && len(cl.nodes) > 0 {
				return fmt.Errorf("%s instance %d: state %d with node %v", s.name, in.id, in.state, in.node)
			}
		}
		for _, p := range s.lbs {
			if err := checkAdmission(p); err != nil {
				return err
			}
		}
		if math.Abs(s.allocCPU.Value()-alloc) > 1e-6 {
			return fmt.Errorf("%s: allocated %g cores, instances hold %g", s.name, s.allocCPU.Value(), alloc)
		}
	}
	for _, n := range cl.nodes {
		if math.Abs(n.usedCPU-nodeCPU[n]) > 1e-6 {
			return fmt.Errorf("node %s: used %g cores, instances hold %g", n.name, n.usedCPU, nodeCPU[n])
		}
	}
	return nil
}

// checkAdmission verifies an LB point's admission counters and queue: a
// call waits only while every ready backend is full, or under a hashing
// selector while its own backend (the selector's pick for its key) is.
func checkAdmission(p *lbPoint) error {
	a := p.adm
	if a == nil {
		return nil
	}
	var ready, open int
	for j := range a.ready {
		if a.ready[j] {
			ready++
		}
		if p.view.Up[j] {
			open++
		}
	}
	if ready != a.nReady || open != a.open {
		return fmt.Errorf("lb %s: %d ready, %d open, counted %d and %d", p.name, ready, open, a.nReady, a.open)
	}
	if a.waiting() > 0 && a.open > 0 && !a.hashing {
		return fmt.Errorf("lb %s: %d calls wait while %d backends have room", p.name, a.waiting(), a.open)
	}
	if a.waiting() > a.maxPending || a.head > len(a.queue) {
		return fmt.Errorf("lb %s: %d waiting of %d (head %d of %d)", p.name, a.waiting(), a.maxPending, a.head, len(a.queue))
	}
	for _, c := range a.queue[a.head:] {
		if c.at != atLBQueue || c.lbp != p || !c.ev.Pending() || c.slot >= 0 {
			return fmt.Errorf("lb %s: queued call at %d, slot %d, timeout pending %v", p.name, c.at, c.slot, c.ev.Pending())
		}
		if a.hashing { // ring-hash and maglev pick without side effects
			if j := p.sel.Select(&p.view, lb.Request{Key: c.key}); j >= 0 && p.view.InFlight[j] < a.max {
				return fmt.Errorf("lb %s: a call waits for backend %d, which has %d of %d in flight", p.name, j, p.view.InFlight[j], a.max)
			}
		}
	}
	return nil
}

// actionCfg is a small system with every lifecycle feature switched on:
// RTT, nodes, cold starts, queues, OOM kills, client, per-try and route
// timeouts with retries, an optional service (c, which brownout can cut),
// open-loop sources and closed-loop users.
func actionCfg() *Config {
	exp := func(m float64) workload.DistSpec { return workload.DistSpec{Dist: "exp", Mean: m} }
	return &Config{
		Locations: []Location{{Name: "x", RTT: map[string]time.Duration{"y": 3 * time.Millisecond}}, {Name: "y"}},
		Nodes:     []Node{{Name: "n", CPU: 4, Count: 2}, {Name: "m", Location: "y", CPU: 3, MemoryMB: 2000}},
		Services: []Service{
			{Name: "a", Replicas: 2, MaxReplicas: 6, ColdStart: 20 * time.Millisecond, Concurrency: 3, Queue: 2},
			{Name: "b", Location: "y", MemoryMB: 300, MemoryBaseMB: 100, MemoryPerCallMB: 40, OOMRestart: 30 * time.Millisecond, MinReplicas: 1,
				Route: Route{Timeout: 60 * time.Millisecond, PerTryTimeout: 25 * time.Millisecond, Retries: 2, RetryOn: []string{"timeout", "oom", "no_capacity"}}},
			{Name: "c", IOParallelism: 1, CPU: 0.5, ColdStart: 10 * time.Millisecond, Optional: true,
				Route: Route{PerTryTimeout: 15 * time.Millisecond, Retries: 1, RetryOn: []string{"timeout", "429"}}},
		},
		LBs: []LBPoint{{Name: "l1", Service: "a"}, {Name: "l2", Service: "a", Location: "y"}},
		Classes: []Class{{Name: "k", Timeout: 100 * time.Millisecond, Call: Call{Service: "a", CPU: exp(0.005), Stages: []Stage{
			{Calls: []Call{{Service: "b", CPU: exp(0.01), IO: exp(0.01), Phases: 2}, {Service: "c", IO: exp(0.01), Optional: true}}},
			{Choice: true, Calls: []Call{{Service: "c", CPU: exp(0.002), Optional: true}, {Service: "b", CPU: exp(0.002), Prob: 0.3}}},
		}}}},
		Sources: []Source{
			{Name: "s1", Class: "k", LB: "l1", Arrivals: poisson(150)},
			{Name: "s2", Class: "k", LB: "l2", Arrivals: poisson(100)},
			{Name: "users", Class: "k", Users: Users{Count: 5}, Think: exp(0.05)},
		},
	}
}

// runActions drives actionCfg with actions decoded from data, checking the
// invariants after every step, and that everything drains back to the pool.
func runActions(t *testing.T, data []byte, seed uint64) *Results {
	return runActionsOn(t, actionCfg(), []string{"lsq", "p2c", "wcmp", "oracle", "sed"}, data, seed)
}

// runActionsOn is runActions on cfg (actionCfg, changed), with one of
// policies at its LB points.
func runActionsOn(t *testing.T, cfg *Config, policies []string, data []byte, seed uint64) *Results {
	const horizon = 2 * time.Second
	cl, err := New(cfg, Options{Seed: seed, Horizon: horizon, Policy: policies[seed%uint64(len(policies))]})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[*call]bool{}
	cl.onStart = func(c *call) { seen[c] = true }
	svc := []string{"a", "b", "c"}
	for i := 0; i+2 < len(data) && cl.Now() < horizon; i += 3 {
		op, x, y := data[i], int(data[i+1]), data[i+2]
		cl.RunUntil(cl.Now() + time.Duration(y)*time.Millisecond)
		s := svc[x%3]
		var a control.Action
		switch op % 6 {
		case 0:
			a = control.SetReplicas{Service: s, Replicas: x % 7}
		case 1:
			a = control.SetResources{Service: s, CPU: float64(x%5) * 0.5, MemoryMB: float64(y%4) * 100}
		case 2:
			a = control.SetConcurrency{Service: s, Limit: x % 4}
		case 3:
			a = control.SetBrownout{Service: s, On: x%2 == 0}
		case 4:
			w := make([]float64, len(cl.lbs[x%2].view.Weights))
			for j := range w {
				w[j] = float64((x + j*int(y)) % 3)
			}
			a = control.SetWeights{LB: cl.lbs[x%2].name, Weights: w}
		case 5:
			var snap = observe(cl, cl.Now())
			_ = snap
			continue
		}
		_ = cl.Apply(cl.Now(), a) // errors are fine (e.g. resources that do not fit)
		if err := checkInvariants(cl); err != nil {
			t.Fatalf("after %T%+v at %v: %v", a, a, cl.Now(), err)
		}
	}
	cl.RunUntil(horizon)
	if err := checkInvariants(cl); err != nil {
		t.Fatalf("at the horizon: %v", err)
	}
	// Services scaled to zero leave requests failing, not stuck; let the
	// background work finish too.
	cl.Drain(time.Hour)
	cl.RunUntil(cl.Now() + time.Hour)
	r := cl.Results()
	if cl.InSystem() != 0 || !r.Little.OK() {
		t.Fatalf("%d requests stuck, little %+v", cl.InSystem(), r.Little)
	}
	if r.Completed+r.Failures.Total() != r.Arrivals || r.Latency.Count() != r.Completed {
		t.Fatalf("%d arrivals, %d completed, failures %+v, %d latencies", r.Arrivals, r.Completed, r.Failures, r.Latency.Count())
	}
	if err := checkInvariants(cl); err != nil {
		t.Fatalf("after draining: %v", err)
	}
	for _, s := range cl.services {
		for _, p := range s.lbs {
			if p.adm != nil && p.adm.waiting() != 0 {
				t.Fatalf("lb %s: %d calls still wait after draining", p.name, p.adm.waiting())
			}
		}
		for j, in := range s.slots {
			for _, p := range s.lbs {
				if p.view.InFlight[j] != 0 {
					t.Fatalf("%s slot %d: lb %s still counts %d in flight", s.name, j, p.name, p.view.InFlight[j])
				}
			}
			if in != nil && (in.admitted != 0 || in.queued() != 0 || in.transit != 0) {
				t.Fatalf("%s instance %d: %d admitted, %d queued, %d in transit after draining", s.name, in.id, in.admitted, in.queued(), in.transit)
			}
		}
	}
	pooled := map[*call]bool{}
	for _, c := range cl.free {
		pooled[c] = true
	}
	for c := range seen {
		if !pooled[c] {
			t.Fatalf("a call never went back to the pool (%d calls seen, %d pooled)", len(seen), len(pooled))
		}
	}
	return r
}

// actionScripts are fixed action scripts (see runActions) that retry and
// degrade requests.
var actionScripts = []string{
	"",
	"\x00\x05\x10\x00\x01\x10\x01\x03\x20\x05\x00\x30\x00\x00\x40\x00\x06\x10",
	"\x01\x01\x00\x01\x04\x03\x02\x00\x10\x02\x03\x10\x03\x00\x05\x04\x01\x07\x04\x02\x09\x00\x03\x50",
	"\x00\x06\x02\x00\x00\x02\x00\x03\x02\x00\x04\x02\x01\x02\x01\x00\x05\x30\x00\x02\x30",
}

// TestActionsInvariants runs a few fixed action scripts, which retry and
// degrade requests.
func TestActionsInvariants(t *testing.T) {
	var retries, degraded int64
	for i, script := range actionScripts {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			for seed := uint64(0); seed < 5; seed++ {
				r := runActions(t, []byte(script), seed)
				retries += r.Retries()
				degraded += r.Degraded
			}
		})
	}
	if retries == 0 || degraded == 0 {
		t.Errorf("%d retries, %d degraded requests: the scripts should exercise both", retries, degraded)
	}
}

// FuzzActions drives the system with random actions and checks the
// bookkeeping invariants after each.
func FuzzActions(f *testing.F) {
	f.Add([]byte("\x00\x05\x10\x01\x01\x10\x01\x03\x20"), uint64(1))
	f.Add([]byte("\x01\x01\x00\x01\x04\x03\x02\x00\x10\x02\x03\x10"), uint64(3))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		if len(data) > 300 {
			return
		}
		runActions(t, data, seed)
	})
}
