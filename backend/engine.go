package backend

import (
	"math"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/sim/ps"
)

// Where a job is (cluster/call.go: the at* constants).
const (
	atNone  = iota
	atQueue // waiting for a concurrency slot
	atCPU   // in a CPU phase
	atIO    // in an I/O phase shared by processor sharing
	atDelay // in a pure-delay I/O phase
	atDone  // finished; the waiter has been signalled
)

// job is one request at the server, pooled by the Server.
type job struct {
	cpu, io float64 // demand: core-seconds at speed 1, seconds at I/O speed 1
	at      uint8
	phase   int32         // next phase: even = CPU, odd = I/O
	ps      ps.Job[*job]  // its place in the CPU, the I/O or the delay; Seq is its arrival order
	admit   bool          // holds a concurrency slot
	arrived time.Duration // engine time of arrival
	done    time.Duration // engine time of completion
	rif     int32         // requests in flight it found on arrival
	after   int32         // requests in flight once it completed

	prev, next *job          // links of the wait queue
	ch         chan struct{} // signalled once at completion (capacity 1)
}

// engine is the server model in engine time (a time.Duration since the
// server started): concurrency limit with a bounded FIFO, then alternating
// CPU and I/O phases, the CPU phases in a processor-sharing CPU. It mirrors
// cluster/instance.go with the simulator's kernel replaced by advance: the
// caller (the Server, or a test) calls advance(now) before anything else at
// now, and arms a timer for next(). It is not safe for concurrent use.
//
// Events are processed at their exact model instants however late advance
// is called: a job that finishes a phase at t starts its next phase at t,
// and a freed slot admits the next queued job at t, so the late wake-up of
// a timer delays only the response, never the model.
type engine struct {
	phases      int
	concurrency int
	queueLimit  int  // -1 = unbounded
	ioDelay     bool // I/O is a pure delay (cluster: IOParallelism == 0)

	cpu   ps.Queue[*job]
	io    ps.Queue[*job]
	delay ps.Queue[*job] // pure-delay I/O phases: infinitely many servers (M/G/∞)

	admitted   int
	head, tail *job // wait queue (FIFO)
	queued     int
	latency    lb.LatencyByRIF // Prequal's estimate (cluster/instance.go: instance.latency)
	seq        uint64
	now        time.Duration // the latest time advanced to

	served, rejected, cancelled int64
}

func newEngine(c *Config) *engine {
	return &engine{
		phases:      c.Phases,
		concurrency: c.Concurrency,
		queueLimit:  c.Queue,
		ioDelay:     c.IOParallelism == 0,
		cpu:         ps.New[*job](c.Cores, c.Speed, 0),
		io:          ps.New[*job](float64(c.IOParallelism), c.IOSpeed, 0),
		delay:       ps.New[*job](math.Inf(1), c.IOSpeed, 0),
	}
}

// advance processes, in time order and each at its own instant, every
// event due at or before now, then moves the resources' accounting to now.
func (e *engine) advance(now time.Duration) {
	if now < e.now {
		now = e.now // time never goes back
	}
	for {
		t, ok := e.next()
		if !ok || t > now {
			break
		}
		// The resources share the clock: bring both to t before any job
		// moves between them (cluster: the kernel advances one clock).
		e.cpu.Advance(t)
		e.io.Advance(t)
		e.delay.Advance(t)
		// cluster/instance.go: instance.Handle, evCPU and evIO; call.Handle,
		// evIODone.
		for _, q := range [...]*ps.Queue[*job]{&e.cpu, &e.io, &e.delay} {
			for j, ok := q.PopDone(t); ok; j, ok = q.PopDone(t) {
				j.phase++
				e.runPhase(t, j)
			}
		}
	}
	e.cpu.Advance(now)
	e.io.Advance(now)
	e.delay.Advance(now)
	e.now = now
}

// next is the time of the earliest pending event; ok is false when no job
// is in a phase.
func (e *engine) next() (t time.Duration, ok bool) {
	t, ok = e.cpu.Next()
	for _, q := range [...]*ps.Queue[*job]{&e.io, &e.delay} {
		if u, uok := q.Next(); uok && (!ok || u < t) {
			t, ok = u, true
		}
	}
	return t, ok
}

// arrive takes a job at now (after advance(now)): admit, queue or reject
// (cluster/instance.go: instance.arrive). It reports false when the job is
// rejected (429); the job is then not kept.
func (e *engine) arrive(now time.Duration, j *job) bool {
	e.seq++
	j.ps.Owner, j.ps.Seq = j, e.seq
	j.arrived = now
	j.rif = e.rif()
	j.phase = 0
	j.admit = false
	if lim := e.concurrency; lim > 0 && e.admitted >= lim {
		if e.queueLimit < 0 || e.queued < e.queueLimit {
			j.at = atQueue
			j.prev, j.next = e.tail, nil
			if e.tail != nil {
				e.tail.next = j
			} else {
				e.head = j
			}
			e.tail = j
			e.queued++
			return true
		}
		e.rejected++
		j.at = atNone
		return false
	}
	e.admitJob(now, j)
	return true
}

// admitJob gives j a concurrency slot and starts its phases
// (cluster/instance.go: instance.admit).
func (e *engine) admitJob(now time.Duration, j *job) {
	e.admitted++
	j.admit = true
	j.at = atNone
	e.runPhase(now, j)
}

// runPhase starts the next non-empty phase of j at now, or completes it
// (cluster/instance.go: instance.runPhase). The work is split evenly among
// the phases; I/O is a pure delay of io/ioSpeed seconds without I/O
// parallelism, else it is served in the I/O processor-sharing queue.
func (e *engine) runPhase(now time.Duration, j *job) {
	phases := int32(e.phases)
	for j.phase < 2*phases {
		if j.phase%2 == 0 {
			w := j.cpu
			if phases > 1 {
				w /= float64(phases)
			}
			if w > 0 {
				j.at = atCPU
				e.cpu.Add(now, &j.ps, w)
				return
			}
		} else if t := j.io / float64(phases); t > 0 {
			if e.ioDelay {
				j.at = atDelay
				e.delay.Add(now, &j.ps, t)
			} else {
				j.at = atIO
				e.io.Add(now, &j.ps, t)
			}
			return
		}
		j.phase++
	}
	e.complete(now, j)
}

// complete finishes j at now: it releases the slot, admits queued jobs
// (cluster/instance.go: instance.leave and admitQueued) and signals the
// waiter.
func (e *engine) complete(now time.Duration, j *job) {
	j.at = atDone
	j.done = now
	e.served++
	e.release(now, j)
	e.latency.Record(j.rif, now-j.arrived)
	j.after = e.rif()
	select {
	case j.ch <- struct{}{}:
	default: // no waiter channel (tests), or already signalled
	}
}

// release gives back j's slot and admits waiting jobs while slots are free.
func (e *engine) release(now time.Duration, j *job) {
	if !j.admit {
		return
	}
	j.admit = false
	e.admitted--
	for e.head != nil && (e.concurrency == 0 || e.admitted < e.concurrency) {
		n := e.head
		e.unlink(n)
		e.admitJob(now, n)
	}
}

func (e *engine) unlink(j *job) {
	if j.prev != nil {
		j.prev.next = j.next
	} else {
		e.head = j.next
	}
	if j.next != nil {
		j.next.prev = j.prev
	} else {
		e.tail = j.prev
	}
	j.prev, j.next = nil, nil
	e.queued--
}

// cancel takes j out wherever it is at now (after advance(now)), for a
// request whose client went away: it leaves the queue or the resource it is
// in and frees its slot. It reports false when j had already completed.
// The cluster keeps serving a call whose client timed out; a real server
// sees the cancellation, and so does this one.
func (e *engine) cancel(now time.Duration, j *job) bool {
	switch j.at {
	case atDone:
		return false
	case atQueue:
		e.unlink(j)
	case atCPU:
		e.cpu.Remove(now, &j.ps)
	case atIO:
		e.io.Remove(now, &j.ps)
	case atDelay:
		e.delay.Remove(now, &j.ps)
	}
	j.at = atNone
	e.cancelled++
	e.release(now, j)
	return true
}

// inService is the number of admitted jobs (holding a slot).
func (e *engine) inService() int { return e.admitted }

// rif is the number of requests in flight: in service or waiting.
func (e *engine) rif() int32 { return int32(e.admitted + e.queued) }
