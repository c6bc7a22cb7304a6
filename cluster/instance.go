package cluster

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/sim"
	"github.com/shoal-project/shoal/sim/ps"
)

// Instance lifecycle states.
const (
	stPending     = iota // waiting for room on a node
	stStarting           // cold start
	stReady              // serving
	stTerminating        // draining before removal
	stRestarting         // after an OOM kill
	stGone
)

// Event kinds of an instance.
const (
	evCPU = iota
	evIO
	evReady
)

// instance is one running copy of a service.
type instance struct {
	svc   *service
	id    int
	name  string // service-id: what hashing selectors hash
	slot  int
	loc   int32
	node  *node
	state int

	cpuLimit, speed, ioSpeed, weight float64
	cpu, io                          ps.Scheduled[*call]
	ioDelay                          bool // I/O is a pure delay (no contention)

	admitted int     // calls holding a concurrency slot
	queue    []*call // FIFO of calls waiting for a slot, from qhead on
	qhead    int
	calls    []*call // admitted calls (for OOM kills)
	transit  int     // calls on their way to it (across an RTT)
	remCPU   float64 // CPU work of admitted calls not yet done (work units)

	latency lb.LatencyByRIF // recent latencies by RIF, when an LB point reads load

	readyEv  sim.Event
	busyAt   float64  // cpu.busy at the last sample
	busyObs  float64  // cpu.busy at the last Observe
	cfsObs   [2]int64 // the CPU's CFS periods and throttled periods at the last Observe
	busyWarm float64  // cpu.busy at the end of the warm-up
}

func (in *instance) k() *sim.Kernel { return &in.svc.cl.k }

// Handle implements sim.Handler.
func (in *instance) Handle(now time.Duration, arg int) {
	switch arg {
	case evCPU:
		for c, ok := in.cpu.PopDone(now); ok; c, ok = in.cpu.PopDone(now) {
			if c.probe {
				in.answerProbe(c)
				continue
			}
			in.remCPU -= c.ps.Work()
			c.at = atNone
			c.phase++
			in.runPhase(c)
		}
		in.cpu.Reschedule(in.k())
	case evIO:
		for c, ok := in.io.PopDone(now); ok; c, ok = in.io.PopDone(now) {
			c.at = atNone
			c.phase++
			in.runPhase(c)
		}
		in.io.Reschedule(in.k())
	case evReady:
		in.svc.setState(in, stReady)
	}
}

// arrive takes a call that reached the instance: admit, queue or reject.
func (in *instance) arrive(c *call) {
	s := in.svc
	s.period.Arrivals++
	if s.loadReports {
		c.arrived, c.rif = s.cl.k.Now(), in.rifNow()
	}
	if in.state != stReady && in.state != stTerminating {
		s.cl.refuse(c, failNoCapacity) // starting, restarting or gone: connection refused
		return
	}
	if lim := s.concurrency; lim > 0 && in.admitted >= lim {
		if s.queueLimit < 0 || in.queued() < s.queueLimit {
			c.at = atQueue
			if in.qhead > 0 && in.qhead >= len(in.queue)/2 { // compact the FIFO
				n := copy(in.queue, in.queue[in.qhead:])
				clear(in.queue[n:])
				in.queue, in.qhead = in.queue[:n], 0
			}
			in.queue = append(in.queue, c)
			return
		}
		s.cl.refuse(c, failRejected)
		return
	}
	in.admit(c)
}

func (in *instance) queued() int { return len(in.queue) - in.qhead }

func (in *instance) admit(c *call) {
	s := in.svc
	in.admitted++
	in.remCPU += c.cpu
	c.admitted = s.cl.k.Now()
	c.at = atNone
	c.held = true
	c.aidx = len(in.calls)
	in.calls = append(in.calls, c)
	if s.memLimit > 0 && in.memory() > s.memLimit {
		in.oomKill()
		return
	}
	in.runPhase(c)
}

func (in *instance) memory() float64 {
	return in.svc.memBase + in.svc.memPerCall*float64(in.admitted)
}

// runPhase starts the next non-empty phase of c's local work, or its stages.
func (in *instance) runPhase(c *call) {
	phases := c.node.phases
	for c.phase < 2*phases {
		if c.phase%2 == 0 {
			w := c.cpu
			if phases > 1 {
				w /= float64(phases)
			}
			if w > 0 {
				c.at = atCPU
				in.cpu.Admit(in.k(), &c.ps, w)
				return
			}
		} else if t := c.io / float64(phases); t > 0 {
			if in.ioDelay {
				c.at = atDelay
				c.ev.Arg = evIODone
				in.k().After(&c.ev, time.Duration(math.Ceil(t/in.ioSpeed*1e9)))
			} else {
				c.at = atIO
				in.io.Admit(in.k(), &c.ps, t)
			}
			return
		}
		c.phase++
	}
	in.nextStage(c)
}

// nextStage makes the downstream calls of c's current stage, or responds
// when no stage is left. A failed required call fails c: it responds after
// the stage without making the later ones (fail fast). A call to a
// browned-out service is skipped, which degrades c.
func (in *instance) nextStage(c *call) {
	cl := in.svc.cl
	stages := c.node.stages
	for c.fail == failNone && int(c.stage) < len(stages) {
		st := &stages[c.stage]
		rng := c.rng
		c.at = atChildren
		c.pending = 1 // a guard: children that fail at once must not advance the stage
		if st.choice {
			x := rng.Float64() * st.probSum
			for i, n := range st.calls {
				if x -= n.prob; x < 0 || i == len(st.calls)-1 {
					if n.svc.brownout {
						skip(c, n, rng)
					} else {
						c.pending++
						cl.call(c, n)
					}
					break
				}
			}
		} else {
			for _, n := range st.calls {
				if n.prob < 1 && rng.Float64() >= n.prob {
					continue
				}
				if n.svc.brownout {
					skip(c, n, rng)
				} else {
					c.pending++
					cl.call(c, n)
				}
			}
		}
		c.pending--
		if c.pending > 0 {
			return
		}
		c.at = atNone
		c.stage++
	}
	cl.respond(c)
}

// skip skips c's call to n, whose service is browned out: c is degraded.
func skip(c *call, n *callNode, rng *rand.Rand) {
	n.svc.period.Skipped++
	c.degraded = true
	n.skipDraws(rng)
}

// leave releases the admission slot of a call that is done at this instance.
func (in *instance) leave(c *call) {
	s := in.svc
	c.held = false
	in.admitted--
	last := len(in.calls) - 1
	in.calls[c.aidx] = in.calls[last]
	in.calls[c.aidx].aidx = c.aidx
	in.calls[last] = nil
	in.calls = in.calls[:last]
	c.aidx = -1
	s.period.Completions++
	if c.fail == failNone && (c.parent != nil || c.req != nil) { // answered, to a caller still waiting
		// From when its LB point sent it on (after any admission queue).
		lat := secs(s.cl.k.Now() - c.start - c.waited)
		s.period.Latency.Add(lat) // also the load series'
		if !s.cl.opt.Unobserved {
			s.period.LatencyHist.Record(lat)
		}
		if c.degraded {
			s.period.Degraded++
		}
	}
	in.admitQueued()
	if s.loadReports && c.fail == failNone {
		now := s.cl.k.Now()
		in.latency.Record(c.rif, now-c.arrived)
		c.load = lb.Load{RIF: in.rifNow(), Service: now - c.admitted}
	}
	in.maybeGone()
}

// maybeGone removes a draining instance once nothing is left on it or on
// its way to it.
func (in *instance) maybeGone() {
	if in.state == stTerminating && in.admitted == 0 && in.queued() == 0 && in.transit == 0 {
		in.svc.setState(in, stGone)
	}
}

// admitQueued admits waiting calls while there are free slots.
func (in *instance) admitQueued() {
	s := in.svc
	for in.queued() > 0 && (s.concurrency == 0 || in.admitted < s.concurrency) &&
		(in.state == stReady || in.state == stTerminating) {
		n := in.queue[in.qhead]
		in.queue[in.qhead] = nil
		in.qhead++
		in.admit(n)
	}
	if in.qhead > 0 && in.qhead == len(in.queue) {
		in.queue, in.qhead = in.queue[:0], 0
	}
}

// oomKill fails every call at the instance, admitted or queued, and restarts
// it after the service's OOM restart delay (a draining instance is removed
// instead). Calls waiting for their children answer at once; the children
// finish in the background.
func (in *instance) oomKill() {
	s := in.svc
	cl := s.cl
	k := in.k()
	calls := make([]*call, 0, len(in.calls)+in.queued())
	calls = append(calls, in.calls...)
	nAdmitted := len(calls)
	calls = append(calls, in.queue[in.qhead:]...)
	clear(in.calls)
	in.calls = in.calls[:0]
	clear(in.queue)
	in.queue, in.qhead = in.queue[:0], 0
	in.admitted = 0
	in.remCPU = 0
	draining := in.state == stTerminating
	s.setState(in, stRestarting)
	cl.res.OOMKills++
	for i, c := range calls {
		if i < nAdmitted {
			switch c.at {
			case atCPU:
				in.cpu.Evict(k, &c.ps)
			case atIO:
				in.io.Evict(k, &c.ps)
			case atDelay:
				k.Cancel(&c.ev)
			}
			c.held = false
			c.aidx = -1
		}
		cl.refuse(c, failOOM)
	}
	if draining {
		s.setState(in, stGone)
	}
}

// remainingTime is how long the instance needs to finish the CPU work of its
// admitted calls at its true speed if nothing else arrived (the l_j of the
// Distr-LB paper, Def. 1), in seconds.
func (in *instance) remainingTime() float64 {
	// Work of jobs in service is Σ(tag - v); admitted work not in service is
	// remCPU minus the phase work of those in service.
	rem := in.remCPU - in.cpu.SumWork() + in.cpu.Remaining(in.k().Now())
	if rem < 0 {
		rem = 0
	}
	capacity := in.cpuLimit * in.speed
	if capacity <= 0 {
		return math.Inf(1)
	}
	return rem / capacity
}

// estimateCompletion predicts when a new call with the given CPU work and I/O
// time would finish here under processor sharing if nothing else arrived:
// each job in service shares the CPU with it until the smaller of the two is
// done, and the CPU serves cpuLimit jobs at full speed at once.
func (in *instance) estimateCompletion(cpu, io float64) float64 {
	now := in.k().Now()
	t := math.Max(cpu, in.cpu.Shared(now, cpu)/in.cpuLimit) / in.speed
	if io > 0 {
		if in.ioDelay {
			t += io / in.ioSpeed
		} else {
			t += math.Max(io, in.io.Shared(now, io)/in.io.Servers()) / in.ioSpeed
		}
	}
	// Queued calls ahead of it delay it by their work too.
	for _, q := range in.queue[in.qhead:] {
		t += q.cpu / (in.cpuLimit * in.speed)
	}
	return t
}

// cpuSpeed is the speed the instance's CPU works at: its own, less the
// share other tenants take of its location's CPU.
func (in *instance) cpuSpeed() float64 {
	return in.speed * (1 - in.svc.cl.background[in.loc])
}
