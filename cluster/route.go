package cluster

import (
	"fmt"
	"math/rand/v2"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
)

// routeGroup is a service placed in several locations: one service per
// location (nil where it is not placed) and the route weights of each
// caller location, as Istio's VirtualService with a subset per cluster
// sets them.
type routeGroup struct {
	name    string
	members []*service  // by location
	weights [][]float64 // by caller location: a weight per location (nil: Istio's default)
	// ready and all are scratch for the default spread: each location's
	// ready and existing instances.
	ready, all []int
}

// pick chooses the location a call from location from goes to: by the
// route weights set for from, or else in proportion to the ready instances
// of each location (every endpoint of every cluster alike), or when none is
// ready to the existing ones.
func (g *routeGroup) pick(from int32, rng *rand.Rand) *service {
	if w := g.weights[from]; w != nil {
		return g.members[drawIndex(w, rng)]
	}
	ready, all := 0, 0
	for i, s := range g.members {
		g.ready[i], g.all[i] = 0, 0
		if s != nil {
			g.all[i], g.ready[i] = s.replicas()
			all, ready = all+g.all[i], ready+g.ready[i]
		}
	}
	counts, total := g.ready, ready
	if total == 0 {
		counts, total = g.all, all
	}
	if total == 0 {
		return g.first()
	}
	u := rng.Float64() * float64(total)
	var last *service
	for i, s := range g.members {
		if s == nil {
			continue
		}
		if u -= float64(counts[i]); u < 0 {
			return s
		}
		last = s
	}
	return last
}

func (g *routeGroup) first() *service {
	for _, s := range g.members {
		if s != nil {
			return s
		}
	}
	return nil
}

// drawIndex draws an index with probability proportional to w (which sums
// to 1 and has a positive entry).
func drawIndex(w []float64, rng *rand.Rand) int {
	u := rng.Float64()
	last := 0
	for i, x := range w {
		if x <= 0 {
			continue
		}
		if u -= x; u < 0 {
			return i
		}
		last = i
	}
	return last
}

// edge is a call-graph edge between two services by logical name (a placed
// service counts once), with its traffic by caller and callee location.
type edge struct {
	stats []metrics.RouteStats // from*locations + to
}

// expandPlacements returns cfg with every placed service replaced by one
// service per location, NAME@LOCATION (cfg itself when none is placed).
func expandPlacements(cfg *Config) *Config {
	placed := false
	for i := range cfg.Services {
		placed = placed || len(cfg.Services[i].Placement) > 0
	}
	if !placed {
		return cfg
	}
	out := *cfg
	out.Services = nil
	for _, s := range cfg.Services {
		if len(s.Placement) == 0 {
			out.Services = append(out.Services, s)
			continue
		}
		for _, l := range cfg.Locations {
			n, ok := s.Placement[l.Name]
			if !ok {
				continue
			}
			part := s
			part.Name, part.Location, part.Replicas, part.Placement = s.Name+"@"+l.Name, l.Name, n, nil
			out.Services = append(out.Services, part)
		}
	}
	return &out
}

// buildGroups makes the route groups of cfg's placed services.
func (cl *Cluster) buildGroups(cfg *Config) {
	for _, s := range cfg.Services {
		if len(s.Placement) == 0 {
			continue
		}
		n := len(cl.locNames)
		g := &routeGroup{name: s.Name, members: make([]*service, n), weights: make([][]float64, n), ready: make([]int, n), all: make([]int, n)}
		for loc := range s.Placement {
			i := cl.locIndex(loc)
			g.members[i] = cl.svcByName[s.Name+"@"+loc]
		}
		cl.groups[s.Name] = g
	}
}

// edgeIndex returns the index of the edge caller -> callee, adding it.
func (cl *Cluster) edgeIndex(caller, callee string) int32 {
	key := caller + "\x00" + callee
	if i, ok := cl.edgeByKey[key]; ok {
		return i
	}
	n := len(cl.locNames)
	e := edge{stats: make([]metrics.RouteStats, n*n)}
	for from := range n {
		for to := range n {
			e.stats[from*n+to] = metrics.RouteStats{Caller: caller, Service: callee, From: cl.locNames[from], To: cl.locNames[to]}
		}
	}
	cl.edges = append(cl.edges, e)
	i := int32(len(cl.edges) - 1)
	cl.edgeByKey[key] = i
	return i
}

// routed says the cluster has several locations, between which calls are
// routed: only then are the routes' failures, latency and bytes kept.
func (cl *Cluster) routed() bool { return len(cl.locNames) > 1 }

// routeStats is the counters of attempt c's edge and location pair.
func (cl *Cluster) routeStats(c *call, to int32) *metrics.RouteStats {
	return &cl.edges[c.node.edge].stats[int(c.from)*len(cl.locNames)+int(to)]
}

// routeDone records the outcome of attempt c at its caller: its edge's
// telemetry, and the egress of a call between locations. In a cluster of
// one location only the calls are counted (send does): the routes'
// failures, latency and bytes are for the controllers that route between
// locations, and cost nothing where there are none.
func (cl *Cluster) routeDone(c *call) {
	if !cl.routed() {
		return
	}
	to := c.lbp.svc.loc
	cfg := c.lbp.svc.cfg
	kb := or(cfg.RequestKB, 1)
	if c.replied && c.fail == failNone {
		kb += or(cfg.ResponseKB, 4)
	}
	if c.parent != nil || c.req != nil { // an abandoned attempt counted when its caller gave up
		st := cl.routeStats(c, to)
		switch {
		case c.fail != failNone:
			st.Failures++
		case c.replied:
			d := secs(cl.k.Now() - c.start)
			st.Latency.Add(d)
			st.Hist.Record(d)
		}
		st.Bytes += 1024 * kb
	}
	if to != c.from && c.start >= cl.opt.Warmup && c.start < cl.opt.Horizon {
		cl.res.EgressGB += kb / (1024 * 1024)
	}
}

// observeRoutes fills the edges' and locations' telemetry of the period.
func (cl *Cluster) observeRoutes(snap *metrics.Snapshot) {
	n := len(cl.locNames)
	snap.Routes = resize(snap.Routes, len(cl.edges)*n*n)
	for i := range cl.edges {
		for j := range cl.edges[i].stats {
			st := &cl.edges[i].stats[j]
			snap.Routes[i*n*n+j] = *st
			st.Calls, st.Failures, st.Latency, st.Bytes = 0, 0, metrics.LatencySum{}, 0
			st.Hist.Reset()
		}
	}
	cl.measureLocations(snap)
}

// setRouteWeights carries out a SetRouteWeights action.
func (cl *Cluster) setRouteWeights(a control.SetRouteWeights) error {
	g, ok := cl.groups[a.Service]
	if !ok {
		if _, single := cl.svcByName[a.Service]; single {
			return fmt.Errorf("set route weights: service %q runs in one location (give it a placement)", a.Service)
		}
		return fmt.Errorf("set route weights: unknown service %q", a.Service)
	}
	from := cl.locIndex(a.From)
	if from < 0 {
		return fmt.Errorf("set route weights of %q: unknown location %q", a.Service, a.From)
	}
	if a.Weights == nil {
		g.weights[from] = nil // back to the default
		return nil
	}
	w := make([]float64, len(cl.locNames))
	total := 0.0
	for loc, x := range a.Weights {
		i := cl.locIndex(loc)
		switch {
		case i < 0:
			return fmt.Errorf("set route weights of %q from %q: unknown location %q", a.Service, a.From, loc)
		case !finite(x) || x < 0:
			return fmt.Errorf("set route weights of %q from %q: weight of %q is %g", a.Service, a.From, loc, x)
		case x > 0 && g.members[i] == nil:
			return fmt.Errorf("set route weights of %q from %q: the service is not placed in %q", a.Service, a.From, loc)
		}
		w[i] = x
		total += x
	}
	if total <= 0 {
		return fmt.Errorf("set route weights of %q from %q: weights %v sum to 0", a.Service, a.From, a.Weights)
	}
	for i := range w {
		w[i] /= total
	}
	g.weights[from] = w
	return nil
}
