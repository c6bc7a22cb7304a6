package lb

import (
	"math"
	"math/rand/v2"
	"time"
)

// C3 is the adaptive replica selection of Suresh, Canini, Schmid and
// Feldmann, "C3: Cutting Tail Latency in Cloud Data Stores via Adaptive
// Replica Selection" (NSDI 2015): replica ranking by a cubic score
// (section 4.1) and per-server distributed rate control (section 4.2). It
// implements Selector, Feedback (this client's requests and their response
// times) and LoadFeedback (the queue size and service time each server
// piggybacks on its responses).
//
// Sources. The paper's text could not be read where this was written: the
// score is the paper's equation as quoted in this port's specification,
//
//	Ψ_s = R̄_s − 1/μ̄_s + q̂_s³/μ̄_s,  q̂_s = 1 + os_s·n + q̄_s,
//
// with os_s this client's outstanding requests to s, n the number of
// clients, and R̄_s, q̄_s and 1/μ̄_s exponentially weighted moving averages
// of the response time, queue size and service time. Everything else —
// the EWMA weight, the rate controller, its constants and initial values —
// follows the authors' simulator, absim (github.com/lalithsuresh/absim,
// simulations/client.py: Client.updateEma, computeExpectedDelay,
// updateRates, RateLimiter, ReceiveRate, BackpressureScheduler; defaults
// from simulations/experiment.py), cross-checked with the authors'
// Cassandra implementation (github.com/lalithsuresh/cassandra-c3,
// src/java/org/apache/cassandra/c3/{ScoreTracker,RateController}.java).
//
// Replica ranking. Each server's EWMAs take a new sample with weight Alpha
// (0.9 in absim and cassandra-c3) and start at the first sample (absim;
// cassandra-c3 starts them at 0). q̄ and 1/μ̄ are updated by Reported, from
// Load.RIF (the server's requests in flight after the answered one left,
// what cassandra-c3's ReadVerbHandler reports; absim reports only the
// waiting ones, len(waitQ)) and Load.Service; R̄ and os by Sent and Done,
// whose duration (to the response headers) is the response time. absim
// computes nw + θ³·serviceTime, nw being the EWMA of response − service
// time and θ = q̂: the text's R̄ − 1/μ̄ is the same number when every
// response updates both EWMAs, since EWMAs of one weight are linear; this
// follows the text, so a response that arrives without a Reported load
// updates R̄ alone. A server with no sample yet scores 0, the lowest
// possible score (absim's computeExpectedDelay), so new servers are tried
// first. Among equal scores the first in a random rotation of the backends
// wins: absim sorts a replica group that starts at a uniformly random
// server with Python's stable sort. Without a Rand ties go to the lowest
// index.
//
// Rate control (absim's updateRates, run on every response). Each server
// has a sending rate srate, in requests per RateInterval δ, enforced by a
// token bucket (absim's RateLimiter: tokens accrue at srate per δ up to
// MaxTokens; a request takes one), and a receive rate rrate, the responses
// counted per δ slot and smoothed with weight 0.9 (absim's ReceiveRate,
// ported with its quirks: the response that opens a slot is counted with
// the slot it closes; empty slots are not counted as zeros; and after a
// gap of int(δ in ms) slots or more — absim compares the gap in slots with
// its rateInterval in ms, 10 at the default — the rate becomes the count
// not yet folded in and the response at hand is dropped). On a response
// from s:
//
//   - if srate < rrate, the rate grows along a cubic of the time T since
//     the last decrease, srate = C·(T − ∛(β·R0/C))³ + R0 with R0 the rate
//     before that decrease, by at most Smax per response (T in
//     milliseconds, as in absim and cassandra-c3);
//   - else if srate > rrate and no increase happened in the last
//     Hysteresis·δ, R0 = srate and srate = max(β·srate, 0.0001).
//
// Deviation: no backlog. A C3 client holds a request in a backlog queue
// while every server's rate limiter is empty, and sends it to the best
// ranked server whose limiter frees first (absim's BackpressureScheduler;
// cassandra-c3's ReplicaGroupActor). Select must return a backend now, so
// when every up server is rate-limited it returns the best-ranked one
// anyway and counts it in Overrides; the request still takes a token,
// which may leave the bucket negative, as absim's forced sends (shadow
// reads, RateLimiter.forceUpdates) do. Otherwise the choice is the paper's:
// the best-ranked server whose limiter has a token. A real C3 client would
// have delayed the overridden requests instead.
//
// Other choices: the bucket starts full (cassandra-c3; absim starts it
// empty, which only the backlog makes harmless), and the rate controller's
// clocks (the last increase and decrease, the first receive slot) start
// when C3 first sees the server, where absim's start at simulation time 0.
// A request the data plane gave up on, reported through Done without a
// load, counts as a response at that time.
type C3 struct {
	Rand *rand.Rand
	// Clients is n, the number of clients (LB points) sharing the servers
	// (default 1; absim's NUMBER_OF_CLIENTS, where cassandra-c3 uses the
	// number of servers it tracks); the data plane sets it.
	Clients int
	// Alpha is the weight of a new sample in the score's EWMAs (default 0.9).
	Alpha float64
	// RateInterval is δ, the period of the sending and receive rates
	// (default 10 ms, absim's rateInterval; cassandra-c3 uses 20 ms).
	RateInterval time.Duration
	// CubicC is the cubic's C, in requests per δ per ms³ (default 4e-6),
	// CubicBeta the multiplicative decrease β (default 0.2) and CubicSmax
	// the largest increase per response (default 10 requests per δ).
	CubicC, CubicBeta, CubicSmax float64
	// Hysteresis: a decrease waits this many δ after an increase
	// (default 2, absim's hysterisisFactor; cassandra-c3 uses 4).
	Hysteresis float64
	// MaxTokens is the token bucket's capacity (default 50, absim's; the
	// cassandra-c3 configuration has 400).
	MaxTokens float64
	// NoRateControl ranks only (absim without --backpressure).
	NoRateControl bool

	// Overrides counts the requests sent to a rate-limited server because
	// every up server was rate-limited (see the deviation above).
	Overrides uint64

	srv []c3Server
}

// SetClients implements Shared; a configured Clients stays.
func (s *C3) SetClients(n int) {
	if s.Clients == 0 {
		s.Clients = n
	}
}

// Initial values of a server's rate controller (absim's client.py).
const (
	c3InitialRate        = 5      // RateLimiter.rate
	c3InitialR0          = 10     // valueOfLastDecrease
	c3InitialReceiveRate = 10     // ReceiveRate.rate
	c3ReceiveAlpha       = 0.9    // ReceiveRate.add
	c3MinRate            = 0.0001 // updateRates' floor
)

// c3Server is what a C3 client knows of one server.
type c3Server struct {
	// The score: os and the EWMAs (seconds; requests for the queue).
	outstanding            int32
	resp, service, queue   float64
	haveResp, haveReported bool

	// Rate control: srate (requests per δ), its token bucket and the
	// cubic's state.
	rate, tokens float64
	lastSent     time.Duration
	lastIncrease time.Duration
	lastDecrease time.Duration
	r0           float64

	// The receive rate (absim's ReceiveRate).
	rrate  float64
	rcount float64
	rslot  int64

	// Select's scratch.
	score   float64
	allowed bool
}

func (s *C3) defaults() {
	if s.Clients <= 0 {
		s.Clients = 1
	}
	if s.Alpha <= 0 || s.Alpha > 1 {
		s.Alpha = 0.9
	}
	if s.RateInterval <= 0 {
		s.RateInterval = 10 * time.Millisecond
	}
	if s.CubicC <= 0 {
		s.CubicC = 0.000004
	}
	if s.CubicBeta <= 0 {
		s.CubicBeta = 0.2
	}
	if s.CubicSmax <= 0 {
		s.CubicSmax = 10
	}
	if s.Hysteresis <= 0 {
		s.Hysteresis = 2
	}
	if s.MaxTokens <= 0 {
		s.MaxTokens = 50
	}
}

// grow makes room for n servers, the new ones first seen at now.
func (s *C3) grow(n int, now time.Duration) {
	if len(s.srv) >= n {
		return
	}
	s.defaults()
	for len(s.srv) < n {
		s.srv = append(s.srv, c3Server{
			rate: c3InitialRate, tokens: s.MaxTokens, lastSent: now,
			lastIncrease: now, lastDecrease: now, r0: c3InitialR0,
			rrate: c3InitialReceiveRate, rslot: int64(now / s.RateInterval),
		})
	}
}

// Score is Ψ_j, server j's rank (lower is better): 0 before any sample.
func (s *C3) Score(j int) float64 {
	if j >= len(s.srv) {
		return 0
	}
	x := &s.srv[j]
	if !x.haveResp && !x.haveReported {
		return 0
	}
	q := 1 + float64(x.outstanding)*float64(max(s.Clients, 1)) + x.queue
	return x.resp - x.service + q*q*q*x.service
}

// Rate is server j's sending rate, in requests per RateInterval.
func (s *C3) Rate(j int) float64 {
	if j >= len(s.srv) {
		return 0
	}
	return s.srv[j].rate
}

// Tokens is what server j's token bucket holds at now; below 1 the
// server is rate-limited.
func (s *C3) Tokens(now time.Duration, j int) float64 {
	if j >= len(s.srv) {
		return 0
	}
	return s.tokensAt(&s.srv[j], now)
}

// tokensAt is absim's RateLimiter.getTokens.
func (s *C3) tokensAt(x *c3Server, now time.Duration) float64 {
	t := x.tokens
	if now > x.lastSent {
		t += x.rate * float64(now-x.lastSent) / float64(s.RateInterval)
	}
	return math.Min(s.MaxTokens, t)
}

// Select implements Selector: the best-ranked up server with a token, or,
// when every up server is rate-limited, the best-ranked one (an override).
func (s *C3) Select(v *View, r Request) int {
	n := v.Len()
	s.grow(n, r.Now)
	var best, bestAllowed float64
	nBest, nAllowed := 0, 0 // ties at the best score: overall, with a token
	for j := range n {
		if !v.Up[j] {
			continue
		}
		x := &s.srv[j]
		x.score = s.Score(j)
		x.allowed = s.NoRateControl || s.tokensAt(x, r.Now) >= 1
		switch {
		case nBest == 0 || x.score < best:
			best, nBest = x.score, 1
		case x.score == best:
			nBest++
		}
		if x.allowed {
			switch {
			case nAllowed == 0 || x.score < bestAllowed:
				bestAllowed, nAllowed = x.score, 1
			case x.score == bestAllowed:
				nAllowed++
			}
		}
	}
	switch {
	case nAllowed > 0:
		return s.pick(v, bestAllowed, nAllowed, true)
	case nBest > 0:
		s.Overrides++
		return s.pick(v, best, nBest, false)
	}
	return -1
}

// pick returns the first up server scoring score (with a token if
// allowed) in a random rotation of the backends, or the first by index
// when there is no tie or no Rand.
func (s *C3) pick(v *View, score float64, ties int, allowed bool) int {
	n := v.Len()
	start := 0
	if ties > 1 && s.Rand != nil {
		start = s.Rand.IntN(n)
	}
	for k := range n {
		j := start + k
		if j >= n {
			j -= n
		}
		if x := &s.srv[j]; v.Up[j] && x.score == score && (!allowed || x.allowed) {
			return j
		}
	}
	return -1
}

// Sent implements Feedback: os_j grows and the request takes a token.
func (s *C3) Sent(now time.Duration, j int) {
	if j < 0 {
		return
	}
	s.grow(j+1, now)
	x := &s.srv[j]
	x.outstanding++
	if !s.NoRateControl {
		x.tokens = s.tokensAt(x, now) - 1
		if now > x.lastSent {
			x.lastSent = now
		}
	}
}

// Reported implements LoadFeedback: the EWMAs of server j's queue size and
// service time.
func (s *C3) Reported(now time.Duration, j int, l Load) {
	if j < 0 {
		return
	}
	s.grow(j+1, now)
	x := &s.srv[j]
	q, st := float64(max(l.RIF, 0)), l.Service.Seconds()
	if x.haveReported {
		x.queue = s.Alpha*q + (1-s.Alpha)*x.queue
		x.service = s.Alpha*st + (1-s.Alpha)*x.service
	} else {
		x.queue, x.service, x.haveReported = q, st, true
	}
}

// Done implements Feedback: os_j shrinks, the response time enters R̄_j,
// the response is counted in the receive rate and the sending rate adapts.
func (s *C3) Done(now time.Duration, j int, duration, _ time.Duration) {
	if j < 0 {
		return
	}
	s.grow(j+1, now)
	x := &s.srv[j]
	if x.outstanding > 0 {
		x.outstanding--
	}
	if rt := duration.Seconds(); x.haveResp {
		x.resp = s.Alpha*rt + (1-s.Alpha)*x.resp
	} else {
		x.resp, x.haveResp = rt, true
	}
	if !s.NoRateControl {
		s.received(x, now, 1)
		s.updateRate(x, now)
	}
}

// received is absim's ReceiveRate.add: k responses at now.
func (s *C3) received(x *c3Server, now time.Duration, k float64) {
	slot := int64(now / s.RateInterval)
	if slot-x.rslot < int64(s.RateInterval/time.Millisecond) {
		x.rcount += k
		if slot > x.rslot {
			x.rrate = c3ReceiveAlpha*x.rcount + (1-c3ReceiveAlpha)*x.rrate
			x.rslot, x.rcount = slot, 0
		}
		return
	}
	x.rrate, x.rslot, x.rcount = x.rcount, slot, 0
}

// updateRate is absim's updateRates.
func (s *C3) updateRate(x *c3Server, now time.Duration) {
	s.received(x, now, 0) // ReceiveRate.getRate
	send, recv := x.rate, x.rrate
	switch {
	case send < recv:
		t := float64(now-x.lastDecrease) / float64(time.Millisecond)
		x.lastIncrease = now
		d := t - math.Cbrt(x.r0*s.CubicBeta/s.CubicC)
		if r := s.CubicC*d*d*d + x.r0; r-send > s.CubicSmax {
			x.rate = send + s.CubicSmax
		} else {
			x.rate = r
		}
	case send > recv && float64(now-x.lastIncrease) > s.Hysteresis*float64(s.RateInterval):
		x.r0 = send
		x.rate = math.Max(send*s.CubicBeta, c3MinRate)
		x.lastDecrease = now
	}
}
