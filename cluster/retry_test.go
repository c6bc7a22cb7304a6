package cluster

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/workload"
)

// TestBackoff checks Envoy's jittered exponential back-off: retry n waits a
// whole number of milliseconds below (2^n - 1) x 25 ms, capped at 250 ms,
// uniformly.
func TestBackoff(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		n         int32
		span      int     // values 0..span-1 ms before the cap
		wantMean  float64 // ms
		wantAtCap float64 // fraction at 250 ms
	}{
		{1, 25, 12, 0},
		{2, 75, 37, 0},
		{3, 175, 87, 0},
		{4, 375, (249.0*250/2 + 125*250) / 375, 125.0 / 375},
		{9, 375, (249.0*250/2 + 125*250) / 375, 125.0 / 375},
	} {
		const n = 200000
		sum, atCap := 0.0, 0
		for range n {
			b := backoff(tc.n, rng)
			ms := b / time.Millisecond
			if b%time.Millisecond != 0 || b < 0 || int(ms) >= tc.span || ms > backoffMaxMs {
				t.Fatalf("retry %d: back-off %v outside [0, %d) ms or above 250 ms", tc.n, b, tc.span)
			}
			if ms == backoffMaxMs {
				atCap++
			}
			sum += float64(ms)
		}
		mean := sum / n
		if math.Abs(mean-tc.wantMean) > 0.01*tc.wantMean || math.Abs(float64(atCap)/n-tc.wantAtCap) > 0.005 {
			t.Errorf("retry %d: mean %.2f ms (want %.2f), %.4f at the cap (want %.4f)", tc.n, mean, tc.wantMean, float64(atCap)/n, tc.wantAtCap)
		}
	}
}

// slowService is one service of 64 cores whose calls take demand seconds,
// with route rt; class c calls it from its root "front".
func slowService(demand float64, rt Route) *Config {
	return &Config{
		Services: []Service{{Name: "front", CPU: 64}, {Name: "s", CPU: 64, Route: rt}},
		Classes: []Class{{Name: "c", Call: Call{Service: "front", Stages: []Stage{
			{Calls: []Call{{Service: "s", CPU: det(demand)}}}}}}},
		Sources: []Source{{Name: "src", Class: "c", Arrivals: poisson(1)}},
	}
}

// TestPerTryTimeoutRetries checks per-try timeouts with retries on a service
// that answers too late: each attempt is given up after the per-try timeout
// and counts a Timeout there, the next is sent after its back-off, the
// request fails with a timeout after the last, and every attempt's work goes
// on to the end, unseen by the LB point.
func TestPerTryTimeoutRetries(t *testing.T) {
	cl := build(t, slowService(3, Route{PerTryTimeout: time.Second, Retries: 2, RetryOn: []string{"timeout"}}), Options{Seed: 1})
	fin := record(cl)
	var starts []time.Duration
	cl.onStart = func(c *call) {
		if c.node.svc.name == "s" {
			starts = append(starts, cl.k.Now())
		}
	}
	feed(cl, 0, sec(1))
	r := drain(t, cl)
	if len(starts) != 3 {
		t.Fatalf("attempts at %v, want 3", starts)
	}
	for i := 1; i < 3; i++ {
		b := starts[i] - starts[i-1] - time.Second // the back-off of retry i
		if b < 0 || b >= time.Duration(1<<i-1)*25*time.Millisecond || b%time.Millisecond != 0 {
			t.Errorf("retry %d sent %v after the timeout, want whole ms below %d ms", i, b, (1<<i-1)*25)
		}
	}
	d := (*fin)[0]
	if d.fail != failTimeout || d.end != starts[2]+time.Second {
		t.Errorf("request failed with %d at %v, want a timeout at %v", d.fail, d.end, starts[2]+time.Second)
	}
	if r.Failures.Timeout != 1 || r.Completed != 0 || r.Latency.Count() != 0 {
		t.Errorf("failures %+v, completed %d", r.Failures, r.Completed)
	}
	s := observe(cl, sec(10)) // the abandoned attempts' work is done by 7.1 s
	st := svcStats(t, s, "s")
	if st.Arrivals != 3 || st.Failures.Timeout != 3 || st.Retries != 2 || st.Completions != 3 || st.Latency.Count != 0 {
		t.Errorf("service s: %d arrivals, %d timeouts, %d retries, %d completions, %d latencies; want 3, 3, 2, 3 (the work goes on), 0",
			st.Arrivals, st.Failures.Timeout, st.Retries, st.Completions, st.Latency.Count)
	}
	if math.Abs(st.CPUUse*secs(s.Period)-9) > 1e-6 {
		t.Errorf("service s used %g core-seconds, want 9 (three attempts of 3)", st.CPUUse*secs(s.Period))
	}
	if got := r.Services[1].Retries; got != 2 || r.Retries() != 2 {
		t.Errorf("results: %d retries at s, %d in all; want 2", got, r.Retries())
	}
	if in := cl.svcByName["s"].lb.view.InFlight[0]; in != 0 {
		t.Errorf("the LB point still counts %d in flight", in)
	}
}

// TestRouteTimeout checks that the route timeout bounds all attempts: the
// last attempt is given up at the deadline, not after its per-try timeout.
func TestRouteTimeout(t *testing.T) {
	cl := build(t, slowService(3, Route{Timeout: 2500 * time.Millisecond, PerTryTimeout: time.Second, Retries: 5, RetryOn: []string{"timeout"}}), Options{Seed: 1})
	fin := record(cl)
	feed(cl, 0, sec(1))
	drain(t, cl)
	if d := (*fin)[0]; d.fail != failTimeout || d.end != sec(3.5) {
		t.Errorf("request failed with %d at %v, want a timeout at exactly 3.5s", d.fail, d.end)
	}
	st := svcStats(t, observe(cl, cl.Now()), "s")
	if st.Retries != 2 || st.Failures.Timeout != 3 {
		t.Errorf("%d retries, %d timeouts; want 2, 3", st.Retries, st.Failures.Timeout)
	}
	// A route timeout alone gives up once, at the deadline.
	cl = build(t, slowService(3, Route{Timeout: 2 * time.Second}), Options{Seed: 1})
	fin = record(cl)
	feed(cl, 0, sec(1))
	drain(t, cl)
	if d := (*fin)[0]; d.fail != failTimeout || d.end != sec(3) {
		t.Errorf("request failed with %d at %v, want a timeout at exactly 3s", d.fail, d.end)
	}
}

// TestRetryOn checks which failures are retried: 429 only when retry_on
// says so, no capacity by default (Istio's retryOn), and that a retry goes
// to a fresh pick of the LB point.
func TestRetryOn(t *testing.T) {
	busy := func(rt Route) *Config {
		cfg := slowService(1, rt)
		cfg.Services[1].Replicas, cfg.Services[1].Concurrency = 2, 1
		return cfg
	}
	for _, tc := range []struct {
		name           string
		rt             Route
		retries, fails int64
	}{
		{"429 not retried by default", Route{Retries: 2}, 0, 1},
		{"429 retried until the retries run out", Route{Retries: 2, RetryOn: []string{"429"}}, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := build(t, busy(tc.rt), Options{Seed: 1})
			feed(cl, 0, sec(1), sec(1), sec(1)) // rr: instances 0, 1, then 0 again: busy
			r := drain(t, cl)
			st := svcStats(t, observe(cl, cl.Now()), "s")
			if r.Failures.Rejected != tc.fails || st.Retries != tc.retries || st.Failures.Rejected != tc.retries+1 {
				t.Errorf("%d requests rejected, %d retries, %d rejections at s; want %d, %d, %d",
					r.Failures.Rejected, st.Retries, st.Failures.Rejected, tc.fails, tc.retries, tc.retries+1)
			}
		})
	}
	t.Run("no capacity retried by default", func(t *testing.T) {
		cfg := slowService(0.25, Route{Retries: 3})
		cfg.Services[1].ColdStart = 510 * time.Millisecond
		cl := build(t, cfg, Options{Seed: 1})
		fin := record(cl)
		feed(cl, 0, sec(1))
		cl.RunUntil(sec(0.5))
		apply(t, cl, control.SetReplicas{Service: "s", Replicas: 0})
		apply(t, cl, control.SetReplicas{Service: "s", Replicas: 1}) // ready at 1.01 s
		r := drain(t, cl)
		st := svcStats(t, observe(cl, cl.Now()), "s")
		if r.Completed != 1 || st.Retries < 1 || st.Failures.NoCapacity != st.Retries {
			t.Errorf("completed %d, %d retries, %d no-capacity failures at s", r.Completed, st.Retries, st.Failures.NoCapacity)
		}
		if lat := (*fin)[0].latency(); lat < sec(0.26) || lat > sec(0.25+0.1) {
			t.Errorf("latency %v, want the 10 ms cold start, back-offs and 0.25 s of work", lat)
		}
	})
}

// TestRetryReplaysTheCall checks that a retry of a call with stages has
// the same demand and makes the same calls below it (common random
// numbers): both attempts of b call c, then time out waiting for d.
func TestRetryReplaysTheCall(t *testing.T) {
	exp := func(m float64) workload.DistSpec { return workload.DistSpec{Dist: "exp", Mean: m} }
	cfg := graph(Call{Service: "a", Stages: []Stage{{Calls: []Call{
		{Service: "b", CPU: exp(0.01), Stages: []Stage{
			{Calls: []Call{{Service: "c", CPU: exp(0.01), IO: exp(0.01)}, {Service: "c", CPU: exp(0.01), Prob: 0.5}, {Service: "c", IO: exp(0.01), Prob: 0.5}}},
			{Calls: []Call{{Service: "d", CPU: det(1)}}},
		}},
	}}}})
	cfg.Services[1].Route = Route{PerTryTimeout: 300 * time.Millisecond, Retries: 1, RetryOn: []string{"timeout"}}
	cl := build(t, cfg, Options{Seed: 5})
	recs := recordCalls(cl)
	feed(cl, 0, sec(1))
	r := drain(t, cl)
	var b, c []callRec
	for _, rc := range *recs {
		switch rc.svc {
		case "b":
			b = append(b, rc)
		case "c":
			rc.at = 0 // the same calls, later
			c = append(c, rc)
		}
	}
	if r.Failures.Timeout != 1 || len(b) != 2 || len(c) == 0 || len(c)%2 != 0 {
		t.Fatalf("timeouts %d, %d attempts at b, %d calls to c; want 1, 2, the same calls twice", r.Failures.Timeout, len(b), len(c))
	}
	if h := len(c) / 2; b[0].cpu != b[1].cpu || !slices.Equal(c[:h], c[h:]) {
		t.Errorf("the retry differs: b %v; c %v", b, c)
	}
}

// TestPerTryTimeoutMM1 checks a per-try timeout without retries against
// M/M/1 FCFS, whose response time is exponential with rate mu-lambda when
// work is never cancelled: a fraction exp(-(mu-lambda)tau) of the requests
// fail at tau, so the mean time in system is E[min(S, tau)] =
// (1-exp(-(mu-lambda)tau))/(mu-lambda), and Little's law holds.
func TestPerTryTimeoutMM1(t *testing.T) {
	const mu, lambda, tau = 10.0, 8.0, 0.5
	cfg := &Config{
		Services: []Service{{Name: "s", Concurrency: 1, Queue: -1, Route: Route{PerTryTimeout: sec(tau)}}},
		Classes:  []Class{{Name: "c", Call: Call{Service: "s", CPU: workload.DistSpec{Dist: "exp", Mean: 1 / mu}}}},
		Sources:  []Source{{Name: "src", Class: "c", Arrivals: poisson(lambda)}},
	}
	r := run(t, cfg, 40000*time.Second, 5)
	theta := mu - lambda
	wantFrac := math.Exp(-theta * tau)
	wantW := (1 - wantFrac) / theta
	frac := float64(r.Failures.Timeout) / float64(r.Arrivals)
	t.Logf("timed out %.4f (theory %.4f), time in system %.4f s (theory %.4f), little %+v", frac, wantFrac, r.Little.W, wantW, r.Little)
	if math.Abs(frac/wantFrac-1) > 0.03 || math.Abs(r.Little.W/wantW-1) > 0.02 {
		t.Errorf("timed out %.4f (want %.4f), W %.4f (want %.4f)", frac, wantFrac, r.Little.W, wantW)
	}
	if r.Completed+r.Failures.Timeout != r.Arrivals || r.Latency.Max() > tau {
		t.Errorf("completed %d + timed out %d != %d arrivals, or a latency %g above the timeout", r.Completed, r.Failures.Timeout, r.Arrivals, r.Latency.Max())
	}
}

// TestRetriesUnderLoad checks the bookkeeping of retries on an overloaded
// M/M/1 FCFS server with per-try timeouts: every attempt reaches the
// service (arrivals = requests + retries), every given-up attempt is a
// timeout there, and Little's law holds although attempts outlive their
// callers.
func TestRetriesUnderLoad(t *testing.T) {
	cfg := &Config{
		Services: []Service{{Name: "s", Concurrency: 1, Queue: -1,
			Route: Route{Timeout: 2 * time.Second, PerTryTimeout: 300 * time.Millisecond, Retries: 2, RetryOn: []string{"timeout"}}}},
		Classes: []Class{{Name: "c", Call: Call{Service: "s", CPU: workload.DistSpec{Dist: "exp", Mean: 0.1}}}},
		Sources: []Source{{Name: "src", Class: "c", Arrivals: poisson(4)}},
	}
	cl := build(t, cfg, Options{Seed: 2, Horizon: 2000 * time.Second})
	cl.RunUntil(2000 * time.Second)
	r := drain(t, cl)
	st := svcStats(t, observe(cl, cl.Now()), "s")
	if st.Arrivals != r.Arrivals+st.Retries || st.Failures.Timeout != st.Retries+r.Failures.Timeout || st.Retries == 0 {
		t.Errorf("%d calls for %d requests and %d retries; %d timeouts at s for %d retries and %d failed requests",
			st.Arrivals, r.Arrivals, st.Retries, st.Failures.Timeout, st.Retries, r.Failures.Timeout)
	}
	t.Logf("%d requests, %d retries, %d failed; little %+v", r.Arrivals, st.Retries, r.Failures.Timeout, r.Little)
}

// TestCallRoute checks that a call's own route replaces its service's: the
// same slow service times out at one call site and is waited for at the
// other.
func TestCallRoute(t *testing.T) {
	cfg := slowService(3, Route{PerTryTimeout: time.Second})
	cfg.Classes = append(cfg.Classes, Class{Name: "patient", Call: Call{Service: "front", Stages: []Stage{
		{Calls: []Call{{Service: "s", CPU: det(3), Route: &Route{}}}}}}})
	cfg.Sources = append(cfg.Sources, Source{Name: "patient", Class: "patient", Arrivals: poisson(1)})
	cl := build(t, cfg, Options{Seed: 1})
	fin := record(cl)
	feed(cl, 0, sec(1))
	feed(cl, 1, sec(1))
	drain(t, cl)
	if len(*fin) != 2 || (*fin)[0].fail != failTimeout || (*fin)[0].latency() != time.Second ||
		(*fin)[1].fail != failNone || (*fin)[1].latency() != sec(3) {
		t.Errorf("finished %+v: want a timeout after 1 s, then a success after 3 s", *fin)
	}
}
