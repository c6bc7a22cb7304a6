package multicloud

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/policy"
	"github.com/shoal-project/shoal/metrics"
)

// Baselines are the routes compared with the learned one, each registered
// in control/policy: the paper's Local, Even and BO on the system (III-D),
// Istio's locality load balancing with failover (what a service mesh
// gives by default once outlier detection is on), and a random route.
// Beyond them, spread:away=X keeps 1 - X of every cloud's calls home and
// spreads X evenly over the other clouds: Local at 0, Even at (n - 1) / n,
// its share the knob that trades egress for balance. Baselines lists the
// routes that run without a file or a setting, in the registry's order.
func Baselines() []string {
	var out []string
	for _, p := range policy.All() {
		if p.Kind == policy.Route && p.File == policy.NoFile && !slices.ContainsFunc(p.Params, func(q policy.Param) bool { return q.Required }) {
			out = append(out, p.Name)
		}
	}
	return out
}

// NewBaseline returns the controller of a baseline route; seed seeds the
// random route's draws and the system BO's.
func NewBaseline(s policy.Spec, seed uint64) (control.Controller, error) {
	switch s.Name() {
	case "bo-system":
		opt := DefaultOptions()
		opt.Seed = seed
		return NewSystemBO(opt), nil
	case "local":
		return &rule{weights: localWeights}, nil
	case "even":
		return &rule{weights: evenWeights}, nil
	case "locality":
		return &rule{weights: localityWeights, every: true}, nil
	case "random":
		rng := rand.New(rand.NewPCG(seed, 0x72616e646f6d)) // "random"
		return &rule{weights: func(dst [][]float64, t *Topology, _ *metrics.Snapshot, svc *Service) [][]float64 {
			shift := make([]float64, Pairs(len(t.Locations)))
			for k := range shift {
				shift[k] = 2*rng.Float64() - 1
			}
			return Weights(dst, shift, svc)
		}, cycle: 20 * time.Second}, nil
	case "distribute":
		x, _ := s.Get("away")
		return &rule{weights: func(dst [][]float64, t *Topology, s *metrics.Snapshot, svc *Service) [][]float64 {
			return distributeWeights(dst, x, s, svc)
		}}, nil
	case "spread":
		x, _ := s.Get("away")
		return &rule{weights: func(dst [][]float64, t *Topology, _ *metrics.Snapshot, svc *Service) [][]float64 {
			return spreadWeights(dst, x, svc)
		}}, nil
	}
	return nil, fmt.Errorf("multicloud: %s is not a baseline route (%v, spread:away=X)", s, Baselines())
}

// rule is a baseline: route weights computed from the snapshot, put in
// force at the start, and then every period (every), every cycle, or never
// again.
type rule struct {
	weights func(dst [][]float64, t *Topology, s *metrics.Snapshot, svc *Service) [][]float64
	every   bool
	cycle   time.Duration

	topo *Topology
	last []([][]float64) // the weights in force, by service
	next time.Duration
}

// Decide implements control.Controller.
func (r *rule) Decide(now time.Duration, s *metrics.Snapshot) []control.Action {
	if r.topo == nil {
		t, err := ReadTopology(s)
		if err != nil {
			return nil
		}
		r.topo, r.last = t, make([][][]float64, len(t.Services))
	} else if !r.every && (r.cycle == 0 || now < r.next) {
		return nil
	}
	r.next = now + r.cycle
	var out []control.Action
	for i := range r.topo.Services {
		svc := &r.topo.Services[i]
		w := r.weights(nil, r.topo, s, svc)
		if equalRows(w, r.last[i]) {
			continue
		}
		r.last[i] = w
		out = r.topo.Actions(out, svc, w)
	}
	return out
}

// localWeights keeps every call in its caller's cloud (the paper's Local),
// or sends it to the nearest cloud the service runs in.
func localWeights(dst [][]float64, t *Topology, s *metrics.Snapshot, svc *Service) [][]float64 {
	n := len(t.Locations)
	dst = resizeRows(dst, n)
	for from := range n {
		clear(dst[from])
		dst[from][nearest(n, from, false, svc, func(to int) float64 { return float64(s.Locations[from].RTT[to]) })] = 1
	}
	return dst
}

// nearest is the location of the n that service svc runs in at the least
// rtt from location from (another than from when away), or -1.
func nearest(n, from int, away bool, svc *Service, rtt func(to int) float64) int {
	best := -1
	for to := range n {
		if (!away || to != from) && svc.Placed(to) && (best < 0 || rtt(to) < rtt(best)) {
			best = to
		}
	}
	return best
}

// evenWeights splits every cloud's calls equally among the clouds the
// service runs in (the paper's Even).
func evenWeights(dst [][]float64, t *Topology, _ *metrics.Snapshot, svc *Service) [][]float64 {
	n := len(t.Locations)
	dst = resizeRows(dst, n)
	placed := 0
	for l := range n {
		if svc.Placed(l) {
			placed++
		}
	}
	for from := range n {
		for to := range n {
			dst[from][to] = 0
			if svc.Placed(to) {
				dst[from][to] = 1 / float64(placed)
			}
		}
	}
	return dst
}

// spreadWeights keeps 1 - x of every cloud's calls home and spreads x
// evenly over the other clouds the service runs in; a cloud it does not
// run in spreads all of its calls evenly (everything stays home where it
// runs nowhere else).
func spreadWeights(dst [][]float64, x float64, svc *Service) [][]float64 {
	n := len(svc.Parts)
	dst = resizeRows(dst, n)
	for from := range n {
		clear(dst[from])
		others := 0
		for to := range n {
			if to != from && svc.Placed(to) {
				others++
			}
		}
		away := x
		switch {
		case others == 0:
			away = 0
		case !svc.Placed(from):
			away = 1
		}
		dst[from][from] = 1 - away
		for to := range n {
			if to != from && svc.Placed(to) {
				dst[from][to] = away / float64(others)
			}
		}
	}
	return dst
}

// distributeWeights is Istio's locality distribute as a user writes it for
// clouds (localityLbSetting.distribute: from each locality, a percentage
// to each locality): 1 - x of every cloud's calls stay home and x go to
// the nearest other cloud the service runs in, by the probed RTT when the
// rule is put in force; a cloud the service does not run in sends all of
// its calls there.
func distributeWeights(dst [][]float64, x float64, s *metrics.Snapshot, svc *Service) [][]float64 {
	n := len(svc.Parts)
	dst = resizeRows(dst, n)
	for from := range n {
		clear(dst[from])
		near := nearest(n, from, true, svc, func(to int) float64 { return ProbedRTT(s, from, to) })
		switch {
		case near < 0:
			dst[from][from] = 1
		case !svc.Placed(from):
			dst[from][near] = 1
		default:
			dst[from][from], dst[from][near] = 1-x, x
		}
	}
	return dst
}

// overprovisioning is Envoy's default overprovisioning factor, in percent
// (ClusterLoadAssignment.Policy.overprovisioning_factor: 140).
const overprovisioning = 140

// localityWeights is Istio's locality load balancing with failover: the
// caller's own cloud is priority 0 and the other clouds (other regions)
// priority 1, and Envoy shares the load between priorities by their health
// (envoy/source/common/upstream/load_balancer_impl.cc,
// LoadBalancerBase::recalculatePerPriorityState and distributeLoad): a
// priority's health is min(100, 1.4 x 100 x healthy / hosts), their sum is
// capped at 100, and each priority in turn takes min(what is left,
// health x 100 / that sum), in whole percent; what remains goes to the
// first priority with health. Within priority 1 the calls spread over the
// healthy endpoints, i.e. in proportion to each cloud's ready instances.
func localityWeights(dst [][]float64, t *Topology, s *metrics.Snapshot, svc *Service) [][]float64 {
	n := len(t.Locations)
	dst = resizeRows(dst, n)
	ready := make([]int, n)
	hosts := make([]int, n)
	for l, i := range svc.Parts {
		if i >= 0 {
			ready[l], hosts[l] = s.Services[i].Ready, s.Services[i].Replicas
		}
	}
	for from := range n {
		clear(dst[from])
		var h0, h1 [2]int // ready and hosts of priorities 0 and 1
		h0 = [2]int{ready[from], hosts[from]}
		for l := range n {
			if l != from {
				h1[0] += ready[l]
				h1[1] += hosts[l]
			}
		}
		load := priorityLoad([]int{health(h0), health(h1)})
		dst[from][from] = float64(load[0]) / 100
		if load[1] == 0 || h1[0] == 0 {
			if load[1] > 0 { // nothing healthy elsewhere: the rest stays home
				dst[from][from] = 1
			}
			continue
		}
		for l := range n {
			if l != from {
				dst[from][l] = float64(load[1]) / 100 * float64(ready[l]) / float64(h1[0])
			}
		}
	}
	return dst
}

// health is a priority's health in percent from its healthy and total hosts.
func health(h [2]int) int {
	if h[1] == 0 {
		return 0
	}
	return min(100, overprovisioning*h[0]/h[1])
}

// priorityLoad shares 100% of the load among priorities by health, as
// Envoy's distributeLoad does.
func priorityLoad(health []int) []int {
	load := make([]int, len(health))
	total := 0
	for _, h := range health {
		total += h
	}
	total = min(total, 100)
	if total == 0 { // everything is unhealthy: all to priority 0
		load[0] = 100
		return load
	}
	left, first := 100, -1
	for p, h := range health {
		load[p] = min(left, h*100/total)
		left -= load[p]
		if first < 0 && h > 0 {
			first = p
		}
	}
	load[first] += left
	return load
}

func equalRows(a, b [][]float64) bool {
	return slices.EqualFunc(a, b, func(x, y []float64) bool { return slices.Equal(x, y) })
}
