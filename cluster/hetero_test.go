package cluster

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/workload"
)

// TestInstanceSpeeds checks deterministic response times on instances that
// differ in CPU limit, speed, I/O speed and I/O parallelism, with n calls
// arriving together.
func TestInstanceSpeeds(t *testing.T) {
	for _, tc := range []struct {
		name string
		svc  Service
		call Call
		n    int
		want time.Duration // every call's latency
	}{
		{"speed 2", Service{Speed: 2}, Call{CPU: det(1)}, 1, sec(0.5)},
		{"half a core", Service{CPU: 0.5}, Call{CPU: det(1)}, 1, sec(2)},
		{"one job cannot use two cores", Service{CPU: 2}, Call{CPU: det(1)}, 1, sec(1)},
		{"two jobs on two cores", Service{CPU: 2}, Call{CPU: det(1)}, 2, sec(1)},
		{"three jobs share two cores", Service{CPU: 2}, Call{CPU: det(1)}, 3, sec(1.5)},
		{"three jobs, two cores at speed 2", Service{CPU: 2, Speed: 2}, Call{CPU: det(1)}, 3, sec(0.75)},
		{"io pure delay at speed 2", Service{IOSpeed: 2}, Call{IO: det(1)}, 3, sec(0.5)},
		{"io shared by one channel", Service{IOParallelism: 1}, Call{IO: det(1)}, 2, sec(2)},
		{"io two channels", Service{IOParallelism: 2}, Call{IO: det(1)}, 2, sec(1)},
		{"io three share two channels at speed 2", Service{IOParallelism: 2, IOSpeed: 2}, Call{IO: det(1)}, 3, sec(0.75)},
		// Two calls alternate 0.5 CPU and 0.5 I/O twice: CPU shared (1 s),
		// I/O (0.5 s), CPU shared (1 s), I/O (0.5 s).
		{"two phases", Service{}, Call{CPU: det(1), IO: det(1), Phases: 2}, 2, sec(3)},
		{"two phases alone", Service{}, Call{CPU: det(1), IO: det(1), Phases: 2}, 1, sec(2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.svc.Name = "s"
			tc.call.Service = "s"
			cfg := &Config{
				Services: []Service{tc.svc},
				Classes:  []Class{{Name: "c", Call: tc.call}},
				Sources:  []Source{{Name: "src", Class: "c", Arrivals: poisson(1)}},
			}
			cl := build(t, cfg, Options{Seed: 1})
			fin := record(cl)
			at := make([]time.Duration, tc.n)
			feed(cl, 0, at...)
			drain(t, cl)
			for i, d := range *fin {
				if !near(d.latency(), tc.want, 4) {
					t.Errorf("call %d: %v, want %v", i, d.latency(), tc.want)
				}
			}
		})
	}
}

// TestHeterogeneousInstances checks per-instance overrides behind one LB.
func TestHeterogeneousInstances(t *testing.T) {
	cfg := lbCfg(Service{Name: "s", Instances: []InstanceSpec{{}, {Speed: 4}, {CPU: 0.5, Weight: 7}}}, 1)
	cl := build(t, cfg, Options{Seed: 1})
	fin := record(cl)
	feed(cl, 0, 0, sec(10), sec(20))
	drain(t, cl)
	want := []time.Duration{sec(1), sec(0.25), sec(2)}
	for i, d := range *fin {
		if d.latency() != want[i] {
			t.Errorf("instance %d: %v, want %v", i, d.latency(), want[i])
		}
	}
	if w := cl.lbs[0].view.Weights; w[0] != 1 || w[1] != 1 || w[2] != 7 {
		t.Errorf("weights %v, want [1 1 7] (default: the CPU limit)", w)
	}
}

// TestSetResourcesCPU checks an in-place CPU resize: work done so far is
// kept and the rest runs at the new limit.
func TestSetResourcesCPU(t *testing.T) {
	cfg := &Config{
		Nodes:    []Node{{Name: "n", CPU: 4}},
		Services: []Service{{Name: "s", CPU: 0.5}},
		Classes:  []Class{{Name: "c", Call: Call{Service: "s", CPU: det(1)}}},
		Sources:  []Source{{Name: "src", Class: "c", Arrivals: poisson(1)}},
	}
	cl := build(t, cfg, Options{Seed: 1})
	fin := record(cl)
	feed(cl, 0, sec(1))
	cl.RunUntil(sec(2)) // half done
	apply(t, cl, control.SetResources{Service: "s", CPU: 1})
	s := observe(cl, cl.Now())
	if st := svcStats(t, s, "s"); st.CPULimit != 1 {
		t.Errorf("cpu limit %g, want 1", st.CPULimit)
	}
	drain(t, cl)
	if got := (*fin)[0].latency(); got != sec(1.5) {
		t.Errorf("latency %v, want 1.5s", got)
	}
	if u := cl.nodes[0].usedCPU; u != 1 {
		t.Errorf("node uses %g cores, want 1", u)
	}
	for _, bad := range []control.SetResources{{Service: "s", CPU: -1}, {Service: "s", CPU: math.NaN()}, {Service: "x", CPU: 1}} {
		if err := cl.Apply(cl.Now(), bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// TestApplyErrors checks the validation of actions.
func TestApplyErrors(t *testing.T) {
	cl := build(t, lbCfg(Service{Name: "s", Replicas: 3}, 1), Options{Seed: 1})
	for _, tc := range []struct {
		a    control.Action
		want string
	}{
		{control.SetWeights{LB: "nope", Weights: []float64{1, 1, 1}}, `unknown lb "nope"`},
		{control.SetWeights{LB: "lb", Weights: []float64{1, 1}}, "2 weights for 3 backends"},
		{control.SetWeights{LB: "lb", Weights: []float64{1, -1, 1}}, "weight 1 is -1"},
		{control.SetWeights{LB: "lb", Weights: []float64{1, 1, math.NaN()}}, "weight 2 is NaN"},
		{control.SetWeights{LB: "lb", Weights: []float64{math.Inf(1), 1, 1}}, "weight 0 is +Inf"},
		{control.SetRouteWeights{Service: "s", From: "local", Weights: map[string]float64{"local": 1}}, "runs in one location"},
		{control.SetRouteWeights{}, `unknown service ""`},
		{nil, "unknown action"},
	} {
		err := cl.Apply(cl.Now(), tc.a)
		if err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.a, err, tc.want)
		}
	}
	if err := cl.Apply(cl.Now()+1, control.SetReplicas{Service: "s", Replicas: 1}); err == nil {
		t.Error("apply at the wrong time: no error")
	}
	v := cl.lbs[0].view.Version
	apply(t, cl, control.SetWeights{LB: "lb", Weights: []float64{1, 2, 3}})
	if w := cl.lbs[0].view.Weights; w[2] != 3 || cl.lbs[0].view.Version == v {
		t.Errorf("weights %v, version unchanged", w)
	}
}

// timedFeedback records when each response came back and how long it took.
type timedFeedback struct{ at, took []time.Duration }

func (f *timedFeedback) Sent(time.Duration, int) {}
func (f *timedFeedback) Done(now time.Duration, _ int, d, _ time.Duration) {
	f.at, f.took = append(f.at, now), append(f.took, d)
}

// TestInstanceSpeedChange: an instance slowed to half speed for a while
// takes twice as long, then is back to normal; drift draws speeds in range.
func TestInstanceSpeedChange(t *testing.T) {
	half, one, inst := 0.5, 1.0, 0
	cfg := &Config{
		Services: []Service{{Name: "s", Replicas: 1}},
		Classes:  []Class{{Name: "c", Call: Call{Service: "s", CPU: workload.DistSpec{Dist: "det", Mean: 0.1}}}},
		LBs:      []LBPoint{{Name: "lb0", Service: "s"}},
		Sources:  []Source{{Name: "x", Class: "c", LB: "lb0", Arrivals: workload.ProcessSpec{Kind: "poisson", Rate: 0.5}}},
		Changes: []Change{{At: time.Minute, Service: "s", Instance: &inst, Speed: &half},
			{At: 2 * time.Minute, Service: "s", Instance: &inst, Speed: &one}},
	}
	cl, err := New(cfg, Options{Seed: 2, Horizon: 3 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var fb timedFeedback
	cl.SetFeedback("lb0", &fb)
	cl.RunUntil(3 * time.Minute)
	median := func(from, to time.Duration) time.Duration {
		var d []time.Duration
		for i, at := range fb.at {
			if at > from && at < to {
				d = append(d, fb.took[i])
			}
		}
		slices.Sort(d)
		return d[len(d)/2]
	}
	ms := time.Millisecond
	for _, c := range []struct {
		from, to, want time.Duration
	}{{5 * time.Second, 55 * time.Second, 100 * ms}, {65 * time.Second, 115 * time.Second, 200 * ms}, {125 * time.Second, 175 * time.Second, 100 * ms}} {
		if got := median(c.from, c.to); got != c.want {
			t.Errorf("median duration in (%v, %v): %v, want %v", c.from, c.to, got, c.want)
		}
	}
	cfg.Changes = nil
	cfg.Services[0].Replicas = 3
	cfg.RandomChanges = &RandomChanges{Every: time.Minute, Drift: []string{"s"}, Speed: []float64{0.5, 2}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	changes := cfg.RandomChanges.Draw(cfg, 3*time.Minute)
	n := 0
	for _, ch := range changes {
		if ch.Instance != nil {
			n++
			if *ch.Speed < 0.5 || *ch.Speed > 2 || *ch.Instance < 0 || *ch.Instance > 2 {
				t.Errorf("drift change %+v out of range", ch)
			}
		}
	}
	if n != 9 {
		t.Errorf("%d drift changes, want 3 instances x 3 minutes", n)
	}
}
