package proxy

import (
	"time"
)

// waiter is a request waiting in a pool's queue for a backend with room
// (lb.Admission). Each client connection has one, since it serves one
// request at a time: queueing allocates nothing.
type waiter struct {
	prev, next *waiter
	key        uint64
	queued     bool       // in the queue, under the pool's mutex
	ch         chan int32 // the backend handed over (or -1); buffered 1
	timer      *time.Timer
}

func newWaiter() waiter {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return waiter{ch: make(chan int32, 1), timer: t}
}

// enqueue appends w to the queue (p.mu held).
func (p *pool) enqueue(w *waiter, key uint64) {
	w.key, w.queued, w.prev, w.next = key, true, p.tail, nil
	if p.tail != nil {
		p.tail.next = w
	} else {
		p.head = w
	}
	p.tail = w
	p.pending++
}

// unlink takes w out of the queue (p.mu held).
func (p *pool) unlink(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		p.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		p.tail = w.prev
	}
	w.prev, w.next, w.queued = nil, nil, false
	p.pending--
}

// handOff gives the oldest waiting request that can go a backend with room
// now (p.mu held): the selector picks for it as for a new request, so a
// freed slot goes to whichever backend the policy prefers among those with
// room. Any request can go where another can, except under a hashing
// selector, where each waits for its own backend: then the oldest whose
// backend has room goes.
func (p *pool) handOff(now int64) {
	for w := p.head; w != nil; w = w.next {
		j := p.choose(now, w.key, nil)
		if j == busy {
			if p.hashing {
				continue
			}
			return
		}
		p.unlink(w)
		w.ch <- int32(j)
		return
	}
}

// leave takes w out of the queue if it is still there, and reports
// whether it was; if not, a backend was handed over and is in w.ch.
func (p *pool) leave(w *waiter) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !w.queued {
		return false
	}
	p.unlink(w)
	return true
}

// queued reports the requests waiting now.
func (p *pool) queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pending
}

// clientCheck is how often a request that waits (in the queue, or for a
// backend's response headers) checks that its client is still there, as
// nginx checks for a broken client connection while it waits on the
// upstream (ngx_http_upstream_check_broken_connection: a MSG_PEEK recv).
const clientCheck = 250 * time.Millisecond

// Outcomes of await besides a backend.
const (
	awaitTimeout = -3 // the queue's maximum wait passed
	awaitGone    = -4 // the client went away
)

// await waits for the backend that the pool hands c's queued request, at
// most the queue timeout from enqueued, checking the client every
// clientCheck. It returns the backend, -1 if none is left, awaitTimeout
// or awaitGone.
func (p *pool) await(c *clientConn, enqueued time.Time) int {
	w := &c.wait
	deadline := enqueued.Add(p.adm.QueueTimeout)
	for {
		if d := min(time.Until(deadline), clientCheck); d > 0 {
			w.timer.Reset(d)
			select {
			case j := <-w.ch:
				w.timer.Stop()
				return int(j)
			case <-w.timer.C:
			}
		}
		timedOut := !time.Now().Before(deadline)
		if !timedOut && !c.gone() {
			continue
		}
		if !p.leave(w) {
			return int(<-w.ch) // handed over just now: serve it
		}
		if timedOut {
			return awaitTimeout
		}
		return awaitGone
	}
}
