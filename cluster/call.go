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
	evRespond        // the response reaches the caller (after half the RTT)
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
type call struct {
	cl     *Cluster
	id     uint64
	root   *call
	parent *call
	node   *callNode

	inst *instance
	lbp  *lbPoint
	slot int32
	from int32 // caller's location
	at   uint8 // where it is at its instance
	fail uint8 // why it failed (failNone when it did not)

	start     time.Duration // when the call was made
	cpu, io   float64       // total demand of this call's local work
	phase     int32         // next phase: even = CPU, odd = I/O
	pending   int32         // outstanding child calls of the current stage
	stage     int32
	tag, work float64 // processor-sharing finish tag and current phase work
	hidx      int
	aidx      int // index in the instance's admitted list (memory-limited services)
	ev        sim.Event

	// root only
	class    *class
	counted  bool // arrived after warm-up: counts in the results
	timedOut bool
	tev      sim.Event
	pcg      rand.PCG
	rng      *rand.Rand // over pcg: the request's own randomness (common random numbers)
}

func (cl *Cluster) newCall(root *call) *call {
	var c *call
	if n := len(cl.free); n > 0 {
		c = cl.free[n-1]
		cl.free = cl.free[:n-1]
	} else {
		c = &call{cl: cl}
		c.ev.Handler = c
		c.tev.Handler = c
		c.tev.Arg = evTimeout
		c.rng = rand.New(&c.pcg)
	}
	cl.nextID++
	c.id = cl.nextID
	if root == nil {
		root = c
	}
	c.root = root
	c.hidx, c.aidx = -1, -1
	c.start = cl.k.Now()
	return c
}

func (cl *Cluster) freeCall(c *call) {
	rng, pcg := c.rng, c.pcg
	*c = call{cl: cl, rng: rng, pcg: pcg}
	c.ev.Handler = c
	c.tev.Handler = c
	c.tev.Arg = evTimeout
	cl.free = append(cl.free, c)
}

// Handle implements sim.Handler.
func (c *call) Handle(now time.Duration, arg int) {
	switch arg {
	case evArrive:
		c.inst.arrive(c)
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

// start sends call c from location from through LB point p.
func (cl *Cluster) start(c *call, p *lbPoint, from int32) {
	n := c.node
	rng := c.root.rng
	if n.cpu != nil {
		c.cpu = n.cpu.Sample(rng)
	}
	if n.io != nil {
		c.io = n.io.Sample(rng)
	}
	c.from = from
	c.lbp = p
	j := p.sel.Select(&p.view, lb.Request{CPU: c.cpu, IO: c.io})
	if j < 0 {
		c.slot = -1
		cl.failCall(c, failNoCapacity)
		return
	}
	c.slot = int32(j)
	p.view.InFlight[j]++
	p.stats[j].Sent++
	inst := p.svc.slots[j]
	c.inst = inst
	if d := cl.rtt[from][inst.loc]; d > 0 {
		c.ev.Arg = evArrive
		cl.k.After(&c.ev, d/2)
		return
	}
	inst.arrive(c)
}

// respond finishes call c at its instance (successfully or not) and sends the
// response back to the caller.
func (cl *Cluster) respond(c *call) {
	if c.inst != nil {
		c.inst.leave(c)
	}
	if p := c.lbp; p != nil && c.slot >= 0 {
		p.view.InFlight[c.slot]--
		st := &p.stats[c.slot]
		st.Completions++
		if c.fail == failNone {
			st.Latency.Add((cl.k.Now() - c.start).Seconds())
		}
	}
	if c.inst != nil {
		if d := cl.rtt[c.inst.loc][c.from]; d > 0 {
			c.ev.Arg = evRespond
			cl.k.After(&c.ev, d/2)
			return
		}
	}
	cl.deliver(c)
}

// failCall ends a call that was not served (or was killed) with a failure.
func (cl *Cluster) failCall(c *call, kind uint8) {
	c.fail = kind
	if kind != failNoCapacity && c.inst != nil {
		s := &c.inst.svc.period.Failures
		switch kind {
		case failRejected:
			s.Rejected++
		case failOOM:
			s.OOM++
		}
	} else if c.lbp != nil {
		c.lbp.svc.period.Failures.NoCapacity++
	}
	cl.respond(c)
}

// deliver hands the response of c to its parent, or ends the request.
func (cl *Cluster) deliver(c *call) {
	p := c.parent
	if p == nil {
		cl.finishRequest(c)
		return
	}
	if c.fail != failNone && !c.node.optional && c.root.fail == failNone {
		c.root.fail = c.fail
	}
	cl.freeCall(c)
	p.pending--
	if p.pending == 0 {
		if p.inst == nil { // its instance was OOM-killed while it waited
			cl.respond(p)
			return
		}
		p.stage++
		p.inst.nextStage(p)
	}
}

// finishRequest records a request whose call tree has completed.
func (cl *Cluster) finishRequest(c *call) {
	now := cl.k.Now()
	cl.k.Cancel(&c.tev)
	cl.inSystem.Add(now, -1)
	cl.liveStarts -= c.start.Seconds()
	cl.res.sojourn += (now - c.start).Seconds()
	cl.res.finished++
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
			d := (now - c.start).Seconds()
			cl.res.Latency.Record(d)
			cls.latency.Record(d)
			cl.res.Completed++
		}
	}
	cl.freeCall(c)
}
