package jolteon

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/shoal-project/shoal/control/callgraph"
	"github.com/shoal-project/shoal/control/faasconf"
)

// Solver finds a workflow's cheapest configuration that meets a QoS on the
// model's samples.
type Solver struct {
	Model *Model
	Space faasconf.Space // CPU, memory and instance bounds (no concurrency limit)
	QoS   faasconf.QoS
	// Samples are the requests drawn per check (the sample average
	// approximation of the chance constraint); Seed seeds them, the same
	// for every check (common random numbers).
	Samples int
	Seed    uint64
	// CPUStep is the grid's CPU step, cores.
	CPUStep float64
	// Fitter, if set, refuses configurations whose instances do not fit
	// the nodes (the capacity constraint).
	Fitter *faasconf.Fitter
	// Window is the QoS's time window: the QoS is met with probability at
	// least 1 − Risk in a window of the rate's requests (0: per request,
	// Jolteon's own constraint).
	Window time.Duration
	Risk   float64

	pcg   *rand.PCG
	rng   *rand.Rand
	roots []node  // the graph with every call's function index
	below [][]int // the functions each calls, at any depth
	// A check's per-function state (prepare) and its samples.
	means []float64
	rho   []float64
	block []float64 // the chance a call is refused (Function.Refused)
	bands [][]float64
	lat   []float64
	// refusals' last answer, for its rate and share served.
	refusedAt, refusedServed, refused float64
}

// DefaultSamples is the sample count of a check: Jolteon's bound
// (Luedtke and Ahmed) N = ⌈ln(|X|/δ) / (2ε²)⌉ with ε = 0.05 and δ = 0.001
// gives 2,715 for its four-stage workflows; 2,000 here keeps a twelve-
// function descent within seconds.
const DefaultSamples = 2000

// OOMRisk is the chance, per instance, that its memory does not hold the
// calls in progress (Function.InFlight): small, as an OOM kill fails
// every call of the instance.
const OOMRisk = 1e-3

// Check reports whether cs meets the QoS at rate workflow requests per
// second, and the QoS's measure on the samples (seconds; +Inf when an
// instance saturates or the memory cannot hold its calls).
func (s *Solver) Check(cs []faasconf.Config, rate float64) (bool, float64) {
	if !s.prepare(cs, rate) {
		return false, math.Inf(1)
	}
	m := s.Model
	n := max(s.Samples, 1)
	s.lat = slices.Grow(s.lat[:0], n)
	for i := range n {
		s.pcg.Seed(s.Seed, uint64(i))
		root := s.pick(m.Shares)
		s.lat = append(s.lat, m.Offset+s.call(&s.roots[root]))
	}
	requests := rate * s.Window.Seconds()
	if !s.served(requests) {
		return false, math.Inf(1)
	}
	var measure float64
	if p := s.QoS.Percentile; p > 0 {
		// The window meets the QoS when at most (1 − p) of its requests
		// exceed the latency: a request may exceed it with the
		// probability that leaves that so with 1 − Risk (windowShare).
		if requests >= 1 {
			p = 1 - windowShare(int(requests), 1-p, s.risk())
		}
		slices.Sort(s.lat)
		measure = s.lat[min(n-1, max(0, int(math.Ceil(p*float64(n)))-1))]
	} else {
		// A window's mean: the requests' mean plus its one-sided
		// 1 − Risk normal quantile over the window's requests.
		// The requests refused are left out, as the mean of the ones served.
		var mean, sq, done float64
		for _, v := range s.lat {
			if !math.IsInf(v, 1) {
				mean, done = mean+v, done+1
			}
		}
		mean /= max(done, 1)
		for _, v := range s.lat {
			if !math.IsInf(v, 1) {
				sq += (v - mean) * (v - mean)
			}
		}
		measure = mean
		if requests >= 1 {
			measure += math.Sqrt2 * math.Erfinv(1-2*s.risk()) * math.Sqrt(sq/max(done, 1)/requests)
		}
	}
	return measure <= s.QoS.Latency.Seconds(), measure
}

// served reports whether the share of a window's requests refused at a
// concurrency limit (expect's chance, over the request classes) leaves the
// QoS's share served, with probability 1 − Risk in a window of requests
// (windowShare).
func (s *Solver) served(requests float64) bool {
	if s.QoS.MinServed <= 0 {
		return true
	}
	var refused float64
	for i := range s.roots {
		share := 1.0
		if len(s.Model.Shares) == len(s.roots) {
			share = s.Model.Shares[i]
		}
		refused += share * s.roots[i].fail
	}
	allowed := 1 - s.QoS.MinServed
	if requests >= 1 {
		allowed = windowShare(int(requests), allowed, s.risk())
	}
	return refused <= allowed
}

// prepare sets every function's white-box mean and black-box band for cs
// at the rate, and every call's expected latency (node.mean), and reports
// whether every instance keeps up and holds its calls in flight (a zero
// memory holds any). A caller's band is that of the busiest instance it
// waits on, itself included: the spread of its latency is theirs.
func (s *Solver) prepare(cs []faasconf.Config, rate float64) bool {
	m := s.Model
	s.compiled()
	s.means, s.bands, s.rho = s.means[:0], s.bands[:0], s.rho[:0]
	s.block = s.block[:0]
	for j := range m.Functions {
		f := &m.Functions[j]
		mean := f.Mean(cs[j], rate)
		if math.IsInf(mean, 1) {
			return false
		}
		calls := f.InFlight(cs[j], rate, mean, OOMRisk)
		if cs[j].Concurrency > 0 {
			calls = min(calls, cs[j].Concurrency) // the limit refuses the rest
		}
		if cs[j].MemoryMB > 0 && f.Memory.Floor(calls) > cs[j].MemoryMB {
			return false
		}
		s.means = append(s.means, mean)
		s.rho = append(s.rho, f.Utilisation(cs[j], rate))
		s.block = append(s.block, f.Refused(cs[j], rate))
	}
	for j := range m.Functions {
		s.bands = append(s.bands, m.Functions[j].band(s.busiest(j)))
	}
	for i := range s.roots {
		s.expect(&s.roots[i])
	}
	return true
}

// expect sets c's expected latency and every call's below it: its own
// mean plus its stages', each stage the largest of its calls' (weighted by
// the chance each is made), or a choice stage's weighted mean. The largest
// of means understates a parallel stage's mean; a caller's black box,
// fitted on this expectation, carries the difference.
func (s *Solver) expect(c *node) float64 {
	t, served := 0.0, 1.0
	if c.fn >= 0 {
		t, served = s.means[c.fn], 1-s.block[c.fn]
	}
	for k, calls := range c.stages {
		var stage, total, chosen float64
		for i := range calls {
			e, w := s.expect(&calls[i]), weight(calls[i].prob)
			if c.choice[k] {
				stage, total, chosen = stage+w*e, total+w, chosen+w*calls[i].fail
			} else {
				stage = max(stage, w*e)
				served *= 1 - min(w, 1)*calls[i].fail
			}
		}
		if c.choice[k] {
			stage /= total
			served *= 1 - chosen/total
		}
		t += stage
	}
	c.mean, c.fail = t, 1-served
	return t
}

// compiled compiles the graph, finds what each function calls, and seeds
// the draws, once.
func (s *Solver) compiled() {
	if s.rng != nil {
		return
	}
	s.pcg = rand.NewPCG(s.Seed, 0)
	s.rng = rand.New(s.pcg)
	s.below = make([][]int, len(s.Model.Functions))
	for i := range s.Model.Graph.Roots {
		s.roots = append(s.roots, compile(s.Model, &s.Model.Graph.Roots[i]))
		walk(&s.roots[i], func(c *node) {
			if c.fn < 0 {
				return
			}
			for _, calls := range c.stages {
				for i := range calls {
					walk(&calls[i], func(d *node) {
						if d.fn >= 0 && !slices.Contains(s.below[c.fn], d.fn) {
							s.below[c.fn] = append(s.below[c.fn], d.fn)
						}
					})
				}
			}
		})
	}
}

// calleeMean is the expected time a call of function j waits for its
// stages (its callees, composed on the model: expect) with cs at the
// rate, over every place j is called from that makes calls, and the band
// of j's black box there; ok is false when an instance cannot keep up.
func (s *Solver) calleeMean(j int, cs []faasconf.Config, rate float64) (mean float64, band int, ok bool) {
	if !s.prepare(cs, rate) {
		return 0, 0, false
	}
	var sum float64
	var sites int
	for i := range s.roots {
		walk(&s.roots[i], func(c *node) {
			if c.fn == j && len(c.stages) > 0 {
				sum, sites = sum+c.mean-s.means[j], sites+1
			}
		})
	}
	return sum / float64(max(sites, 1)), bandOf(s.busiest(j)), true
}

// busiest is the utilisation of the busiest instance a call of function j
// waits on, its own included (prepare's).
func (s *Solver) busiest(j int) float64 {
	rho := s.rho[j]
	for _, k := range s.below[j] {
		rho = max(rho, s.rho[k])
	}
	return rho
}

// callsOut reports whether function j makes calls anywhere in the graph.
func (s *Solver) callsOut(j int) bool {
	s.compiled()
	return len(s.below[j]) > 0
}

// calleesFirst is every function's index, each after every function it
// calls (by its height in the graph: 0 for one that calls none).
func (s *Solver) calleesFirst() []int {
	s.compiled()
	height := make([]int, len(s.Model.Functions))
	var up func(c *node) int
	up = func(c *node) int {
		h := -1
		for _, calls := range c.stages {
			for i := range calls {
				h = max(h, up(&calls[i]))
			}
		}
		if c.fn >= 0 {
			height[c.fn] = max(height[c.fn], h+1)
		}
		return h + 1
	}
	for i := range s.roots {
		up(&s.roots[i])
	}
	order := make([]int, len(height))
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(a, b int) int { return height[a] - height[b] })
	return order
}

// walk calls visit on c and every call below it.
func walk(c *node, visit func(*node)) {
	visit(c)
	for _, calls := range c.stages {
		for i := range calls {
			walk(&calls[i], visit)
		}
	}
}

// DefaultRisk is the chance a window may miss the QoS: Jolteon's δ, at
// the window FaaSConf's QoS is measured in (a configuration a tuning
// session found is verified on three windows: 0.9³ = 73% pass).
const DefaultRisk = 0.1

func (s *Solver) risk() float64 {
	if s.Risk > 0 {
		return s.Risk
	}
	return DefaultRisk
}

// windowShare is the largest chance q that a request exceeds the latency
// such that, of n requests, at most share·n do with probability at least
// 1 − risk (the binomial's distribution, by bisection).
func windowShare(n int, share, risk float64) float64 {
	k := int(math.Floor(share * float64(n)))
	lo, hi := 0.0, share
	for range 50 {
		q := (lo + hi) / 2
		if binomialCDF(k, n, q) >= 1-risk {
			lo = q
		} else {
			hi = q
		}
	}
	return lo
}

// binomialCDF is P(X ≤ k) for X ~ Binomial(n, q).
func binomialCDF(k, n int, q float64) float64 {
	if q <= 0 {
		return 1
	}
	lq, lp := math.Log(q), math.Log1p(-q)
	ln, _ := math.Lgamma(float64(n + 1))
	cdf := 0.0
	for i := 0; i <= k && i <= n; i++ {
		li, _ := math.Lgamma(float64(i + 1))
		lr, _ := math.Lgamma(float64(n - i + 1))
		cdf += math.Exp(ln - li - lr + float64(i)*lq + float64(n-i)*lp)
	}
	return cdf
}

// node is a call of the graph with its function's index (-1: a service
// not configured).
type node struct {
	fn     int
	prob   float64
	mean   float64 // its expected latency (expect)
	fail   float64 // the chance it, or a call below it, is refused (expect)
	choice []bool
	stages [][]node
}

func compile(m *Model, c *callgraph.Call) node {
	n := node{fn: m.index(c.Service), prob: c.Prob}
	for _, st := range c.Stages {
		calls := make([]node, len(st.Calls))
		for i := range st.Calls {
			calls[i] = compile(m, &st.Calls[i])
		}
		n.stages, n.choice = append(n.stages, calls), append(n.choice, st.Choice)
	}
	return n
}

// call draws one call's latency: the function's own (its white-box mean
// times a black-box draw; 0 for a service not configured) plus its stages,
// one after the other, each the slowest of its calls made in parallel, or
// the one call a choice stage makes.
//
// A configured function that calls others is drawn whole: its expected
// latency (expect) times a draw of its own black box, fitted on its
// measured latency, which holds its callees'. Drawing the callees apart,
// independently, would understate the tail: a request's calls to one busy
// instance are slow together.
//
// A call refused at a concurrency limit fails the request: +Inf.
func (s *Solver) call(c *node) float64 {
	if c.fn >= 0 && len(c.stages) > 0 {
		if c.fail > 0 && s.rng.Float64() < c.fail {
			return math.Inf(1)
		}
		return c.mean * residual(s.bands[c.fn], s.rng.Float64())
	}
	t := 0.0
	if c.fn >= 0 {
		if b := s.block[c.fn]; b > 0 && s.rng.Float64() < b {
			return math.Inf(1)
		}
		t = s.means[c.fn] * residual(s.bands[c.fn], s.rng.Float64())
	}
	for k, calls := range c.stages {
		if c.choice[k] {
			t += s.call(&calls[s.choose(calls)])
			continue
		}
		slowest := 0.0
		for i := range calls {
			if p := calls[i].prob; p > 0 && p < 1 && s.rng.Float64() >= p {
				continue
			}
			if d := s.call(&calls[i]); d > slowest {
				slowest = d
			}
		}
		t += slowest
	}
	return t
}

// choose draws a choice stage's call by weight (0 weighs 1).
func (s *Solver) choose(calls []node) int {
	total := 0.0
	for _, c := range calls {
		total += weight(c.prob)
	}
	u := s.rng.Float64() * total
	for i, c := range calls {
		if u -= weight(c.prob); u < 0 {
			return i
		}
	}
	return len(calls) - 1
}

func weight(p float64) float64 {
	if p <= 0 {
		return 1
	}
	return p
}

// pick draws a request class by share.
func (s *Solver) pick(shares []float64) int {
	if len(shares) < 2 {
		return 0
	}
	u := s.rng.Float64()
	for i, w := range shares {
		if u -= w; u < 0 {
			return i
		}
	}
	return len(shares) - 1
}

// Solve returns the cheapest configuration found that meets the QoS at
// the rate, and whether one does: from every function at its largest, a
// descent that takes, each step, the cheapest single move down (one CPU
// step or one instance less) that still meets it, then a probe of pairs of
// moves (one function down, another up) while one is cheaper and meets it
// (Jolteon's probe, release: PCPSolver.probe). Each configuration's memory
// is the least that holds its calls in flight (Function.InFlight).
//
// When nothing meets the QoS, the latency and the share unserved are
// relaxed by 5% at a time, up to half again, as the release relaxes its
// SLO (PCPSolver.iter_solve),
// and the result says it did not meet the QoS itself.
//
// Starts are further configurations to descend from (for example another
// level's solution, or the best measured so far), each where it meets the
// QoS: the descent is greedy, so the cheapest of its ends is kept.
func (s *Solver) Solve(rate float64, starts ...[]faasconf.Config) ([]faasconf.Config, bool) {
	cs, ok := s.solve(rate)
	for _, st := range starts {
		if st = slices.Clone(st); len(st) == len(cs) && s.sized(st, rate) {
			if st = s.descend(st, rate); !ok || faasconf.Price(st) < faasconf.Price(cs) {
				cs, ok = st, true
			}
		}
	}
	if ok {
		return cs, true
	}
	q := s.QoS
	defer func() { s.QoS = q }()
	for k := 1; k <= 10; k++ {
		relax := 1 + 0.05*float64(k)
		s.QoS.Latency = time.Duration(float64(q.Latency) * relax)
		if q.MinServed > 0 { // the share unserved too, as the QoS has two parts
			s.QoS.MinServed = 1 - (1-q.MinServed)*relax
		}
		if relaxed, ok := s.solve(rate); ok {
			return relaxed, false
		}
	}
	return cs, false
}

func (s *Solver) solve(rate float64) ([]faasconf.Config, bool) {
	n := len(s.Model.Functions)
	cs := make([]faasconf.Config, n)
	for j := range cs {
		cs[j] = faasconf.Config{CPU: s.Space.CPU[1], Instances: s.Space.Instances[1], MemoryMB: s.Space.MemoryMB[1]}
	}
	if s.Fitter != nil {
		s.Fitter.Safe(cs) // the largest that fits the nodes
	}
	if !s.sized(cs, rate) {
		for j := range cs { // the largest, each function refusing the calls its memory cannot hold
			if m := s.Model.Functions[j].Memory; m.PerCallMB > 0 {
				cs[j].MemoryMB = s.Space.MemoryMB[1]
				cs[j].Concurrency = max(1, m.Holds(cs[j].MemoryMB))
			}
		}
		return cs, false
	}
	return s.descend(cs, rate), true
}

// descend lowers cs, which meets the QoS, by the cheapest single moves
// that keep it met, then probes pairs of moves.
func (s *Solver) descend(cs []faasconf.Config, rate float64) []faasconf.Config {
	n := len(cs)
	for {
		best, price := -1, faasconf.Price(cs)
		var bestMove move
		for j := range n {
			for _, mv := range s.moves(cs[j], -1) {
				if p, ok := s.try(cs, j, mv, rate); ok && p < price {
					best, price, bestMove = j, p, mv
				}
			}
		}
		if best < 0 {
			break
		}
		cs[best] = bestMove.apply(cs[best])
		s.size(cs, best, rate) // its memory, as try found it met the QoS
	}
	for s.probe(&cs, rate) {
	}
	return cs
}

// probe moves to the first pair of moves (one function down, another up)
// that is cheaper and meets the QoS, and reports whether it found one.
func (s *Solver) probe(cs *[]faasconf.Config, rate float64) bool {
	price := faasconf.Price(*cs)
	for j := range *cs {
		for _, down := range s.moves((*cs)[j], -1) {
			for k := range *cs {
				if k == j {
					continue
				}
				for _, up := range s.moves((*cs)[k], +1) {
					next := slices.Clone(*cs)
					next[j], next[k] = down.apply(next[j]), up.apply(next[k])
					if s.sized(next, rate) && faasconf.Price(next) < price {
						*cs = next
						return true
					}
				}
			}
		}
	}
	return false
}

// try prices cs with function j moved, and reports whether that meets the
// QoS.
func (s *Solver) try(cs []faasconf.Config, j int, mv move, rate float64) (float64, bool) {
	old := cs[j]
	defer func() { cs[j] = old }()
	cs[j] = mv.apply(old)
	if !s.size(cs, j, rate) || (s.Fitter != nil && !s.Fitter.Fits(cs)) {
		return 0, false
	}
	p := faasconf.Price(cs)
	met, _ := s.Check(cs, rate)
	return p, met
}

// sized sets every function's memory (size) and reports whether all fit
// the space and the configuration meets the QoS.
func (s *Solver) sized(cs []faasconf.Config, rate float64) bool {
	for j := range cs {
		if !s.size(cs, j, rate) {
			return false
		}
	}
	if s.Fitter != nil && !s.Fitter.Fits(cs) {
		return false
	}
	met, _ := s.Check(cs, rate)
	return met
}

// size sets function j's memory to the least that holds its calls in
// flight, and enough more that its refusals stay within the QoS
// (refusals), or the space's largest, and its concurrency limit to the
// calls that memory holds, so that a call beyond it is refused, not OOM-killed
// (false when the instances cannot keep up, or a function without a
// memory model's calls do not fit).
func (s *Solver) size(cs []faasconf.Config, j int, rate float64) bool {
	f := &s.Model.Functions[j]
	mean := f.Mean(cs[j], rate)
	if math.IsInf(mean, 1) {
		return false
	}
	calls := f.InFlight(cs[j], rate, mean, OOMRisk)
	if f.Memory.PerCallMB > 0 { // room for enough calls that the refusals stay within the QoS
		for c, b := cs[j], s.refusals(rate); calls < 1000; calls++ {
			if c.Concurrency = calls; f.Refused(c, rate) <= b {
				break
			}
		}
	}
	mem := math.Max(s.Space.MemoryMB[0], math.Ceil(f.Memory.Floor(calls)))
	if mem > s.Space.MemoryMB[1] {
		if f.Memory.PerCallMB <= 0 {
			return false
		}
		mem = s.Space.MemoryMB[1] // the largest, refusing what it cannot hold (Check counts the refusals)
	}
	cs[j].MemoryMB = mem
	if f.Memory.PerCallMB > 0 { // a guard: refuse the calls the memory cannot hold, rather than be OOM-killed
		cs[j].Concurrency = max(1, f.Memory.Holds(mem))
	}
	return true
}

// refusals is the chance a call may be refused at a concurrency limit:
// the share of a window's requests the QoS lets go unserved (served),
// spread evenly over a request's calls.
func (s *Solver) refusals(rate float64) float64 {
	if rate == s.refusedAt && s.QoS.MinServed == s.refusedServed && s.refused > 0 {
		return s.refused
	}
	allowed := 1 - s.QoS.MinServed
	if s.QoS.MinServed <= 0 {
		allowed = OOMRisk
	} else if requests := rate * s.Window.Seconds(); requests >= 1 {
		allowed = windowShare(int(requests), allowed, s.risk())
	}
	visits := 0.0
	for _, f := range s.Model.Functions {
		visits += f.Visits
	}
	s.refusedAt, s.refusedServed, s.refused = rate, s.QoS.MinServed, allowed/max(visits, 1)
	return s.refused
}

// move is one grid step of a function's configuration.
type move struct {
	cpu       float64
	instances int
}

func (m move) apply(c faasconf.Config) faasconf.Config {
	c.CPU += m.cpu
	c.Instances += m.instances
	return c
}

// moves are the steps of c in direction dir (-1 down, +1 up) that stay in
// the space.
func (s *Solver) moves(c faasconf.Config, dir int) []move {
	step := s.CPUStep
	if step <= 0 {
		step = 0.125
	}
	var out []move
	if cpu := c.CPU + float64(dir)*step; cpu >= s.Space.CPU[0]-1e-9 && cpu <= s.Space.CPU[1]+1e-9 {
		out = append(out, move{cpu: float64(dir) * step})
	}
	if k := c.Instances + dir; k >= s.Space.Instances[0] && k <= s.Space.Instances[1] {
		out = append(out, move{instances: dir})
	}
	return out
}
