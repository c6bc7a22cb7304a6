package cluster

import (
	"math"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/workload"
)

// TestWindowResources checks the allocation integrals over the window
// against arithmetic: 2 instances of 0.5 cores and 512 MB from the warm-up
// (10 s) to the horizon (110 s), except that a third one is added at 60 s
// with a 5 s cold start (allocated while starting) and removed at 90 s.
func TestWindowResources(t *testing.T) {
	cfg := lbCfg(Service{Name: "s", Replicas: 2, CPU: 0.5, MemoryMB: 512, MaxReplicas: 3, ColdStart: 5 * time.Second}, 0.01)
	cfg.Prices = Prices{VCPUSecond: 2, GBSecond: 3}
	cl := build(t, cfg, Options{Seed: 1, Horizon: sec(110), Warmup: sec(10)})
	feed(cl, 0)
	cl.RunUntil(sec(60))
	apply(t, cl, control.SetReplicas{Service: "s", Replicas: 3})
	cl.RunUntil(sec(90))
	apply(t, cl, control.SetReplicas{Service: "s", Replicas: 2})
	cl.RunUntil(sec(110))
	r := drain(t, cl)
	// Instance-seconds: 2 x 100 s + 1 x 30 s.
	const instSec = 230.0
	s := &r.Services[0]
	if math.Abs(s.VCPUSeconds-0.5*instSec) > 1e-9 || math.Abs(s.GBSeconds-0.5*instSec) > 1e-9 {
		t.Errorf("vCPU-s %g, GB-s %g; want %g, %g", s.VCPUSeconds, s.GBSeconds, 0.5*instSec, 0.5*instSec)
	}
	if want := 2*0.5*instSec + 3*0.5*instSec; math.Abs(s.Cost-want) > 1e-9 || math.Abs(r.Cost-want) > 1e-9 {
		t.Errorf("cost %g (service) %g (run), want %g", s.Cost, r.Cost, want)
	}
	if len(r.Scaling) != 2 || r.Scaling[0].At != sec(60) || r.Scaling[0].Replicas != 3 || r.Scaling[1].Replicas != 2 {
		t.Errorf("scale events %+v", r.Scaling)
	}
	if n := r.ScalingActions(sec(10)); n != 2 {
		t.Errorf("%d scaling actions in the window, want 2", n)
	}
	// The replicas series follows the actions (samples every second).
	rep := s.Series.Replicas
	at := func(sec int) float64 { return rep[sec-1] }
	if at(59) != 2 || at(61) != 3 || at(89) != 3 || at(91) != 2 {
		t.Errorf("replicas at 59, 61, 89, 91 s: %g %g %g %g", at(59), at(61), at(89), at(91))
	}
	if s.Series.Ready[62] != 2 || s.Series.Ready[66] != 3 {
		t.Errorf("ready at 63 s %g (cold start), at 67 s %g", s.Series.Ready[62], s.Series.Ready[66])
	}
}

// TestUtilisationMM1 checks the measured utilisation against the offered
// load of an M/M/1 queue, rho = lambda x E[S] (0.6 here), and the series'
// arrival rate against lambda.
func TestUtilisationMM1(t *testing.T) {
	cfg := &Config{
		Services: []Service{{Name: "s"}},
		Classes:  []Class{{Name: "c", Call: Call{Service: "s", CPU: workload.DistSpec{Dist: "exp", Mean: 0.1}}}},
		Sources:  []Source{{Name: "src", Class: "c", Arrivals: poisson(6)}},
	}
	cl := build(t, cfg, Options{Seed: 3, Horizon: sec(4000), Warmup: sec(100)})
	cl.RunUntil(sec(4000))
	r := drain(t, cl)
	s := &r.Services[0]
	if u := s.Utilisation(); math.Abs(u-0.6) > 0.02 {
		t.Errorf("utilisation %g, want 0.6 +- 0.02", u)
	}
	mean := 0.0
	for _, x := range r.Requests.Rate {
		mean += x
	}
	mean /= float64(len(r.Requests.Rate))
	if math.Abs(mean-6) > 0.15 {
		t.Errorf("mean arrival rate over the series %g, want 6 +- 0.15", mean)
	}
	if len(s.Series.Rate) != len(r.Series.Times) || len(r.Requests.Latency) != len(r.Series.Times) {
		t.Errorf("series lengths %d, %d; times %d", len(s.Series.Rate), len(r.Requests.Latency), len(r.Series.Times))
	}
}

// TestSLOViolations checks SLO accounting with deterministic service
// times of 0.1 s and one request at a time: under a 0.15 s target none
// violates, under 0.05 s all do, and a failed request always does.
func TestSLOViolations(t *testing.T) {
	for _, tc := range []struct {
		slo       time.Duration
		classSLO  time.Duration
		wantSlow  int64
		wantTotal int64
	}{
		{slo: 150 * time.Millisecond, wantSlow: 0, wantTotal: 1},
		{slo: 50 * time.Millisecond, wantSlow: 4, wantTotal: 5},
		{slo: 50 * time.Millisecond, classSLO: time.Second, wantSlow: 0, wantTotal: 1}, // the class's own wins
		{wantSlow: 0, wantTotal: 0},
	} {
		cfg := &Config{
			SLO:      tc.slo,
			Services: []Service{{Name: "s", Concurrency: 1, Queue: 0}},
			Classes:  []Class{{Name: "c", SLO: tc.classSLO, Call: Call{Service: "s", CPU: det(0.1)}}},
			Sources:  []Source{{Name: "src", Class: "c", Arrivals: poisson(1)}},
		}
		cl := build(t, cfg, Options{Seed: 1, Horizon: sec(10)})
		// The third request arrives while the second is served: 429.
		feed(cl, 0, sec(1), sec(2), sec(2.05), sec(3), sec(4))
		r := drain(t, cl)
		c := r.Classes[0]
		if c.Arrivals != 5 || c.Completed() != 4 || c.Failures.Rejected != 1 {
			t.Fatalf("arrivals %d, completed %d, failures %+v", c.Arrivals, c.Completed(), c.Failures)
		}
		if c.Slow != tc.wantSlow || r.SLOViolations() != tc.wantTotal {
			t.Errorf("slo %v/%v: slow %d, violations %d; want %d, %d", tc.slo, tc.classSLO, c.Slow, r.SLOViolations(), tc.wantSlow, tc.wantTotal)
		}
	}
}
