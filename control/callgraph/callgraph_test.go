package callgraph

import (
	"slices"
	"testing"
)

// TestCriticalPath on a hand-made graph with a known answer:
//
//	front → [ (p) search | (q) user ] → order
//	search → [ price ]
func TestCriticalPath(t *testing.T) {
	g := &Graph{Roots: []Call{{Service: "front", Stages: []Stage{
		{Calls: []Call{{Service: "search", Stages: []Stage{{Calls: []Call{{Service: "price"}}}}}, {Service: "user"}}},
		{Calls: []Call{{Service: "order"}}},
	}}}}
	c := g.Compile()
	if want := []string{"front", "search", "price", "user", "order"}; !slices.Equal(c.Services(), want) {
		t.Fatalf("services %v, want %v", c.Services(), want)
	}
	names := func(p []int) []string {
		var s []string
		for _, k := range p {
			s = append(s, c.Services()[k])
		}
		return s
	}
	// search (50 ms) finishes after user (20 ms): search and its price call
	// are on the path, then the sequential order.
	lat := []float64{0.1, 0.05, 0.01, 0.02, 0.03}
	if got, want := names(c.CriticalPath(nil, 0, lat)), []string{"front", "search", "price", "order"}; !slices.Equal(got, want) {
		t.Errorf("path %v, want %v", got, want)
	}
	// user slower: search's subtree leaves the path.
	lat[3] = 0.08
	if got, want := names(c.CriticalPath(nil, 0, lat)), []string{"front", "user", "order"}; !slices.Equal(got, want) {
		t.Errorf("path %v, want %v", got, want)
	}
	// A call made one time in four counts for a quarter of its time.
	g.Roots[0].Stages[0].Calls[1].Prob = 0.25
	c = g.Compile()
	if got, want := names(c.CriticalPath(nil, 0, lat)), []string{"front", "search", "price", "order"}; !slices.Equal(got, want) {
		t.Errorf("with prob 0.25: path %v, want %v", got, want)
	}
	dst := make([]int, 0, c.Nodes())
	if n := testing.AllocsPerRun(100, func() { dst = c.CriticalPath(dst[:0], 0, lat) }); n != 0 {
		t.Errorf("%v allocations per walk, want 0", n)
	}
}
