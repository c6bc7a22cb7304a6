package faasconfenv

import (
	"cmp"
	"slices"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/scenario"
)

// Adjacency is the workflow topology of the scenario's classes as an
// adjacency matrix over funcs (section 4.2: "the invocation relationships
// between functions form edges"): two functions are neighbours when one
// calls the other, or when they run in consecutive stages of the same
// caller (an orchestrator function hands one's output to the next, as
// FaaSConf's workflows do), the orchestrator itself being no agent.
func Adjacency(sc *scenario.Scenario, funcs []string) [][]float64 {
	a := make([][]float64, len(funcs))
	for j := range a {
		a[j] = make([]float64, len(funcs))
	}
	link := func(x, y string) {
		i, j := slices.Index(funcs, x), slices.Index(funcs, y)
		if i >= 0 && j >= 0 && i != j {
			a[i][j], a[j][i] = 1, 1
		}
	}
	var walk func(c *cluster.Call)
	walk = func(c *cluster.Call) {
		var prev []string
		for _, st := range c.Stages {
			var cur []string
			for k := range st.Calls {
				callee := st.Calls[k].Service
				link(c.Service, callee)
				for _, p := range prev {
					link(p, callee)
				}
				cur = append(cur, callee)
				walk(&st.Calls[k])
			}
			prev = cur
		}
	}
	for i := range sc.Classes {
		walk(&sc.Classes[i].Call)
	}
	return a
}

// Footprint is the cluster the scenario's functions (funcs) are
// configured in: their memory models, the nodes, and the instances of
// the services that are not tuned at their own replicas.
func Footprint(sc *scenario.Scenario, funcs []string) faasconf.Footprint {
	var fp faasconf.Footprint
	for _, n := range sc.Nodes {
		fp.Nodes = append(fp.Nodes, faasconf.NodeGroup{CPU: n.CPU, MemoryMB: n.MemoryMB, Count: max(n.Count, 1)})
	}
	for _, f := range funcs {
		i := slices.IndexFunc(sc.Services, func(s cluster.Service) bool { return s.Name == f })
		s := &sc.Services[i]
		fp.Memory = append(fp.Memory, faasconf.MemoryModel{BaseMB: s.MemoryBaseMB, PerCallMB: s.MemoryPerCallMB})
	}
	for _, s := range sc.Services {
		if slices.Contains(funcs, s.Name) {
			continue
		}
		for range max(s.Replicas, s.MinReplicas, 1) {
			fp.Others = append(fp.Others, faasconf.Instance{CPU: cmp.Or(s.CPU, 1), MemoryMB: s.MemoryMB}) // the cluster's default limit
		}
	}
	return fp
}
