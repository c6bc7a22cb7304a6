package lb

import (
	"math"
	"math/rand/v2"
	"time"
)

// LeastRequest is Envoy's LEAST_REQUEST load balancer
// (source/extensions/load_balancing_policies/least_request/least_request_lb.cc
// and common/load_balancer_impl.cc, EdfLoadBalancerBase):
//
//   - When every up host has the same weight and no bias is configured, it
//     draws ChoiceCount hosts uniformly with replacement
//     (unweightedHostPickNChoices: random() % size) and keeps the first one
//     drawn with the fewest active requests (a later one must have strictly
//     fewer to replace it).
//   - Otherwise an earliest-deadline-first schedule picks (edf_scheduler.h):
//     a host's deadline is the scheduler's time plus 1/weight, with the
//     dynamic weight weight / (active+1)^ActiveRequestBias (hostWeight)
//     computed when the host is (re)inserted, that is after its last pick,
//     so it is stale by design ("hosts will never fully drain"). Ties go to
//     the host inserted first.
//
// Slow start (a new host's weight ramped over a window) is not modelled:
// the LB points' hosts exist from the start.
type LeastRequest struct {
	Rand *rand.Rand
	// ChoiceCount is choice_count (default 2).
	ChoiceCount int
	// ActiveRequestBias is active_request_bias (default 1.0); Biased says
	// it was set explicitly, which selects the EDF path even with equal
	// weights, as in Envoy.
	ActiveRequestBias float64
	Biased            bool

	up       []int     // the up hosts, rebuilt when the view's version changes
	deadline []float64 // per host, EDF
	order    []uint64  // per host: insertion order, for ties
	clock    float64   // the EDF scheduler's current time
	inserted uint64
	version  uint64
	built    bool
	equal    bool // all up hosts weigh the same
}

// Select implements Selector.
func (s *LeastRequest) Select(v *View, _ Request) int {
	if !s.built || s.version != v.Version || len(s.deadline) != v.Len() {
		s.rebuild(v)
	}
	if len(s.up) == 0 {
		return -1
	}
	if s.equal && !s.Biased {
		return s.nChoices(v)
	}
	best := -1
	for _, j := range s.up {
		if best < 0 || s.deadline[j] < s.deadline[best] || (s.deadline[j] == s.deadline[best] && s.order[j] < s.order[best]) {
			best = j
		}
	}
	s.clock = s.deadline[best]
	s.insert(v, best)
	return best
}

func (s *LeastRequest) nChoices(v *View) int {
	n := s.ChoiceCount
	if n <= 0 {
		n = 2
	}
	best := -1
	for range n {
		j := s.up[s.Rand.IntN(len(s.up))]
		if best < 0 || v.InFlight[j] < v.InFlight[best] {
			best = j
		}
	}
	return best
}

// insert schedules host j at the clock plus 1/its dynamic weight.
func (s *LeastRequest) insert(v *View, j int) {
	bias := s.ActiveRequestBias
	if !s.Biased {
		bias = 1
	}
	w := v.Weights[j]
	switch active := float64(v.InFlight[j]) + 1; bias {
	case 0:
	case 1:
		w /= active
	default:
		w /= math.Pow(active, bias)
	}
	s.deadline[j] = s.clock + 1/w
	s.order[j] = s.inserted
	s.inserted++
}

// rebuild starts a new schedule over the up hosts of positive weight, as
// Envoy does when the host set changes.
func (s *LeastRequest) rebuild(v *View) {
	n := v.Len()
	if cap(s.deadline) >= n { // reused: an LB point's admission changes Up often
		s.deadline, s.order = s.deadline[:n], s.order[:n]
		clear(s.deadline)
		clear(s.order)
	} else {
		s.deadline, s.order = make([]float64, n), make([]uint64, n)
	}
	s.up, s.clock, s.inserted = s.up[:0], 0, 0
	s.equal = true
	for j, up := range v.Up {
		if !up || v.Weights[j] <= 0 {
			continue
		}
		if len(s.up) > 0 && v.Weights[j] != v.Weights[s.up[0]] {
			s.equal = false
		}
		s.up = append(s.up, j)
		s.insert(v, j)
	}
	s.version, s.built = v.Version, true
}

// PeakEWMA is Linkerd's balancer: power of two choices over the cost
// rtt × (pending+1), with rtt a Peak-EWMA of the response times (tower,
// tower/src/load/peak_ewma.rs, derived from Finagle's PeakEwma). A
// response slower than the estimate becomes the estimate at once (the
// peak); a faster one pulls it down by 1 − exp(−elapsed/Decay); reading
// the cost decays it towards zero the same way. Two distinct up backends
// are sampled, and the lower cost wins, the first on a tie
// (tower/src/balance/p2c). It implements Feedback, through which the LB
// point reports its requests and their response times.
type PeakEWMA struct {
	Rand *rand.Rand
	// DefaultRTT is a backend's estimate before any response, and Decay
	// the EWMA's time constant (Linkerd's proxy: 30 ms and 10 s).
	DefaultRTT, Decay time.Duration

	est     []rttEstimate
	pending []int32
}

// rttEstimate is one backend's Peak-EWMA, in seconds, updated at at.
type rttEstimate struct {
	rtt float64
	at  time.Duration
}

// update folds a response time rtt observed at now into e (tower's
// RttEstimate::update); rtt 0 only decays it.
func (e *rttEstimate) update(now time.Duration, rtt float64, decay time.Duration) float64 {
	if e.rtt < rtt {
		e.rtt = rtt
	} else {
		d := math.Exp(-float64(now-e.at) / float64(decay))
		e.rtt = e.rtt*d + rtt*(1-d)
	}
	if now > e.at {
		e.at = now
	}
	return e.rtt
}

func (s *PeakEWMA) size(n int) {
	if len(s.est) == n {
		return
	}
	rtt := s.DefaultRTT
	if rtt <= 0 {
		rtt = 30 * time.Millisecond
	}
	if s.Decay <= 0 {
		s.Decay = 10 * time.Second
	}
	s.est, s.pending = make([]rttEstimate, n), make([]int32, n)
	for j := range s.est {
		s.est[j].rtt = rtt.Seconds()
	}
}

// cost is backend j's load at now.
func (s *PeakEWMA) cost(now time.Duration, j int) float64 {
	return s.est[j].update(now, 0, s.Decay) * float64(s.pending[j]+1)
}

// Select implements Selector.
func (s *PeakEWMA) Select(v *View, r Request) int {
	s.size(v.Len())
	a, b := sampleTwo(v, s.Rand)
	if b < 0 {
		return a
	}
	if s.Rand.IntN(2) == 0 { // the sample is unordered: either may be "first"
		a, b = b, a
	}
	if s.cost(r.Now, a) <= s.cost(r.Now, b) {
		return a
	}
	return b
}

// Sent implements Feedback.
func (s *PeakEWMA) Sent(_ time.Duration, j int) {
	if j < len(s.pending) {
		s.pending[j]++
	}
}

// Done implements Feedback: duration (to the response headers) is the
// response time tower measures (CompleteOnResponse).
func (s *PeakEWMA) Done(now time.Duration, j int, duration, _ time.Duration) {
	if j < len(s.pending) {
		s.pending[j]--
		s.est[j].update(now, duration.Seconds(), s.Decay)
	}
}
