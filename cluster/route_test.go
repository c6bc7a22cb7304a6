package cluster

import (
	"math"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
)

// twoClouds is a front service in c1 calling a back service placed in c1
// and c2 (RTT 40 ms), one request per second from clients in c1.
func twoClouds(back map[string]int, backCPU float64) *Config {
	return &Config{
		Locations: []Location{{Name: "c1", RTT: map[string]time.Duration{"c2": 40 * time.Millisecond}}, {Name: "c2"}},
		Services: []Service{
			{Name: "front", Location: "c1"},
			{Name: "back", Placement: back, RequestKB: 2, ResponseKB: 8},
		},
		Classes: []Class{{Name: "page", Call: Call{Service: "front", CPU: det(0.001),
			Stages: []Stage{{Calls: []Call{{Service: "back", CPU: det(backCPU)}}}}}}},
		Sources: []Source{{Name: "users", Class: "page", Location: "c1", Arrivals: poisson(1)}},
	}
}

// routeOf sums the snapshot's route counters of calls to service from
// location from to location to.
func routeOf(s *metrics.Snapshot, service, from, to string) metrics.RouteStats {
	var out metrics.RouteStats
	for _, r := range s.Routes {
		if r.Service == service && r.From == from && r.To == to {
			out.Calls += r.Calls
			out.Failures += r.Failures
			out.Latency.Count += r.Latency.Count
			out.Latency.Sum += r.Latency.Sum
		}
	}
	return out
}

// TestPlacementDefaultRoute: a placed service is one service per location,
// and without route weights calls spread in proportion to the ready
// instances (Istio's default across a multi-cluster mesh): 1 in c1, 3 in c2.
func TestPlacementDefaultRoute(t *testing.T) {
	cl := build(t, twoClouds(map[string]int{"c1": 1, "c2": 3}, 0.001), Options{Seed: 1})
	snap := observe(cl, 2000*time.Second)
	for _, name := range []string{"back@c1", "back@c2"} {
		svcStats(t, snap, name)
	}
	if st := svcStats(t, snap, "back@c2"); st.Replicas != 3 {
		t.Errorf("back@c2 has %d replicas, want 3", st.Replicas)
	}
	local, remote := routeOf(snap, "back", "c1", "c1"), routeOf(snap, "back", "c1", "c2")
	n := float64(local.Calls + remote.Calls)
	share := float64(remote.Calls) / n
	// Binomial(n, 3/4): 4 standard deviations.
	if sd := math.Sqrt(0.75 * 0.25 / n); math.Abs(share-0.75) > 4*sd {
		t.Errorf("share to c2 %.3f of %g calls, want 0.75", share, n)
	}
	if c := routeOf(snap, "front", "c1", "c1"); c.Calls != int64(n) {
		t.Errorf("clients made %d calls to front, back got %g", c.Calls, n)
	}
}

// TestRouteWeightsAddTheRTT: with every call from c1 routed to c2, each
// call to back takes the RTT plus its work, as the caller measures it, and
// pays request and response as egress.
func TestRouteWeightsAddTheRTT(t *testing.T) {
	cfg := twoClouds(map[string]int{"c1": 1, "c2": 1}, 0.001)
	cl := build(t, cfg, Options{Seed: 1, Horizon: 100 * time.Second})
	apply(t, cl, control.SetRouteWeights{Service: "back", From: "c1", Weights: map[string]float64{"c2": 2}})
	r := drain(t, cl)
	var snap metrics.Snapshot
	cl.Observe(&snap)
	if c := routeOf(&snap, "back", "c1", "c1"); c.Calls != 0 {
		t.Errorf("%d calls stayed in c1", c.Calls)
	}
	remote := routeOf(&snap, "back", "c1", "c2")
	if remote.Calls == 0 || remote.Failures != 0 {
		t.Fatalf("route c1 -> c2: %+v", remote)
	}
	// At 1 req/s with 1 ms of work a call rarely meets another: the mean is
	// the RTT plus the work, to well within a millisecond.
	if got := remote.Latency.Mean(); math.Abs(got-0.041) > 0.0005 {
		t.Errorf("mean latency of c1 -> c2 %.4f s, want 0.041 (RTT + work)", got)
	}
	if got := r.Latency.Mean(); got < 0.042-1e-9 {
		t.Errorf("mean end-to-end %.4f s, want >= 0.042 (front's work + RTT + back's work)", got)
	}
	// Egress: the calls sent in the window, 10 KB each.
	wantGB := float64(remote.Calls) * 10 / (1024 * 1024)
	if math.Abs(r.EgressGB-wantGB) > 10.0/(1024*1024)*float64(remote.Calls)/10 {
		t.Errorf("egress %.6g GB, want about %.6g (%d calls of 10 KB, warm-up excluded)", r.EgressGB, wantGB, remote.Calls)
	}
	resources := 0.0
	for _, s := range r.Services {
		resources += s.Cost
	}
	if got := r.Cost - resources; math.Abs(got-r.EgressGB*0.09) > 1e-12 {
		t.Errorf("cost beyond resources %.6g, want the egress at $0.09/GB %.6g", got, r.EgressGB*0.09)
	}
	// Back to the default: calls spread again.
	apply(t, cl, control.SetRouteWeights{Service: "back", From: "c1"})
	if cl.groups["back"].weights[0] != nil {
		t.Error("nil weights did not restore the default route")
	}
}

// TestChanges: a cloud's background load slows its instances, its RTT
// moves, and a placed service's replicas change, when the scenario says.
func TestChanges(t *testing.T) {
	half := 0.5
	three := 3
	cfg := twoClouds(map[string]int{"c2": 1}, 0.010)
	cfg.Nodes = []Node{{Name: "c1-vm", Location: "c1", CPU: 4}, {Name: "c2-vm", Location: "c2", CPU: 2}}
	cfg.Changes = []Change{
		{At: 500 * time.Second, Location: "c2", Background: &half, RTT: map[string]time.Duration{"c1": 10 * time.Millisecond}},
		{At: 500 * time.Second, Service: "back@c2", Replicas: &three},
	}
	cl := build(t, cfg, Options{Seed: 1})
	before := observe(cl, 500*time.Second)
	after := observe(cl, 1000*time.Second)
	b, a := routeOf(before, "back", "c1", "c2").Latency.Mean(), routeOf(after, "back", "c1", "c2").Latency.Mean()
	// 40 ms RTT + 10 ms of work, then 10 ms + 20 ms (half the speed); calls
	// rarely overlap at 1 req/s.
	if math.Abs(b-0.050) > 0.002 || math.Abs(a-0.030) > 0.002 {
		t.Errorf("latency before %.4f s (want 0.050), after %.4f s (want 0.030)", b, a)
	}
	if st := svcStats(t, after, "back@c2"); st.Replicas != 3 {
		t.Errorf("back@c2 has %d replicas after the change, want 3", st.Replicas)
	}
	// Measured, the period's series lag by at most a scrape (15 s of 500)
	// and probes jitter by 10% each (33 of them each way).
	if l := after.Locations[1]; math.Abs(l.Background()-0.5) > 0.02 || math.Abs(float64(after.Locations[0].RTT[1])/float64(10*time.Millisecond)-1) > 0.1 {
		t.Errorf("locations after the change: background %.3f, RTT %v: %+v", l.Background(), after.Locations[0].RTT[1], after.Locations)
	}
}

// TestMeasuredLocations: the locations' series are what exporters
// measure, not the configuration: the nodes' cores; the pods' CPU is their
// instances' plus the sidecars' per call; the nodes' CPU adds the
// background share of the cores; probed RTTs scatter around the
// configured one from period to period and average to it.
func TestMeasuredLocations(t *testing.T) {
	cfg := twoClouds(map[string]int{"c1": 1, "c2": 1}, 0.010)
	cfg.Nodes = []Node{{Name: "c1-vm", Location: "c1", CPU: 2, Count: 2}, {Name: "c2-vm", Location: "c2", CPU: 2}}
	cfg.Locations[1].Background = 0.25
	cfg.Sources[0].Arrivals = poisson(20)
	cl := build(t, cfg, Options{Seed: 3})
	var rtts []float64
	var s metrics.Snapshot
	for k := 1; k <= 40; k++ {
		cl.RunUntil(time.Duration(k) * 10 * time.Second)
		cl.Observe(&s)
		c1, c2 := s.Locations[0], s.Locations[1]
		if c1.Cores != 4 || c2.Cores != 2 {
			t.Fatalf("cores %g and %g, want 4 and 2", c1.Cores, c2.Cores)
		}
		if k < 3 {
			continue
		}
		if math.Abs(c2.Background()-0.25) > 1e-9 || math.Abs(c1.Background()) > 1e-9 {
			t.Errorf("period %d: background %.4f and %.4f, want 0 and 0.25", k, c1.Background(), c2.Background())
		}
		pods := svcStats(t, &s, "front").CPUUse + svcStats(t, &s, "back@c1").CPUUse
		if !(c1.PodCPU > pods*0.8) || c1.PodCPU > pods*1.5+0.05 {
			t.Errorf("period %d: c1's pod CPU %.4f, its instances' %.4f", k, c1.PodCPU, pods)
		}
		rtts = append(rtts, float64(c1.RTT[1])/float64(time.Millisecond), float64(c2.RTT[0])/float64(time.Millisecond))
	}
	mean, lo, hi := 0.0, math.Inf(1), math.Inf(-1)
	for _, r := range rtts {
		mean += r / float64(len(rtts))
		lo, hi = min(lo, r), max(hi, r)
	}
	if math.Abs(mean-40) > 1.5 || hi-lo < 2 {
		t.Errorf("probed RTTs %.1f-%.1f ms, mean %.2f: want them to scatter around 40", lo, hi, mean)
	}
}

// TestRouteWeightErrors: route actions name what is wrong.
func TestRouteWeightErrors(t *testing.T) {
	cl := build(t, twoClouds(map[string]int{"c2": 1}, 0.001), Options{Seed: 1})
	for _, tc := range []struct {
		a    control.SetRouteWeights
		want string
	}{
		{control.SetRouteWeights{Service: "front", From: "c1", Weights: map[string]float64{"c1": 1}}, "runs in one location"},
		{control.SetRouteWeights{Service: "back", From: "mars", Weights: map[string]float64{"c2": 1}}, `unknown location "mars"`},
		{control.SetRouteWeights{Service: "back", From: "c1", Weights: map[string]float64{"c1": 1}}, `not placed in "c1"`},
		{control.SetRouteWeights{Service: "back", From: "c1", Weights: map[string]float64{"c2": -1}}, "is -1"},
		{control.SetRouteWeights{Service: "back", From: "c1", Weights: map[string]float64{"c2": 0}}, "sum to 0"},
	} {
		if err := cl.Apply(cl.Now(), tc.a); err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.a, err, tc.want)
		}
	}
}

// TestPlacementValidation: placement and change errors name their field.
func TestPlacementValidation(t *testing.T) {
	neg := -1.0
	cfg := twoClouds(map[string]int{"c1": 0, "mars": 1}, 0.001)
	cfg.Services[1].Location = "c1"
	cfg.Services = append(cfg.Services, Service{Name: "a@b"})
	cfg.Changes = []Change{{Location: "c1", Background: &neg}, {Service: "back", Replicas: new(int)}, {At: -1, Service: "back@c1"}}
	err := cfg.Validate()
	for _, want := range []string{
		"services[1].location: not with placement",
		"services[1].placement[c1]: must be in",
		`services[1].placement[mars]: unknown location "mars"`,
		"services[2].name: must not contain @",
		"changes[0].background: must be in [0, 1), got -1",
		`changes[1].service: service "back" is placed in several locations`,
		"changes[2].at: must be >= 0",
		"changes[2].replicas: a service's change must set replicas",
	} {
		if err == nil || !contains(err.Error(), want) {
			t.Errorf("error %v\nwant %q", err, want)
		}
	}
}
