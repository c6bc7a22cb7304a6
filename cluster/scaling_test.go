package cluster

import (
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
)

// lbCfg is one service behind an explicit LB point "lb" (so the snapshot
// shows per-backend traffic) with deterministic calls of cpu core-seconds.
func lbCfg(svc Service, cpu float64) *Config {
	return &Config{
		Services: []Service{svc},
		LBs:      []LBPoint{{Name: "lb", Service: svc.Name}},
		Classes:  []Class{{Name: "c", Call: Call{Service: svc.Name, CPU: det(cpu)}}},
		Sources:  []Source{{Name: "src", Class: "c", LB: "lb", Arrivals: poisson(1)}},
	}
}

func apply(t *testing.T, cl *Cluster, a control.Action) {
	t.Helper()
	if err := cl.Apply(cl.Now(), a); err != nil {
		t.Fatal(err)
	}
}

// TestColdStart checks that an instance added by SetReplicas serves only
// after cold_start: until then the LB point sends it nothing.
func TestColdStart(t *testing.T) {
	cl := build(t, lbCfg(Service{Name: "s", ColdStart: 5 * time.Second, MaxReplicas: 3}, 0.25), Options{Seed: 1})
	feed(cl, 0, sec(11), sec(12), sec(13), sec(15.5), sec(16.5))
	cl.RunUntil(sec(10))
	apply(t, cl, control.SetReplicas{Service: "s", Replicas: 2})
	s := observe(cl, sec(14.999))
	if st := svcStats(t, s, "s"); st.Replicas != 2 || st.Ready != 1 {
		t.Errorf("during the cold start: replicas %d, ready %d; want 2, 1", st.Replicas, st.Ready)
	}
	if b := s.LBs[0].Backends; b[0].Sent != 3 || b[1].Sent != 0 {
		t.Errorf("sent %d, %d during the cold start; want 3, 0", b[0].Sent, b[1].Sent)
	}
	s = observe(cl, sec(15))
	if st := svcStats(t, s, "s"); st.Ready != 2 {
		t.Errorf("after the cold start: ready %d, want 2", st.Ready)
	}
	s = observe(cl, sec(20))
	if b := s.LBs[0].Backends; b[0].Sent+b[1].Sent != 2 || b[1].Sent == 0 {
		t.Errorf("sent %d, %d after the cold start; want the new instance used", b[0].Sent, b[1].Sent)
	}
	r := drain(t, cl)
	if r.Completed != 5 || r.Failures.Total() != 0 {
		t.Errorf("completed %d, failures %+v", r.Completed, r.Failures)
	}
}

// TestReplicaBounds checks that SetReplicas is clamped to min/max replicas.
func TestReplicaBounds(t *testing.T) {
	cl := build(t, lbCfg(Service{Name: "s", Replicas: 2, MinReplicas: 1, MaxReplicas: 3}, 0.25), Options{Seed: 1})
	for _, tc := range []struct{ ask, want int }{{0, 1}, {10, 3}, {2, 2}, {-5, 1}} {
		apply(t, cl, control.SetReplicas{Service: "s", Replicas: tc.ask})
		if n, _ := cl.services[0].replicas(); n != tc.want {
			t.Errorf("asked %d: %d replicas, want %d", tc.ask, n, tc.want)
		}
	}
	if err := cl.Apply(cl.Now(), control.SetReplicas{Service: "nope", Replicas: 1}); err == nil {
		t.Error("unknown service: no error")
	}
}

// TestScaleDownDrains checks that a removed instance finishes its admitted
// calls (and calls already on their way across an RTT) before it goes,
// receiving nothing new meanwhile.
func TestScaleDownDrains(t *testing.T) {
	cfg := lbCfg(Service{Name: "s", Replicas: 2, Location: "x"}, 10)
	cfg.Locations = []Location{{Name: "x", RTT: map[string]time.Duration{"y": time.Second}}, {Name: "y"}}
	cfg.LBs[0].Location = "y"
	cl := build(t, cfg, Options{Seed: 1})
	fin := record(cl)
	// rr: the first two calls go to instances 0 and 1 and are on their way
	// until 1.5 s when instance 0, idle, is picked for removal at 1.2 s.
	feed(cl, 0, sec(1), sec(1), sec(3))
	cl.RunUntil(sec(1.2))
	apply(t, cl, control.SetReplicas{Service: "s", Replicas: 1})
	if in := cl.services[0].slots[0]; in == nil || in.state != stTerminating {
		t.Fatalf("instance 0 should be draining")
	}
	s := observe(cl, sec(5))
	if st := svcStats(t, s, "s"); st.Replicas != 1 || st.Ready != 1 || len(st.Instances) != 2 {
		t.Errorf("draining: %+v", st)
	}
	if b := s.LBs[0].Backends; b[0].Sent != 1 || b[1].Sent != 2 {
		t.Errorf("sent %d, %d; want the call at 3 s on instance 1", b[0].Sent, b[1].Sent)
	}
	r := drain(t, cl)
	if r.Completed != 3 || r.Failures.Total() != 0 {
		t.Errorf("completed %d, failures %+v: a draining instance lost calls", r.Completed, r.Failures)
	}
	// Instance 0 serves its call alone: 10 s plus the RTT.
	if got := (*fin)[0].latency(); got != sec(11) {
		t.Errorf("first latency %v, want 11s", got)
	}
	if cl.services[0].slots[0] != nil {
		t.Error("drained instance is still there")
	}
}

// TestNodeCapacity checks that an instance that does not fit on a node waits
// (pending) until room frees, then cold-starts.
func TestNodeCapacity(t *testing.T) {
	cfg := &Config{
		Nodes: []Node{{Name: "n", CPU: 2}},
		Services: []Service{
			{Name: "a", CPU: 1},
			{Name: "b", CPU: 1, ColdStart: time.Second},
		},
		Classes: []Class{{Name: "c", Call: Call{Service: "a", CPU: det(3)}}},
		Sources: []Source{{Name: "src", Class: "c", Arrivals: poisson(1)}},
	}
	cl := build(t, cfg, Options{Seed: 1})
	feed(cl, 0, 0)
	apply(t, cl, control.SetReplicas{Service: "b", Replicas: 2})
	if in := cl.services[1].slots[1]; in.state != stPending {
		t.Fatalf("second b instance: state %d, want pending", in.state)
	}
	cl.RunUntil(sec(1))
	apply(t, cl, control.SetReplicas{Service: "a", Replicas: 0})
	for _, tc := range []struct {
		at    time.Duration
		ready int
	}{{sec(2.999), 1}, {sec(3.999), 1}, {sec(4), 2}} {
		s := observe(cl, tc.at)
		if st := svcStats(t, s, "b"); st.Replicas != 2 || st.Ready != tc.ready {
			t.Errorf("at %v: b replicas %d ready %d, want 2, %d", tc.at, st.Replicas, st.Ready, tc.ready)
		}
	}
	if n := cl.nodes[0]; n.usedCPU != 2 {
		t.Errorf("node uses %g cores, want 2", n.usedCPU)
	}
	r := drain(t, cl)
	if r.Completed != 1 {
		t.Errorf("a's call was lost: %+v", r.Failures)
	}
}
