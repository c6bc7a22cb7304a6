// Package cluster is the simulated system: locations with round-trip times,
// nodes, services with call graphs, instances served by processor sharing of
// their CPU limit with alternating CPU and I/O phases, memory and OOM kills,
// concurrency limits with queues or 429s, cold starts, client timeouts, and
// load-balancing points that pick instances with a control/lb Selector.
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
//     climbs to the request. An optional call's failure is ignored, and so
//     is anything that fails below it. Brownout of a service cuts its
//     optional calls.
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
//   - Every call with stages has its own random stream, seeded from its
//     parent's (its source's for a root); leaf calls draw their demand from
//     their creator's stream. So the same seed gives every policy the same
//     arrivals, demands and call trees (common random numbers), and
//     observing a run does not change it.
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
}

// Cluster is one simulated system. It is not safe for concurrent use.
type Cluster struct {
	k         sim.Kernel
	opt       Options
	rtt       [][]time.Duration
	locNames  []string
	services  []*service
	svcByName map[string]*service
	lbs       []*lbPoint // explicit LB points, in config order
	lbByName  map[string]*lbPoint
	classes   []*class
	sources   []*source
	nodes     []*node
	prices    Prices
	slo       time.Duration
	requests  requestTotals // every request, warm-up included, for the time series
	scaling   []ScaleEvent

	free     []*call
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
	// onStart, when set (tests only), sees every call once its demand is drawn.
	onStart func(c *call)
	// onFinish, when set (tests only), sees every request as it ends.
	onFinish func(c *call)
}

type class struct {
	name     string
	timeout  time.Duration
	slo      time.Duration
	root     *callNode
	latency  metrics.Histogram
	failures metrics.Failures
	arrivals int64 // counted requests (after the warm-up)
	slow     int64 // of them, completed later than the SLO
}

type callNode struct {
	svc      *service
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

// source is an open-loop arrival stream.
type source struct {
	cl      *Cluster
	name    string
	class   *class
	lb      *lbPoint
	loc     int32
	proc    workload.Process
	arrRng  *rand.Rand
	reqRng  *rand.Rand
	ev      sim.Event
	arrived int64
}

// Handle implements sim.Handler: one arrival.
func (s *source) Handle(now time.Duration, _ int) {
	cl := s.cl
	if now >= cl.opt.Horizon {
		return
	}
	s.arrived++
	c := cl.newCall()
	c.class = s.class
	c.node = s.class.root
	c.counted = now >= cl.opt.Warmup
	if c.counted {
		cl.res.Arrivals++
		s.class.arrivals++
	}
	cl.requests.arrivals++
	cl.res.ArrivedAll++
	cl.inSystem.add(now, 1)
	cl.liveStarts += secs(now)
	if s.class.timeout > 0 {
		cl.k.After(&c.tev, s.class.timeout)
	}
	if next, ok := s.proc.Next(now, s.arrRng); ok && next < cl.opt.Horizon {
		cl.k.Schedule(&s.ev, next)
	}
	cl.start(c, s.lb, s.loc, s.reqRng)
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
// learning agent in the data plane would (nil detaches).
func (cl *Cluster) SetFeedback(name string, f lb.Feedback) error {
	p, ok := cl.lbByName[name]
	if !ok {
		return fmt.Errorf("set feedback: unknown lb %q", name)
	}
	p.fb = f
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

// SourceRate is the mean arrival rate of source i in req/s.
func (cl *Cluster) SourceRate(i int) float64 { return cl.sources[i].proc.MeanRate() }

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
