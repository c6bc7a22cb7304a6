package cluster

import (
	"testing"
	"time"

	"github.com/shoal-project/shoal/workload"
)

type recordFeedback struct {
	sent []int
	done []time.Duration // tct
	dur  []time.Duration
}

func (r *recordFeedback) Sent(now time.Duration, j int) { r.sent = append(r.sent, j) }
func (r *recordFeedback) Done(now time.Duration, j int, d, tct time.Duration) {
	r.dur = append(r.dur, d)
	r.done = append(r.done, tct)
}

// TestFeedbackSeesOwnTraffic: an LB point's feedback hears exactly its own
// requests, with task duration ending at the instance's answer and the
// completion time at the LB (RTT later).
func TestFeedbackSeesOwnTraffic(t *testing.T) {
	cfg := &Config{
		Locations: []Location{{Name: "a", RTT: map[string]time.Duration{"b": 20 * time.Millisecond}}, {Name: "b"}},
		Services:  []Service{{Name: "s", Location: "b", Replicas: 2}},
		Classes:   []Class{{Name: "c", Call: Call{Service: "s", CPU: workload.DistSpec{Dist: "det", Mean: 0.01}}}},
		LBs:       []LBPoint{{Name: "lb0", Service: "s", Location: "a"}, {Name: "lb1", Service: "s", Location: "a"}},
		Sources: []Source{
			{Name: "x", Class: "c", LB: "lb0", Arrivals: workload.ProcessSpec{Kind: "poisson", Rate: 5}},
			{Name: "y", Class: "c", LB: "lb1", Arrivals: workload.ProcessSpec{Kind: "poisson", Rate: 5}},
		},
	}
	cl, err := New(cfg, Options{Seed: 3, Horizon: time.Minute, Policy: "rr"})
	if err != nil {
		t.Fatal(err)
	}
	var fb recordFeedback
	if err := cl.SetFeedback("lb0", &fb); err != nil {
		t.Fatal(err)
	}
	if err := cl.SetFeedback("nope", &fb); err == nil {
		t.Fatal("feedback on an unknown lb")
	}
	cl.RunUntil(time.Minute)
	cl.Drain(time.Minute)
	src := cl.sources[0].arrived
	if int64(len(fb.sent)) != src || len(fb.done) != len(fb.sent) {
		t.Fatalf("sent %d, done %d, lb0's source made %d", len(fb.sent), len(fb.done), src)
	}
	for i := range fb.done {
		if fb.done[i]-fb.dur[i] != 10*time.Millisecond || fb.dur[i] < 20*time.Millisecond {
			t.Fatalf("request %d: duration %v, tct %v (want tct = duration + the 10 ms way back)", i, fb.dur[i], fb.done[i])
		}
	}
}
