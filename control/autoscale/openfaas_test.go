package autoscale

import (
	"math"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
)

// faasSim drives an OpenFaaS autoscaler with a scripted load: every period
// of a second it builds the function's snapshot (rps requests per second
// answered, inflight requests in flight at the period's end; at zero
// replicas the requests are refused for lack of capacity, as the simulator
// does), calls Decide and applies SetReplicas at once, the new instances
// ready immediately.
type faasSim struct {
	t        *testing.T
	o        *OpenFaaS
	now      time.Duration
	replicas int
	snap     metrics.Snapshot
	acts     []scaleAct
}

// faasLoad is the load of one period.
type faasLoad struct{ rps, inflight float64 }

func newFaaSSim(t *testing.T, cfg OpenFaaSConfig, replicas int) *faasSim {
	t.Helper()
	if cfg.Service == "" {
		cfg.Service = "fn"
	}
	o, err := NewOpenFaaS(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &faasSim{t: t, o: o, replicas: replicas}
}

func faasStats(name string, replicas int, l faasLoad) metrics.ServiceStats {
	st := metrics.ServiceStats{Name: name, Replicas: replicas, Ready: replicas}
	n := int64(math.Round(l.rps * kedaPeriod.Seconds()))
	if replicas == 0 {
		st.Failures.NoCapacity = n
		return st
	}
	st.Arrivals, st.Completions, st.InFlight = n, n, int(math.Round(l.inflight))
	return st
}

// run advances to until; load gives the load of the period starting at
// its argument.
func (s *faasSim) run(until time.Duration, load func(time.Duration) faasLoad) {
	s.t.Helper()
	for s.now < until {
		start := s.now
		s.now += kedaPeriod
		s.snap.At, s.snap.Period = s.now, kedaPeriod
		s.snap.Services = append(s.snap.Services[:0], faasStats(s.o.cfg.Service, s.replicas, load(start)))
		for _, a := range s.o.Decide(s.now, &s.snap) {
			r, ok := a.(control.SetReplicas)
			if !ok || r.Service != s.o.cfg.Service {
				s.t.Fatalf("%v: unexpected action %#v", s.now, a)
			}
			if r.Replicas > s.o.cfg.MaxReplicas || r.Replicas < 0 {
				s.t.Fatalf("%v: %d replicas outside [0, %d]", s.now, r.Replicas, s.o.cfg.MaxReplicas)
			}
			s.replicas = r.Replicas
			s.acts = append(s.acts, scaleAct{s.now, r.Replicas})
		}
	}
}

func faasRPS(rates []float64, at ...time.Duration) func(time.Duration) faasLoad {
	f := kedaSteps(rates, at...)
	return func(t time.Duration) faasLoad { return faasLoad{rps: f(t)} }
}

func faasInflight(levels []float64, at ...time.Duration) func(time.Duration) faasLoad {
	f := kedaSteps(levels, at...)
	return func(t time.Duration) faasLoad { return faasLoad{inflight: f(t)} }
}

// rps: desired = ceil(ceil(rps) / (target × target-proportion)) with the
// defaults 50 and 0.90 (45 per replica), within [min 1, max 20].
func TestOpenFaaSDesiredRPS(t *testing.T) {
	for _, tc := range []struct {
		rps  float64
		want int
	}{{0, 1}, {10, 1}, {45, 1}, {46, 2}, {90, 2}, {100, 3}, {450, 10}, {451, 11}, {2000, 20}} {
		s := newFaaSSim(t, OpenFaaSConfig{}, 1)
		s.run(sec(60), faasRPS([]float64{tc.rps}))
		if s.replicas != tc.want {
			t.Errorf("%v rps: %d replicas (decisions %v), want %d", tc.rps, s.replicas, s.acts, tc.want)
		}
		if len(s.acts) > 1 {
			t.Errorf("%v rps: decisions %v, want at most one", tc.rps, s.acts)
		}
	}
}

// capacity: the documented examples (target 5 in-flight requests,
// target-proportion 1.0: 15 in flight → 3, 25 → 5, none → min 1), with the
// load the most in flight over the last 45 s. Polls every 15 s from 1 s.
func TestOpenFaaSDesiredCapacity(t *testing.T) {
	s := newFaaSSim(t, OpenFaaSConfig{Type: OpenFaaSCapacity, Target: 5, TargetProportion: 1}, 1)
	s.run(sec(300), faasInflight([]float64{15, 25, 0}, sec(60), sec(120)))
	checkActs(t, s.acts, []scaleAct{
		{sec(1), 3},
		{sec(61), 5},
		{sec(166), 1}, // the 25 of the period ending at 120 s leaves the 45 s window
	})
	// "target 100 with a proportion of 0.7": 90 in flight → 2; 70 is
	// exactly the proportion of the target → 1; 71 → 2.
	for _, tc := range []struct {
		inflight float64
		want     int
	}{{90, 2}, {70, 1}, {71, 2}, {141, 3}} {
		s := newFaaSSim(t, OpenFaaSConfig{Type: OpenFaaSCapacity, Target: 100, TargetProportion: 0.7}, 1)
		s.run(sec(30), faasInflight([]float64{tc.inflight}))
		if s.replicas != tc.want {
			t.Errorf("%v in flight: %d replicas, want %d", tc.inflight, s.replicas, tc.want)
		}
	}
}

func TestOpenFaaSBounds(t *testing.T) {
	for _, tc := range []struct {
		rps  float64
		want int
	}{{0, 2}, {100, 3}, {1000, 4}} {
		s := newFaaSSim(t, OpenFaaSConfig{MinReplicas: 2, MaxReplicas: 4}, 3)
		s.run(sec(60), faasRPS([]float64{tc.rps}))
		if s.replicas != tc.want {
			t.Errorf("%v rps: %d replicas, want %d", tc.rps, s.replicas, tc.want)
		}
	}
}

// The autoscaler decides every PollingInterval: a surge at 10 s is seen at
// the next poll.
func TestOpenFaaSPollingInterval(t *testing.T) {
	for _, tc := range []struct {
		poll time.Duration
		at   time.Duration
	}{{0, sec(16)}, {time.Minute, sec(61)}, {5 * time.Second, sec(11)}} {
		s := newFaaSSim(t, OpenFaaSConfig{PollingInterval: tc.poll}, 1)
		s.run(sec(100), faasRPS([]float64{10, 4500}, sec(10)))
		if len(s.acts) == 0 || s.acts[0].At != tc.at {
			t.Errorf("poll %v: decisions %v, want the first at %v", tc.poll, s.acts, tc.at)
		}
	}
}

// With com.openfaas.scale.zero a function goes to zero at the first turn
// at least zero-duration after its last request (at 100 s), never before;
// without it, never.
func TestOpenFaaSScaleToZeroAfterZeroDuration(t *testing.T) {
	for _, tc := range []struct {
		cfg  OpenFaaSConfig
		want []scaleAct
	}{
		{OpenFaaSConfig{Zero: true}, []scaleAct{{sec(1006), 0}}}, // 100 s + 15m, next poll
		{OpenFaaSConfig{Zero: true, ZeroDuration: 5 * time.Minute}, []scaleAct{{sec(406), 0}}},
		{OpenFaaSConfig{}, nil},
	} {
		s := newFaaSSim(t, tc.cfg, 1)
		load := faasRPS([]float64{10, 0}, sec(100))
		if len(tc.want) > 0 {
			s.run(tc.want[0].At-time.Second, load)
			checkActs(t, s.acts, nil)
		}
		s.run(sec(3000), load)
		checkActs(t, s.acts, tc.want)
	}
}

// At zero replicas the gateway scales to min replicas as soon as a request
// arrives, between the autoscaler's turns (38 s is not a poll).
func TestOpenFaaSScaleFromZero(t *testing.T) {
	s := newFaaSSim(t, OpenFaaSConfig{Zero: true, MinReplicas: 2}, 0)
	s.run(sec(120), faasRPS([]float64{0, 1, 0}, sec(37), sec(38)))
	checkActs(t, s.acts, []scaleAct{{sec(38), 2}})
}

// With the requests held while no instance is ready (an activator: they
// show as queued, not refused), the gateway still scales from zero.
func TestOpenFaaSScaleFromZeroWithHeldRequests(t *testing.T) {
	o, err := NewOpenFaaS(OpenFaaSConfig{Service: "fn", Zero: true, MinReplicas: 2})
	if err != nil {
		t.Fatal(err)
	}
	snap := metrics.Snapshot{At: sec(2), Period: sec(2), Services: []metrics.ServiceStats{{Name: "fn", Queued: 3}}}
	acts := o.Decide(sec(2), &snap)
	if len(acts) != 1 || acts[0] != (control.SetReplicas{Service: "fn", Replicas: 2}) {
		t.Fatalf("actions %v, want fn to 2 replicas", acts)
	}
}

// com.openfaas.scale.down.window: scaling down goes only to the highest
// recommendation of the window, scaling up at once. The load drops at
// 100 s from 450 rps (10 replicas) to 90 rps (2); the recommendations of
// 10 last until the poll at 91 s.
func TestOpenFaaSScaleDownWindow(t *testing.T) {
	load := faasRPS([]float64{450, 90, 450}, sec(100), sec(500))
	s := newFaaSSim(t, OpenFaaSConfig{}, 1)
	s.run(sec(200), load)
	checkActs(t, s.acts, []scaleAct{{sec(1), 10}, {sec(106), 9}, {sec(121), 5}, {sec(136), 2}})

	s = newFaaSSim(t, OpenFaaSConfig{ScaleDownWindow: 5 * time.Minute}, 1)
	s.run(sec(600), load)
	checkActs(t, s.acts, []scaleAct{{sec(1), 10}, {sec(391), 9}, {sec(406), 5}, {sec(421), 2},
		{sec(511), 5}, {sec(526), 9}, {sec(541), 10}}) // up at once, as the rate rises
}

func TestOpenFaaSConfigDefaults(t *testing.T) {
	o, err := NewOpenFaaS(OpenFaaSConfig{Service: "s"})
	if err != nil {
		t.Fatal(err)
	}
	want := OpenFaaSConfig{Service: "s", MinReplicas: 1, MaxReplicas: 20, Type: OpenFaaSRPS, Target: 50, TargetProportion: 0.9,
		ZeroDuration: 15 * time.Minute, PollingInterval: 15 * time.Second, RPSWindow: 30 * time.Second, CapacityWindow: 45 * time.Second}
	if got := o.Config(); got != want {
		t.Fatalf("config\n got %+v\nwant %+v", got, want)
	}
}

func TestOpenFaaSConfigErrorsNameTheField(t *testing.T) {
	ok := OpenFaaSConfig{Service: "s"}
	for _, tc := range []struct {
		mod  func(*OpenFaaSConfig)
		want string
	}{
		{func(c *OpenFaaSConfig) { c.Service = "" }, "service"},
		{func(c *OpenFaaSConfig) { c.MinReplicas = -1 }, "min_replicas"},
		{func(c *OpenFaaSConfig) { c.MinReplicas, c.MaxReplicas = 5, 3 }, "max_replicas"},
		{func(c *OpenFaaSConfig) { c.Type = "cpu" }, "type"},
		{func(c *OpenFaaSConfig) { c.Type = "latency" }, "type"},
		{func(c *OpenFaaSConfig) { c.Target = -1 }, "target"},
		{func(c *OpenFaaSConfig) { c.TargetProportion = 90 }, "target_proportion"},
		{func(c *OpenFaaSConfig) { c.ZeroDuration = -time.Minute }, "zero_duration"},
		{func(c *OpenFaaSConfig) { c.ScaleDownWindow = 10 * time.Minute }, "scale_down_window"},
		{func(c *OpenFaaSConfig) { c.PollingInterval = -time.Second }, "polling_interval"},
		{func(c *OpenFaaSConfig) { c.RPSWindow = -time.Second }, "rps_window"},
		{func(c *OpenFaaSConfig) { c.CapacityWindow = -time.Second }, "capacity_window"},
	} {
		cfg := ok
		tc.mod(&cfg)
		_, err := NewOpenFaaS(cfg)
		if !kedaNamesField(err, "new openfaas: ", tc.want) {
			t.Errorf("%+v: error %v, want it to name %q", cfg, err, tc.want)
		}
	}
}

// The capacity load counts requests refused with no instance ready as held
// at the gateway; the rps load counts every response once.
func TestOpenFaaSLoadSamples(t *testing.T) {
	st := metrics.ServiceStats{Replicas: 1, Ready: 0, InFlight: 0, Queued: 0, Completions: 5}
	st.Failures = metrics.Failures{Rejected: 2, OOM: 1, NoCapacity: 4, Timeout: 9}
	if got := openFaaSSample(OpenFaaSRPS, &st); got != 12 {
		t.Errorf("rps sample %v, want 12", got)
	}
	if got := openFaaSSample(OpenFaaSCapacity, &st); got != 4 {
		t.Errorf("capacity sample with no instance ready %v, want 4", got)
	}
	st.Ready, st.InFlight, st.Queued = 1, 3, 2
	if got := openFaaSSample(OpenFaaSCapacity, &st); got != 5 {
		t.Errorf("capacity sample %v, want 5", got)
	}
}

func TestOpenFaaSDecideAllocatesNothingInSteadyState(t *testing.T) {
	for _, typ := range []string{OpenFaaSRPS, OpenFaaSCapacity} {
		o, err := NewOpenFaaS(OpenFaaSConfig{Service: "s", Type: typ, Zero: true, ScaleDownWindow: time.Minute, PollingInterval: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		snap := metrics.Snapshot{Period: kedaPeriod, Services: []metrics.ServiceStats{
			faasStats("a", 1, faasLoad{3, 1}), faasStats("s", 3, faasLoad{120, 120})}}
		if a := steadyAllocs(t, o, &snap, kedaPeriod, 300); a != 0 {
			t.Fatalf("%s: %v allocations per Decide", typ, a)
		}
	}
}
