package cluster

import (
	"slices"
	"time"

	"github.com/shoal-project/shoal/control/lb"
)

// admission is an explicit LB point's lb.Admission at run time (LBPoint.
// Admission): the cap on its calls in flight at each backend, and its FIFO
// of the calls that found every ready backend at its cap.
//
// A slot is up in the LB point's view when its instance is ready and the
// LB point has fewer than max calls in flight there, so selectors pick
// only among backends with room; ready keeps what the view's Up would be
// without admission.
type admission struct {
	max        int32 // MaxRequests
	maxPending int
	timeout    time.Duration
	ready      []bool // per slot: its instance is ready
	nReady     int    // slots ready
	open       int    // of them, with room: up in the view
	queue      []*call
	head       int   // the queue is queue[head:]
	shed       int64 // calls shed during the current period (LBStats.Shed)
}

func newAdmission(a lb.Admission) *admission {
	a = a.WithDefaults()
	return &admission{max: int32(a.MaxRequests), maxPending: a.MaxPending, timeout: a.QueueTimeout}
}

func (a *admission) waiting() int { return len(a.queue) - a.head }

// setReady records whether slot j's instance is ready, and updates its
// place in the view.
func (p *lbPoint) setReady(j int, ready bool) {
	a := p.adm
	if a.ready[j] != ready {
		a.ready[j] = ready
		if ready {
			a.nReady++
		} else {
			a.nReady--
		}
	}
	p.refresh(j)
}

// refresh sets slot j up in the view when it is ready and has room, and
// bumps the view's version when that changes.
func (p *lbPoint) refresh(j int) {
	a := p.adm
	up := a.ready[j] && p.view.InFlight[j] < a.max
	if p.view.Up[j] == up {
		return
	}
	p.view.Up[j] = up
	p.view.Version++
	if up {
		a.open++
	} else {
		a.open--
	}
}

// queueOrShed decides for attempt c, at an LB point with admission, when some
// backend is ready but none has room: it waits in the LB point's queue
// (its timeouts start now if fresh, as at the activator) or, the queue
// being full, it is shed. It reports false when c may be dispatched.
func (cl *Cluster) queueOrShed(c *call, fresh bool) bool {
	a := c.lbp.adm
	if a.open > 0 || a.nReady == 0 {
		return false
	}
	if a.waiting() >= a.maxPending {
		cl.shed(c)
		return true
	}
	if a.head > 0 && a.head >= len(a.queue)/2 { // compact the FIFO
		n := copy(a.queue, a.queue[a.head:])
		clear(a.queue[n:])
		a.queue, a.head = a.queue[:n], 0
	}
	a.queue = append(a.queue, c)
	c.at = atLBQueue
	if c.req != nil {
		c.req.queued = c
	}
	if fresh {
		cl.startTimeout(c)
	}
	c.ev.Arg = evQueueExpired
	cl.k.After(&c.ev, a.timeout)
	return true
}

// shed fails attempt c at its LB point without sending it: a 503.
func (cl *Cluster) shed(c *call) {
	p := c.lbp
	p.adm.shed++
	c.fail = failShed
	p.svc.period.Failures.Shed++
	cl.respond(c)
}

// dequeue takes c out of its LB point's queue.
func (cl *Cluster) dequeue(c *call) {
	a := c.lbp.adm
	if q := a.queue[a.head:]; len(q) > 0 && q[0] == c {
		a.queue[a.head] = nil
		a.head++
	} else if i := slices.Index(q, c); i >= 0 {
		a.queue = slices.Delete(a.queue, a.head+i, a.head+i+1)
	}
	if a.head == len(a.queue) {
		a.queue, a.head = a.queue[:0], 0
	}
	cl.k.Cancel(&c.ev)
	c.at = atNone
	if c.req != nil {
		c.req.queued = nil
	}
}

// admitWaiting sends the oldest calls waiting at LB point p while a
// backend has room, each to the selector's pick then.
func (cl *Cluster) admitWaiting(p *lbPoint) {
	a := p.adm
	for a.open > 0 && a.waiting() > 0 {
		c := a.queue[a.head]
		cl.dequeue(c)
		c.waited = cl.k.Now() - c.start
		cl.dispatch(c, false)
	}
}

// abandonQueued drops the root attempt c of request r from its LB point's
// queue when r's client times out: nothing of it has reached a backend, so
// it ends with the request (the service counts a Timeout, as when a
// caller gives up on an attempt).
func (cl *Cluster) abandonQueued(c *call, r *request) {
	cl.dequeue(c)
	cl.k.Cancel(&c.tev)
	c.lbp.svc.period.Failures.Timeout++
	c.req = nil
	c.fail = failTimeout
	cl.release(c)
	cl.finishRequest(r, failTimeout, false)
}
