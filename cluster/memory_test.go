package cluster

import (
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
)

func memCfg(replicas int) *Config {
	return &Config{
		Services: []Service{{Name: "s", Replicas: replicas, CPU: 8, MemoryMB: 100, MemoryBaseMB: 50, MemoryPerCallMB: 20, OOMRestart: 2 * time.Second}},
		Classes:  []Class{{Name: "c", Call: Call{Service: "s", CPU: det(1)}}},
		Sources:  []Source{{Name: "src", Class: "c", Arrivals: poisson(1)}},
	}
}

// TestOOMKill checks that memory_base + calls x memory_per_call over the
// limit kills every call at the instance with OOM, that the instance is down
// in the LB view until it restarts after oom_restart, and the counts in
// Results and the snapshot.
func TestOOMKill(t *testing.T) {
	cl := build(t, memCfg(1), Options{Seed: 1})
	fin := record(cl)
	// Two calls use 90 MB; the third needs 110 MB > 100 MB.
	feed(cl, 0, sec(1), sec(1), sec(1.5), sec(2), sec(3.5))
	s := observe(cl, sec(1.25))
	if st := svcStats(t, s, "s"); st.MemoryUse != 90 || st.InFlight != 2 {
		t.Fatalf("memory %g MB, in flight %d; want 90, 2", st.MemoryUse, st.InFlight)
	}
	s = observe(cl, sec(2.5))
	st := svcStats(t, s, "s")
	if st.Failures.OOM != 3 || st.Failures.NoCapacity != 1 || st.Ready != 0 || st.Replicas != 1 || st.MemoryUse != 0 {
		t.Errorf("after the kill: %+v", st)
	}
	if up := cl.services[0].lb.view.Up[0]; up {
		t.Error("killed instance is up in the LB view")
	}
	r := drain(t, cl)
	if r.Failures.OOM != 3 || r.Failures.NoCapacity != 1 || r.Completed != 1 || r.OOMKills != 1 {
		t.Errorf("failures %+v, completed %d, kills %d; want 3 OOM, 1 no capacity, 1 completed, 1 kill", r.Failures, r.Completed, r.OOMKills)
	}
	// Finishing order: the three killed at 1.5 s, the refused one at 2 s,
	// the one after the restart (3 s) served normally.
	want := []struct {
		end  time.Duration
		fail uint8
	}{{sec(1.5), failOOM}, {sec(1.5), failOOM}, {sec(1.5), failOOM}, {sec(2), failNoCapacity}, {sec(4.5), failNone}}
	for i, d := range *fin {
		if d.end != want[i].end || d.fail != want[i].fail {
			t.Errorf("request %d: ended %v with %d, want %v with %d", i, d.end, d.fail, want[i].end, want[i].fail)
		}
	}
}

// TestOOMOtherInstanceServes checks that while one instance restarts the
// LB point sends everything to the other.
func TestOOMOtherInstanceServes(t *testing.T) {
	cl := build(t, memCfg(2), Options{Seed: 1})
	// rr: 0,1,0,1,0 -> instance 0 gets the third call at 1 s and dies.
	feed(cl, 0, sec(1), sec(1), sec(1), sec(1), sec(1), sec(2), sec(2.1))
	cl.RunUntil(sec(1))
	if up := cl.services[0].lb.view.Up; up[0] || !up[1] {
		t.Fatalf("up %v, want [false true]", up)
	}
	s := observe(cl, sec(2.5))
	in := svcStats(t, s, "s").Instances
	if in[0].InFlight != 0 || in[1].InFlight != 2 || in[0].Ready {
		t.Errorf("instances %+v: want the second to hold the two later calls", in)
	}
	cl.RunUntil(sec(3))
	if up := cl.services[0].lb.view.Up; !up[0] || !up[1] {
		t.Fatalf("up %v after the restart, want both", up)
	}
	r := drain(t, cl)
	if r.Failures.OOM != 3 || r.Completed != 4 {
		t.Errorf("failures %+v, completed %d; want 3 OOM, 4 completed", r.Failures, r.Completed)
	}
}

// TestOOMWhileWaitingForChildren checks that a call killed while its
// children run fails at the kill, not when they return; the children finish
// in the background and every call object goes back to the pool.
func TestOOMWhileWaitingForChildren(t *testing.T) {
	cfg := &Config{
		Services: []Service{
			{Name: "a", MemoryMB: 100, MemoryBaseMB: 50, MemoryPerCallMB: 20},
			{Name: "b", CPU: 8},
		},
		Classes: []Class{{Name: "c", Call: Call{Service: "a", Stages: []Stage{
			{Calls: []Call{{Service: "b", CPU: det(2)}, {Service: "b", CPU: det(1)}}},
		}}}},
		Sources: []Source{{Name: "src", Class: "c", Arrivals: poisson(1)}},
	}
	cl := build(t, cfg, Options{Seed: 1})
	fin := record(cl)
	seen := map[*call]bool{}
	cl.onStart = func(c *call) { seen[c] = true }
	feed(cl, 0, sec(1), sec(1), sec(1.5))
	cl.RunUntil(sec(1.5))
	if cl.InSystem() != 0 {
		t.Fatalf("%d requests in system after the kill", cl.InSystem())
	}
	for i, d := range *fin {
		if d.end != sec(1.5) || d.fail != failOOM {
			t.Errorf("request %d ended %v with %d, want 1.5s with OOM", i, d.end, d.fail)
		}
	}
	s := observe(cl, sec(10))
	if b := svcStats(t, s, "b"); b.Completions != 4 || b.Failures.Total() != 0 {
		t.Errorf("b: %d completions, failures %+v; want the 4 children of the first two requests to finish", b.Completions, b.Failures)
	}
	r := drain(t, cl)
	if r.Failures.OOM != 3 {
		t.Errorf("failures %+v", r.Failures)
	}
	pooled := map[*call]bool{}
	for _, c := range cl.free {
		pooled[c] = true
	}
	for c := range seen {
		if !pooled[c] {
			t.Errorf("call %p never went back to the pool", c)
		}
	}
}

// TestSetResourcesMemoryKills checks that lowering the memory limit below
// the use kills the instance at once, with its queued calls.
func TestSetResourcesMemoryKills(t *testing.T) {
	cfg := memCfg(1)
	cfg.Services[0].Concurrency = 1
	cfg.Services[0].Queue = -1
	cl := build(t, cfg, Options{Seed: 1})
	feed(cl, 0, sec(1), sec(1), sec(1))
	cl.RunUntil(sec(1.5))
	if err := cl.Apply(cl.Now(), control.SetResources{Service: "s", MemoryMB: 60}); err != nil {
		t.Fatal(err)
	}
	s := observe(cl, cl.Now())
	if st := svcStats(t, s, "s"); st.Failures.OOM != 3 || st.MemoryLimit != 60 || st.Queued != 0 {
		t.Errorf("after the resize: %+v", st)
	}
	if err := cl.Apply(cl.Now(), control.SetResources{Service: "s", MemoryMB: -1}); err == nil {
		t.Error("negative memory: no error")
	}
	r := drain(t, cl)
	if r.Failures.OOM != 3 {
		t.Errorf("failures %+v", r.Failures)
	}
}
