package cluster

import (
	"math"
	"time"

	"github.com/shoal-project/shoal/sim"
)

// psQueue is a processor-sharing resource: n jobs share `servers` units of
// capacity at `speed`, each job served at speed*min(1, servers/n) (a job
// cannot use more than one unit). It tracks the attained service v of any
// job present throughout, so a job's finish tag is v at admission plus its
// work, and the next completion is the smallest tag: O(log n) per event.
type psQueue struct {
	servers float64
	speed   float64
	v       float64       // attained service per job since the start, work units
	last    time.Duration // time v was last advanced to
	jobs    []*call       // min-heap on (tag, id)
	ev      sim.Event     // the next completion
	busy    float64       // integral of units in use, unit-seconds
	sumTag  float64       // Σ tag over jobs, for remaining work in O(1)
	sumWork float64       // Σ phase work over jobs
}

func (q *psQueue) rate() float64 {
	n := float64(len(q.jobs))
	if n <= q.servers {
		return q.speed
	}
	return q.speed * q.servers / n
}

// advance moves the queue's accounting to now.
func (q *psQueue) advance(now time.Duration) {
	if now == q.last {
		return
	}
	if n := len(q.jobs); n > 0 {
		dt := secs(now - q.last)
		used := float64(n) // units in use: min(n, servers), without math.Min's call
		if used > q.servers {
			used = q.servers
		}
		q.v += q.rate() * dt
		q.busy += used * dt
	}
	q.last = now
}

// busyUntil is the busy integral up to now (unit-seconds) without advancing
// the queue, so that observing a run does not perturb its arithmetic.
func (q *psQueue) busyUntil(now time.Duration) float64 {
	if n := len(q.jobs); n > 0 && now > q.last {
		return q.busy + min(float64(n), q.servers)*secs(now-q.last)
	}
	return q.busy
}

// add admits c with the given work (at speed 1) and reschedules.
func (q *psQueue) add(k *sim.Kernel, c *call, work float64) {
	q.advance(k.Now())
	c.tag = q.v + work
	c.work = work
	q.sumTag += c.tag
	q.sumWork += work
	q.jobs = append(q.jobs, c)
	c.hidx = len(q.jobs) - 1
	q.up(c.hidx)
	// With a free unit the rate stays the same, so unless the new job is the
	// next to finish the scheduled completion still holds.
	if c.hidx == 0 || float64(len(q.jobs)) > q.servers || !q.ev.Pending() {
		q.reschedule(k)
	}
}

// remove takes c out early (OOM kill) and reschedules.
func (q *psQueue) remove(k *sim.Kernel, c *call) {
	q.advance(k.Now())
	q.del(c.hidx)
	q.reschedule(k)
}

// popDone removes and returns a job whose work is done at now, or nil.
func (q *psQueue) popDone(now time.Duration) *call {
	q.advance(now)
	if len(q.jobs) == 0 {
		return nil
	}
	c := q.jobs[0]
	// The completion was scheduled at the next whole nanosecond, so v has
	// reached the tag up to rounding of the float arithmetic.
	if tol := 1e-12 * q.v; c.tag > q.v+max(tol, 1e-12) {
		return nil
	}
	q.del(0)
	return c
}

// vAt is the attained service per job at now (>= the last event), without
// advancing the queue.
func (q *psQueue) vAt(now time.Duration) float64 {
	if len(q.jobs) == 0 || now <= q.last {
		return q.v
	}
	return q.v + q.rate()*secs(now-q.last)
}

// remaining is the work left of the jobs in service at now, in work units.
func (q *psQueue) remaining(now time.Duration) float64 {
	return q.sumTag - float64(len(q.jobs))*q.vAt(now)
}

// setCapacity changes servers and speed at now.
func (q *psQueue) setCapacity(k *sim.Kernel, servers, speed float64) {
	q.advance(k.Now())
	q.servers, q.speed = servers, speed
	q.reschedule(k)
}

func (q *psQueue) reschedule(k *sim.Kernel) {
	if len(q.jobs) == 0 {
		k.Cancel(&q.ev)
		// Tags only matter relative to v: restart from 0 to shed accumulated
		// rounding and keep v small, so its precision stays fine.
		q.v, q.sumTag, q.sumWork = 0, 0, 0
		return
	}
	dt := (q.jobs[0].tag - q.v) / q.rate()
	if dt < 0 {
		dt = 0
	}
	k.Schedule(&q.ev, k.Now()+time.Duration(math.Ceil(dt*1e9)))
}

func (q *psQueue) less(a, b *call) bool {
	return a.tag < b.tag || (a.tag == b.tag && a.id < b.id)
}

func (q *psQueue) del(i int) {
	c := q.jobs[i]
	q.sumTag -= c.tag
	q.sumWork -= c.work
	last := len(q.jobs) - 1
	if i != last {
		q.jobs[i] = q.jobs[last]
		q.jobs[i].hidx = i
	}
	q.jobs[last] = nil
	q.jobs = q.jobs[:last]
	c.hidx = -1
	if i < last {
		q.down(i)
		q.up(i)
	}
}

func (q *psQueue) up(i int) {
	h := q.jobs
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		h[i].hidx, h[p].hidx = i, p
		i = p
	}
}

func (q *psQueue) down(i int) {
	h := q.jobs
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && q.less(h[r], h[l]) {
			m = r
		}
		if !q.less(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		h[i].hidx, h[m].hidx = i, m
		i = m
	}
}
