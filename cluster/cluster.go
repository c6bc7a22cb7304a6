// Package cluster is the simulated system: locations with round-trip times,
// nodes, services with call graphs, instances served by processor sharing of
// their CPU limit with alternating CPU and I/O phases, memory and OOM kills,
// concurrency limits with queues or 429s, cold starts, client timeouts,
// per-call timeouts and retries, brownout of optional services, open-loop
// sources and closed-loop users, and load-balancing points that pick
// instances with a control/lb Selector.
//
// It implements the telemetry and actuation contract (metrics.Snapshot,
// control.Action), so controllers drive it exactly as they drive a real
// system. The usage loop:
//
//	cl, err := cluster.New(&cfg, cluster.Options{Seed: 1, Selectors: lb.Classical(), Policy: "lsq"})
//	for t := period; t <= horizon; t += period {
//		cl.RunUntil(t)
//		cl.Observe(&snap)
//		for _, a := range ctl.Decide(t, &snap) { cl.Apply(t, a) }
//	}
//	cl.Drain(limit)
//	res := cl.Results()
//
// Parts of the model a scenario does not use cost nothing: no memory
// check without a memory limit, no queue without a concurrency limit,
// no events for zero round-trip times, no child calls without stages.
//
// Semantics worth knowing:
//
//   - A call's response time at its caller is its own phases, then its
//     stages in order; a stage costs the slowest of its parallel calls. A
//     call across locations adds their RTT, half on the way there and half
//     on the way back (exactly, to the nanosecond).
//   - A failed required call fails its caller, which answers after the
//     current stage without making later stages (fail fast); the failure
//     climbs to the request. An optional call's failure, and anything that
//     fails below it, only degrades its caller. Brownout of an optional
//     service skips every call to it (drawing the skipped call's random
//     numbers all the same) and degrades the callers; a request that
//     completes degraded counts as degraded, not failed.
//   - A call follows its service's route (Istio's timeout and retries): the
//     caller gives up on an attempt after the per-try timeout, which counts
//     a Timeout at the service, and the attempt's work goes on in the
//     background and is discarded; the LB point counts it done at once.
//     Failed and given-up attempts of the kinds in retry_on are sent again
//     after Envoy's jittered back-off (its own "retries" random stream), to
//     a fresh pick, with the same demand and call tree; the route timeout
//     bounds all attempts. A request whose root call fails this way ends
//     then, while its abandoned work goes on.
//   - An OOM kill fails every call admitted or queued at the instance at
//     once, including calls waiting for their children (whose work goes on
//     in the background and is discarded); the instance is down in every LB
//     view until it restarts. Calls that reach a starting, restarting or
//     removed instance fail as NoCapacity.
//   - A client timeout counts a Timeout failure when it fires; the request's
//     work goes on, it stays in the system for Little's law, and its latency
//     is not recorded.
//   - An LB point counts a call in flight from its pick until the response is
//     back at the caller; removed instances' slots are reused with fresh
//     counts. A draining instance goes when it holds no admitted, queued or
//     in-transit call.
//   - An explicit LB point with admission (LBPoint.Admission) counts a call
//     against its backend's cap from its pick until the response is back
//     (or its caller gives up), as it counts calls in flight. A call's wait
//     in its queue counts in the caller's response time, not in the LB
//     point's own response times of the backend (its feedback, LBStats)
//     nor in the service's, which start when it sends the call on, as the
//     proxy measures them. A shed call reaches no instance: the service
//     and the LB point count it (Failures.Shed, LBStats.Shed), not its
//     backends.
//   - Every call with stages has its own random stream, seeded from its
//     parent's (its source's for a root); leaf calls draw their demand from
//     their creator's stream. So the same seed gives every policy the same
//     arrivals, demands and call trees (common random numbers), and
//     observing a run does not change it.
//   - Closed-loop users each have their own stream for their think times
//     and their requests, so a user's j-th request is the same for every
//     policy; when it is sent depends on the response times. A user waits
//     for its request's outcome, or its class's timeout, then thinks.
package cluster

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/sim"
	"github.com/shoal-project/shoal/workload"
)

// Options are the run-time choices that are not part of the system itself.
type Options struct {
	// Seed is the root seed of every random stream of the run.
	Seed uint64
	// Selectors builds selectors by name.
	Selectors lb.Registry
	// Policy is the selector of every explicit LB point (default "rr").
	Policy string
	// Params are Policy's parameters, over the configuration's
	// selector_params of that name (a policy name's settings:
	// prequal:qrif=0.9).
	Params lb.Params
	// Traces resolves trace names and paths of arrival processes.
	Traces *workload.Traces
	// Rates, when set, overrides each source's mean arrival rate (req/s), in
	// source order; 0 keeps a source's own rate.
	Rates []float64
	// Horizon is when arrivals stop (required).
	Horizon time.Duration
	// Warmup excludes requests that arrive earlier from the results.
	Warmup time.Duration
	// SamplePeriod is the period of the load time series (default 1s).
	SamplePeriod time.Duration
	// Series names the service whose instances' load is sampled over time
	// and whose fairness is reported (default: the first LB's service, else
	// the first class's root service).
	Series string
	// Unobserved says the run never calls Observe (selectors compared, no
	// controller): the telemetry that only a snapshot carries is then not
	// kept (the classes' and LB points' counters, the latency histograms,
	// the routes' calls, the CFS periods), and Observe panics. Results are
	// those of the same run built to be observed and left unobserved.
	Unobserved bool
}

// Cluster is one simulated system. It is not safe for concurrent use.
type Cluster struct {
	selectorParams map[string]lb.Params // by policy name
	k              sim.Kernel
	opt            Options
	rtt            [][]time.Duration
	locNames       []string
	services       []*service
	svcByName      map[string]*service
	lbs            []*lbPoint // explicit LB points, in config order
	lbByName       map[string]*lbPoint
	classes        []*class
	sources        []*source
	nodes          []*node
	prices         Prices
	slo            time.Duration
	requests       requestTotals // every request, warm-up included, for the time series
	scaling        []ScaleEvent
	// Placed services' route groups by name; the call-graph edges' route
	// telemetry; each location's background load; the route picks' stream.
	groups     map[string]*routeGroup
	edges      []edge
	edgeByKey  map[string]int32
	background []float64
	routeRng   *rand.Rand
	telemetry  telemetry
	changeEvs  []changeEvent

	free     []*call
	freeReqs []*request
	retryRng *rand.Rand // the jitter of retry back-offs
	nextID   uint64
	inSystem countIntegral // requests in progress (arrived, response not back)
	res      Results
	sampler  sampler
	series   *service
	lastObs  time.Duration
	sampleEv sim.Event
	warmEv   sim.Event
	// liveStarts is the sum of the arrival times (s) of requests in progress.
	liveStarts float64
	// hashing says some LB point routes on requests' affinity keys: only
	// then do open-loop sources draw them.
	hashing bool
	// onStart, when set (tests only), sees every call once its demand is drawn.
	onStart func(c *call)
	// onFinish, when set (tests only), sees every request as it ends.
	onFinish func(r *request, fail uint8, degraded bool)
}

type class struct {
	name     string
	timeout  time.Duration
	slo      time.Duration
	root     *callNode
	latency  metrics.Histogram
	failures metrics.Failures
	arrivals int64              // counted requests (after the warm-up)
	slow     int64              // of them, completed later than the SLO
	degraded int64              // of them, completed without some optional call
	slowDeg  int64              // of them, both slow and degraded
	period   metrics.ClassStats // telemetry of the current period
}

type callNode struct {
	svc      *service    // the service called (of a placed one: its first location's part)
	lb       *lbPoint    // the explicit LB point it goes through (nil: the service's implicit one)
	group    *routeGroup // a placed service's route group, which picks the part
	edge     int32       // the call-graph edge's index in Cluster.edges
	route    route       // the service's, or the call's own
	cpu, io  workload.Dist
	phases   int32
	prob     float64
	optional bool
	stages   []stageNode
}

type stageNode struct {
	choice  bool
	probSum float64
	calls   []*callNode
}

type node struct {
	name        string
	loc         int32
	cpu, memory float64 // capacity
	usedCPU     float64
	usedMemory  float64
}

// source is an open-loop arrival stream, or closed-loop users.
type source struct {
	cl       *Cluster
	name     string
	class    *class
	lb       *lbPoint // nil: the implicit LB point of the class's root service
	loc      int32
	proc     workload.Process
	arrRng   *rand.Rand
	reqRng   *rand.Rand
	keyRng   *rand.Rand // sessions: its own stream, so keys change no other draw
	idx      int
	sessions int
	ev       sim.Event
	arrived  int64

	// Closed loop: the users, the classes of a visit, the think time, the
	// number of users over time (nil: all of them) and now.
	users  []*user
	visit  []*class
	think  workload.Dist
	level  *workload.SeriesReplay
	step   int // the level's current bucket
	active int
}

// Handle implements sim.Handler: an arrival, or for closed-loop users a step
// of their number.
func (s *source) Handle(now time.Duration, _ int) {
	cl := s.cl
	if now >= cl.opt.Horizon {
		return
	}
	if s.users != nil {
		s.setLevel(now)
		return
	}
	s.arrived++
	if next, ok := s.proc.Next(now, s.arrRng); ok && next < cl.opt.Horizon {
		cl.k.Schedule(&s.ev, next)
	}
	var key uint64
	if cl.hashing { // keys are drawn from their own stream: skipping them changes no other draw
		var session uint64
		if s.sessions > 0 {
			session = uint64(s.keyRng.IntN(s.sessions))
		} else {
			session = s.keyRng.Uint64()
		}
		key = affinityKey(s.idx, session)
	}
	cl.arrive(s.class, s.entry(s.class), s.loc, s.reqRng, nil, key)
}

// affinityKey is the key of session of source i: the two mixed by
// SplitMix64's finalizer, so consecutive sessions spread over the hash space.
func affinityKey(i int, session uint64) uint64 {
	z := session + uint64(i+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// entry is the LB point requests of class c enter through.
func (s *source) entry(c *class) *lbPoint {
	if s.lb != nil {
		return s.lb
	}
	if g := c.root.group; g != nil {
		return g.pick(s.loc, s.cl.routeRng).lb
	}
	return c.root.svc.lb
}

// setLevel sets the number of users to the level series' current bucket:
// users it includes again start thinking; the others stop after their
// current request. It schedules the next bucket.
func (s *source) setLevel(now time.Duration) {
	s.active = min(int(math.Round(s.level.BucketRate(s.step))), len(s.users))
	for _, u := range s.users[:s.active] {
		if u.idle {
			u.idle = false
			u.done(now)
		}
	}
	s.step++
	if next := time.Duration(s.step) * s.level.Step(); next < s.cl.opt.Horizon {
		s.cl.k.Schedule(&s.ev, next)
	}
}

// user is one closed-loop user. Its own random stream gives its think times
// and its requests' demands, in a fixed order (think, request, think, ...),
// so its j-th request is the same for every policy.
type user struct {
	src  *source
	idx  int  // position among the source's users
	next int  // the visit's next class
	idle bool // beyond the number of users: waits to be included again
	pcg  rand.PCG
	rng  *rand.Rand
	ev   sim.Event
}

// done is the outcome of the user's request (or its timeout): it thinks.
func (u *user) done(now time.Duration) {
	z := time.Duration(math.Round(u.src.think.Sample(u.rng) * 1e9))
	if at := now + z; at < u.src.cl.opt.Horizon {
		u.src.cl.k.Schedule(&u.ev, at)
	}
}

// Handle implements sim.Handler: the think time is over.
func (u *user) Handle(now time.Duration, _ int) {
	s := u.src
	if u.idx >= s.active {
		u.idle = true
		return
	}
	c := s.visit[u.next]
	u.next = (u.next + 1) % len(s.visit)
	s.cl.arrive(c, s.entry(c), s.loc, u.rng, u, affinityKey(s.idx, uint64(u.idx)))
}

// Now is the current simulated time.
func (cl *Cluster) Now() time.Duration { return cl.k.Now() }

// Events is the number of simulation events fired so far.
func (cl *Cluster) Events() uint64 { return cl.k.Fired() }

// RunUntil advances the simulation to t.
func (cl *Cluster) RunUntil(t time.Duration) { cl.k.RunUntil(t) }

// InSystem is the number of requests in progress.
func (cl *Cluster) InSystem() int { return int(cl.inSystem.n) }

// Drain runs after the horizon until every request has finished or limit
// more time has passed, and closes the results. It reports whether every
// request finished.
func (cl *Cluster) Drain(limit time.Duration) bool {
	end := cl.k.Now() + limit
	for cl.inSystem.n > 0 {
		t, ok := cl.k.Peek()
		if !ok || t > end {
			break
		}
		cl.k.Step()
	}
	cl.sampler.flush(cl)
	return cl.inSystem.n == 0
}

// nodeFor finds room for an instance, first fit within its location.
func (cl *Cluster) nodeFor(loc int32, cpu, mem float64) (*node, bool) {
	if len(cl.nodes) == 0 {
		return nil, true
	}
	for _, n := range cl.nodes {
		if n.loc != loc || n.usedCPU+cpu > n.cpu+1e-9 {
			continue
		}
		if n.memory > 0 && n.usedMemory+mem > n.memory+1e-9 {
			continue
		}
		n.usedCPU += cpu
		n.usedMemory += mem
		return n, true
	}
	return nil, false
}

func (cl *Cluster) locIndex(name string) int32 {
	for i, n := range cl.locNames {
		if n == name {
			return int32(i)
		}
	}
	return -1
}

// SetFeedback attaches f to the explicit LB point called name: it then hears
// of every request the LB point sends and of every answer it gets back, as a
// learning agent in the data plane would (nil detaches). A selector that
// learns from responses itself keeps hearing them too.
func (cl *Cluster) SetFeedback(name string, f lb.Feedback) error {
	p, ok := cl.lbByName[name]
	if !ok {
		return fmt.Errorf("set feedback: unknown lb %q", name)
	}
	own, _ := p.sel.(lb.Feedback)
	switch {
	case f == nil:
		p.fb = own
	case own != nil:
		p.fb = lb.Tee{own, f}
	default:
		p.fb = f
	}
	return nil
}

// LBNames lists the explicit LB points in order.
func (cl *Cluster) LBNames() []string {
	names := make([]string, len(cl.lbs))
	for i, p := range cl.lbs {
		names[i] = p.name
	}
	return names
}

// SourceRate is the mean arrival rate of source i in req/s (0 for
// closed-loop users, whose rate depends on the response times).
func (cl *Cluster) SourceRate(i int) float64 {
	if p := cl.sources[i].proc; p != nil {
		return p.MeanRate()
	}
	return 0
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// countIntegral is a count over time and its integral, in count-nanoseconds
// (a cheaper metrics.TimeAverage for the per-request hot path).
type countIntegral struct {
	n        int64
	last     time.Duration
	integral float64 // count x ns
}

func (a *countIntegral) add(now time.Duration, dn int64) {
	a.integral += float64(a.n) * float64(now-a.last)
	a.last = now
	a.n += dn
}

// seconds is the integral up to now in count-seconds.
func (a *countIntegral) seconds(now time.Duration) float64 {
	return (a.integral + float64(a.n)*float64(now-a.last)) / 1e9
}

// secs converts a duration to seconds: one rounding, cheaper than
// Duration.Seconds on the hot path.
func secs(d time.Duration) float64 { return float64(d) / 1e9 }
