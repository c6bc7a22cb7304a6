// Package lb holds request selectors: the per-request decision of which
// backend of a load-balancing point receives a new request. The same
// selectors run in the simulator's LB points (cluster) and in the real HTTP
// proxy (proxy), so they see only what a real load balancer sees: its own
// in-flight counts and the weights it was configured with or taught.
//
// The usage loop, per request:
//
//	v := &lb.View{InFlight: q, Weights: w, Up: up}   // owned by the LB point, updated in place
//	j := sel.Select(v, lb.Request{})                 // -1 when no backend is up
//	q[j]++ ... when the response is done: q[j]--
//
// Selectors are tiny types behind one interface, built by name from an
// explicit registry (see Registry), never by init-time registration.
package lb

import (
	"math"
	"math/rand/v2"
	"time"
)

// Request is what a selector may know of the new request. Only the Oracle
// reads its demand: real load balancers cannot know it in advance.
type Request struct {
	CPU float64 // CPU work in core-seconds at speed 1
	IO  float64 // I/O time in seconds at I/O speed 1
	// Now is the decision's time on the LB point's clock (the simulator's
	// time; the proxy's Unix time): what time-decayed estimates read.
	Now time.Duration
	// Key is the request's affinity key (a hash of its session or user),
	// what hashing selectors route on; 0 when it has none.
	Key uint64
}

// View is the state of one LB point that selectors read. The LB point owns the
// slices and updates them in place; selectors must not keep references that
// outlive a call, except through Version.
type View struct {
	// InFlight is the number of this LB point's own requests in progress at
	// each backend (not other LB points'): partial observability.
	InFlight []int32
	// Weights are the configured or learned weights (relative processing speed).
	Weights []float64
	// Up marks backends that may receive requests (ready, not ejected).
	Up []bool
	// Names identify the backends (the proxy's URLs, the simulator's
	// instance names), so hashing selectors of different LB points build
	// the same table; nil when the LB point has none.
	Names []string
	// Version changes whenever Weights, Up or Names change, so selectors
	// can cache derived tables.
	Version uint64
}

// Len is the number of backends.
func (v *View) Len() int { return len(v.InFlight) }

// Selector picks a backend index for a new request, or -1 if none is up.
// Select must not allocate.
type Selector interface {
	Select(v *View, r Request) int
}

// ECMP picks uniformly at random among up backends (equal-cost multi-path).
type ECMP struct{ Rand *rand.Rand }

// Select implements Selector.
func (s *ECMP) Select(v *View, _ Request) int { return randomUp(v, s.Rand) }

// WCMP picks at random with probability proportional to the weights
// (weighted-cost multi-path with static weights).
type WCMP struct {
	Rand    *rand.Rand
	cum     []float64
	version uint64
	built   bool
}

// Select implements Selector.
func (s *WCMP) Select(v *View, _ Request) int {
	if !s.built || s.version != v.Version || len(s.cum) != v.Len() {
		s.rebuild(v)
	}
	total := s.cum[len(s.cum)-1]
	if total <= 0 {
		return -1
	}
	x := s.Rand.Float64() * total
	lo, hi := 0, len(s.cum)-1
	for lo < hi { // first index with cum > x
		mid := (lo + hi) / 2
		if s.cum[mid] > x {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

func (s *WCMP) rebuild(v *View) {
	s.cum = s.cum[:0]
	sum := 0.0
	for j, w := range v.Weights {
		if v.Up[j] && w > 0 {
			sum += w
		}
		s.cum = append(s.cum, sum)
	}
	s.version, s.built = v.Version, true
}

// LSQ picks the up backend with the fewest of this LB point's own requests in
// flight (local shortest queue), breaking ties uniformly at random.
type LSQ struct{ Rand *rand.Rand }

// Select implements Selector.
func (s *LSQ) Select(v *View, _ Request) int {
	up := v.Up
	q := v.InFlight[:len(up)]
	best, ties := -1, 0
	bq := int32(math.MaxInt32)
	for j, u := range up {
		if !u {
			continue
		}
		if x := q[j]; x < bq {
			best, bq, ties = j, x, 1
		} else if x == bq {
			ties++
		}
	}
	if ties <= 1 {
		return best
	}
	// One draw picks among the ties uniformly (a second pass is cheaper
	// than a random number per tie).
	k := s.Rand.IntN(ties)
	for j := best; ; j++ {
		if up[j] && q[j] == bq {
			if k == 0 {
				return j
			}
			k--
		}
	}
}

// SED picks argmin_j (q_j+1)/w_j (shortest expected delay), with q the local
// in-flight count and w the weight, breaking ties at random. With learned
// weights a_ij this is the Distr-LB data plane (paper Alg. 2, line 12).
type SED struct{ Rand *rand.Rand }

// Select implements Selector.
func (s *SED) Select(v *View, _ Request) int {
	best, ties := -1, 0
	bd := 0.0
	for j, up := range v.Up {
		w := v.Weights[j]
		if !up || w <= 0 {
			continue
		}
		switch d := float64(v.InFlight[j]+1) / w; {
		case best < 0 || d < bd:
			best, bd, ties = j, d, 1
		case d == bd:
			ties++
		}
	}
	if ties <= 1 {
		return best
	}
	k := s.Rand.IntN(ties)
	for j := best; ; j++ {
		if w := v.Weights[j]; v.Up[j] && w > 0 && float64(v.InFlight[j]+1)/w == bd {
			if k == 0 {
				return j
			}
			k--
		}
	}
}

// P2C samples two distinct up backends uniformly and picks the one with fewer
// local requests in flight (power of two choices, Mitzenmacher 2001).
type P2C struct{ Rand *rand.Rand }

// Select implements Selector.
func (s *P2C) Select(v *View, _ Request) int {
	a, b := sampleTwo(v, s.Rand)
	if b < 0 {
		return a
	}
	if v.InFlight[b] < v.InFlight[a] || (v.InFlight[b] == v.InFlight[a] && s.Rand.IntN(2) == 0) {
		return b
	}
	return a
}

// sampleTwo draws two distinct up backends uniformly; b is -1 when only one
// is up, both when none is. Up to reservoirMax backends it is a reservoir
// sample of size two (one draw per backend); beyond, it draws backends at
// random until it finds up ones, so its cost does not grow with the
// cluster. Both are uniform; the reservoir is kept for small pools so that
// runs of the clusters the results pages use (at most 32 servers) draw the
// same numbers as before.
func sampleTwo(v *View, rng *rand.Rand) (a, b int) {
	if len(v.Up) <= reservoirMax {
		return reservoirTwo(v, rng)
	}
	if a = drawUp(v, rng, -1); a < 0 {
		return reservoirTwo(v, rng)
	}
	if b = drawUp(v, rng, a); b < 0 {
		b = reservoirOne(v, rng, a)
	}
	return a, b
}

// reservoirMax is the largest pool sampleTwo samples by a scan.
const reservoirMax = 32

// rejectTries bounds drawUp's tries: with half the backends down it fails
// once in 65536 picks, and the caller falls back to a scan, which keeps the
// pick uniform.
const rejectTries = 16

// drawUp draws backends uniformly until one is up and not skip; -1 after
// rejectTries failures.
func drawUp(v *View, rng *rand.Rand, skip int) int {
	for range rejectTries {
		if j := rng.IntN(len(v.Up)); v.Up[j] && j != skip {
			return j
		}
	}
	return -1
}

// reservoirTwo is sampleTwo by a scan: a reservoir sample of size two,
// without a scratch list.
func reservoirTwo(v *View, rng *rand.Rand) (a, b int) {
	a, b, n := -1, -1, 0
	for j, up := range v.Up {
		if !up {
			continue
		}
		n++
		switch {
		case n == 1:
			a = j
		case n == 2:
			b = j
		default:
			if r := rng.IntN(n); r == 0 {
				a = j
			} else if r == 1 {
				b = j
			}
		}
	}
	return a, b
}

// reservoirOne draws one up backend other than skip uniformly by a scan;
// -1 when there is none.
func reservoirOne(v *View, rng *rand.Rand, skip int) int {
	pick, n := -1, 0
	for j, up := range v.Up {
		if up && j != skip {
			if n++; rng.IntN(n) == 0 {
				pick = j
			}
		}
	}
	return pick
}

// RoundRobin cycles through the up backends in order, ignoring weights.
type RoundRobin struct{ next int }

// Select implements Selector.
func (s *RoundRobin) Select(v *View, _ Request) int {
	n := v.Len()
	if n == 0 {
		return -1
	}
	j := s.next
	if j >= n { // the last pick was the last backend, or backends went away
		j %= n
	}
	for range n {
		if v.Up[j] {
			s.next = j + 1
			return j
		}
		if j++; j == n {
			j = 0
		}
	}
	return -1
}

// WeightedRoundRobin is nginx's smooth weighted round robin
// (ngx_http_upstream_round_robin.c, ngx_http_upstream_get_peer): every pick
// adds each backend's weight to its current value, picks the largest, and
// subtracts the total from the winner.
type WeightedRoundRobin struct {
	current []float64
}

// Select implements Selector.
func (s *WeightedRoundRobin) Select(v *View, _ Request) int {
	if len(s.current) != v.Len() {
		s.current = make([]float64, v.Len())
	}
	best, total := -1, 0.0
	for j, up := range v.Up {
		w := v.Weights[j]
		if !up || w <= 0 {
			continue
		}
		s.current[j] += w
		total += w
		if best < 0 || s.current[j] > s.current[best] {
			best = j
		}
	}
	if best >= 0 {
		s.current[best] -= total
	}
	return best
}

// Estimator predicts, with perfect knowledge of the system, when a new
// request r would complete at backend j if sent there now (seconds from now).
// The simulator implements it; nothing real can.
type Estimator interface {
	EstimateCompletion(j int, r Request) float64
}

// Oracle sends each request to the backend that minimises its own predicted
// completion time, knowing every server's remaining work and true speed
// (the Distr-LB paper's Oracle LB, section 4).
type Oracle struct {
	Est  Estimator
	Rand *rand.Rand
}

// Select implements Selector.
func (s *Oracle) Select(v *View, r Request) int {
	best, ties := -1, 0
	bt := 0.0
	for j, up := range v.Up {
		if !up {
			continue
		}
		t := s.Est.EstimateCompletion(j, r)
		switch {
		case best < 0 || t < bt:
			best, bt, ties = j, t, 1
		case t == bt:
			ties++
			if s.Rand.IntN(ties) == 0 {
				best = j
			}
		}
	}
	return best
}
