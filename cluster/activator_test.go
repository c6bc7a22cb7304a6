package cluster

import (
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
)

// TestActivatorHoldsUntilReady: with the service scaled to zero, the
// activator holds calls (up to its capacity; the rest get 503) and sends
// them when an instance is ready; a call held longer than its timeout gets
// 503, one whose caller's per-try timeout runs out first times out.
func TestActivatorHoldsUntilReady(t *testing.T) {
	svc := Service{Name: "s", MaxReplicas: 2, ColdStart: 2 * time.Second, Activator: &Activator{Capacity: 2, Timeout: 10 * time.Second}}
	cl := build(t, lbCfg(svc, 0.25), Options{Seed: 1})
	fin := record(cl)
	apply(t, cl, control.SetReplicas{Service: "s", Replicas: 0})
	feed(cl, 0, sec(1), sec(1.5), sec(2), sec(20))
	s := observe(cl, sec(4))
	if st := svcStats(t, s, "s"); st.Ready != 0 || st.Queued != 2 || st.Failures.NoCapacity != 1 {
		t.Fatalf("at 4 s: ready %d, queued %d, refused %d; want 0 ready, 2 held, 1 refused (capacity 2)", st.Ready, st.Queued, st.Failures.NoCapacity)
	}
	apply(t, cl, control.SetReplicas{Service: "s", Replicas: 1}) // ready at 6 s
	cl.RunUntil(sec(10))
	apply(t, cl, control.SetReplicas{Service: "s", Replicas: 0})
	r := drain(t, cl)
	want := []struct {
		end  time.Duration
		fail uint8
	}{{sec(2), failNoCapacity}, {sec(6.5), failNone}, {sec(6.5), failNone}, {sec(30), failNoCapacity}}
	if len(*fin) != len(want) {
		t.Fatalf("%d requests finished, want %d", len(*fin), len(want))
	}
	for i, d := range *fin {
		if d.end != want[i].end || d.fail != want[i].fail {
			t.Errorf("request %d: ended at %v with failure %d; want %v, %d", i, d.end, d.fail, want[i].end, want[i].fail)
		}
	}
	if r.Completed != 2 {
		t.Errorf("completed %d, want 2", r.Completed)
	}

	svc.Route = Route{PerTryTimeout: 3 * time.Second}
	cl = build(t, lbCfg(svc, 0.25), Options{Seed: 1})
	fin = record(cl)
	apply(t, cl, control.SetReplicas{Service: "s", Replicas: 0})
	feed(cl, 0, sec(1))
	r = drain(t, cl)
	if len(*fin) != 1 || (*fin)[0].end != sec(4) || (*fin)[0].fail != failTimeout || r.Failures.Timeout != 1 {
		t.Errorf("held past the caller's per-try timeout: %+v, failures %+v; want a timeout at 4 s", *fin, r.Failures)
	}
}
