package slate

import (
	"cmp"
	"math"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/multicloud"
	"github.com/shoal-project/shoal/metrics"
)

// Options set the controller.
type Options struct {
	// Period is how often the routes are solved again (SLATE's global
	// controller re-solves on a timer).
	Period time.Duration
	// Windows are the periods of measurements each service's model is
	// fitted on, per location (the most recent).
	Windows int
	// Utilisation caps each location's load at this share of what its
	// replicas serve (the capacity constraint; the learned router keeps the
	// same cap, multicloud.Options.UtilisationCap).
	Utilisation float64
	// EgressWeight is Problem.EgressWeight: seconds of request latency a GB
	// between locations is worth (0: egress is free).
	EgressWeight float64
	// Iterations are the Frank-Wolfe steps of a solve.
	Iterations int
}

// DefaultOptions are the controller's defaults.
func DefaultOptions() Options {
	return Options{Period: 20 * time.Second, Windows: 60, Utilisation: 0.7, Iterations: 50}
}

// Controller routes every service's calls by the SLATE-like optimum of the
// models it fits from the measured series, re-solved every period from the
// routes in force.
type Controller struct {
	opt     Options
	topo    *multicloud.Topology
	history [][][]Window // by service and location, the most recent last
	routes  Routes
	next    time.Duration
	stats   Stats
}

// Stats count what the controller did.
type Stats struct {
	Solves  int
	Compute time.Duration // wall time spent fitting and solving
}

// NewController returns the controller; a zero option takes its default.
func NewController(opt Options) *Controller {
	def := DefaultOptions()
	opt.Period = cmp.Or(opt.Period, def.Period)
	opt.Windows = cmp.Or(opt.Windows, def.Windows)
	opt.Utilisation = cmp.Or(opt.Utilisation, def.Utilisation)
	opt.Iterations = cmp.Or(opt.Iterations, def.Iterations)
	return &Controller{opt: opt}
}

// Stats reports what the controller did.
func (c *Controller) Stats() Stats { return c.stats }

// Decide implements control.Controller: it records every service's
// windows, and every period solves the routes and puts those that changed
// in force.
func (c *Controller) Decide(now time.Duration, s *metrics.Snapshot) []control.Action {
	if c.topo == nil {
		t, err := multicloud.ReadTopology(s)
		if err != nil {
			return nil
		}
		c.topo, c.history = t, make([][][]Window, len(t.Services))
		for i := range c.history {
			c.history[i] = make([][]Window, len(t.Locations))
		}
	}
	for i := range c.topo.Services {
		for l, w := range Observe(c.topo, s, &c.topo.Services[i]) {
			h := append(c.history[i][l], w)
			c.history[i][l] = h[max(0, len(h)-c.opt.Windows):]
		}
	}
	if now < c.next {
		return nil
	}
	c.next = now + c.opt.Period
	start := time.Now()
	p := c.problem(s)
	routes, _, err := p.Solve(c.routes, c.opt.Iterations)
	c.stats.Compute += time.Since(start)
	if err != nil {
		return nil
	}
	c.stats.Solves++
	var out []control.Action
	for i := range c.topo.Services {
		if c.routes == nil || !sameRows(c.routes[i], routes[i]) {
			out = c.topo.Actions(out, &c.topo.Services[i], routes[i])
		}
	}
	c.routes = routes
	return out
}

// problem is the routing problem the snapshot and the fitted models give:
// each service's model per location, the calls from outside the routed
// services, the calls each makes of the others, the bytes, the RTTs.
func (c *Controller) problem(s *metrics.Snapshot) *Problem {
	t := c.topo
	n := len(t.Locations)
	p := &Problem{EgressWeight: c.opt.EgressWeight}
	for i := range n {
		row := make([]float64, n)
		for j := range n {
			row[j] = multicloud.ProbedRTT(s, i, j)
		}
		p.RTT = append(p.RTT, row)
	}
	index := map[string]int{}
	for i, sv := range t.Services {
		index[sv.Name] = i
	}
	period := s.Period.Seconds()
	served := make([]float64, len(t.Services)) // calls of each service
	bytes := make([]float64, len(t.Services))
	p.Arrivals = make([][]float64, len(t.Services))
	for i := range p.Arrivals {
		p.Arrivals[i] = make([]float64, n)
	}
	calls := map[[2]int]float64{} // calls of a routed service by a routed caller
	for k := range s.Routes {
		r := &s.Routes[k]
		callee, ok := index[r.Service]
		from := t.Location(r.From)
		if !ok || from < 0 || period <= 0 {
			continue
		}
		served[callee] += float64(r.Calls)
		bytes[callee] += r.Bytes
		if caller, ok := index[r.Caller]; ok {
			calls[[2]int{caller, callee}] += float64(r.Calls)
			continue
		}
		p.Arrivals[callee][from] += float64(r.Calls) / period
	}
	for i, sv := range t.Services {
		svc := Service{Name: sv.Name, Latency: c.models(s, i)}
		for j := i + 1; j < len(t.Services); j++ {
			if m := calls[[2]int{i, j}]; m > 0 && served[i] > 0 {
				svc.Children = append(svc.Children, Child{Service: j, PerCall: m / served[i]})
			}
		}
		p.Services = append(p.Services, svc)
		p.Bytes = append(p.Bytes, bytes[i]/max(served[i], 1))
	}
	return p
}

// models are service i's models per location: a·load² + b fitted on its
// windows there (or, without enough, on its windows everywhere), under
// the capacity its ready replicas serve at the utilisation cap, its
// background load taken out.
func (c *Controller) models(s *metrics.Snapshot, i int) []Latency {
	sv := &c.topo.Services[i]
	var all []Window
	for _, h := range c.history[i] {
		all = append(all, h...)
	}
	a0, b0, ok0 := Fit(all)
	out := make([]Latency, len(c.topo.Locations))
	for l := range out {
		if !sv.Placed(l) {
			continue
		}
		ready := float64(s.Services[sv.Parts[l]].Ready)
		if ready <= 0 {
			continue
		}
		a, b, ok := Fit(c.history[i][l])
		if !ok {
			a, b, ok = a0, b0, ok0
		}
		if !ok {
			a, b = 0, meanExclusive(all)
		}
		free := max(1-s.Locations[l].Background(), 0.05)
		out[l] = Latency{A: a, B: b, Capacity: c.opt.Utilisation * ready * free / max(b, 1e-3)}
	}
	return out
}

// meanExclusive is the windows' mean exclusive time (1 ms without any).
func meanExclusive(ws []Window) float64 {
	var sum, n float64
	for _, w := range ws {
		if !math.IsNaN(w.Exclusive) {
			sum, n = sum+w.Exclusive, n+1
		}
	}
	if n == 0 {
		return 1e-3
	}
	return sum / n
}

// sameRows reports whether two routings of a service are equal within a
// thousandth.
func sameRows(a, b [][]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		for j := range a[i] {
			if math.Abs(a[i][j]-b[i][j]) > 1e-3 {
				return false
			}
		}
	}
	return true
}
