// Package callgraph is the static call graph of an application as a
// controller may be given it at construction (a service mesh's topology, or
// the scenario's request classes), and FIRM's critical-path extraction over
// it (Qiu et al., OSDI 2020, section 3.2, Algorithm 1). It imports nothing
// above control, so a controller built on it runs unchanged against the
// simulator and a real cluster.
package callgraph

// Graph is the call tree of every request class, one root each.
type Graph struct {
	Roots []Call `json:"roots"`
}

// Call is one call to a service and what the service then calls.
type Call struct {
	Service string `json:"service"`
	// Prob is the probability the call is made, or its weight in a choice
	// stage (0 means 1).
	Prob float64 `json:"prob,omitempty"`
	// Stages run one after the other; the calls of a stage run in parallel
	// (or, in a choice stage, exactly one of them).
	Stages []Stage `json:"stages,omitempty"`
}

// Stage is a set of calls made in parallel, or one of them (Choice).
type Stage struct {
	Choice bool   `json:"choice,omitempty"`
	Calls  []Call `json:"calls"`
}

// Compiled is a graph flattened for allocation-free walks: services are
// numbered in order of first appearance.
type Compiled struct {
	services []string
	nodes    []node
	roots    []int
}

type node struct {
	svc    int
	prob   float64
	stages [][]int // per stage, the child nodes
}

// Compile numbers the graph's services and flattens its calls.
func (g *Graph) Compile() *Compiled {
	c := &Compiled{}
	for i := range g.Roots {
		c.roots = append(c.roots, c.add(&g.Roots[i]))
	}
	return c
}

func (c *Compiled) add(call *Call) int {
	svc := -1
	for k, s := range c.services {
		if s == call.Service {
			svc = k
		}
	}
	if svc < 0 {
		svc = len(c.services)
		c.services = append(c.services, call.Service)
	}
	p := call.Prob
	if p <= 0 {
		p = 1
	}
	id := len(c.nodes)
	c.nodes = append(c.nodes, node{svc: svc, prob: p})
	stages := make([][]int, len(call.Stages))
	for s, st := range call.Stages {
		for k := range st.Calls {
			stages[s] = append(stages[s], c.add(&st.Calls[k]))
		}
	}
	c.nodes[id].stages = stages
	return id
}

// Services are the graph's services; a service's number is its index.
func (c *Compiled) Services() []string { return c.services }

// Roots is the number of request classes.
func (c *Compiled) Roots() int { return len(c.roots) }

// CriticalPath appends to dst the services (by number) on the critical path
// of root's class, root first, given every service's mean response time
// lat (by number; a service's own time plus its downstream calls', as a
// mesh measures it at the callee). It follows Algorithm 1 of FIRM on the
// graph instead of one request's trace: every sequential stage is on the
// path, and of a stage's parallel calls the one that finishes last, which
// here is the one with the largest expected time prob x lat (the branch
// that contributes most to the mean). A service may appear twice when the
// path calls it twice. It allocates nothing when dst has room.
func (c *Compiled) CriticalPath(dst []int, root int, lat []float64) []int {
	return c.walk(dst, c.roots[root], lat)
}

func (c *Compiled) walk(dst []int, id int, lat []float64) []int {
	n := &c.nodes[id]
	dst = append(dst, n.svc)
	for _, stage := range n.stages {
		best, bestT := -1, -1.0
		for _, ch := range stage {
			if t := c.nodes[ch].prob * lat[c.nodes[ch].svc]; t > bestT {
				best, bestT = ch, t
			}
		}
		if best >= 0 {
			dst = c.walk(dst, best, lat)
		}
	}
	return dst
}

// Nodes is the number of calls in the graph: a bound on a path's length.
func (c *Compiled) Nodes() int { return len(c.nodes) }
