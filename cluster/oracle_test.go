package cluster

import (
	"math"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/lb"
)

// TestEstimateCompletion checks the Oracle's estimator against the actual
// completion time of the next call on deterministic servers.
func TestEstimateCompletion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		svc    Service
		before []time.Duration // earlier calls (1 core-second each)
		at     time.Duration   // when the probe call arrives
		req    lb.Request
		want   float64
	}{
		{"idle, cpu and io", Service{Speed: 2, IOSpeed: 4}, nil, sec(1), lb.Request{CPU: 1, IO: 1}, 0.75},
		{"idle, half a core", Service{CPU: 0.5}, nil, sec(1), lb.Request{CPU: 1}, 2},
		{"idle, shared io", Service{IOParallelism: 1, IOSpeed: 2}, nil, sec(1), lb.Request{CPU: 0.5, IO: 1}, 1},
		// One job with 0.3 left: both share the core until it ends (0.6 s),
		// then the probe's last 0.2 runs alone.
		{"one job ahead", Service{}, []time.Duration{0}, sec(0.7), lb.Request{CPU: 0.5}, 0.8},
		// Three jobs with 0.5 left each share two cores at speed 2: 4/3 each.
		{"two cores, two ahead", Service{CPU: 2, Speed: 2}, []time.Duration{0, 0}, sec(0.25), lb.Request{CPU: 0.5}, 0.375},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &Config{
				Services: []Service{tc.svc},
				LBs:      []LBPoint{{Name: "lb", Service: "s"}},
				Classes: []Class{
					{Name: "c", Call: Call{Service: "s", CPU: det(1)}},
					{Name: "probe", Call: Call{Service: "s", CPU: det(tc.req.CPU)}},
				},
				Sources: []Source{
					{Name: "src", Class: "c", LB: "lb", Arrivals: poisson(1)},
					{Name: "probe", Class: "probe", LB: "lb", Arrivals: poisson(1)},
				},
			}
			cfg.Services[0].Name = "s"
			if tc.req.IO > 0 {
				cfg.Classes[1].Call.IO = det(tc.req.IO)
			}
			cl := build(t, cfg, Options{Seed: 1, Policy: "oracle"})
			var probeLatency time.Duration
			est := math.NaN()
			cl.onStart = func(c *call) { // the probe's demand is drawn, the Oracle has not picked yet
				if c.req != nil && c.req.class.name == "probe" {
					est = cl.lbs[0].EstimateCompletion(0, lb.Request{CPU: c.cpu, IO: c.io})
				}
			}
			cl.onFinish = func(r *request, _ uint8, _ bool) {
				if r.class.name == "probe" {
					probeLatency = cl.k.Now() - r.start
				}
			}
			feed(cl, 0, tc.before...)
			feed(cl, 1, tc.at)
			drain(t, cl)
			if math.Abs(est-tc.want) > 1e-9 || !near(probeLatency, sec(tc.want), 2) {
				t.Errorf("estimate %.9f s, actual %v, want %g s", est, probeLatency, tc.want)
			}
		})
	}
}

// TestOracleBeatsECMP is a sanity check of the Oracle on heterogeneous
// servers at load 0.8: it knows the speeds and the work, ECMP ignores both.
func TestOracleBeatsECMP(t *testing.T) {
	mean := map[string]float64{}
	for _, pol := range []string{"oracle", "ecmp", "lsq"} {
		cl := build(t, lbFarm(0.8), Options{Seed: 3, Policy: pol, Horizon: 100 * time.Second, Warmup: 10 * time.Second})
		cl.RunUntil(100 * time.Second)
		mean[pol] = drain(t, cl).Latency.Mean()
	}
	t.Logf("mean latency: %v", mean)
	if !(mean["oracle"] < mean["lsq"] && mean["lsq"] < mean["ecmp"]) {
		t.Errorf("want oracle < lsq < ecmp, got %v", mean)
	}
}
