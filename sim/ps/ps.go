// Package ps is the processor-sharing resource of every Shoal world: the
// simulator's instances (cluster), the server model of 'shoal backend' and
// the edge world's nodes. It keeps no clock of its own: each world passes
// its time to every call and schedules the next completion, Next, on its
// own clock (the simulator's kernel, or a timer).
//
// n jobs share Servers units of capacity at Speed, each served at
// Speed*min(1, Servers/n): a job cannot use more than one unit (Kleinrock,
// Queueing Systems Vol. 2, §4.4, with c servers). The queue tracks the
// service v attained by any job present throughout (virtual time), so a
// job's finish tag is v at admission plus its work and the next completion
// is the smallest tag: O(log n) per event.
package ps

import (
	"math"
	"time"
)

// Job is a job's place in a Queue, held in the world's own job as a field
// with Owner pointing back at it. Seq breaks ties between equal finish
// tags (the world's arrival order or id), so runs are deterministic.
type Job[T any] struct {
	Owner T
	Seq   uint64
	tag   float64 // finish tag: the v at which the job is done
	work  float64 // work at admission
	idx   int     // index in the queue's heap
}

// Work is the job's work at its admission, work units.
func (j *Job[T]) Work() float64 { return j.work }

// slot is a job in the heap with its key copied in, so that sifting
// compares without loading the jobs (on a busy world those loads miss the
// cache).
type slot[T any] struct {
	tag float64
	seq uint64
	j   *Job[T]
}

func (a *slot[T]) less(b *slot[T]) bool { return a.tag < b.tag || (a.tag == b.tag && a.seq < b.seq) }

// Queue is one processor-sharing resource. The zero value has no capacity;
// set it with New or SetCapacity. It is not safe for concurrent use.
type Queue[T any] struct {
	servers float64
	speed   float64
	r       float64       // each job's service rate: speed x min(1, servers/n)
	v       float64       // attained service per job since the queue was last empty, work units
	last    time.Duration // the time v was last advanced to
	jobs    []slot[T]     // min-heap on (tag, Seq)
	busy    float64       // integral of units in use, unit-seconds
	sumTag  float64       // Σ tag over jobs, for the remaining work in O(1)
	sumWork float64       // Σ work over jobs
	cfs     cfs           // CFS bandwidth periods and throttling
	noCFS   bool          // SkipThrottling: cfs stays empty
}

// New is a queue of servers units at speed, starting at now.
func New[T any](servers, speed float64, now time.Duration) Queue[T] {
	q := Queue[T]{servers: servers, speed: speed, last: now, cfs: cfs{start: now - now%CFSPeriod}}
	q.setRate()
	return q
}

// Len is the number of jobs in service.
func (q *Queue[T]) Len() int { return len(q.jobs) }

// Servers is the number of capacity units.
func (q *Queue[T]) Servers() float64 { return q.servers }

// Speed is the work per second of one unit.
func (q *Queue[T]) Speed() float64 { return q.speed }

// SumWork is the admission work of the jobs in service, work units.
func (q *Queue[T]) SumWork() float64 { return q.sumWork }

// rate is the service rate of each job: kept up to date by setRate when the
// jobs or the capacity change, so that events do not divide.
func (q *Queue[T]) rate() float64 { return q.r }

func (q *Queue[T]) setRate() {
	n := float64(len(q.jobs))
	if n <= q.servers {
		q.r = q.speed
	} else {
		q.r = q.speed * q.servers / n
	}
}

// Advance moves the queue's accounting to now; earlier times are ignored.
func (q *Queue[T]) Advance(now time.Duration) {
	if now <= q.last {
		return
	}
	n := len(q.jobs)
	if n > 0 {
		dt := secs(now - q.last)
		used := float64(n) // units in use: min(n, servers), without math.Min's call
		if used > q.servers {
			used = q.servers
		}
		q.v += q.rate() * dt
		q.busy += used * dt
	}
	switch {
	case q.noCFS:
	case n > 0 && now < q.cfs.start+CFSPeriod: // within the open CFS window: the common case
		q.cfs.demand += int64(n) * int64(now-q.last)
	default:
		q.cfs.accrue(q.last, now, n, q.servers)
	}
	q.last = now
}

// SkipThrottling stops counting CFS periods: Throttling reports none. For
// a world that never reads them.
func (q *Queue[T]) SkipThrottling() { q.noCFS = true }

// Throttling is the CFS bandwidth counters up to now, without advancing
// the queue: the periods that had work and those throttled in them
// (cgroup cpu.stat nr_periods and nr_throttled; see cfs).
func (q *Queue[T]) Throttling(now time.Duration) (periods, throttled int64) {
	c := q.cfs
	if now > q.last && !q.noCFS {
		c.accrue(q.last, now, len(q.jobs), q.servers)
	}
	return c.periods, c.throttled
}

// BusyUntil is the busy integral up to now (unit-seconds) without advancing
// the queue, so that observing a run does not perturb its arithmetic.
func (q *Queue[T]) BusyUntil(now time.Duration) float64 {
	if n := len(q.jobs); n > 0 && now > q.last {
		return q.busy + min(float64(n), q.servers)*secs(now-q.last)
	}
	return q.busy
}

// Add admits j at now with the given work (at speed 1). It reports whether
// the next completion may have moved: with a free unit the rate stays the
// same, so unless j is the next to finish a completion scheduled before
// still holds.
func (q *Queue[T]) Add(now time.Duration, j *Job[T], work float64) (moved bool) {
	q.Advance(now)
	j.tag = q.v + work
	j.work = work
	q.sumTag += j.tag
	q.sumWork += work
	q.jobs = append(q.jobs, slot[T]{j.tag, j.Seq, j})
	q.setRate()
	j.idx = len(q.jobs) - 1
	q.up(j.idx)
	return j.idx == 0 || float64(len(q.jobs)) > q.servers
}

// Remove takes j out early, at now (an OOM kill, a cancelled request).
func (q *Queue[T]) Remove(now time.Duration, j *Job[T]) {
	q.Advance(now)
	q.del(j.idx)
}

// PopDone removes and returns the owner of a job whose work is done at now;
// ok is false when none is.
func (q *Queue[T]) PopDone(now time.Duration) (owner T, ok bool) {
	q.Advance(now)
	if len(q.jobs) == 0 {
		return owner, false
	}
	j := q.jobs[0].j
	// The completion was scheduled at the next whole nanosecond, so v has
	// reached the tag up to rounding of the float arithmetic.
	if tol := 1e-12 * q.v; j.tag > q.v+max(tol, 1e-12) {
		return owner, false
	}
	q.del(0)
	return j.Owner, true
}

// Next is when the next job finishes if nothing changes, rounded up to the
// nanosecond; ok is false when the queue is empty or has no capacity.
func (q *Queue[T]) Next() (t time.Duration, ok bool) {
	if len(q.jobs) == 0 {
		return 0, false
	}
	r := q.rate()
	if !(r > 0) {
		return 0, false // no capacity: the jobs wait for some
	}
	return q.last + ceilDuration((q.jobs[0].tag-q.v)/r), true
}

// vAt is the attained service per job at now (>= the last event), without
// advancing the queue.
func (q *Queue[T]) vAt(now time.Duration) float64 {
	if len(q.jobs) == 0 || now <= q.last {
		return q.v
	}
	return q.v + q.rate()*secs(now-q.last)
}

// Remaining is the work left of the jobs in service at now, in work units.
func (q *Queue[T]) Remaining(now time.Duration) float64 {
	return q.sumTag - float64(len(q.jobs))*q.vAt(now)
}

// Shared is the work a new job of the given work would share the resource
// with until it finished, if nothing else arrived: its own work plus each
// job's work left at now, capped at its own.
func (q *Queue[T]) Shared(now time.Duration, work float64) float64 {
	v := q.vAt(now)
	shared := work
	for i := range q.jobs {
		shared += math.Min(math.Max(q.jobs[i].tag-v, 0), work)
	}
	return shared
}

// SetCapacity changes the servers and the speed at now.
func (q *Queue[T]) SetCapacity(now time.Duration, servers, speed float64) {
	q.Advance(now)
	q.servers, q.speed = servers, speed
	q.setRate()
}

// maxWait caps a computed wait so that it cannot overflow a time.Duration
// (about 73 years).
const maxWait = time.Duration(1 << 61)

// ceilDuration is dt seconds rounded up to the nanosecond, at least 0 (also
// for NaN) and at most maxWait.
func ceilDuration(dt float64) time.Duration {
	x := dt * 1e9
	switch {
	case !(x > 0):
		return 0
	case x >= float64(maxWait):
		return maxWait
	}
	// math.Ceil by truncation, exact below 2^63, and inlined (math.Ceil is
	// a call on the hot path).
	ns := time.Duration(x)
	if float64(ns) < x {
		ns++
	}
	return ns
}

func secs(d time.Duration) float64 { return float64(d) / 1e9 }

func (q *Queue[T]) del(i int) {
	j := q.jobs[i].j
	q.sumTag -= j.tag
	q.sumWork -= j.work
	last := len(q.jobs) - 1
	if i != last {
		q.jobs[i] = q.jobs[last]
		q.jobs[i].j.idx = i
	}
	q.jobs[last] = slot[T]{}
	q.jobs = q.jobs[:last]
	q.setRate()
	if last == 0 {
		// Tags only matter relative to v: restart from 0 to shed
		// accumulated rounding and keep v small, so its precision stays fine.
		q.v, q.sumTag, q.sumWork = 0, 0, 0
	}
	if i < last {
		q.down(i)
		q.up(i)
	}
}

func (q *Queue[T]) up(i int) {
	h := q.jobs
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].less(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		h[i].j.idx, h[p].j.idx = i, p
		i = p
	}
}

func (q *Queue[T]) down(i int) {
	h := q.jobs
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r].less(&h[l]) {
			m = r
		}
		if !h[m].less(&h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		h[i].j.idx, h[m].j.idx = i, m
		i = m
	}
}
