package cluster

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/shoal-project/shoal/workload"
)

// singleServer is one service with one instance of c cores fed by Poisson
// arrivals of rate lambda with CPU demand d.
func singleServer(lambda float64, cores float64, d workload.DistSpec) *Config {
	return &Config{
		Services: []Service{{Name: "s", CPU: cores}},
		Classes:  []Class{{Name: "c", Call: Call{Service: "s", CPU: d}}},
		Sources:  []Source{{Name: "src", Class: "c", Arrivals: workload.ProcessSpec{Kind: "poisson", Rate: lambda}}},
	}
}

func run(t testing.TB, cfg *Config, horizon time.Duration, seed uint64) *Results {
	t.Helper()
	cl, err := New(cfg, Options{Seed: seed, Horizon: horizon, Warmup: horizon / 20})
	if err != nil {
		t.Fatal(err)
	}
	cl.RunUntil(horizon)
	if !cl.Drain(time.Hour) {
		t.Fatalf("requests left after draining")
	}
	r := cl.Results()
	if !r.Little.OK() {
		t.Fatalf("little's law: %+v", r.Little)
	}
	return r
}

// erlangC is the probability of waiting in M/M/c (Erlang's C formula).
func erlangC(c int, a float64) float64 {
	sum, term := 0.0, 1.0
	for k := 0; k < c; k++ {
		if k > 0 {
			term *= a / float64(k)
		}
		sum += term
	}
	top := term * a / float64(c) / (1 - a/float64(c))
	return top / (sum + top)
}

// TestMM1 checks the M/M/1 mean response time 1/(mu-lambda) (processor
// sharing has the same mean as FCFS) within 2%.
func TestMM1(t *testing.T) {
	const mu = 10.0
	for _, rho := range []float64{0.3, 0.5, 0.7, 0.8} {
		t.Run(fmt.Sprint(rho), func(t *testing.T) {
			lambda := rho * mu
			// The variance of the estimate grows like 1/(1-rho)^4: run longer near saturation.
			horizon := time.Duration(2e4/math.Pow(1-rho, 2)) * time.Second
			r := run(t, singleServer(lambda, 1, workload.DistSpec{Dist: "exp", Mean: 1 / mu}), horizon, 1)
			want := 1 / (mu - lambda)
			got := r.Latency.Mean()
			t.Logf("rho %.2f: mean %.5f s, theory %.5f s, %d requests, err %.2f%%", rho, got, want, r.Completed, 100*(got/want-1))
			if math.Abs(got/want-1) > 0.02 {
				t.Errorf("mean %.5f, want %.5f within 2%%", got, want)
			}
		})
	}
}

// TestMMc checks M/M/c with Erlang C: with exponential demand, c cores
// shared by processor sharing have the birth-death process of FCFS M/M/c,
// so the same mean response time 1/mu + C(c,a)/(c mu - lambda).
func TestMMc(t *testing.T) {
	const mu = 1.0
	for _, tc := range []struct {
		c   int
		rho float64
	}{{2, 0.7}, {4, 0.8}, {8, 0.9}} {
		t.Run(fmt.Sprintf("c=%d,rho=%.1f", tc.c, tc.rho), func(t *testing.T) {
			lambda := tc.rho * float64(tc.c) * mu
			r := run(t, singleServer(lambda, float64(tc.c), workload.DistSpec{Dist: "exp", Mean: 1 / mu}), time.Duration(1e5/lambda/math.Pow(1-tc.rho, 2))*time.Second, 2)
			want := 1/mu + erlangC(tc.c, lambda/mu)/(float64(tc.c)*mu-lambda)
			got := r.Latency.Mean()
			t.Logf("mean %.5f, erlang-c %.5f, err %.2f%%", got, want, 100*(got/want-1))
			if math.Abs(got/want-1) > 0.02 {
				t.Errorf("mean %.5f, want %.5f within 2%%", got, want)
			}
		})
	}
}

// TestMG1PSInsensitivity checks that the M/G/1 processor-sharing mean
// sojourn is E[S]/(1-rho) whatever the demand distribution.
func TestMG1PSInsensitivity(t *testing.T) {
	const es, rho = 0.1, 0.7
	for _, d := range []workload.DistSpec{
		{Dist: "exp", Mean: es},
		{Dist: "lognormal", Mean: es, CV: 2},
		{Dist: "det", Mean: es},
	} {
		t.Run(d.Dist, func(t *testing.T) {
			r := run(t, singleServer(rho/es, 1, d), 250000*time.Second, 3)
			want := es / (1 - rho)
			got := r.Latency.Mean()
			t.Logf("%s: mean %.5f, theory %.5f, err %.2f%%", d.Dist, got, want, 100*(got/want-1))
			if math.Abs(got/want-1) > 0.03 {
				t.Errorf("mean %.5f, want %.5f within 3%%", got, want)
			}
		})
	}
}

// TestWCMPFarm checks the heterogeneous Distr-LB farm under random routing
// against a closed form: two LB points that each split Poisson traffic at
// random in proportion to the weights make every server an independent
// M/M/1-PS queue with rate lambda*p_j and service rate s_j/E[S], so the
// mean response time is sum_j p_j / (s_j/E[S] - lambda p_j).
func TestWCMPFarm(t *testing.T) {
	for _, tc := range []struct {
		name    string
		weights func(speed float64) float64
	}{
		{"weights = speeds", func(s float64) float64 { return s }},
		{"weights = speeds^0.9 (wrong)", func(s float64) float64 { return math.Pow(s, 0.9) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const load, es = 0.7, 0.01
			cfg := lbFarm(load)
			insts := cfg.Services[0].Instances
			wsum := 0.0
			for i := range insts {
				insts[i].Weight = tc.weights(insts[i].Speed)
				wsum += insts[i].Weight
			}
			lambda := cfg.Sources[0].Arrivals.Rate + cfg.Sources[1].Arrivals.Rate
			want := 0.0
			for _, in := range insts {
				p := in.Weight / wsum
				want += p / (in.Speed/es - lambda*p)
			}
			const horizon = 2000 * time.Second
			cl, err := New(cfg, Options{Seed: 8, Policy: "wcmp", Horizon: horizon, Warmup: 50 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			cl.RunUntil(horizon)
			cl.Drain(time.Hour)
			r := cl.Results()
			got := r.Latency.Mean()
			t.Logf("mean %.5f s, theory %.5f s (%+.2f%%), %d requests", got, want, 100*(got/want-1), r.Completed)
			if math.Abs(got/want-1) > 0.03 {
				t.Errorf("mean %.5f, want %.5f within 3%%", got, want)
			}
		})
	}
}
