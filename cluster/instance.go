package cluster

import (
	"math"
	"time"

	"github.com/shoal-project/shoal/sim"
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
	slot  int
	loc   int32
	node  *node
	state int

	cpuLimit, speed, ioSpeed, weight float64
	cpu, io                          psQueue
	ioDelay                          bool // I/O is a pure delay (no contention)

	admitted int     // calls holding a concurrency slot
	queue    []*call // FIFO of calls waiting for a slot
	qhead    int
	calls    []*call // admitted calls, tracked only when memory is limited
	remCPU   float64 // CPU work of admitted calls not yet done (work units)

	readyEv  sim.Event
	busyAt   float64 // cpu.busy at the last sample
	busyObs  float64 // cpu.busy at the last Observe
	busyWarm float64 // cpu.busy at the end of the warm-up
}

func (in *instance) k() *sim.Kernel { return &in.svc.cl.k }

// Handle implements sim.Handler.
func (in *instance) Handle(now time.Duration, arg int) {
	switch arg {
	case evCPU:
		for c := in.cpu.popDone(now); c != nil; c = in.cpu.popDone(now) {
			in.remCPU -= c.work
			c.at = atNone
			c.phase++
			in.runPhase(c)
		}
		in.cpu.reschedule(in.k())
	case evIO:
		for c := in.io.popDone(now); c != nil; c = in.io.popDone(now) {
			c.at = atNone
			c.phase++
			in.runPhase(c)
		}
		in.io.reschedule(in.k())
	case evReady:
		in.svc.setState(in, stReady)
	}
}

// arrive takes a call that reached the instance: admit, queue or reject.
func (in *instance) arrive(c *call) {
	s := in.svc
	s.period.Arrivals++
	if in.state != stReady && in.state != stTerminating {
		s.cl.failCall(c, failNoCapacity)
		return
	}
	if lim := s.concurrency; lim > 0 && in.admitted >= lim {
		if s.queueLimit < 0 || in.queued() < s.queueLimit {
			c.at = atQueue
			in.queue = append(in.queue, c)
			return
		}
		s.cl.failCall(c, failRejected)
		return
	}
	in.admit(c)
}

func (in *instance) queued() int { return len(in.queue) - in.qhead }

func (in *instance) admit(c *call) {
	s := in.svc
	in.admitted++
	in.remCPU += c.cpu
	c.at = atNone
	if s.memLimit > 0 {
		c.aidx = len(in.calls)
		in.calls = append(in.calls, c)
		if in.memory() > s.memLimit {
			in.oomKill()
			return
		}
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
			if w := c.cpu / float64(phases); w > 0 {
				c.at = atCPU
				in.cpu.add(in.k(), c, w)
				return
			}
		} else if t := c.io / float64(phases); t > 0 {
			if in.ioDelay {
				c.at = atDelay
				c.ev.Arg = evIODone
				in.k().After(&c.ev, time.Duration(math.Ceil(t/in.ioSpeed*1e9)))
			} else {
				c.at = atIO
				in.io.add(in.k(), c, t)
			}
			return
		}
		c.phase++
	}
	in.nextStage(c)
}

// nextStage makes the downstream calls of c's current stage, or responds
// when no stage is left.
func (in *instance) nextStage(c *call) {
	cl := in.svc.cl
	stages := c.node.stages
	for int(c.stage) < len(stages) {
		st := &stages[c.stage]
		rng := c.root.rng
		c.at = atChildren
		c.pending = 1 // a guard: children that fail at once must not advance the stage
		if st.choice {
			x := rng.Float64() * st.probSum
			for i, n := range st.calls {
				if x -= n.prob; x < 0 || i == len(st.calls)-1 {
					if !(n.optional && in.svc.brownout) {
						c.pending++
						cl.call(c, n)
					}
					break
				}
			}
		} else {
			for _, n := range st.calls {
				if n.optional && in.svc.brownout {
					continue
				}
				if n.prob >= 1 || rng.Float64() < n.prob {
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

// leave releases the slot of a call that is done at this instance.
func (in *instance) leave(c *call) {
	s := in.svc
	if c.fail == failRejected || c.fail == failNoCapacity {
		return // never admitted
	}
	in.admitted--
	if s.memLimit > 0 && c.aidx >= 0 {
		last := len(in.calls) - 1
		in.calls[c.aidx] = in.calls[last]
		in.calls[c.aidx].aidx = c.aidx
		in.calls = in.calls[:last]
		c.aidx = -1
	}
	s.period.Completions++
	if c.fail == failNone {
		s.period.Latency.Add((s.cl.k.Now() - c.start).Seconds())
	}
	in.admitQueued()
	if in.state == stTerminating && in.admitted == 0 && in.queued() == 0 {
		s.setState(in, stGone)
	}
}

// admitQueued admits waiting calls while there are free slots.
func (in *instance) admitQueued() {
	s := in.svc
	for in.queued() > 0 && (s.concurrency == 0 || in.admitted < s.concurrency) && in.state != stRestarting {
		n := in.queue[in.qhead]
		in.queue[in.qhead] = nil
		in.qhead++
		in.admit(n)
	}
	if in.qhead > 0 && in.qhead == len(in.queue) {
		in.queue, in.qhead = in.queue[:0], 0
	}
}

// oomKill fails every call at the instance and restarts it.
func (in *instance) oomKill() {
	s := in.svc
	cl := s.cl
	k := in.k()
	calls := append([]*call(nil), in.calls...)
	queued := append([]*call(nil), in.queue[in.qhead:]...)
	in.calls = in.calls[:0]
	in.queue, in.qhead = in.queue[:0], 0
	in.admitted = 0
	in.remCPU = 0
	s.setState(in, stRestarting)
	for _, c := range calls {
		switch c.at {
		case atCPU:
			in.cpu.remove(k, c)
		case atIO:
			in.io.remove(k, c)
		case atDelay:
			k.Cancel(&c.ev)
		}
		c.aidx = -1
		c.fail = failOOM
		s.period.Failures.OOM++
		if c.at == atChildren { // respond when the children are back
			c.inst = nil
			in.releaseLB(c)
			continue
		}
		c.at = atNone
		in.releaseLB(c)
		c.inst = nil
		cl.deliver(c)
	}
	for _, c := range queued {
		c.fail = failOOM
		s.period.Failures.OOM++
		in.releaseLB(c)
		c.inst = nil
		cl.deliver(c)
	}
}

// releaseLB returns the LB point's in-flight count of a killed call.
func (in *instance) releaseLB(c *call) {
	if p := c.lbp; p != nil && c.slot >= 0 {
		p.view.InFlight[c.slot]--
		p.stats[c.slot].Completions++
		c.slot = -1
	}
}

// remainingTime is how long the instance needs to finish the CPU work of its
// admitted calls at its true speed if nothing else arrived (the l_j of the
// Distr-LB paper, Def. 1), in seconds.
func (in *instance) remainingTime() float64 {
	// Work of jobs in service is Σ(tag - v); admitted work not in service is
	// remCPU minus the phase work of those in service.
	rem := in.remCPU - in.cpu.sumWork + in.cpu.remaining()
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
	v := in.cpu.v + in.cpu.rate()*(in.k().Now()-in.cpu.last).Seconds()
	shared := cpu
	for _, j := range in.cpu.jobs {
		shared += math.Min(math.Max(j.tag-v, 0), cpu)
	}
	t := math.Max(cpu, shared/in.cpuLimit) / in.speed
	if io > 0 {
		if in.ioDelay {
			t += io / in.ioSpeed
		} else {
			ioShared := io
			vio := in.io.v + in.io.rate()*(in.k().Now()-in.io.last).Seconds()
			for _, j := range in.io.jobs {
				ioShared += math.Min(math.Max(j.tag-vio, 0), io)
			}
			t += math.Max(io, ioShared/in.io.servers) / in.ioSpeed
		}
	}
	// Queued calls ahead of it delay it by their work too.
	for _, q := range in.queue[in.qhead:] {
		t += q.cpu / (in.cpuLimit * in.speed)
	}
	return t
}
