package cluster

import (
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"github.com/shoal-project/shoal/workload"
)

// TestLongReference repeats the closed-form checks with long runs and tight
// tolerances. It takes minutes: run it with SHOAL_LONG=1.
func TestLongReference(t *testing.T) {
	if os.Getenv("SHOAL_LONG") == "" {
		t.Skip("set SHOAL_LONG=1 to run the long reference runs")
	}
	exp := func(m float64) workload.DistSpec { return workload.DistSpec{Dist: "exp", Mean: m} }
	type check struct {
		name      string
		cfg       *Config
		policy    string
		horizon   time.Duration
		got, want func(r *Results) float64
		tol       float64
	}
	mean := func(r *Results) float64 { return r.Latency.Mean() }
	constant := func(x float64) func(*Results) float64 { return func(*Results) float64 { return x } }
	var checks []check
	for _, rho := range []float64{0.5, 0.8, 0.9} {
		checks = append(checks, check{fmt.Sprintf("M/M/1-PS rho=%.1f", rho), singleServer(10*rho, 1, exp(0.1)), "rr",
			time.Duration(4e5/math.Pow(1-rho, 2)) * time.Second, mean, constant(1 / (10 - 10*rho)), 0.005})
	}
	checks = append(checks, check{"M/M/4 rho=0.8", singleServer(3.2, 4, exp(1)), "rr", 4e6 * time.Second, mean,
		constant(1 + erlangC(4, 3.2)/(4-3.2)), 0.005})
	for _, d := range []workload.DistSpec{{Dist: "lognormal", Mean: 0.1, CV: 3}, {Dist: "pareto", Alpha: 1.5, Min: 0.05, Max: 5}} {
		dist, err := d.Build()
		if err != nil {
			t.Fatal(err)
		}
		es := dist.Mean()
		checks = append(checks, check{"M/G/1-PS " + d.Dist, singleServer(0.7/es, 1, d), "rr", time.Duration(3e6*es/0.1) * time.Second,
			mean, constant(es / 0.3), 0.01})
	}
	for _, k := range []int{2, 5, 10} {
		cfg := singleServer(9, 1, exp(0.1))
		cfg.Services[0].Concurrency, cfg.Services[0].Queue = 1, k-1
		checks = append(checks, check{fmt.Sprintf("M/M/1/%d blocking", k), cfg, "rr", 2e6 * time.Second,
			func(r *Results) float64 { return float64(r.Failures.Rejected) / float64(r.Arrivals) },
			constant(mm1kBlocking(0.9, k)), 0.005})
	}
	farm := lbFarm(0.7)
	lambda := farm.Sources[0].Arrivals.Rate + farm.Sources[1].Arrivals.Rate
	want := 0.0
	for i := range farm.Services[0].Instances {
		in := &farm.Services[0].Instances[i]
		in.Weight = in.Speed
		want += in.Speed / 10 / (in.Speed/0.01 - lambda*in.Speed/10)
	}
	checks = append(checks, check{"2 LB x 7 WCMP farm", farm, "wcmp", 40000 * time.Second, mean, constant(want), 0.005})
	for i, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			// A seed per check, so that their errors are independent.
			cl, err := New(c.cfg, Options{Seed: 77 + uint64(i), Policy: c.policy, Horizon: c.horizon, Warmup: c.horizon / 100})
			if err != nil {
				t.Fatal(err)
			}
			cl.RunUntil(c.horizon)
			cl.Drain(100 * time.Hour)
			r := cl.Results()
			got, want := c.got(r), c.want(r)
			t.Logf("%s: %.6g, theory %.6g (%+.3f%%), %d requests, little rel. err %.1e", c.name, got, want, 100*(got/want-1), r.ArrivedAll, r.Little.RelErr)
			if math.Abs(got/want-1) > c.tol || !r.Little.OK() {
				t.Errorf("%.6g, want %.6g within %.2g%%", got, want, 100*c.tol)
			}
		})
	}
}
