package cluster

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/shoal-project/shoal/workload"
)

// closedLoop is n users of class c (one service, one core, exponential
// demand of mean 1/mu) thinking an exponential time of mean z.
func closedLoop(n int, mu, z float64) *Config {
	return &Config{
		Services: []Service{{Name: "s"}},
		Classes:  []Class{{Name: "c", Call: Call{Service: "s", CPU: workload.DistSpec{Dist: "exp", Mean: 1 / mu}}}},
		Sources:  []Source{{Name: "users", Class: "c", Users: Users{Count: n}, Think: workload.DistSpec{Dist: "exp", Mean: z}}},
	}
}

// TestMachineRepairman checks closed-loop users against M/M/1//N (the
// machine-repairman model; Kleinrock, Queueing Systems vol. 1, 3.8): N users
// thinking Exp(lambda), one exponential server of rate mu, whose throughput
// is mu(1-p0) with p0 = 1/sum_k N!/(N-k)! (lambda/mu)^k, for FCFS and for
// processor sharing alike; and the interactive response-time law
// N = X (R + Z).
func TestMachineRepairman(t *testing.T) {
	const mu, z = 4.0, 1.0
	for _, n := range []int{1, 5, 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			sum, term := 1.0, 1.0
			for k := 1; k <= n; k++ {
				term *= float64(n-k+1) / (z * mu)
				sum += term
			}
			wantX := mu * (1 - 1/sum)
			wantR := float64(n)/wantX - z
			const horizon = 100000 * time.Second
			r := run(t, closedLoop(n, mu, z), horizon, 7)
			x := float64(r.Completed) / (horizon - horizon/20).Seconds()
			rt := r.Latency.Mean()
			t.Logf("X %.4f (theory %.4f), R %.4f s (theory %.4f), N/(X(R+Z)) %.4f", x, wantX, rt, wantR, float64(n)/(x*(rt+z)))
			if math.Abs(x/wantX-1) > 0.01 || math.Abs(rt/wantR-1) > 0.03 {
				t.Errorf("throughput %.4f (want %.4f), response %.4f (want %.4f)", x, wantX, rt, wantR)
			}
			if law := float64(n) / (x * (rt + z)); math.Abs(law-1) > 0.01 {
				t.Errorf("N / X(R+Z) = %.4f, want 1", law)
			}
		})
	}
}

// TestUsersWaitForTheOutcome checks the user loop on a deterministic
// schedule: one user thinks 0.5 s, sends a request that takes 3 s, gives
// up at its class's 1 s timeout and thinks again, so it sends every 1.5 s
// while its requests overlap at the server; users cycle through their
// visit.
func TestUsersWaitForTheOutcome(t *testing.T) {
	cfg := &Config{
		Services: []Service{{Name: "s", CPU: 64}},
		Classes: []Class{
			{Name: "slow", Timeout: time.Second, Call: Call{Service: "s", CPU: det(3)}},
			{Name: "fast", Call: Call{Service: "s", CPU: det(0.25)}},
		},
		Sources: []Source{{Name: "u", Users: Users{Count: 1}, Think: det(0.5), Visit: []string{"slow", "slow", "fast"}}},
	}
	cl := build(t, cfg, Options{Seed: 1, Horizon: sec(6.1)})
	var starts []time.Duration
	cl.onStart = func(c *call) { starts = append(starts, c.start) }
	cl.RunUntil(sec(6.1))
	r := drain(t, cl)
	// slow at 0.5 (gives up at 1.5), slow at 2 (gives up at 3), fast at 3.5
	// (done at 3.75), slow at 4.25, slow at 5.75.
	want := []time.Duration{sec(0.5), sec(2), sec(3.5), sec(4.25), sec(5.75)}
	if len(starts) != len(want) {
		t.Fatalf("requests at %v, want %v", starts, want)
	}
	for i := range want {
		if starts[i] != want[i] {
			t.Errorf("request %d at %v, want %v", i, starts[i], want[i])
		}
	}
	if r.Classes[0].Arrivals != 4 || r.Classes[0].Failures.Timeout != 4 || r.Classes[1].Completed() != 1 {
		t.Errorf("classes %+v", r.Classes)
	}
}

// TestUsersOverTime checks a number of users that follows a series: in each
// step the throughput is users / (R + Z), and users beyond the count stop
// after their request.
func TestUsersOverTime(t *testing.T) {
	cfg := closedLoop(0, 1000, 1)
	cfg.Sources[0].Users = Users{Over: &workload.ProcessSpec{Kind: workload.KindSeries, Step: 1000 * time.Second, Rates: []float64{4, 20, 2}}}
	cl := build(t, cfg, Options{Seed: 3, Horizon: 3000 * time.Second, SamplePeriod: 1000 * time.Second})
	cl.RunUntil(3000 * time.Second)
	r := drain(t, cl)
	if len(cl.sources[0].users) != 20 {
		t.Fatalf("%d users, want the peak, 20", len(cl.sources[0].users))
	}
	for i, n := range []float64{4, 20, 2} {
		got := r.Requests.Rate[i]
		want := n / (1 + 0.001)
		t.Logf("step %d: %.3f req/s, want about %.3f", i, got, want)
		if math.Abs(got/want-1) > 0.05 {
			t.Errorf("step %d: %.3f req/s, want %.3f", i, got, want)
		}
	}
}

// TestUsersCommonRandomNumbers checks that each user's j-th request is the
// same for every policy (its own stream gives its think times and demands),
// although the policies serve them at different times.
func TestUsersCommonRandomNumbers(t *testing.T) {
	cfg := crnCfg()
	cfg.Sources = []Source{{Name: "u", Class: "page", LB: "lb1", Users: Users{Count: 30}, Think: workload.DistSpec{Dist: "exp", Mean: 0.2}}}
	var seqs [2]map[int][]string
	var lat [2]float64
	for i, pol := range []string{"lsq", "ecmp"} {
		cl := build(t, cfg, Options{Seed: 9, Policy: pol, Horizon: 20 * time.Second})
		seqs[i] = map[int][]string{}
		cl.onStart = func(c *call) {
			if c.req != nil && c.req.user != nil {
				u := c.req.user.idx
				seqs[i][u] = append(seqs[i][u], fmt.Sprintf("%.17g", c.cpu))
			}
		}
		cl.RunUntil(20 * time.Second)
		lat[i] = drain(t, cl).Latency.Mean()
	}
	if lat[0] == lat[1] {
		t.Fatal("the two policies should differ in latency")
	}
	n := 0
	for u, a := range seqs[0] {
		b := seqs[1][u]
		k := min(len(a), len(b))
		for j := 0; j < k; j++ {
			if a[j] != b[j] {
				t.Fatalf("user %d, request %d: demand %s vs %s", u, j, a[j], b[j])
			}
		}
		n += k
	}
	if n < 1000 {
		t.Errorf("only %d requests compared", n)
	}
}

// TestUsersFromATrace checks users driven by a trace: the Alibaba
// utilisation series read as a number of users, whose count follows each
// bucket of the replay.
func TestUsersFromATrace(t *testing.T) {
	cfg := closedLoop(0, 1000, 1)
	cfg.Sources[0].Users = Users{Over: &workload.ProcessSpec{Kind: workload.KindTrace, Trace: "alibaba", Window: time.Hour, Speedup: 60, Scale: 1.0 / 60}}
	cl := build(t, cfg, Options{Seed: 1, Horizon: time.Minute})
	src := cl.sources[0]
	if want := int(math.Round(src.level.Peak())); len(src.users) != want || want < 20 {
		t.Fatalf("%d users, want the peak utilisation, %d", len(src.users), want)
	}
	for _, at := range []time.Duration{0, 10 * time.Second, 45*time.Second + time.Millisecond} {
		cl.RunUntil(at)
		i := int(at / src.level.Step()) // 30 s of trace per 0.5 s
		if want := int(math.Round(src.level.BucketRate(i))); src.active != want {
			t.Errorf("at %v: %d users active, want %d (bucket %d)", at, src.active, want, i)
		}
	}
	cl.RunUntil(time.Minute)
	drain(t, cl)
}
