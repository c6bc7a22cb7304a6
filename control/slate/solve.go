// Package slate is a SLATE-like global optimiser of the routing fractions
// of a microservice system deployed in several locations, reimplemented for
// Shoal from the paper (Lim, Prerepa, Godfrey and Mittal, "SLATE: Service
// Layer Traffic Engineering", NSDI '26) and its release
// (ServiceLayerNetworking/SLATE, global-controller): a load→latency model
// per service and location, and a global optimisation of where each
// location's calls of each service go, minimising the requests' total
// latency plus the price of the egress between locations, under capacity,
// with the call tree's flow conservation (a child's calls start where its
// parent's were served).
//
// What differs, and why. The release fits each service's exclusive time
// (its own, without its children's) as a·rps² + b (global_controller.py,
// "poly", degree 2) and solves a quadratic program with Gurobi
// (optimizer_test.py, run_optimizer, objective "multi_objective": total
// latency times a price per millisecond plus the egress cost). The program
// is convex (load·(a·load² + b) is, for a ≥ 0), so here it is solved by
// the Frank-Wolfe method, as traffic assignment is: each step routes every
// call to its cheapest location at the current marginal costs (a dynamic
// program over the call tree), then moves the flows towards that by the
// step a line search finds.
package slate

import (
	"fmt"
	"math"
)

// Latency is a service's model at one location: its exclusive time A·load²
// + B seconds at load calls per second, up to Capacity calls per second
// (0: the service is not placed there).
type Latency struct {
	A, B, Capacity float64
}

// Overload is what each call per second over a location's capacity adds
// to every call's latency there, seconds: a penalty steep enough that no
// optimum crosses it while the system has room, and finite, so that an
// overloaded start still has a gradient (the release bounds the load
// instead: max_load on the compute arcs).
const Overload = 100.0

// at is the latency at load.
func (l Latency) at(load float64) float64 {
	if load <= l.Capacity {
		return l.A*load*load + l.B
	}
	return l.A*l.Capacity*l.Capacity + l.B + Overload*(load-l.Capacity)
}

// marginal is the derivative of load·at(load): what one more call per
// second adds to the total latency.
func (l Latency) marginal(load float64) float64 {
	if load <= l.Capacity {
		return 3*l.A*load*load + l.B
	}
	return l.at(load) + Overload*load
}

// Service is one routed service: its model at every location and the
// services it calls.
type Service struct {
	Name     string
	Latency  []Latency // by location
	Children []Child
}

// Child is a call a service makes while serving one of its own.
type Child struct {
	Service int     // its index in Problem.Services, after the caller's
	PerCall float64 // its calls per call of the parent
}

// Problem is the routing of a system: its services, parents before
// children, the calls arriving from outside at each location, the RTTs
// and the price of egress.
type Problem struct {
	Services []Service
	// Arrivals are the calls per second that clients at each location
	// make to each service (by service, then location; nil: none).
	Arrivals [][]float64
	// RTT is the round-trip time between locations, seconds.
	RTT [][]float64
	// Bytes are a call's bytes, request and answer, by service.
	Bytes []float64
	// EgressWeight prices a GB (10^9 bytes; the learned router's price and
	// the cluster's egress count 2^30) sent between two locations in
	// seconds of request latency (the egress price over what a
	// request-second is worth): SLATE's multi-objective, divided by its
	// price of latency.
	EgressWeight float64
}

// Routes are the fractions of each service's calls from each caller
// location that go to each location (by service, caller, callee).
type Routes [][][]float64

// Validate reports a problem that cannot be solved, naming the field.
func (p *Problem) Validate() error {
	n := len(p.RTT)
	if n < 2 {
		return fmt.Errorf("rtt: %d locations, want at least 2", n)
	}
	if len(p.Arrivals) != len(p.Services) || len(p.Bytes) != len(p.Services) {
		return fmt.Errorf("arrivals and bytes: %d and %d services, want %d", len(p.Arrivals), len(p.Bytes), len(p.Services))
	}
	for s, sv := range p.Services {
		if len(sv.Latency) != n {
			return fmt.Errorf("services[%d].latency: %d locations, want %d", s, len(sv.Latency), n)
		}
		placed := false
		for _, l := range sv.Latency {
			placed = placed || l.Capacity > 0
		}
		if !placed {
			return fmt.Errorf("services[%d] (%s): placed nowhere", s, sv.Name)
		}
		for _, c := range sv.Children {
			if c.Service <= s || c.Service >= len(p.Services) {
				return fmt.Errorf("services[%d].children: service %d is not after its caller", s, c.Service)
			}
		}
	}
	return nil
}

// state is a routing's flows: calls per second by service, caller and
// callee location, and the loads they put on each service's locations.
type state struct {
	flow [][][]float64
	load [][]float64
}

func (p *Problem) newState() *state {
	n := len(p.RTT)
	st := &state{}
	for range p.Services {
		f := make([][]float64, n)
		for i := range f {
			f[i] = make([]float64, n)
		}
		st.flow = append(st.flow, f)
		st.load = append(st.load, make([]float64, n))
	}
	return st
}

// propagate fills st with the flows of routes: each service's arrivals
// from clients and from its parents' locations, parents first.
func (p *Problem) propagate(st *state, routes Routes) {
	n := len(p.RTT)
	in := make([][]float64, len(p.Services))
	for s := range p.Services {
		in[s] = make([]float64, n)
		if p.Arrivals[s] != nil {
			copy(in[s], p.Arrivals[s])
		}
	}
	for s, sv := range p.Services {
		clear(st.load[s])
		for i := range n {
			for j := range n {
				st.flow[s][i][j] = in[s][i] * routes[s][i][j]
				st.load[s][j] += st.flow[s][i][j]
			}
		}
		for _, c := range sv.Children {
			for j := range n {
				in[c.Service][j] += c.PerCall * st.load[s][j]
			}
		}
	}
}

// cost is the objective: the calls' total latency per second (their
// exclusive times and the RTTs) plus the egress's weight.
func (p *Problem) cost(st *state) float64 {
	total := 0.0
	for s, sv := range p.Services {
		for j, l := range sv.Latency {
			if x := st.load[s][j]; x > 0 {
				total += x * l.at(x)
			}
		}
		for i, row := range st.flow[s] {
			for j, f := range row {
				total += f * p.hop(s, i, j)
			}
		}
	}
	return total
}

// hop is what a call of service s from i to j pays on the way: the RTT
// and, between locations, its egress's weight.
func (p *Problem) hop(s, i, j int) float64 {
	c := p.RTT[i][j]
	if i != j {
		c += p.EgressWeight * p.Bytes[s] / 1e9
	}
	return c
}

// cheapest routes every call to the location where it costs least at the
// current marginal costs (the Frank-Wolfe step's linear program): served
// at j, a call of s costs its marginal exclusive time there and, for each
// child call it makes from j, the cheapest hop and service of the child;
// children are priced first.
func (p *Problem) cheapest(st *state) Routes {
	n := len(p.RTT)
	price := make([][]float64, len(p.Services)) // price[s][j]: a call of s served at j
	routes := make(Routes, len(p.Services))
	for s := len(p.Services) - 1; s >= 0; s-- {
		sv := &p.Services[s]
		price[s] = make([]float64, n)
		for j, l := range sv.Latency {
			if l.Capacity <= 0 {
				price[s][j] = math.Inf(1)
				continue
			}
			price[s][j] = l.marginal(st.load[s][j])
			for _, c := range sv.Children {
				price[s][j] += c.PerCall * p.best(c.Service, j, price[c.Service])
			}
		}
		routes[s] = make([][]float64, n)
		for i := range n {
			routes[s][i] = make([]float64, n)
			routes[s][i][p.argBest(s, i, price[s])] = 1
		}
	}
	return routes
}

// argBest is the location where a call of s from i costs least: its hop
// and its price there (the first placed location if all are saturated).
func (p *Problem) argBest(s, i int, price []float64) int {
	best, at := math.Inf(1), -1
	for j, x := range price {
		if c := p.hop(s, i, j) + x; c < best || (at < 0 && p.Services[s].Latency[j].Capacity > 0) {
			best, at = c, j
		}
	}
	return at
}

// best is the least cost of a call of s from i.
func (p *Problem) best(s, i int, price []float64) float64 {
	j := p.argBest(s, i, price)
	return p.hop(s, i, j) + price[j]
}

// Solve returns the routing that minimises the objective, from start (nil:
// every call served where it is made, or spread evenly where the service is
// not placed), after at most iterations Frank-Wolfe steps, and its cost.
func (p *Problem) Solve(start Routes, iterations int) (Routes, float64, error) {
	if err := p.Validate(); err != nil {
		return nil, 0, err
	}
	routes := start
	if routes == nil {
		routes = p.local()
	}
	st, next := p.newState(), p.newState()
	trial := p.newState()
	for range iterations {
		p.propagate(st, routes)
		target := p.cheapest(st)
		p.propagate(next, target)
		step := p.lineSearch(st, next, trial)
		if step <= 0 {
			break
		}
		routes = p.blend(routes, target, step, st, next)
	}
	p.propagate(st, routes)
	return routes, p.cost(st), nil
}

// local keeps every call where it is made, and spreads a service's calls
// from a location it is not placed in evenly over those it is.
func (p *Problem) local() Routes {
	n := len(p.RTT)
	routes := make(Routes, len(p.Services))
	for s, sv := range p.Services {
		placed := 0
		for _, l := range sv.Latency {
			if l.Capacity > 0 {
				placed++
			}
		}
		routes[s] = make([][]float64, n)
		for i := range n {
			routes[s][i] = make([]float64, n)
			if sv.Latency[i].Capacity > 0 {
				routes[s][i][i] = 1
				continue
			}
			for j, l := range sv.Latency {
				if l.Capacity > 0 {
					routes[s][i][j] = 1 / float64(placed)
				}
			}
		}
	}
	return routes
}

// mix sets trial's flows and loads to (1 − step)·a + step·b: flows are
// linear in the routing's flows, so the blend of two feasible flows is one.
func mix(trial, a, b *state, step float64) {
	for s := range a.flow {
		for i, row := range a.flow[s] {
			for j := range row {
				trial.flow[s][i][j] = (1-step)*a.flow[s][i][j] + step*b.flow[s][i][j]
			}
		}
		for j := range a.load[s] {
			trial.load[s][j] = (1-step)*a.load[s][j] + step*b.load[s][j]
		}
	}
}

// lineSearch is the step in [0, 1] towards next that minimises the cost
// (golden section: the cost is convex along the segment).
func (p *Problem) lineSearch(cur, next, trial *state) float64 {
	at := func(step float64) float64 {
		mix(trial, cur, next, step)
		return p.cost(trial)
	}
	const phi = 0.6180339887498949
	lo, hi := 0.0, 1.0
	x1, x2 := hi-phi*(hi-lo), lo+phi*(hi-lo)
	f1, f2 := at(x1), at(x2)
	for range 60 {
		if f1 <= f2 {
			hi, x2, f2 = x2, x1, f1
			x1 = hi - phi*(hi-lo)
			f1 = at(x1)
		} else {
			lo, x1, f1 = x1, x2, f2
			x2 = lo + phi*(hi-lo)
			f2 = at(x2)
		}
	}
	step := (lo + hi) / 2
	if at(step) >= at(0) {
		return 0
	}
	return step
}

// blend is the routing whose flows are (1 − step)·cur + step·next: each
// caller location's fractions weighted by the calls each routing sends
// from it.
func (p *Problem) blend(a, b Routes, step float64, cur, next *state) Routes {
	out := make(Routes, len(a))
	for s := range a {
		out[s] = make([][]float64, len(a[s]))
		for i := range a[s] {
			out[s][i] = make([]float64, len(a[s][i]))
			var fa, fb float64
			for j := range a[s][i] {
				fa += cur.flow[s][i][j]
				fb += next.flow[s][i][j]
			}
			total := (1-step)*fa + step*fb
			for j := range out[s][i] {
				if total > 0 {
					out[s][i][j] = ((1-step)*cur.flow[s][i][j] + step*next.flow[s][i][j]) / total
				} else {
					out[s][i][j] = (1-step)*a[s][i][j] + step*b[s][i][j]
				}
			}
		}
	}
	return out
}
