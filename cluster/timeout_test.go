package cluster

import (
	"math"
	"testing"
	"time"

	"github.com/shoal-project/shoal/workload"
)

// TestTimeoutDeterministic checks that a client timeout counts as a failure
// at the timeout, records no latency, and leaves the work running.
func TestTimeoutDeterministic(t *testing.T) {
	cfg := &Config{
		Services: []Service{{Name: "s"}},
		Classes:  []Class{{Name: "c", Timeout: time.Second, Call: Call{Service: "s", CPU: det(3)}}},
		Sources:  []Source{{Name: "src", Class: "c", Arrivals: poisson(1)}},
	}
	cl := build(t, cfg, Options{Seed: 1})
	feed(cl, 0, sec(1))
	observe(cl, sec(1))
	cl.RunUntil(sec(1.999))
	if cl.Results().Failures.Timeout != 0 {
		t.Fatal("timed out early")
	}
	cl.RunUntil(sec(2))
	if r := cl.Results(); r.Failures.Timeout != 1 || cl.InSystem() != 1 {
		t.Fatalf("at the timeout: %d timeouts, %d in system; want 1, 1", r.Failures.Timeout, cl.InSystem())
	}
	s := observe(cl, sec(4))
	if st := svcStats(t, s, "s"); math.Abs(st.CPUUse-1) > 1e-9 || st.Completions != 1 {
		t.Errorf("the work did not continue: cpu %g, completions %d", st.CPUUse, st.Completions)
	}
	r := drain(t, cl)
	if r.Completed != 0 || r.Latency.Count() != 0 || r.Failures.Total() != 1 || r.Classes[0].Failures.Timeout != 1 {
		t.Errorf("completed %d, latencies %d, failures %+v", r.Completed, r.Latency.Count(), r.Failures)
	}
}

// TestTimeoutMM1FCFS checks timeouts against M/M/1 FCFS (concurrency 1,
// unbounded queue), whose response time is exponential with rate mu-lambda:
// timeouts do not cancel work, so a fraction exp(-(mu-lambda)tau) times out,
// and the others' mean is that of the exponential truncated at tau. Little's
// law must still hold with requests that outlive their clients.
func TestTimeoutMM1FCFS(t *testing.T) {
	const mu, lambda, tau = 10.0, 8.0, 0.5
	cfg := &Config{
		Services: []Service{{Name: "s", Concurrency: 1, Queue: -1}},
		Classes: []Class{{Name: "c", Timeout: sec(tau),
			Call: Call{Service: "s", CPU: workload.DistSpec{Dist: "exp", Mean: 1 / mu}}}},
		Sources: []Source{{Name: "src", Class: "c", Arrivals: poisson(lambda)}},
	}
	const horizon = 40000 * time.Second
	cl := build(t, cfg, Options{Seed: 5, Horizon: horizon, Warmup: 100 * time.Second})
	cl.RunUntil(horizon)
	r := drain(t, cl)
	theta := mu - lambda
	wantFrac := math.Exp(-theta * tau)
	wantMean := 1/theta - tau*wantFrac/(1-wantFrac)
	frac := float64(r.Failures.Timeout) / float64(r.Arrivals)
	t.Logf("timed out %.4f (theory %.4f), mean of the rest %.4f (theory %.4f), little %+v", frac, wantFrac, r.Latency.Mean(), wantMean, r.Little)
	if math.Abs(frac/wantFrac-1) > 0.03 {
		t.Errorf("timed-out fraction %.4f, want %.4f within 3%%", frac, wantFrac)
	}
	if math.Abs(r.Latency.Mean()/wantMean-1) > 0.03 {
		t.Errorf("mean latency %.4f, want %.4f within 3%%", r.Latency.Mean(), wantMean)
	}
	if r.Completed+r.Failures.Timeout != r.Arrivals || r.Latency.Max() > tau {
		t.Errorf("completed %d + timed out %d != %d arrivals, or a latency %g above the timeout", r.Completed, r.Failures.Timeout, r.Arrivals, r.Latency.Max())
	}
}

// TestThroughputWindow checks that throughput counts the successful
// completions inside [warm-up, horizon] only: an overloaded server shows what
// it served, not the offered rate.
func TestThroughputWindow(t *testing.T) {
	cfg := &Config{
		Services: []Service{{Name: "s", Concurrency: 1, Queue: -1}},
		Classes:  []Class{{Name: "c", Call: Call{Service: "s", CPU: det(0.5)}}},
		Sources:  []Source{{Name: "src", Class: "c", Arrivals: poisson(1)}},
	}
	cl := build(t, cfg, Options{Seed: 1, Horizon: sec(10), Warmup: sec(2)})
	// 4 req/s offered for 10 s to a FCFS server of 2 req/s: request i ends
	// at 0.5(i+1) s, so 17 end inside [2, 10] (i = 3..19).
	var at []time.Duration
	for i := 0; i < 40; i++ {
		at = append(at, sec(0.25*float64(i)))
	}
	feed(cl, 0, at...)
	cl.RunUntil(sec(10))
	r := drain(t, cl)
	if want := 17.0 / 8; math.Abs(r.Throughput-want) > 1e-12 {
		t.Errorf("throughput %g req/s, want %g", r.Throughput, want)
	}
	if r.Completed != 32 { // arrivals after the warm-up, all served in the end
		t.Errorf("completed %d, want 32", r.Completed)
	}
}
