package cluster

import (
	"math"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/workload"
)

// probeRecorder sends every request to backend 0, probes it after each
// decision, and records the probes' answers and the piggybacked loads.
type probeRecorder struct {
	sent     []time.Duration
	answers  []lb.Load
	answered []time.Duration
	reported []lb.Load
}

func (r *probeRecorder) Select(*lb.View, lb.Request) int { return 0 }
func (r *probeRecorder) ProbeTargets(now time.Duration, _ *lb.View, dst []int) []int {
	r.sent = append(r.sent, now)
	return append(dst, 0)
}
func (r *probeRecorder) Probed(now time.Duration, j int, l lb.Load) {
	r.answered = append(r.answered, now)
	r.answers = append(r.answers, l)
}
func (r *probeRecorder) Reported(_ time.Duration, _ int, l lb.Load) {
	r.reported = append(r.reported, l)
}

func probeRun(t *testing.T, probeCPU float64) (*probeRecorder, *Results) {
	t.Helper()
	cfg := &Config{
		Locations: []Location{{Name: "a", RTT: map[string]time.Duration{"b": 20 * time.Millisecond}}, {Name: "b"}},
		Services:  []Service{{Name: "s", Location: "b", Replicas: 1, ProbeCPU: probeCPU}},
		Classes:   []Class{{Name: "c", Call: Call{Service: "s", CPU: workload.DistSpec{Dist: "det", Mean: 0.1}}}},
		LBs:       []LBPoint{{Name: "lb0", Service: "s", Location: "a"}},
		Sources:   []Source{{Name: "x", Class: "c", LB: "lb0", Arrivals: workload.ProcessSpec{Kind: "poisson", Rate: 1}}},
	}
	rec := &probeRecorder{}
	reg := lb.Classical()
	reg["rec"] = func(lb.Deps) (lb.Selector, error) { return rec, nil }
	cl, err := New(cfg, Options{Seed: 5, Horizon: 2 * time.Minute, Policy: "rec", Selectors: reg})
	if err != nil {
		t.Fatal(err)
	}
	cl.RunUntil(2 * time.Minute)
	cl.Drain(time.Minute)
	return rec, cl.Results()
}

// TestProbesAreMessages: a probe takes the RTT plus its CPU at the server,
// answers with the server's requests in flight and the median latency it
// has seen at that RIF, costs the server its CPU, and responses carry the
// server's load.
func TestProbesAreMessages(t *testing.T) {
	rec, res := probeRun(t, 0.0001)
	if len(rec.answers) != len(rec.sent) || res.Probes != int64(len(rec.sent)) || len(rec.sent) != int(res.ArrivedAll) {
		t.Fatalf("%d probes sent, %d answered, %d counted, %d requests: want all equal", len(rec.sent), len(rec.answers), res.Probes, res.ArrivedAll)
	}
	idle, busy := 0, 0
	for i, l := range rec.answers {
		if took := rec.answered[i] - rec.sent[i]; took < 20*time.Millisecond+100*time.Microsecond {
			t.Fatalf("probe %d answered after %v: want the RTT plus 100 µs of CPU at least", i, took)
		}
		// Requests take 100 ms of CPU; one that finds the server idle
		// mostly stays alone at 10% load (a later arrival would share
		// the CPU), so the median at RIF 0 is 100 ms and a bit.
		if l.RIF == 0 && i > 10 {
			idle++
			if l.Latency < 100*time.Millisecond || l.Latency > 101*time.Millisecond {
				t.Errorf("probe %d: latency estimate %v at RIF 0, want 100 ms", i, l.Latency)
			}
		}
		if l.RIF > 0 {
			busy++
		}
	}
	if idle == 0 || busy == 0 {
		t.Errorf("answers at RIF 0: %d, above: %d; want both", idle, busy)
	}
	if len(rec.reported) != int(res.Completed) {
		t.Errorf("%d loads reported on %d responses", len(rec.reported), res.Completed)
	}
	for i, l := range rec.reported {
		if l.Service < 100*time.Millisecond {
			t.Fatalf("response %d: service time %v, want at least the 100 ms of CPU", i, l.Service)
		}
	}
	// The probes' CPU is real work: ten times more per probe shows up in
	// the busy time, on the same arrivals.
	_, heavy := probeRun(t, 0.01)
	_, _, busy1 := res.Resources()
	_, _, busy2 := heavy.Resources()
	if want := 0.0099 * float64(res.Probes); math.Abs((busy2-busy1)-want) > 0.02*want {
		t.Errorf("busy CPU %.3f → %.3f core-s: the difference is not the probes' %.3f", busy1, busy2, want)
	}
}

// TestSessionsKeepAffinity: with maglev, every request of a one-session
// source reaches one instance, requests of their own sessions spread; and
// sessions draw from their own stream, so other policies see the same run.
func TestSessionsKeepAffinity(t *testing.T) {
	run := func(policy string, sessions int) (map[int]int, *Results) {
		cfg := &Config{
			Services: []Service{{Name: "s", Replicas: 4}},
			Classes:  []Class{{Name: "c", Call: Call{Service: "s", CPU: workload.DistSpec{Dist: "exp", Mean: 0.01}}}},
			LBs:      []LBPoint{{Name: "lb0", Service: "s"}},
			Sources:  []Source{{Name: "x", Class: "c", LB: "lb0", Sessions: sessions, Arrivals: workload.ProcessSpec{Kind: "poisson", Rate: 50}}},
		}
		cl, err := New(cfg, Options{Seed: 9, Horizon: time.Minute, Policy: policy})
		if err != nil {
			t.Fatal(err)
		}
		var fb recordFeedback
		cl.SetFeedback("lb0", &fb)
		cl.RunUntil(time.Minute)
		cl.Drain(time.Minute)
		to := map[int]int{}
		for _, j := range fb.sent {
			to[j]++
		}
		return to, cl.Results()
	}
	if to, _ := run("maglev", 1); len(to) != 1 {
		t.Errorf("one session went to %v: want one instance", to)
	}
	if to, _ := run("maglev", 0); len(to) != 4 {
		t.Errorf("sessionless requests went to %v: want all four instances", to)
	}
	_, a := run("p2c", 0)
	_, b := run("p2c", 7)
	if a.Latency.Mean() != b.Latency.Mean() || a.Completed != b.Completed {
		t.Errorf("sessions changed a p2c run: mean %g vs %g", a.Latency.Mean(), b.Latency.Mean())
	}
}
