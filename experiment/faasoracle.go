package experiment

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/envs/faasconfenv"
)

// FaaSOracle is the reference FaaSConf is measured against (section 5.2.2:
// "oracle, which is obtained by exhaustive offline search"): the cheapest
// configuration of the discretised hybrid space that meets the QoS at a
// workload level on every one of its measurement seeds.
//
// The grid of a function is every CPU limit from the space's least in
// CPUStep steps, every instance count and every concurrency limit, each
// with the least memory that holds the limit's calls (Env.MemoryFloor:
// in the simulator memory only decides OOM kills, so any more is price
// without effect, and any less is dominated by the lower limit that
// memory holds). A workflow's joint grid is too large to enumerate (5
// functions: 10¹⁴ points), so the search is exhaustive per function
// around a point and repeated until no function can get cheaper: it
// starts from the cheapest configuration that meets the QoS with the same
// grid point for every function, then, function by function, tries every
// grid point cheaper than the function's current one in increasing price
// with the others fixed and keeps the first that meets the QoS; passes
// repeat until one changes nothing, in the workflow's order and in the
// reverse order, and the cheaper result stands. Then kicks, until none
// helps: one function goes back to its start configuration, the others
// descend into the latency it frees, then it does. This block
// coordinate search is complete for each function given the others, not
// for the joint space: the oracle is an upper bound on the true optimum.
type FaaSOracle struct {
	Env     *faasconfenv.Env
	Seeds   int     // measurement seeds a configuration must meet the QoS on
	CPUStep float64 // cores
}

// OracleResult is the oracle at one level.
type OracleResult struct {
	Level   float64           `json:"level"`
	Configs []faasconf.Config `json:"configs"`
	Price   float64           `json:"price_per_hour"` // 0: none met the QoS
	// Measured counts the measurements the search took.
	Measured int `json:"measured"`
}

// gridPoint is one function's configuration and its price per hour.
type gridPoint struct {
	c     faasconf.Config
	price float64
}

// meets reports whether the configurations meet the QoS at the level on
// every one of the oracle's seeds, counting the measurements.
func (o FaaSOracle) meets(level float64, cs []faasconf.Config, measured *int) bool {
	for s := range o.Seeds {
		*measured++
		if m, _ := o.Env.Measure(level, cs, rand.New(rand.NewPCG(uint64(s+1), 0x6f72636c))); !m.Met { // "orcl"
			return false
		}
	}
	return true
}

// verify returns the price of the session's cheapest configuration that
// met the QoS and meets it on the oracle's seeds (0: none).
func (o FaaSOracle) verify(level float64, s FaaSSession) float64 {
	met := slices.DeleteFunc(slices.Clone(s.Measurements), func(m faasconfenv.Measurement) bool { return !m.Met })
	slices.SortStableFunc(met, func(a, b faasconfenv.Measurement) int { return cmp.Compare(a.Price, b.Price) })
	var n int
	for _, m := range met {
		if o.meets(level, m.Configs, &n) {
			return m.Price
		}
	}
	return 0
}

// Search returns the oracle at the level.
func (o FaaSOracle) Search(level float64) OracleResult {
	r := OracleResult{Level: level}
	grids := o.grids()
	met := func(cs []faasconf.Config) bool { return o.meets(level, cs, &r.Measured) }
	start := o.uniform(len(grids), met)
	if start == nil {
		return r
	}
	n := len(grids)
	order := make([]int, n)
	for j := range order {
		order[j] = j
	}
	for range 2 {
		cs := o.descend(slices.Clone(start), grids, order, met)
		if p := faasconf.Price(cs); r.Price == 0 || p < r.Price {
			r.Configs, r.Price = cs, p
		}
		slices.Reverse(order)
	}
	// Kicks: give one function its start configuration back, lower the
	// others into the slack it leaves, then it; keep what is cheaper.
	for improved := true; improved; {
		improved = false
		for j := range n {
			cs := slices.Clone(r.Configs)
			cs[j] = start[j]
			rest := append(slices.DeleteFunc(slices.Clone(order), func(k int) bool { return k == j }), j)
			cs = o.descend(cs, grids, rest, met)
			if p := faasconf.Price(cs); p < r.Price-1e-9 {
				r.Configs, r.Price, improved = cs, p, true
			}
		}
	}
	return r
}

// point is function j's grid point with cpu, inst instances and
// concurrency k, false when no memory of the space holds k calls.
func (o FaaSOracle) point(j int, cpu float64, inst, k int) (faasconf.Config, bool) {
	mem := o.Env.MemoryFloor(j, k)
	return faasconf.Config{CPU: math.Round(cpu*1000) / 1000, MemoryMB: mem, Instances: inst, Concurrency: k}, mem <= o.Env.Space().MemoryMB[1]
}

// each calls f with every (CPU, instances, concurrency) of the grid.
func (o FaaSOracle) each(f func(cpu float64, inst, k int)) {
	sp := o.Env.Space()
	for cpu := sp.CPU[0]; cpu <= sp.CPU[1]+1e-9; cpu += o.CPUStep {
		for inst := sp.Instances[0]; inst <= sp.Instances[1]; inst++ {
			for k := sp.Concurrency[0]; k <= sp.Concurrency[1]; k++ {
				f(cpu, inst, k)
			}
		}
	}
}

// grids returns every function's grid in increasing price.
func (o FaaSOracle) grids() [][]gridPoint {
	out := make([][]gridPoint, len(o.Env.Functions()))
	for j := range out {
		o.each(func(cpu float64, inst, k int) {
			if c, ok := o.point(j, cpu, inst, k); ok {
				out[j] = append(out[j], gridPoint{c, faasconf.Price([]faasconf.Config{c})})
			}
		})
		slices.SortStableFunc(out[j], func(a, b gridPoint) int { return cmp.Compare(a.price, b.price) })
	}
	return out
}

// uniform returns the cheapest configuration that meets the QoS with the
// same CPU, instances and concurrency for every function (nil if none).
func (o FaaSOracle) uniform(n int, met func([]faasconf.Config) bool) []faasconf.Config {
	type cand struct {
		cs    []faasconf.Config
		price float64
	}
	var cands []cand
	o.each(func(cpu float64, inst, k int) {
		cs := make([]faasconf.Config, n)
		for j := range cs {
			var ok bool
			if cs[j], ok = o.point(j, cpu, inst, k); !ok {
				return
			}
		}
		cands = append(cands, cand{cs, faasconf.Price(cs)})
	})
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(a.price, b.price) })
	for _, c := range cands {
		if met(c.cs) {
			return c.cs
		}
	}
	return nil
}

// descend lowers one function at a time, in the order, until a pass
// changes nothing.
func (o FaaSOracle) descend(cs []faasconf.Config, grids [][]gridPoint, order []int, met func([]faasconf.Config) bool) []faasconf.Config {
	for changed := true; changed; {
		changed = false
		for _, j := range order {
			cur := faasconf.Price(cs[j : j+1])
			keep := cs[j]
			for _, g := range grids[j] {
				if g.price >= cur {
					break
				}
				cs[j] = g.c
				if met(cs) {
					keep, changed = g.c, true
					break
				}
			}
			cs[j] = keep
		}
	}
	return cs
}
