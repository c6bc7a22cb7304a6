package cluster

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/sim"
	"github.com/shoal-project/shoal/sim/ps"
)

// Event kinds of a call.
const (
	evArrive       = iota // the request reaches the instance (after half the RTT)
	evIODone              // a pure-delay I/O phase ends
	evRespond             // the response reaches the caller (after the other half of the RTT)
	evGiveUp              // the caller's per-try or route timeout (on tev)
	evRetry               // the back-off before a retry ends
	evHoldExpired         // the activator's timeout of a held call
	evQueueExpired        // the queue timeout of a call waiting at an LB point's admission
)

// Where a call is at its instance.
const (
	atNone = iota
	atQueue
	atCPU
	atIO
	atDelay
	atChildren
	atHold    // waiting at the service's activator, before any instance
	atLBQueue // waiting in its LB point's admission queue, before any instance
)

// failure kinds, in the order of metrics.Failures.
const (
	failNone = iota
	failTimeout
	failRejected
	failOOM
	failNoCapacity
	failShed // turned away by an LB point's admission (lb.Admission): a 503
)

// countFailure adds one failure of the given kind to f.
func countFailure(f *metrics.Failures, kind uint8) {
	switch kind {
	case failTimeout:
		f.Timeout++
	case failRejected:
		f.Rejected++
	case failOOM:
		f.OOM++
	case failNoCapacity:
		f.NoCapacity++
	case failShed:
		f.Shed++
	}
}

// request is one request of a class from its arrival to its outcome: the
// client's side, which outlives retried root attempts. Pooled.
type request struct {
	cl       *Cluster
	class    *class
	user     *user // the closed-loop user waiting for the outcome (nil: open loop)
	start    time.Duration
	startS   float64 // start in seconds, as liveStarts summed it
	counted  bool    // arrived after warm-up: counts in the results
	timedOut bool
	tev      sim.Event // the client's timeout
	// queued is its root attempt while that waits in an LB point's
	// admission queue, which the client's timeout takes it out of.
	queued *call
}

// Handle implements sim.Handler: the client's timeout.
func (r *request) Handle(now time.Duration, _ int) {
	r.timedOut = true
	r.class.period.Failures.Timeout++
	if r.counted {
		r.cl.res.Failures.Timeout++
		r.class.failures.Timeout++
	}
	if r.user != nil {
		r.user.done(now)
	}
	if c := r.queued; c != nil {
		r.cl.abandonQueued(c, r)
	}
}

func (cl *Cluster) newRequest() *request {
	if n := len(cl.freeReqs); n > 0 {
		r := cl.freeReqs[n-1]
		cl.freeReqs = cl.freeReqs[:n-1]
		return r
	}
	r := &request{cl: cl}
	r.tev.Handler = r
	return r
}

func (cl *Cluster) freeRequest(r *request) {
	*r = request{cl: cl, tev: sim.Event{Handler: r}}
	cl.freeReqs = append(cl.freeReqs, r)
}

// call is one attempt of a call to a service, pooled.
//
// Life of a call: start (demand sampled, LB point picks an instance, in-flight
// counted) → arrive at the instance after half the RTT (admit, queue or
// reject) → local phases → stages of child calls → respond (release the
// admission slot) → deliver to the caller after the other half of the RTT
// (the LB point counts the completion) → the parent continues, or the request
// ends; a failed attempt may be retried instead. A call whose instance is
// OOM-killed while it waits for children responds at once with the failure;
// its children finish in the background and are discarded (the call object
// lives on as a "zombie" until they are back). An attempt its caller gave up
// on (a per-try or route timeout) is abandoned: it loses its caller, and its
// work goes on and is discarded.
type call struct {
	cl     *Cluster
	id     uint64
	parent *call    // the call waiting for it (nil: a root or abandoned attempt)
	req    *request // the request of a root attempt (nil: not a root, or abandoned)
	node   *callNode

	inst *instance
	lbp  *lbPoint
	slot int32
	from int32 // caller's location
	at   uint8 // where it is at its instance
	fail uint8 // why it failed (failNone when it did not)

	held      bool          // holds an admission slot at inst
	degraded  bool          // an optional call below it was skipped or failed
	repliedAt time.Duration // when the instance answered (task duration ends)
	replied   bool          // responded: its caller no longer waits on its work
	delivered bool          // the response reached the caller; freed once no child is pending

	start    time.Duration // when the attempt was sent
	waited   time.Duration // of it, the wait in its LB point's admission queue
	deadline time.Duration // the route timeout of all attempts (0 = none)
	attempt  int32         // 0, then n for the n-th retry
	cpu, io  float64       // total demand of this call's local work
	phase    int32         // next phase: even = CPU, odd = I/O
	pending  int32         // outstanding child calls of the current stage
	stage    int32

	// What its instance knows of it, kept when an LB point reads load
	// (Service.loadReports): when it arrived and was admitted, the
	// requests in flight it found, and, for a probe, the load answered.
	key               uint64 // the request's affinity key
	arrived, admitted time.Duration
	rif               int32
	probe             bool
	load              lb.Load
	ps                ps.Job[*call] // its place in its instance's CPU or I/O
	aidx              int           // index in the instance's admitted list
	ev                sim.Event
	tev               sim.Event // the caller's per-try or route timeout

	// pcg is the own random stream of a call with stages: its demands, its
	// probabilistic and choice stages and its children's demands and seeds.
	// It is seeded (seed) from the creator's stream (the source's or user's
	// for a root, the parent's for a child) in a fixed order, so the whole
	// request is common random numbers across policies, whatever the
	// timing; a retry reseeds it and replays the same call tree. A leaf call
	// draws its demand from its creator's stream and needs no stream of its
	// own.
	pcg  rand.PCG
	seed [2]uint64
	rng  *rand.Rand // over pcg
}

func (cl *Cluster) newCall() *call {
	var c *call
	if n := len(cl.free); n > 0 {
		c = cl.free[n-1]
		cl.free = cl.free[:n-1]
	} else {
		c = &call{cl: cl}
		c.rng = rand.New(&c.pcg)
		c.ev.Handler = c
		c.tev.Handler = c
		c.tev.Arg = evGiveUp
	}
	cl.nextID++
	c.id = cl.nextID
	c.ps.Owner, c.ps.Seq = c, c.id
	c.aidx, c.slot = -1, -1
	c.start = cl.k.Now()
	return c
}

func (cl *Cluster) freeCall(c *call) {
	rng := c.rng
	*c = call{cl: cl, rng: rng}
	c.ev.Handler = c
	c.tev.Handler = c
	c.tev.Arg = evGiveUp
	cl.free = append(cl.free, c)
}

// Handle implements sim.Handler.
func (c *call) Handle(now time.Duration, arg int) {
	switch arg {
	case evArrive:
		in := c.inst
		in.transit--
		if c.probe {
			in.probed(c)
		} else {
			in.arrive(c)
		}
		in.maybeGone()
	case evIODone:
		c.at = atNone
		c.phase++
		c.inst.runPhase(c)
	case evRespond:
		if c.probe {
			c.cl.probeAnswered(c)
			return
		}
		c.cl.deliver(c)
	case evGiveUp:
		c.cl.giveUp(c)
	case evRetry:
		c.cl.resend(c)
	case evHoldExpired:
		c.cl.unhold(c)
		c.cl.refuse(c, failNoCapacity)
	case evQueueExpired:
		c.cl.dequeue(c)
		c.cl.shed(c)
	}
}

// arrive starts a request of class cls from a client at location from,
// through LB point p, with demands drawn from rng; u is the closed-loop
// user waiting for it, if any.
func (cl *Cluster) arrive(cls *class, p *lbPoint, from int32, rng *rand.Rand, u *user, key uint64) {
	now := cl.k.Now()
	r := cl.newRequest()
	r.class, r.user, r.start = cls, u, now
	r.counted = now >= cl.opt.Warmup
	if r.counted {
		cl.res.Arrivals++
		cls.arrivals++
	}
	if !cl.opt.Unobserved {
		cls.period.Arrivals++
	}
	cl.requests.arrivals++
	cl.res.ArrivedAll++
	cl.inSystem.add(now, 1)
	r.startS = secs(now)
	cl.liveStarts += r.startS
	if cls.timeout > 0 {
		cl.k.After(&r.tev, cls.timeout)
	}
	c := cl.newCall()
	c.req = r
	c.node = cls.root
	c.key = key
	cl.start(c, p, from, rng)
}

// call makes a downstream call of parent.
func (cl *Cluster) call(parent *call, n *callNode) {
	c := cl.newCall()
	c.parent = parent
	c.node = n
	c.key = parent.key
	p := n.lb
	if p == nil {
		svc := n.svc
		if n.group != nil {
			svc = n.group.pick(parent.inst.loc, cl.routeRng)
		}
		p = svc.lb
	}
	cl.start(c, p, parent.inst.loc, parent.rng)
}

// start sends the first attempt of call c from location from through LB
// point p. Its demand and, if it has stages, the seed of its own stream
// come from rng, its creator's stream (the source's or user's for a root
// call, the parent's for a child), at its creation.
func (cl *Cluster) start(c *call, p *lbPoint, from int32, rng *rand.Rand) {
	if len(c.node.stages) > 0 {
		c.seed = [2]uint64{rng.Uint64(), rng.Uint64()}
	}
	c.demand(rng)
	c.from = from
	c.lbp = p
	if t := c.node.route.timeout; t > 0 {
		c.deadline = cl.k.Now() + t
	}
	cl.send(c)
}

// demand seeds the own stream of a call with stages and samples the call's
// demand: from that stream, or from rng, its creator's, for a leaf.
func (c *call) demand(rng *rand.Rand) {
	n := c.node
	if len(n.stages) > 0 {
		c.pcg.Seed(c.seed[0], c.seed[1])
		rng = c.rng
	}
	if n.cpu != nil {
		c.cpu = n.cpu.Sample(rng)
	}
	if n.io != nil {
		c.io = n.io.Sample(rng)
	}
}

// skipDraws consumes from rng what a call to n would have drawn, so that a
// call skipped by brownout leaves its siblings' demands as they were.
func (n *callNode) skipDraws(rng *rand.Rand) {
	if len(n.stages) > 0 {
		rng.Uint64()
		rng.Uint64()
		return
	}
	if n.cpu != nil {
		n.cpu.Sample(rng)
	}
	if n.io != nil {
		n.io.Sample(rng)
	}
}

// send makes an attempt of call c: its LB point picks an instance, the
// caller's per-try or route timeout starts, and the call travels there.
func (cl *Cluster) send(c *call) {
	now := cl.k.Now()
	c.start = now
	if !cl.opt.Unobserved {
		cl.routeStats(c, c.lbp.svc.loc).Calls++
	}
	if cl.onStart != nil {
		cl.onStart(c)
	}
	cl.dispatch(c, true)
}

// dispatch sends attempt c to its LB point's pick, or holds it at the
// service's activator when no instance is ready, or fails it; at an LB
// point with admission whose ready backends are all full (under a hashing
// selector: whose pick is full), it queues or sheds it. fresh is false for
// a call leaving the activator or the LB point's queue, whose timeouts
// already run.
func (cl *Cluster) dispatch(c *call, fresh bool) {
	p := c.lbp
	if p.adm != nil && !p.adm.hashing && cl.queueOrShed(c, fresh) {
		return
	}
	j := p.sel.Select(&p.view, lb.Request{CPU: c.cpu, IO: c.io, Now: cl.k.Now(), Key: c.key})
	if j < 0 || j >= len(p.svc.slots) || p.svc.slots[j] == nil {
		if fresh && cl.hold(c) {
			return
		}
		p.svc.period.Failures.NoCapacity++
		c.fail = failNoCapacity
		cl.respond(c)
		return
	}
	if a := p.adm; a != nil && a.hashing && p.view.InFlight[j] >= a.max {
		cl.enqueue(c, fresh) // it waits for its backend (admission.go)
		return
	}
	cl.sendTo(c, j, fresh)
}

// sendTo sends attempt c to backend j of its LB point, which has room.
func (cl *Cluster) sendTo(c *call, j int, fresh bool) {
	now := cl.k.Now()
	p := c.lbp
	c.slot = int32(j)
	p.view.InFlight[j]++
	if p.adm != nil {
		p.refresh(j)
	}
	if !cl.opt.Unobserved {
		p.stats[j].Sent++
	}
	if p.fb != nil {
		p.fb.Sent(now, j)
	}
	if p.prober != nil {
		cl.sendProbes(p, c.from, now)
	}
	if fresh {
		cl.startTimeout(c)
	}
	inst := p.svc.slots[j]
	c.inst = inst
	if !cl.travel(c, inst, c.from) {
		inst.arrive(c)
	}
}

// travel sends call (or probe) c from location from towards instance in,
// to arrive after half the RTT; false if there is no RTT to travel.
func (cl *Cluster) travel(c *call, in *instance, from int32) bool {
	d := cl.rtt[from][in.loc]
	if d <= 0 {
		return false
	}
	in.transit++
	c.ev.Arg = evArrive
	cl.k.After(&c.ev, d/2)
	return true
}

// startTimeout starts the caller's per-try or route timeout of attempt c.
func (cl *Cluster) startTimeout(c *call) {
	if rt := &c.node.route; rt.perTry > 0 || c.deadline > 0 {
		at := c.deadline
		if rt.perTry > 0 && (at == 0 || cl.k.Now()+rt.perTry < at) {
			at = cl.k.Now() + rt.perTry
		}
		cl.k.Schedule(&c.tev, at)
	}
}

// hold queues attempt c at its service's activator, if the service has
// one with room and no ready instance (the activator is in the path only
// then: target burst capacity 0), and starts its timeouts.
func (cl *Cluster) hold(c *call) bool {
	s := c.lbp.svc
	a := s.activator
	if a == nil || len(a.held) >= a.capacity {
		return false
	}
	if _, ready := s.replicas(); ready > 0 {
		return false
	}
	c.at = atHold
	a.held = append(a.held, c)
	cl.startTimeout(c)
	c.ev.Arg = evHoldExpired
	cl.k.After(&c.ev, a.timeout)
	return true
}

// unhold takes c out of its service's activator.
func (cl *Cluster) unhold(c *call) {
	a := c.lbp.svc.activator
	if i := slices.Index(a.held, c); i >= 0 {
		a.held = slices.Delete(a.held, i, i+1)
	}
	cl.k.Cancel(&c.ev)
	c.at = atNone
}

// releaseHeld sends the calls held at s's activator, first come first, now
// that an instance is ready.
func (cl *Cluster) releaseHeld(s *service) {
	held := s.activator.held
	s.activator.held = nil
	for _, c := range held {
		cl.k.Cancel(&c.ev)
		c.at = atNone
		cl.dispatch(c, false)
	}
}

// giveUp is the caller's per-try or route timeout of attempt c: the LB point
// lets go of it, the service counts a Timeout, and the caller retries or
// takes the failure. The attempt is abandoned: its work goes on and is
// discarded.
func (cl *Cluster) giveUp(c *call) {
	c.lbp.svc.period.Failures.Timeout++
	if cl.routed() {
		cl.routeStats(c, c.lbp.svc.loc).Failures++
	}
	cl.lbDone(c)
	waiting := c.at == atHold || c.at == atLBQueue
	switch c.at {
	case atHold:
		cl.unhold(c)
	case atLBQueue:
		cl.dequeue(c)
	}
	p, r := c.parent, c.req
	c.parent, c.req = nil, nil
	if !cl.retry(c, p, r, failTimeout) {
		cl.settle(p, r, c.node, failTimeout, false)
	}
	if waiting { // nothing else holds it: it ends here
		cl.release(c)
	}
}

// retry sends call c again, to its caller p (or request r), if its route
// allows: retries left, kind in retry_on, the route timeout not passed, and
// the caller still waiting. The new attempt has the same demand and call
// tree and goes to a fresh pick of the LB point after Envoy's back-off.
func (cl *Cluster) retry(c, p *call, r *request, kind uint8) bool {
	rt := &c.node.route
	now := cl.k.Now()
	if int(c.attempt) >= rt.retries || rt.retryOn&(1<<kind) == 0 || (p != nil && p.replied) ||
		(c.deadline > 0 && now >= c.deadline) {
		return false
	}
	n := cl.newCall()
	n.parent, n.req, n.node, n.lbp, n.from = p, r, c.node, c.lbp, c.from
	n.attempt, n.deadline, n.seed = c.attempt+1, c.deadline, c.seed
	if len(n.node.stages) > 0 {
		n.demand(nil)
	} else {
		n.cpu, n.io = c.cpu, c.io
	}
	c.lbp.svc.period.Retries++
	at := now + backoff(n.attempt, cl.retryRng)
	if n.deadline > 0 && at > n.deadline {
		at = n.deadline
	}
	n.ev.Arg = evRetry
	cl.k.Schedule(&n.ev, at)
	return true
}

// Envoy's retry back-off (envoy/source/common/common/backoff_strategy.cc,
// JitteredExponentialBackOffStrategy, with the router's defaults): retry n
// waits a uniform random whole number of milliseconds below (2^n - 1) x
// 25 ms, at most 250 ms (ten times the base); the factor stops growing
// once it passes the maximum. The router doc's "the first retry will be
// delayed randomly between 0-24ms, the 2nd between 0-74ms, the 3rd between
// 0-174ms".
const (
	backoffBaseMs = 25
	backoffMaxMs  = 10 * backoffBaseMs
)

func backoff(n int32, rng *rand.Rand) time.Duration {
	span := uint64(backoffBaseMs)
	for k := int32(1); k < n && span <= backoffMaxMs; k++ {
		span = 2*span + backoffBaseMs // (2^(k+1) - 1) x base
	}
	return time.Duration(min(rng.Uint64N(span), backoffMaxMs)) * time.Millisecond
}

// resend sends retry c after its back-off, or fails it with a timeout when
// the route timeout ran out meanwhile or its caller is gone (OOM-killed).
func (cl *Cluster) resend(c *call) {
	expired := c.deadline > 0 && cl.k.Now() >= c.deadline
	if expired || (c.parent != nil && c.parent.replied) {
		if expired {
			c.lbp.svc.period.Failures.Timeout++
		}
		c.fail = failTimeout
		cl.respond(c)
		return
	}
	cl.send(c)
}

// refuse ends a call at its instance without serving it.
func (cl *Cluster) refuse(c *call, kind uint8) {
	c.fail = kind
	countFailure(&c.lbp.svc.period.Failures, kind)
	cl.respond(c)
}

// respond finishes call c at its instance (successfully or not) and sends the
// response back to the caller.
func (cl *Cluster) respond(c *call) {
	c.replied = true
	c.repliedAt = cl.k.Now()
	c.at = atNone
	in := c.inst
	if in == nil { // no instance was picked
		cl.deliver(c)
		return
	}
	if c.held {
		in.leave(c)
	}
	if !cl.travelBack(c, in) {
		cl.deliver(c)
	}
}

// travelBack sends the answer to c from instance in back to its caller,
// to arrive after the other half of the RTT; false if there is none.
func (cl *Cluster) travelBack(c *call, in *instance) bool {
	d := cl.rtt[in.loc][c.from]
	if d <= 0 {
		return false
	}
	c.ev.Arg = evRespond
	cl.k.After(&c.ev, d-d/2)
	return true
}

// deliver hands the response of c to its caller: the LB point counts it, and
// the caller retries, or takes the outcome.
func (cl *Cluster) deliver(c *call) {
	cl.k.Cancel(&c.tev)
	cl.lbDone(c)
	cl.routeDone(c)
	p, r := c.parent, c.req
	c.parent, c.req = nil, nil
	waited := p != nil || r != nil // not abandoned
	if waited && c.fail != failNone && cl.retry(c, p, r, c.fail) {
		waited = false
	}
	fail, degraded, n := c.fail, c.degraded, c.node
	cl.release(c)
	if waited {
		cl.settle(p, r, n, fail, degraded)
	}
}

// lbDone tells the LB point of attempt c that it is over: its response is
// back, or the caller gave up on it.
func (cl *Cluster) lbDone(c *call) {
	p := c.lbp
	if p == nil || c.slot < 0 {
		return
	}
	// A slot reused by a new instance belongs to it: stale responses of the
	// old one do not touch its counts.
	if p.svc.slots[c.slot] == c.inst {
		now := cl.k.Now()
		sent := c.start + c.waited // the LB point's part starts when it sends the call on
		p.view.InFlight[c.slot]--
		if !cl.opt.Unobserved {
			st := &p.stats[c.slot]
			st.Completions++
			if c.replied && c.fail == failNone {
				st.Latency.Add(secs(now - sent))
			}
		}
		if p.lf != nil && c.replied && c.fail == failNone {
			p.lf.Reported(now, int(c.slot), c.load)
		}
		if p.fb != nil {
			task := now - sent // given up: no answer yet
			if c.replied {
				task = c.repliedAt - sent
			}
			p.fb.Done(now, int(c.slot), task, now-sent)
		}
		if p.adm != nil {
			p.refresh(int(c.slot))
			c.slot = -1
			cl.admitWaiting(p)
		}
	}
	c.slot = -1
}

// settle hands the outcome of a call to node n to its caller: the parent
// continues with its stages, or the request r ends. A failed optional call,
// or a degraded one, degrades the parent; a failed required call fails it.
func (cl *Cluster) settle(p *call, r *request, n *callNode, fail uint8, degraded bool) {
	if r != nil {
		cl.finishRequest(r, fail, degraded)
		return
	}
	if p.replied { // p was killed and answered already: discard
		p.pending--
		if p.pending == 0 && p.delivered {
			cl.freeCall(p)
		}
		return
	}
	switch {
	case fail == failNone:
		p.degraded = p.degraded || degraded
	case n.optional:
		p.degraded = true
	case p.fail == failNone:
		p.fail = fail
	}
	p.pending--
	if p.pending == 0 {
		p.stage++
		p.inst.nextStage(p)
	}
}

// release frees a delivered call, or keeps it until its children are back.
func (cl *Cluster) release(c *call) {
	c.delivered = true
	if c.pending == 0 {
		cl.freeCall(c)
	}
}

// finishRequest records the outcome of request r, whose response reached
// the client (or whose root call failed for good).
func (cl *Cluster) finishRequest(r *request, fail uint8, degraded bool) {
	now := cl.k.Now()
	cl.k.Cancel(&r.tev)
	cl.inSystem.add(now, -1)
	cl.liveStarts -= r.startS
	lat := secs(now - r.start)
	cl.res.sojourn += lat
	cl.res.finished++
	ok := fail == failNone && !r.timedOut
	if ok && now >= cl.opt.Warmup && now <= cl.opt.Horizon {
		cl.res.doneInWindow++
	}
	cls := r.class
	cl.requests.record(ok, lat, cls.slo)
	switch observed := !cl.opt.Unobserved; {
	case r.timedOut: // counted when the client gave up
	case fail != failNone:
		if observed {
			countFailure(&cls.period.Failures, fail)
		}
		if r.counted {
			countFailure(&cl.res.Failures, fail)
			countFailure(&cls.failures, fail)
		}
	default:
		if observed {
			per := &cls.period
			per.Completions++
			per.Latency.Add(lat)
			per.LatencyHist.Record(lat)
			if degraded {
				per.Degraded++
			}
		}
		if r.counted {
			cls.latency.Record(lat) // merged into Results.Latency by Drain
			cl.res.Completed++
			if degraded {
				cls.degraded++
				cl.res.Degraded++
			}
			if cls.slo > 0 && now-r.start > cls.slo {
				cls.slow++
				if degraded {
					cls.slowDeg++
				}
			}
		}
	}
	if r.user != nil && !r.timedOut {
		r.user.done(now)
	}
	if cl.onFinish != nil {
		cl.onFinish(r, fail, degraded)
	}
	cl.freeRequest(r)
}
