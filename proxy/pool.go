package proxy

import (
	"math"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-project/shoal/control/lb"
)

// backend is one server and its health. It outlives configuration
// generations (found again by URL on reload), so a reload keeps what
// passive and active checks learned about it.
type backend struct {
	url     *url.URL
	name    string          // the URL as configured: the metrics label
	addr    string          // host:port to dial
	metrics *backendMetrics // its series, resolved once
	conns   connPool        // kept-alive connections

	mu        sync.Mutex
	failures  int // consecutive connection failures
	ejections int // consecutive ejections, the backoff exponent
	checkRun  int // consecutive active-check results against the current state

	ejectedUntil atomic.Int64 // unix nanoseconds; the past: not ejected
	checkDown    atomic.Bool  // the active check says down
	failing      atomic.Bool  // failures or ejections to reset on the next success
}

func newBackend(raw string) (*backend, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	return &backend{url: u, name: raw, addr: u.Host}, nil
}

// healthy reports whether b may receive requests at now (unix ns).
func (b *backend) healthy(now int64) bool {
	return !b.checkDown.Load() && now >= b.ejectedUntil.Load()
}

// failed records a connection failure at now and reports whether it
// ejected the backend: after h.Failures in a row, for h.Backoff doubled per
// earlier ejection without a success in between, at most h.MaxBackoff.
func (b *backend) failed(now time.Time, h Health) (ejected bool, until time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failing.Store(true)
	b.failures++
	if b.failures < h.Failures {
		return false, time.Time{}
	}
	d := h.Backoff << min(b.ejections, 30)
	if d > h.MaxBackoff || d <= 0 {
		d = h.MaxBackoff
	}
	b.failures = 0
	b.ejections++
	until = now.Add(d)
	b.ejectedUntil.Store(until.UnixNano())
	return true, until
}

// succeeded records an answer: the failure run and the backoff reset. It
// runs per response, so a backend without failures takes no lock.
func (b *backend) succeeded() {
	if !b.failing.Load() {
		return
	}
	b.mu.Lock()
	b.failing.Store(false)
	b.failures, b.ejections = 0, 0
	b.mu.Unlock()
}

// checked records an active check's result and reports whether it changed
// the backend's state (down after fall failures in a row, up after rise
// successes).
func (b *backend) checked(ok bool, fall, rise int) (changed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	down := b.checkDown.Load()
	if ok != down { // result agrees with the state
		b.checkRun = 0
		return false
	}
	b.checkRun++
	if (down && b.checkRun >= rise) || (!down && b.checkRun >= fall) {
		b.checkDown.Store(!down)
		b.checkRun = 0
		if !down {
			return true
		}
		b.failures, b.ejections = 0, 0
		b.ejectedUntil.Store(0)
		return true
	}
	return false
}

// pool is one configuration generation's backends and selector. Selection
// takes a short mutex (the selectors keep state: random streams, round-robin
// positions, cached tables); an agent's weights arrive through an atomic
// pointer, so the agent never holds the lock.
type pool struct {
	backends []*backend
	weights  []float64 // configured

	mu      sync.Mutex
	view    lb.View
	sel     lb.Selector
	fb      lb.Feedback     // the selector, if it learns from responses (peak-ewma)
	prober  lb.Prober       // the selector, if it probes (prequal)
	lf      lb.LoadFeedback // the selector, if it reads piggybacked load (c3)
	targets []int           // scratch: one decision's probes
	probes  chan int32      // probes for the workers (nil: no probing)
	applied *[]float64

	// Admission (admission.go): the caps, and the requests waiting for a
	// backend, oldest first.
	adm        lb.Admission
	hashing    bool // the selector routes on a key: full backends stay up (see choose)
	head, tail *waiter
	pending    int

	learned atomic.Pointer[[]float64] // the agent's newest weights, nil before its first decision
}

func newPool(backends []*backend, weights []float64, sel lb.Selector, adm lb.Admission, hashing bool) *pool {
	n := len(backends)
	p := &pool{backends: backends, weights: weights, sel: sel, adm: adm.WithDefaults(), hashing: hashing}
	p.fb, _ = sel.(lb.Feedback)
	p.lf, _ = sel.(lb.LoadFeedback)
	if p.prober, _ = sel.(lb.Prober); p.prober != nil {
		p.probes = make(chan int32, 1024)
	}
	p.view = lb.View{InFlight: make([]int32, n), Weights: append([]float64(nil), weights...), Up: make([]bool, n)}
	for _, b := range backends {
		p.view.Names = append(p.view.Names, b.addr) // host:port, as Envoy hashes an address
	}
	return p
}

// setLearned publishes new weights for the selector (copied).
func (p *pool) setLearned(w []float64) {
	c := append([]float64(nil), w...)
	p.learned.Store(&c)
}

// pick selects a backend for a new request at now (unix ns) with affinity
// key key (hashing policies), skipping those marked in skip (may be nil),
// and counts it in flight. It returns -1 if no backend is left, or busy if
// every one left is at its admission cap; then, if w is not nil and the
// queue has room, w waits in it (queued) for a backend that release hands
// over. With no healthy backend it picks among all not skipped (like
// Envoy's panic mode: an outage of the health signal must not become an
// outage of the service).
func (p *pool) pick(now int64, key uint64, skip []bool, w *waiter) (j int, queued bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	j = p.choose(now, key, skip)
	if j == busy && w != nil && p.pending < p.adm.MaxPending {
		p.enqueue(w, key)
		return j, true
	}
	return j, false
}

// busy is pick's answer when every backend left is full.
const busy = -2

// choose is pick under p.mu. A backend at its cap is not up for the
// selector, so every selector picks only among backends with room.
func (p *pool) choose(now int64, key uint64, skip []bool) int {
	v := &p.view
	if w := p.learned.Load(); w != nil && w != p.applied {
		copy(v.Weights, *w)
		p.applied = w
		v.Version++
	}
	limit := int32(p.adm.MaxRequests)
	if p.hashing {
		// A hashing selector keeps its table while backends fill and free
		// (a full backend marked down would rebuild it per request), and
		// a request whose backend is full waits for that backend, as
		// under HAProxy's hash balancing with maxconn (its server queue):
		// the affinity holds.
		limit = math.MaxInt32
	}
	anyUp, anyOpen := p.markUp(now, skip, limit, false)
	if !anyUp {
		anyUp, anyOpen = p.markUp(now, skip, limit, true)
	}
	if !anyOpen {
		if anyUp {
			return busy
		}
		return -1
	}
	j := p.sel.Select(v, lb.Request{Now: time.Duration(now), Key: key})
	if j >= 0 && v.InFlight[j] >= int32(p.adm.MaxRequests) {
		return busy // hashing: its backend is full
	}
	if j >= 0 {
		v.InFlight[j]++
		if p.fb != nil {
			p.fb.Sent(time.Duration(now), j)
		}
		if p.prober != nil {
			p.targets = p.prober.ProbeTargets(time.Duration(now), v, p.targets[:0])
			for _, t := range p.targets {
				select {
				case p.probes <- int32(t):
				default:
					p.backends[t].metrics.probeDropped.Inc()
				}
			}
		}
	}
	return j
}

// probed hands backend j's answer to a probe, arriving at now, to the
// selector.
func (p *pool) probed(j int, now time.Time, l lb.Load) {
	p.mu.Lock()
	p.prober.Probed(time.Duration(now.UnixNano()), j, l)
	p.mu.Unlock()
}

// reported hands the load backend j piggybacked on a response to the
// selector, if it reads it.
func (p *pool) reported(j int, now time.Time, l lb.Load) {
	p.mu.Lock()
	p.lf.Reported(time.Duration(now.UnixNano()), j, l)
	p.mu.Unlock()
}

func (p *pool) setUp(j int, up bool) {
	if p.view.Up[j] != up {
		p.view.Up[j] = up
		p.view.Version++
	}
}

// markUp sets up in the view the backends that may take a request: not
// skipped, healthy unless anyHealth (panic mode), and with fewer than limit
// in flight. It reports whether any is a candidate (anyUp) and whether any
// has room (anyOpen).
func (p *pool) markUp(now int64, skip []bool, limit int32, anyHealth bool) (anyUp, anyOpen bool) {
	for j, b := range p.backends {
		up := (anyHealth || b.healthy(now)) && (skip == nil || !skip[j])
		open := up && p.view.InFlight[j] < limit
		anyUp, anyOpen = anyUp || up, anyOpen || open
		p.setUp(j, open)
	}
	return anyUp, anyOpen
}

// release marks a request to backend j finished at now, after took
// until its response (or until it was given up); the slot it frees goes
// to the oldest waiting request, if any.
func (p *pool) release(j int, now time.Time, took time.Duration) {
	p.mu.Lock()
	p.view.InFlight[j]--
	if p.fb != nil {
		p.fb.Done(time.Duration(now.UnixNano()), j, took, took)
	}
	if p.head != nil {
		p.handOff(now.UnixNano())
	}
	p.mu.Unlock()
}

// busy reports whether any request is in flight.
func (p *pool) busy() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, q := range p.view.InFlight {
		if q > 0 {
			return true
		}
	}
	return false
}

// backendState is one backend's state for the status page and metrics.
type backendState struct {
	URL          string    `json:"url"`
	Configured   float64   `json:"configured_weight"`
	Weight       float64   `json:"weight"`
	Healthy      bool      `json:"healthy"`
	CheckDown    bool      `json:"check_down,omitempty"`
	EjectedUntil time.Time `json:"ejected_until,omitzero"`
	InFlight     int32     `json:"in_flight"`
}

// state reads every backend's state at now.
func (p *pool) state(now time.Time) []backendState {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.view.Weights
	if l := p.learned.Load(); l != nil {
		w = *l
	}
	out := make([]backendState, len(p.backends))
	for j, b := range p.backends {
		s := backendState{URL: b.name, Configured: p.weights[j], Weight: w[j], Healthy: b.healthy(now.UnixNano()),
			CheckDown: b.checkDown.Load(), InFlight: p.view.InFlight[j]}
		if u := b.ejectedUntil.Load(); u > now.UnixNano() {
			s.EjectedUntil = time.Unix(0, u)
		}
		out[j] = s
	}
	return out
}
