package cluster

import (
	"slices"
	"time"

	"github.com/shoal-project/shoal/control/lb"
)

// admission is an explicit LB point's lb.Admission at run time (LBPoint.
// Admission): the cap on its calls in flight at each backend, and its FIFO
// of the calls that found no backend with room.
//
// A slot is up in the LB point's view when its instance is ready and the
// LB point has fewer than max calls in flight there, so selectors pick
// only among backends with room; ready keeps what the view's Up would be
// without admission.
//
// Under a hashing selector (lb.Hashing: ring-hash, maglev) a full backend
// stays up instead, as in shoal proxy (proxy/pool.go, choose): masking it
// would change the view's Up and Version on every fill and free, and the
// selector would rebuild its table (maglev's 65,537 entries) per call and
// send the backend's keys elsewhere meanwhile. The selector picks for the
// call's key as usual, and a call whose pick is full waits in the queue for
// that backend, as a request whose server is full waits in that server's
// queue under HAProxy's hash balancing with maxconn: the affinity holds.
type admission struct {
	max        int32 // MaxRequests
	maxPending int
	timeout    time.Duration
	hashing    bool   // the selector routes on the call's key: full backends stay up
	ready      []bool // per slot: its instance is ready
	nReady     int    // slots ready
	open       int    // slots up in the view: ready with room (hashing: ready)
	queue      []*call
	head       int   // the queue is queue[head:]
	shed       int64 // calls shed during the current period (LBStats.Shed)
}

// newAdmission is a at run time; hashing says the LB point's selector
// routes on the call's key (lb.Hashing).
func newAdmission(a lb.Admission, hashing bool) *admission {
	a = a.WithDefaults()
	return &admission{max: int32(a.MaxRequests), maxPending: a.MaxPending, timeout: a.QueueTimeout, hashing: hashing}
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

// refresh sets slot j up in the view when it is ready and has room (under
// a hashing selector, when it is ready), and bumps the view's version when
// that changes.
func (p *lbPoint) refresh(j int) {
	a := p.adm
	up := a.ready[j] && (a.hashing || p.view.InFlight[j] < a.max)
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

// queueOrShed decides for attempt c, at an LB point with admission whose
// selector does not hash, when some backend is ready but none has room: it
// waits in the LB point's queue or is shed (enqueue). It reports false when
// c may be dispatched.
func (cl *Cluster) queueOrShed(c *call, fresh bool) bool {
	a := c.lbp.adm
	if a.open > 0 || a.nReady == 0 {
		return false
	}
	cl.enqueue(c, fresh)
	return true
}

// enqueue puts attempt c, which finds no backend with room (under a
// hashing selector: its backend full), in its LB point's queue, its
// timeouts starting now if fresh, as at the activator; the queue being
// full, c is shed.
func (cl *Cluster) enqueue(c *call, fresh bool) {
	a := c.lbp.adm
	if a.waiting() >= a.maxPending {
		cl.shed(c)
		return
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
	if a.hashing {
		cl.admitHashed(p)
		return
	}
	for a.open > 0 && a.waiting() > 0 {
		c := a.queue[a.head]
		cl.dequeue(c)
		c.waited = cl.k.Now() - c.start
		cl.dispatch(c, false)
	}
}

// admitHashed is admitWaiting under a hashing selector, where each waiting
// call waits for its own backend, the selector's pick for its key: oldest
// first, it sends every waiting call whose pick has room now, so a freed
// slot goes to the oldest call waiting for that backend, and a change of
// the ready backends (which moves keys) to every call that now has room.
//
// Trying a call whose pick is still full changes nothing: ring-hash's and
// maglev's Select is pure given their table, which only a change of the
// view's Up rebuilds (control/lb/hash.go), and only the call sent counts
// in flight. A call sent here may end at once (refused by its instance)
// and re-enter admitWaiting, which then goes through the whole queue
// itself: a call this loop skips after that had no room then, and any room
// freed since started a pass of its own.
func (cl *Cluster) admitHashed(p *lbPoint) {
	a := p.adm
	now := cl.k.Now()
	for i := 0; i < a.waiting(); {
		c := a.queue[a.head+i]
		j := p.sel.Select(&p.view, lb.Request{CPU: c.cpu, IO: c.io, Now: now, Key: c.key})
		if j < 0 || j >= len(p.svc.slots) || p.svc.slots[j] == nil || p.view.InFlight[j] >= a.max {
			i++ // still waits for its backend (or for any to be ready)
			continue
		}
		cl.dequeue(c) // the next waiting call is now at a.head+i
		c.waited = now - c.start
		cl.sendTo(c, j, false)
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
