package cluster

import (
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/sim"
)

// Event kinds of a call.
const (
	evArrive  = iota // the request reaches the instance (after half the RTT)
	evIODone         // a pure-delay I/O phase ends
	evRespond        // the response reaches the caller (after the other half of the RTT)
	evTimeout        // the client's timeout (root calls only)
)

// Where a call is at its instance.
const (
	atNone = iota
	atQueue
	atCPU
	atIO
	atDelay
	atChildren
)

// failure kinds, in the order of metrics.Failures.
const (
	failNone = iota
	failTimeout
	failRejected
	failOOM
	failNoCapacity
)

// call is one call to a service, pooled. The root call of a request also
// carries the request's state.
//
// Life of a call: start (demand sampled, LB point picks an instance, in-flight
// counted) → arrive at the instance after half the RTT (admit, queue or
// reject) → local phases → stages of child calls → respond (release the
// admission slot) → deliver to the caller after the other half of the RTT
// (the LB point counts the completion) → the parent continues, or the request
// ends. A call whose instance is OOM-killed while it waits for children
// responds at once with the failure; its children finish in the background
// and are discarded (the call object lives on as a "zombie" until they are
// back).
type call struct {
	cl     *Cluster
	id     uint64
	parent *call
	node   *callNode

	inst *instance
	lbp  *lbPoint
	slot int32
	from int32 // caller's location
	at   uint8 // where it is at its instance
	fail uint8 // why it failed (failNone when it did not)

	held      bool          // holds an admission slot at inst
	repliedAt time.Duration // when the instance answered (task duration ends)
	replied   bool          // responded: its caller no longer waits on its work
	delivered bool          // the response reached the caller; freed once no child is pending

	start     time.Duration // when the call was made
	cpu, io   float64       // total demand of this call's local work
	phase     int32         // next phase: even = CPU, odd = I/O
	pending   int32         // outstanding child calls of the current stage
	stage     int32
	tag, work float64 // processor-sharing finish tag and current phase work
	hidx      int     // index in a psQueue heap
	aidx      int     // index in the instance's admitted list
	ev        sim.Event

	// pcg is the own random stream of a call with stages: its demands, its
	// probabilistic and choice stages and its children's demands and seeds.
	// It is seeded from the creator's stream (the source's for a root, the
	// parent's for a child) in a fixed order, so the whole request is common
	// random numbers across policies, whatever the timing. A leaf call draws
	// its demand from its creator's stream and needs no stream of its own.
	pcg rand.PCG
	rng *rand.Rand // over pcg

	// root only
	class    *class
	counted  bool // arrived after warm-up: counts in the results
	timedOut bool
	tev      sim.Event
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
		c.tev.Arg = evTimeout
	}
	cl.nextID++
	c.id = cl.nextID
	c.hidx, c.aidx = -1, -1
	c.start = cl.k.Now()
	return c
}

func (cl *Cluster) freeCall(c *call) {
	rng := c.rng
	*c = call{cl: cl, rng: rng}
	c.ev.Handler = c
	c.tev.Handler = c
	c.tev.Arg = evTimeout
	cl.free = append(cl.free, c)
}

// Handle implements sim.Handler.
func (c *call) Handle(now time.Duration, arg int) {
	switch arg {
	case evArrive:
		in := c.inst
		in.transit--
		in.arrive(c)
		in.maybeGone()
	case evIODone:
		c.at = atNone
		c.phase++
		c.inst.runPhase(c)
	case evRespond:
		c.cl.deliver(c)
	case evTimeout:
		c.timedOut = true
		if c.counted {
			c.cl.res.Failures.Timeout++
			c.class.failures.Timeout++
		}
	}
}

// call makes a downstream call of parent.
func (cl *Cluster) call(parent *call, n *callNode) {
	c := cl.newCall()
	c.parent = parent
	c.node = n
	cl.start(c, n.svc.lb, parent.inst.loc, parent.rng)
}

// start sends call c from location from through LB point p. Its demand and,
// if it has stages, the seed of its own stream come from rng, its creator's
// stream (the source's for a root call, the parent's for a child), at its
// creation; a leaf call needs no stream of its own.
func (cl *Cluster) start(c *call, p *lbPoint, from int32, rng *rand.Rand) {
	n := c.node
	if len(n.stages) > 0 {
		c.pcg.Seed(rng.Uint64(), rng.Uint64())
		rng = c.rng
	}
	if n.cpu != nil {
		c.cpu = n.cpu.Sample(rng)
	}
	if n.io != nil {
		c.io = n.io.Sample(rng)
	}
	c.from = from
	c.lbp = p
	if cl.onStart != nil {
		cl.onStart(c)
	}
	j := p.sel.Select(&p.view, lb.Request{CPU: c.cpu, IO: c.io})
	if j < 0 || j >= len(p.svc.slots) || p.svc.slots[j] == nil {
		c.slot = -1
		p.svc.period.Failures.NoCapacity++
		c.fail = failNoCapacity
		cl.respond(c)
		return
	}
	c.slot = int32(j)
	p.view.InFlight[j]++
	p.stats[j].Sent++
	if p.fb != nil {
		p.fb.Sent(cl.k.Now(), j)
	}
	inst := p.svc.slots[j]
	c.inst = inst
	if d := cl.rtt[from][inst.loc]; d > 0 {
		inst.transit++
		c.ev.Arg = evArrive
		cl.k.After(&c.ev, d/2)
		return
	}
	inst.arrive(c)
}

// refuse ends a call at its instance without serving it.
func (cl *Cluster) refuse(c *call, kind uint8) {
	c.fail = kind
	f := &c.lbp.svc.period.Failures
	switch kind {
	case failRejected:
		f.Rejected++
	case failOOM:
		f.OOM++
	case failNoCapacity:
		f.NoCapacity++
	}
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
	if d := cl.rtt[in.loc][c.from]; d > 0 {
		c.ev.Arg = evRespond
		cl.k.After(&c.ev, d-d/2)
		return
	}
	cl.deliver(c)
}

// deliver hands the response of c to its caller: the LB point counts it, and
// the parent continues, or the request ends.
func (cl *Cluster) deliver(c *call) {
	if p := c.lbp; p != nil && c.slot >= 0 {
		// A slot reused by a new instance belongs to it: stale responses of
		// the old one do not touch its counts.
		if p.svc.slots[c.slot] == c.inst {
			p.view.InFlight[c.slot]--
			st := &p.stats[c.slot]
			st.Completions++
			if c.fail == failNone {
				st.Latency.Add(secs(cl.k.Now() - c.start))
			}
			if p.fb != nil {
				now := cl.k.Now()
				p.fb.Done(now, int(c.slot), c.repliedAt-c.start, now-c.start)
			}
		}
		c.slot = -1
	}
	p := c.parent
	if p == nil {
		cl.finishRequest(c)
		return
	}
	c.parent = nil
	if c.fail != failNone && !c.node.optional && p.fail == failNone && !p.replied {
		p.fail = c.fail
	}
	cl.release(c)
	if p.replied { // p was killed and answered already: discard
		p.pending--
		if p.pending == 0 && p.delivered {
			cl.freeCall(p)
		}
		return
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

// finishRequest records a request whose response reached the client.
func (cl *Cluster) finishRequest(c *call) {
	now := cl.k.Now()
	cl.k.Cancel(&c.tev)
	cl.inSystem.add(now, -1)
	cl.liveStarts -= secs(c.start)
	cl.res.sojourn += secs(now - c.start)
	cl.res.finished++
	ok := c.fail == failNone && !c.timedOut
	if ok && now >= cl.opt.Warmup && now <= cl.opt.Horizon {
		cl.res.doneInWindow++
	}
	cl.requests.record(ok, secs(now-c.start), c.class.slo)
	if c.counted {
		cls := c.class
		switch {
		case c.timedOut: // counted when the client gave up
		case c.fail != failNone:
			var f metrics.Failures
			switch c.fail {
			case failRejected:
				f.Rejected = 1
			case failOOM:
				f.OOM = 1
			case failNoCapacity:
				f.NoCapacity = 1
			}
			cl.res.Failures.Add(f)
			cls.failures.Add(f)
		default:
			cls.latency.Record(secs(now - c.start)) // merged into Results.Latency by Drain
			cl.res.Completed++
			if cls.slo > 0 && now-c.start > cls.slo {
				cls.slow++
			}
		}
	}
	if cl.onFinish != nil {
		cl.onFinish(c)
	}
	cl.release(c)
}
