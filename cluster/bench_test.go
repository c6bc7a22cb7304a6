package cluster

import (
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/workload"
)

// benchRun simulates b.N requests of cfg (whose sources offer rate req/s in
// all) and reports simulated requests per second of wall time.
func benchRun(b *testing.B, cfg *Config, rate float64, policy string) {
	b.ReportAllocs()
	horizon := time.Duration(float64(b.N) / rate * 1e9)
	if horizon <= 0 {
		horizon = time.Millisecond
	}
	cl, err := New(cfg, Options{Seed: 1, Policy: policy, Horizon: horizon, SamplePeriod: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	cl.RunUntil(horizon)
	cl.Drain(time.Hour)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	r := cl.Results()
	b.ReportMetric(float64(r.finished)/b.Elapsed().Seconds(), "req/s")
	if cpu > 0 { // robust to other processes on the machine (GC threads count too)
		b.ReportMetric(float64(r.finished)/cpu.Seconds(), "req/cpu-s")
	}
	b.ReportMetric(float64(r.Events)/float64(max(r.finished, 1)), "events/req")
}

// BenchmarkMM1 is one M/M/1 processor-sharing server at load 0.8.
func BenchmarkMM1(b *testing.B) {
	benchRun(b, singleServer(8, 1, workload.DistSpec{Dist: "exp", Mean: 0.1}), 8, "rr")
}

// BenchmarkLBFarmLSQ is the Distr-LB dispatch model: 2 LB points with LSQ
// in front of 7 heterogeneous processor-sharing servers at load 0.8.
func BenchmarkLBFarmLSQ(b *testing.B) {
	cfg := lbFarm(0.8)
	rate := cfg.Sources[0].Arrivals.Rate + cfg.Sources[1].Arrivals.Rate
	benchRun(b, cfg, rate, "lsq")
}

// BenchmarkCallGraph is the rich call-graph scenario (fan-out, choice,
// RTT, queues, memory, timeouts) with p2c at the LB points.
func BenchmarkCallGraph(b *testing.B) {
	benchRun(b, richCfg(), 100, "p2c")
}

// TestSteadyStateAllocs checks that, once warm, simulating requests and
// observing the system allocate nothing.
func TestSteadyStateAllocs(t *testing.T) {
	users := crnCfg()
	// Retries of 429s, and per-try timeouts too long to start a retry storm.
	users.Services[1].Concurrency, users.Services[1].Queue = 2, 1
	users.Services[1].Route = Route{PerTryTimeout: 200 * time.Millisecond, Retries: 2, RetryOn: []string{"timeout", "429"}}
	users.Sources = append(users.Sources, Source{Name: "users", Class: "page", Users: Users{Count: 20},
		Think: workload.DistSpec{Dist: "exp", Mean: 0.1}})
	// Admission at an overloaded farm's LB points: backends fill and free,
	// calls wait, time out in the queue, leave it with their client, or
	// are shed; least-request rebuilds its schedule as Up changes.
	admitted := lbFarm(1.3)
	admitted.Classes[0].Timeout = 40 * time.Millisecond
	admitted.LBs[0].Admission = &lb.Admission{MaxRequests: 2, MaxPending: 8, QueueTimeout: 5 * time.Millisecond}
	admitted.LBs[1].Admission = &lb.Admission{MaxRequests: 2, MaxPending: 100, QueueTimeout: time.Second}
	// The same under maglev: full backends stay up and calls wait for
	// their key's backend, with no table rebuilt.
	hashed := lbFarm(1.3)
	hashed.Classes[0].Timeout = 40 * time.Millisecond
	hashed.LBs = admitted.LBs
	hashed.Sources[0].Sessions = 100
	for name, cfg := range map[string]*Config{"lb farm": lbFarm(0.8), "call graph": crnCfg(), "retries and users": users, "admission": admitted, "admission, maglev": hashed} {
		policy := "lsq"
		switch cfg {
		case admitted:
			policy = "least-request"
		case hashed:
			policy = "maglev"
		}
		cl, err := New(cfg, Options{Seed: 1, Policy: policy, Horizon: time.Hour, SamplePeriod: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		var snap metrics.Snapshot
		cl.RunUntil(time.Minute) // long enough for the pools to reach their high-water marks
		cl.Observe(&snap)
		before := cl.Results().ArrivedAll
		allocs := testing.AllocsPerRun(20, func() {
			cl.RunUntil(cl.Now() + 100*time.Millisecond)
			cl.Observe(&snap)
		})
		if n := cl.Results().ArrivedAll - before; allocs != 0 || n < 100 {
			t.Errorf("%s: %v allocations per 100 ms (%d requests)", name, allocs, n)
		}
		if name == "retries and users" && snap.Services[1].Retries == 0 {
			t.Errorf("%s: no retries", name)
		}
		if f := cl.Results().Failures; (cfg == admitted || cfg == hashed) && (f.Shed == 0 || f.Timeout == 0) {
			t.Errorf("%s: failures %+v, want shed calls and timeouts", name, f)
		}
	}
}
