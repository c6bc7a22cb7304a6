package faasconfenv

import (
	"slices"

	"github.com/shoal-project/shoal/cluster"
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
