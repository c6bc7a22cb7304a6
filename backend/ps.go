package backend

import (
	"math"
	"time"
)

// psQueue is a processor-sharing resource, a copy of cluster/ps.go's
// psQueue with the simulator's event kernel replaced by next(): n jobs share
// `servers` units of capacity at `speed`, each job served at
// speed*min(1, servers/n) (a job cannot use more than one unit). v is the
// attained service of any job present throughout (virtual time), so a job's
// finish tag is v at admission plus its work, and the next completion is
// the smallest tag: O(log n) per event.
type psQueue struct {
	servers float64
	speed   float64
	v       float64       // attained service per job since the queue was last empty, work units
	last    time.Duration // time v was last advanced to
	jobs    jobHeap       // min-heap on (tag, seq)
	busy    float64       // integral of units in use, unit-seconds
}

// rate is the service rate of each job, work units per second
// (cluster/ps.go: psQueue.rate).
func (q *psQueue) rate() float64 {
	n := float64(len(q.jobs.h))
	if n <= q.servers {
		return q.speed
	}
	return q.speed * q.servers / n
}

// advance moves the accounting to now (cluster/ps.go: psQueue.advance).
func (q *psQueue) advance(now time.Duration) {
	if now <= q.last {
		return
	}
	if n := len(q.jobs.h); n > 0 {
		dt := secs(now - q.last)
		q.v += q.rate() * dt
		q.busy += min(float64(n), q.servers) * dt
	}
	q.last = now
}

// busyUntil is the busy integral up to now in unit-seconds, without
// advancing the queue (cluster/ps.go: psQueue.busyUntil).
func (q *psQueue) busyUntil(now time.Duration) float64 {
	if n := len(q.jobs.h); n > 0 && now > q.last {
		return q.busy + min(float64(n), q.servers)*secs(now-q.last)
	}
	return q.busy
}

// add admits j at now with the given work at speed 1 (cluster/ps.go:
// psQueue.add).
func (q *psQueue) add(now time.Duration, j *job, work float64) {
	q.advance(now)
	if len(q.jobs.h) == 0 {
		// Tags only matter relative to v: restart from 0 to shed rounding
		// and keep v small (cluster/ps.go: psQueue.reschedule).
		q.v = 0
		q.last = now
	}
	j.tag = q.v + work
	q.jobs.push(j)
}

// remove takes j out early, at now: a cancelled request (the cluster's
// psQueue.remove, used there for OOM kills).
func (q *psQueue) remove(now time.Duration, j *job) {
	q.advance(now)
	q.jobs.del(j.hidx)
}

// popDone removes and returns a job whose work is done at now, or nil
// (cluster/ps.go: psQueue.popDone).
func (q *psQueue) popDone(now time.Duration) *job {
	q.advance(now)
	if len(q.jobs.h) == 0 {
		return nil
	}
	j := q.jobs.h[0]
	// The completion was scheduled at the next whole nanosecond, so v has
	// reached the tag up to rounding of the float arithmetic.
	if tol := 1e-12 * q.v; j.tag > q.v+max(tol, 1e-12) {
		return nil
	}
	q.jobs.del(0)
	return j
}

// next is when the next job finishes if nothing arrives, rounded up to the
// nanosecond as cluster/ps.go's psQueue.reschedule schedules it; ok is false
// when the queue is empty.
func (q *psQueue) next() (t time.Duration, ok bool) {
	if len(q.jobs.h) == 0 {
		return 0, false
	}
	dt := (q.jobs.h[0].tag - q.v) / q.rate()
	return q.last + ceilDuration(dt), true
}

// maxWait caps a computed wait so that it cannot overflow a time.Duration
// (about 73 years).
const maxWait = time.Duration(1 << 61)

// ceilDuration is dt seconds rounded up to the nanosecond, >= 0 and at most
// maxWait.
func ceilDuration(dt float64) time.Duration {
	ns := math.Ceil(dt * 1e9)
	switch {
	case !(ns > 0): // also NaN
		return 0
	case ns >= float64(maxWait):
		return maxWait
	}
	return time.Duration(ns)
}

func secs(d time.Duration) float64 { return float64(d) / 1e9 }

// jobHeap is a min-heap of jobs on (key, seq), keeping each job's index in
// job.hidx. The key is the finish tag in a psQueue and the due time of a
// pure-delay I/O phase in the delay heap; a job is in at most one heap.
type jobHeap struct {
	h []*job
}

func less(a, b *job) bool {
	return a.tag < b.tag || (a.tag == b.tag && a.seq < b.seq)
}

func (q *jobHeap) push(j *job) {
	q.h = append(q.h, j)
	j.hidx = len(q.h) - 1
	q.up(j.hidx)
}

func (q *jobHeap) del(i int) {
	j := q.h[i]
	last := len(q.h) - 1
	if i != last {
		q.h[i] = q.h[last]
		q.h[i].hidx = i
	}
	q.h[last] = nil
	q.h = q.h[:last]
	j.hidx = -1
	if i < last {
		q.down(i)
		q.up(i)
	}
}

func (q *jobHeap) up(i int) {
	h := q.h
	for i > 0 {
		p := (i - 1) / 2
		if !less(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		h[i].hidx, h[p].hidx = i, p
		i = p
	}
}

func (q *jobHeap) down(i int) {
	h := q.h
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && less(h[r], h[l]) {
			m = r
		}
		if !less(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		h[i].hidx, h[m].hidx = i, m
		i = m
	}
}
