package cluster

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/workload"
)

// admissionFarm is one explicit LB point with admission adm in front of n
// instances of one core, fed by Poisson arrivals of rate lambda whose CPU
// demand is d.
func admissionFarm(n int, lambda float64, d workload.DistSpec, adm lb.Admission) *Config {
	return &Config{
		Services: []Service{{Name: "s", Replicas: n}},
		Classes:  []Class{{Name: "c", Call: Call{Service: "s", CPU: d}}},
		LBs:      []LBPoint{{Name: "lb", Service: "s", Admission: &adm}},
		Sources:  []Source{{Name: "src", Class: "c", LB: "lb", Arrivals: poisson(lambda)}},
	}
}

// mmcK is M/M/c/K (K places in all, c of them servers) at offered load a =
// lambda/mu: the probability that an arrival finds it full (and is lost)
// and the mean number in the system. K = c is Erlang's loss system.
func mmcK(c, k int, a float64) (block, mean float64) {
	p := make([]float64, k+1)
	p[0] = 1
	for n := 1; n <= k; n++ {
		p[n] = p[n-1] * a / float64(min(n, c))
	}
	var sum float64
	for _, x := range p {
		sum += x
	}
	for n := range p {
		p[n] /= sum
		mean += float64(n) * p[n]
	}
	return p[k], mean
}

// erlangB is Erlang's loss formula by its recursion, B(0) = 1,
// B(n) = a B(n-1) / (n + a B(n-1)): an independent check of mmcK.
func erlangB(c int, a float64) float64 {
	b := 1.0
	for n := 1; n <= c; n++ {
		b = a * b / (float64(n) + a*b)
	}
	return b
}

// TestAdmissionMMcK checks an LB point's admission against queueing
// theory. With max_requests 1 in front of N one-core instances of
// exponential demand, each instance serves one call at a time, and the LB
// point's FIFO of max_pending K makes the system M/M/N/(N+K): the shed
// share is the probability an arrival finds N+K calls there (PASTA),
// Erlang's loss formula for K = 0, and the served calls' mean response
// time is L / (lambda (1 - P_block)) by Little's law. About 1.1 million
// arrivals per case with seed 1; both must agree within 2% (relative).
// The cases shed 14-47% of the calls, where the share's spread over seeds
// is about 0.5% (N=2, K=8, a=2.4: -0.5% to +0.5% over seeds 1-8); at a
// share of 2.6% (a=1.6) it is 2%, too noisy for the bound.
func TestAdmissionMMcK(t *testing.T) {
	const mu = 10.0
	for _, tc := range []struct {
		n, k int
		a    float64 // offered load lambda/mu
	}{
		{4, 0, 3}, // Erlang B(4, 3) = 0.2061
		{4, 0, 6}, // overloaded loss system
		{4, 4, 4}, // a queue, at load 1
		{2, 8, 2.4},
		{8, 16, 10}, // overloaded: the queue is mostly full
	} {
		t.Run(fmt.Sprintf("N=%d,K=%d,a=%g", tc.n, tc.k, tc.a), func(t *testing.T) {
			lambda := tc.a * mu
			pending := tc.k
			if pending == 0 {
				pending = -1 // no queue
			}
			horizon := time.Duration(1.2e6/lambda) * time.Second
			cfg := admissionFarm(tc.n, lambda, workload.DistSpec{Dist: "exp", Mean: 1 / mu},
				lb.Admission{MaxRequests: 1, MaxPending: pending, QueueTimeout: 1000 * time.Hour})
			r := run(t, cfg, horizon, 1)
			block, l := mmcK(tc.n, tc.n+tc.k, tc.a)
			if tc.k == 0 && math.Abs(block/erlangB(tc.n, tc.a)-1) > 1e-12 {
				t.Fatalf("mmcK %g, Erlang B %g", block, erlangB(tc.n, tc.a))
			}
			w := l / (lambda * (1 - block))
			shed := float64(r.Failures.Shed) / float64(r.Arrivals)
			mean := r.Latency.Mean()
			t.Logf("%d arrivals: shed %.5f (theory %.5f, %+.2f%%), mean response %.5f s (theory %.5f, %+.2f%%)",
				r.Arrivals, shed, block, 100*(shed/block-1), mean, w, 100*(mean/w-1))
			if r.Failures.Total() != r.Failures.Shed || r.Completed+r.Failures.Shed != r.Arrivals {
				t.Errorf("failures %+v, %d completed of %d", r.Failures, r.Completed, r.Arrivals)
			}
			if math.Abs(shed/block-1) > 0.02 {
				t.Errorf("shed share %.5f, want %.5f within 2%%", shed, block)
			}
			if math.Abs(mean/w-1) > 0.02 {
				t.Errorf("mean response %.5f s, want %.5f within 2%%", mean, w)
			}
		})
	}
}

// TestAdmissionQueue follows calls through an LB point's queue with
// deterministic 3 s calls on one instance that takes one at a time.
func TestAdmissionQueue(t *testing.T) {
	type arrival struct {
		src int
		at  float64
	}
	type outcome struct {
		start, end float64
		fail       uint8
		timedOut   bool
	}
	for _, tc := range []struct {
		name    string
		pending int
		change  func(c *Config)
		at      []arrival
		want    []outcome // in finishing order
		shed    int64
	}{
		{"shed after exactly the queue timeout, or at once when full", 2, nil,
			[]arrival{{0, 0}, {0, 0.5}, {0, 0.8}, {0, 0.9}, {0, 2.9}},
			[]outcome{{0.9, 0.9, failShed, false}, {0.5, 2.5, failShed, false}, {0.8, 2.8, failShed, false}, {0, 3, 0, false}, {2.9, 6, 0, false}}, 3},
		{"a freed slot goes to the oldest waiting call", 3, nil,
			[]arrival{{0, 0}, {0, 1.2}, {0, 1.3}, {0, 1.4}},
			[]outcome{{0, 3, 0, false}, {1.3, 3.3, failShed, false}, {1.4, 3.4, failShed, false}, {1.2, 6, 0, false}}, 2},
		{"no queue: shed at once", -1, nil,
			[]arrival{{0, 0}, {0, 1}, {0, 3.5}},
			[]outcome{{1, 1, failShed, false}, {0, 3, 0, false}, {3.5, 6.5, 0, false}}, 1},
		{"the client's timeout takes its call out of the queue", 1,
			func(c *Config) { c.Classes[1].Timeout = time.Second },
			// Without it, 2 would be shed at once: the queue holds one.
			[]arrival{{0, 0}, {1, 0.5}, {0, 2}},
			[]outcome{{0.5, 1.5, failTimeout, true}, {0, 3, 0, false}, {2, 6, 0, false}}, 0},
		{"a route timeout takes its attempt out of the queue", 1,
			func(c *Config) { c.Classes[1].Call.Route = &Route{Timeout: time.Second} },
			[]arrival{{0, 0}, {1, 0.5}, {0, 2}},
			[]outcome{{0.5, 1.5, failTimeout, false}, {0, 3, 0, false}, {2, 6, 0, false}}, 0},
		{"a route timeout runs from the queue", 2,
			func(c *Config) { c.Classes[1].Call.Route = &Route{Timeout: 4 * time.Second} },
			// 1.5 leaves the queue at 3 and gives up at 5.5, in service.
			[]arrival{{0, 0}, {1, 1.5}},
			[]outcome{{0, 3, 0, false}, {1.5, 5.5, failTimeout, false}}, 0},
		{"shed calls are retried with retry_on's default", 1,
			func(c *Config) { c.Classes[1].Call.Route = &Route{Retries: 1} },
			// 0.9 is shed at 2.9; its retry, after a back-off below 25
			// ms, waits and is served 3-6.
			[]arrival{{0, 0}, {1, 0.9}},
			[]outcome{{0, 3, 0, false}, {0.9, 6, 0, false}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			adm := lb.Admission{MaxRequests: 1, MaxPending: tc.pending, QueueTimeout: 2 * time.Second}
			cfg := &Config{
				Services: []Service{{Name: "s"}},
				Classes: []Class{{Name: "c", Call: Call{Service: "s", CPU: det(3)}},
					{Name: "d", Call: Call{Service: "s", CPU: det(3)}}},
				LBs: []LBPoint{{Name: "lb", Service: "s", Admission: &adm}},
				Sources: []Source{{Name: "src", Class: "c", LB: "lb", Arrivals: poisson(1)},
					{Name: "other", Class: "d", LB: "lb", Arrivals: poisson(1)}},
			}
			if tc.change != nil {
				tc.change(cfg)
			}
			cl := build(t, cfg, Options{Seed: 1})
			fin := record(cl)
			var at [2][]time.Duration
			for _, a := range tc.at {
				at[a.src] = append(at[a.src], sec(a.at))
			}
			feed(cl, 0, at[0]...)
			feed(cl, 1, at[1]...)
			r := drain(t, cl)
			if r.Failures.Shed != tc.shed {
				t.Errorf("failures %+v, want %d shed", r.Failures, tc.shed)
			}
			if len(*fin) != len(tc.want) {
				t.Fatalf("%d finished, want %d: %+v", len(*fin), len(tc.want), *fin)
			}
			for i, d := range *fin {
				w := tc.want[i]
				if d.start != sec(w.start) || d.end != sec(w.end) || d.fail != w.fail || d.timedOut != w.timedOut {
					t.Errorf("request %d: %v-%v fail %d timed out %v, want %+v", i, d.start, d.end, d.fail, d.timedOut, w)
				}
			}
			if err := checkInvariants(cl); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestAdmissionQueueTimeoutBound checks, with Poisson arrivals and
// deterministic demand, that no call waits longer than the queue
// timeout: a served call takes between its demand and the demand plus the
// timeout, and a shed one is shed at once or after exactly the timeout.
func TestAdmissionQueueTimeoutBound(t *testing.T) {
	const demand, timeout = 0.1, 50 * time.Millisecond
	cfg := admissionFarm(3, 40, det(demand), lb.Admission{MaxRequests: 1, MaxPending: 3, QueueTimeout: timeout})
	cl := build(t, cfg, Options{Seed: 3, Horizon: 300 * time.Second})
	fin := record(cl)
	r := drain(t, cl)
	var atOnce, late int64
	for _, d := range *fin {
		switch lat := d.latency(); {
		case d.fail == failShed && lat == 0:
			atOnce++
		case d.fail == failShed && lat == timeout:
			late++
		case d.fail == failNone && lat >= sec(demand)-2 && lat <= sec(demand)+timeout+2:
		default:
			t.Fatalf("a request took %v, failure %d", lat, d.fail)
		}
	}
	t.Logf("%d arrivals: %d shed at once, %d after the queue timeout", r.ArrivedAll, atOnce, late)
	if atOnce == 0 || late == 0 || r.Failures.Shed != atOnce+late {
		t.Errorf("shed %d at once, %d late, failures %+v: both kinds should occur", atOnce, late, r.Failures)
	}
}

// stepChecked runs cl to its end, calling each after every event and
// checking the invariants, then drains it and checks that no request is
// left and that Little's law holds.
func stepChecked(t *testing.T, cl *Cluster, each func()) *Results {
	t.Helper()
	for cl.Now() < time.Hour && cl.k.Step() {
		each()
		if err := checkInvariants(cl); err != nil {
			t.Fatalf("at %v: %v", cl.Now(), err)
		}
	}
	cl.Drain(time.Hour)
	r := cl.Results()
	if cl.InSystem() != 0 || !r.Little.OK() {
		t.Fatalf("%d requests left, little %+v", cl.InSystem(), r.Little)
	}
	return r
}

// TestAdmissionFullNeverPicked runs every selector, learned ones
// included, against LB points with admission in an overloaded farm with
// RTTs, heterogeneous instances and replicas that come and go, and checks
// after every event that no LB point has more than max_requests in flight
// at a backend, that a full backend is not up (under ring-hash and maglev
// it stays up), and that calls wait only while every ready backend is full
// (under ring-hash and maglev, while their own backend is: checkAdmission).
func TestAdmissionFullNeverPicked(t *testing.T) {
	one := 1
	exp := func(m float64) workload.DistSpec { return workload.DistSpec{Dist: "exp", Mean: m} }
	adm := lb.Admission{MaxRequests: 3, MaxPending: 5, QueueTimeout: 50 * time.Millisecond}
	cfg := &Config{
		Locations: []Location{{Name: "x", RTT: map[string]time.Duration{"y": 4 * time.Millisecond}}, {Name: "y"}},
		Services:  []Service{{Name: "s", Instances: []InstanceSpec{{CPU: 1}, {CPU: 2}, {CPU: 1, Speed: 2}, {CPU: 4}}, MaxReplicas: 8}},
		Classes:   []Class{{Name: "c", Timeout: 300 * time.Millisecond, Call: Call{Service: "s", CPU: exp(0.02)}}},
		LBs:       []LBPoint{{Name: "a", Service: "s", Admission: &adm}, {Name: "b", Service: "s", Location: "y", Admission: &adm}},
		Sources: []Source{{Name: "sa", Class: "c", LB: "a", Arrivals: poisson(400), Sessions: 50},
			{Name: "sb", Class: "c", LB: "b", Arrivals: poisson(300)}},
		Changes: []Change{{At: 2 * time.Second, Service: "s", Replicas: &one}, {At: 4 * time.Second, Service: "s", Replicas: ptr(6)}},
	}
	for _, policy := range slices.Sorted(func(yield func(string) bool) {
		for name := range lb.Classical() {
			if !yield(name) {
				return
			}
		}
	}) {
		t.Run(policy, func(t *testing.T) {
			cl := build(t, cfg, Options{Seed: 5, Policy: policy, Horizon: 6 * time.Second})
			r := stepChecked(t, cl, func() {
				for _, p := range cl.lbs {
					for j, q := range p.view.InFlight {
						if q > p.adm.max || (q == p.adm.max && p.view.Up[j] && !p.adm.hashing) {
							t.Fatalf("at %v: lb %s has %d in flight at backend %d (up %v), max %d", cl.Now(), p.name, q, j, p.view.Up[j], p.adm.max)
						}
					}
				}
			})
			if r.Failures.Shed == 0 || r.Completed == 0 {
				t.Errorf("failures %+v, %d completed: the farm should shed some", r.Failures, r.Completed)
			}
		})
	}
}

func ptr[T any](x T) *T { return &x }

// TestAdmissionHashingAffinity runs ring-hash and maglev behind an LB point
// with admission, overloaded, every instance ready throughout, and checks
// after every event that each call at an instance is at the backend its key
// hashes to (a fresh selector's pick over every instance), however full
// that backend and however idle the others; that no backend has more than
// max_requests in flight; and that the view's version never changes, so
// the selector never rebuilds its table as backends fill and free.
func TestAdmissionHashingAffinity(t *testing.T) {
	adm := lb.Admission{MaxRequests: 2, MaxPending: 16, QueueTimeout: 50 * time.Millisecond}
	// 4 one-core instances of mean demand 20 ms serve 200/s: load 1.5.
	cfg := admissionFarm(4, 300, workload.DistSpec{Dist: "exp", Mean: 0.02}, adm)
	cfg.Sources[0].Sessions = 40
	for _, policy := range []string{"ring-hash", "maglev"} {
		t.Run(policy, func(t *testing.T) {
			cl := build(t, cfg, Options{Seed: 7, Policy: policy, Horizon: 20 * time.Second})
			p := cl.lbs[0]
			if !p.adm.hashing {
				t.Fatal("admission does not know its selector hashes")
			}
			var ref lb.Selector = &lb.RingHash{}
			if policy == "maglev" {
				ref = &lb.Maglev{}
			}
			all := lb.View{InFlight: make([]int32, len(p.view.Up)), Weights: slices.Clone(p.view.Weights),
				Up: slices.Repeat([]bool{true}, len(p.view.Up)), Names: slices.Clone(p.view.Names)}
			home := map[uint64]int{} // key -> its backend
			version := p.view.Version
			var checked, waitedWithRoom int
			r := stepChecked(t, cl, func() {
				if p.view.Version != version {
					t.Fatalf("at %v: view version %d, was %d: the table was rebuilt", cl.Now(), p.view.Version, version)
				}
				room := false
				for j, in := range p.svc.slots {
					if q := p.view.InFlight[j]; q > p.adm.max || !p.view.Up[j] {
						t.Fatalf("at %v: backend %d has %d in flight (max %d), up %v", cl.Now(), j, q, p.adm.max, p.view.Up[j])
					}
					room = room || p.view.InFlight[j] < p.adm.max
					for _, c := range in.calls {
						want, ok := home[c.key]
						if !ok {
							want = ref.Select(&all, lb.Request{Key: c.key})
							home[c.key] = want
						}
						if j != want {
							t.Fatalf("at %v: a call of key %x at backend %d, its key's is %d", cl.Now(), c.key, j, want)
						}
						checked++
					}
				}
				if room && p.adm.waiting() > 0 {
					waitedWithRoom++
				}
			})
			t.Logf("%d arrivals, %d served, %d shed, %d keys; %d calls checked, %d steps with calls waiting while a backend had room",
				r.Arrivals, r.Completed, r.Failures.Shed, len(home), checked, waitedWithRoom)
			if r.Failures.Shed == 0 || r.Completed == 0 || waitedWithRoom == 0 || len(home) < 20 {
				t.Error("the farm should serve, shed, and hold calls for a full backend while another has room")
			}
		})
	}
}

// TestAdmissionHashingWaitsForItsBackend follows one key's calls through
// the queue under ring-hash and maglev: with max_requests 1, two 3 s calls
// of the same key arrive at 0 and 1; the second waits for the first's
// backend though the other is idle, and goes there at 3. A call of another
// key, sent at 1.5 to the other backend, does not wait.
func TestAdmissionHashingWaitsForItsBackend(t *testing.T) {
	for _, policy := range []string{"ring-hash", "maglev"} {
		t.Run(policy, func(t *testing.T) {
			adm := lb.Admission{MaxRequests: 1, MaxPending: 4, QueueTimeout: 10 * time.Second}
			cfg := admissionFarm(2, 1, det(3), adm)
			for i := 1; i < 8; i++ { // one key each
				cfg.Sources = append(cfg.Sources, Source{Name: fmt.Sprint("src", i), Class: "c", LB: "lb", Arrivals: poisson(1)})
			}
			for i := range cfg.Sources {
				cfg.Sources[i].Sessions = 1
			}
			cl := build(t, cfg, Options{Seed: 1, Policy: policy})
			p := cl.lbs[0]
			pick := func(src int) int { return p.sel.Select(&p.view, lb.Request{Key: affinityKey(src, 0)}) }
			mine, other := pick(0), -1
			for i := range cl.sources {
				feed(cl, i) // none, unless fed below
				if other < 0 && pick(i) != mine {
					other = i
				}
			}
			if other < 0 {
				t.Fatalf("every source's key hashes to backend %d", mine)
			}
			fin := record(cl)
			feed(cl, 0, 0, sec(1))
			feed(cl, other, sec(1.5))
			version := p.view.Version
			for cl.Now() < 10*time.Second && cl.k.Step() {
				if p.view.Version != version {
					t.Fatalf("at %v: the view's version changed", cl.Now())
				}
				if err := checkInvariants(cl); err != nil {
					t.Fatal(err)
				}
			}
			drain(t, cl)
			sent := [2]int64{p.stats[0].Sent, p.stats[1].Sent}
			want := [2]int64{1, 1}
			want[mine] = 2
			if sent != want {
				t.Errorf("sent %v to the backends, want %v", sent, want)
			}
			var ends []float64
			for _, d := range *fin {
				if d.fail != failNone {
					t.Errorf("a request failed: %+v", d)
				}
				ends = append(ends, d.end.Seconds())
			}
			if !slices.Equal(ends, []float64{3, 4.5, 6}) {
				t.Errorf("requests ended at %v s, want 3, 4.5 and 6", ends)
			}
		})
	}
}

// TestActionsInvariantsAdmission runs the action scripts with admission at
// both LB points of actionCfg.
func TestActionsInvariantsAdmission(t *testing.T) {
	var shed int64
	for i, script := range actionScripts {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			for seed := uint64(0); seed < 5; seed++ {
				cfg := actionCfg()
				cfg.LBs[0].Admission = &lb.Admission{MaxRequests: 2, MaxPending: 4, QueueTimeout: 20 * time.Millisecond}
				cfg.LBs[1].Admission = &lb.Admission{MaxRequests: 1, MaxPending: -1}
				r := runActionsOn(t, cfg, []string{"lsq", "p2c", "wcmp", "ring-hash", "least-request"}, []byte(script), seed)
				shed += r.Failures.Shed
			}
		})
	}
	if shed == 0 {
		t.Error("no call was shed: the scripts should exercise admission")
	}
}

// TestAdmissionTelemetry checks that shed calls count in the service's,
// the class's and the LB point's telemetry of the period, and in the
// results.
func TestAdmissionTelemetry(t *testing.T) {
	cfg := admissionFarm(2, 100, det(0.05), lb.Admission{MaxRequests: 1, MaxPending: -1})
	cl := build(t, cfg, Options{Seed: 1, Horizon: 20 * time.Second})
	var snap metrics.Snapshot
	var svc, cls, lbShed int64
	for at := time.Second; at <= 20*time.Second; at += time.Second {
		cl.RunUntil(at)
		cl.Observe(&snap)
		svc += snap.Services[0].Failures.Shed
		cls += snap.Classes[0].Failures.Shed
		lbShed += snap.LBs[0].Shed
	}
	r := drain(t, cl)
	if r.Failures.Shed == 0 || svc != r.Failures.Shed || cls != r.Failures.Shed || lbShed != r.Failures.Shed ||
		r.Classes[0].Failures.Shed != r.Failures.Shed {
		t.Errorf("shed: results %d, class result %d, service %d, class %d, lb %d", r.Failures.Shed, r.Classes[0].Failures.Shed, svc, cls, lbShed)
	}
}

// TestAdmissionNilUnchanged checks that an admission nothing reaches
// (caps and a queue far above the load) changes no output byte: masking
// and queueing cost nothing until a backend is full.
func TestAdmissionNilUnchanged(t *testing.T) {
	opt := Options{Seed: 42, Policy: "p2c", Horizon: 20 * time.Second, Warmup: 2 * time.Second}
	plain := runJSON(t, richCfg(), opt)
	cfg := richCfg()
	for i := range cfg.LBs {
		cfg.LBs[i].Admission = &lb.Admission{MaxRequests: 1 << 20}
	}
	if got := runJSON(t, cfg, opt); !bytes.Equal(plain, got) {
		t.Error("an admission that never binds changed the results")
	}
}

// TestAdmissionQueueWaitIsNotBackendTime checks that the LB point's own
// response times of a backend and the service's (what its selector's
// feedback and the mesh's destination metrics see) start when the LB
// point sends a queued call on, as the proxy measures them, while the
// request's includes its wait.
func TestAdmissionQueueWaitIsNotBackendTime(t *testing.T) {
	cfg := admissionFarm(1, 1, det(3), lb.Admission{MaxRequests: 1, MaxPending: 1, QueueTimeout: 10 * time.Second})
	cl := build(t, cfg, Options{Seed: 1})
	feed(cl, 0, 0, sec(1)) // 1 waits until 3, is served 3-6
	s := observe(cl, 10*time.Second)
	b, svc, cls := s.LBs[0].Backends[0].Latency, s.Services[0].Latency, s.Classes[0].Latency
	if b.Count != 2 || b.Sum != 6 || svc.Count != 2 || svc.Sum != 6 || cls.Count != 2 || cls.Sum != 8 {
		t.Errorf("latency sums: lb %+v, service %+v, class %+v; want 6, 6 and 8 s", b, svc, cls)
	}
}
