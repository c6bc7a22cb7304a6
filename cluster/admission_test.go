package cluster

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/workload"
)

// TestConcurrencyQueue checks the concurrency limit's FIFO queue and its
// bound with deterministic 1 s calls arriving together.
func TestConcurrencyQueue(t *testing.T) {
	for _, tc := range []struct {
		name        string
		conc, queue int
		n           int
		want        []time.Duration // latencies of the served requests, in order
		rejected    int64
	}{
		{"queue 2 of 4", 1, 2, 4, []time.Duration{0, sec(1), sec(2), sec(3)}, 1},
		{"queue 0 rejects with 429", 1, 0, 3, []time.Duration{0, 0, sec(1)}, 2},
		{"unbounded queue", 1, -1, 4, []time.Duration{sec(1), sec(2), sec(3), sec(4)}, 0},
		{"limit 2 shares the core", 2, 1, 4, []time.Duration{0, sec(2), sec(2), sec(3)}, 1},
		{"no limit: processor sharing", 0, 0, 3, []time.Duration{sec(3), sec(3), sec(3)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &Config{
				Services: []Service{{Name: "s", Concurrency: tc.conc, Queue: tc.queue}},
				Classes:  []Class{{Name: "c", Call: Call{Service: "s", CPU: det(1)}}},
				Sources:  []Source{{Name: "src", Class: "c", Arrivals: poisson(1)}},
			}
			cl := build(t, cfg, Options{Seed: 1})
			fin := record(cl)
			at := make([]time.Duration, tc.n)
			for i := range at {
				at[i] = sec(1)
			}
			feed(cl, 0, at...)
			r := drain(t, cl)
			if r.Failures.Rejected != tc.rejected || r.Failures.Total() != tc.rejected {
				t.Errorf("failures %+v, want %d rejected", r.Failures, tc.rejected)
			}
			if len(*fin) != len(tc.want) {
				t.Fatalf("%d finished", len(*fin))
			}
			for i, d := range *fin {
				if !near(d.latency(), tc.want[i], 2) {
					t.Errorf("request %d (finishing order): latency %v, want %v", i, d.latency(), tc.want[i])
				}
				if (d.fail == failRejected) != (d.latency() == 0) {
					t.Errorf("request %d: fail %d after %v", i, d.fail, d.latency())
				}
			}
		})
	}
}

// TestSetConcurrency checks that raising the limit admits queued calls at
// once and that a negative limit is an error.
func TestSetConcurrency(t *testing.T) {
	cfg := &Config{
		Services: []Service{{Name: "s", CPU: 4, Concurrency: 1, Queue: -1}},
		Classes:  []Class{{Name: "c", Call: Call{Service: "s", CPU: det(1)}}},
		Sources:  []Source{{Name: "src", Class: "c", Arrivals: poisson(1)}},
	}
	cl := build(t, cfg, Options{Seed: 1})
	fin := record(cl)
	feed(cl, 0, 0, 0, 0)
	s := observe(cl, sec(0.5))
	if st := svcStats(t, s, "s"); st.InFlight != 1 || st.Queued != 2 {
		t.Fatalf("in flight %d, queued %d; want 1, 2", st.InFlight, st.Queued)
	}
	if err := cl.Apply(cl.Now(), control.SetConcurrency{Service: "s", Limit: 3}); err != nil {
		t.Fatal(err)
	}
	if err := cl.Apply(cl.Now(), control.SetConcurrency{Service: "s", Limit: -1}); err == nil {
		t.Error("negative limit: no error")
	}
	drain(t, cl)
	want := []time.Duration{sec(1), sec(1.5), sec(1.5)}
	for i, d := range *fin {
		if !near(d.latency(), want[i], 2) {
			t.Errorf("request %d: %v, want %v", i, d.latency(), want[i])
		}
	}
}

// mm1kBlocking is the blocking probability of M/M/1/K (K places in all):
// (1-rho) rho^K / (1-rho^(K+1)).
func mm1kBlocking(rho float64, k int) float64 {
	return (1 - rho) * math.Pow(rho, float64(k)) / (1 - math.Pow(rho, float64(k+1)))
}

// mm1kL is the mean number in M/M/1/K.
func mm1kL(rho float64, k int) float64 {
	r1 := math.Pow(rho, float64(k+1))
	return rho/(1-rho) - float64(k+1)*r1/(1-r1)
}

// TestMM1K checks concurrency 1 with a queue of K-1 against M/M/1/K: the
// share of 429s equals the blocking probability, and the mean response time
// of admitted requests is L/(lambda(1-P_K)) by Little's law.
func TestMM1K(t *testing.T) {
	const mu = 10.0
	for _, tc := range []struct {
		rho float64
		k   int
	}{{0.9, 5}, {1.2, 3}, {0.5, 2}} {
		t.Run(fmt.Sprintf("rho=%.1f,K=%d", tc.rho, tc.k), func(t *testing.T) {
			cfg := &Config{
				Services: []Service{{Name: "s", Concurrency: 1, Queue: tc.k - 1}},
				Classes:  []Class{{Name: "c", Call: Call{Service: "s", CPU: workload.DistSpec{Dist: "exp", Mean: 1 / mu}}}},
				Sources:  []Source{{Name: "src", Class: "c", Arrivals: poisson(tc.rho * mu)}},
			}
			const horizon = 40000 * time.Second
			cl := build(t, cfg, Options{Seed: 11, Horizon: horizon, Warmup: 100 * time.Second})
			cl.RunUntil(horizon)
			r := drain(t, cl)
			pb := float64(r.Failures.Rejected) / float64(r.Arrivals)
			want := mm1kBlocking(tc.rho, tc.k)
			w := r.Latency.Mean()
			wantW := mm1kL(tc.rho, tc.k) / (tc.rho * mu * (1 - want))
			t.Logf("blocking %.5f (theory %.5f, %+.2f%%), W %.5f (theory %.5f, %+.2f%%), %d arrivals",
				pb, want, 100*(pb/want-1), w, wantW, 100*(w/wantW-1), r.Arrivals)
			if math.Abs(pb/want-1) > 0.03 {
				t.Errorf("blocking probability %.5f, want %.5f within 3%%", pb, want)
			}
			if math.Abs(w/wantW-1) > 0.03 {
				t.Errorf("mean response %.5f, want %.5f within 3%%", w, wantW)
			}
			if r.Completed+r.Failures.Rejected != r.Arrivals {
				t.Errorf("completed %d + rejected %d != arrivals %d", r.Completed, r.Failures.Rejected, r.Arrivals)
			}
		})
	}
}
