package edge

import (
	"time"

	"github.com/shoal-project/shoal/sim"
)

// ps is a processor-sharing server: servers cores at speed Gcycles/s, each
// job served at min(speed, servers x speed / jobs). It keeps a virtual
// clock V, the work each job has received, so a job arriving at V0 with
// work w leaves when V reaches V0 + w.
type ps struct {
	servers, speed float64
	v              float64       // virtual work served per job so far
	at             time.Duration // when v was last advanced
	jobs           jobHeap
	busy           float64 // busy core-seconds so far
	ev             sim.Event
}

type job struct {
	tag  float64 // virtual finish
	task *task
}

// jobHeap is a min-heap by tag, without container/heap's boxing.
type jobHeap []job

func (h *jobHeap) push(j job) {
	*h = append(*h, j)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p].tag <= s[i].tag {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *jobHeap) pop() job {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(s) && s[l].tag < s[m].tag {
			m = l
		}
		if r := l + 1; r < len(s) && s[r].tag < s[m].tag {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// rate is the work per second each job receives.
func (q *ps) rate() float64 {
	if len(q.jobs) == 0 {
		return q.speed
	}
	return q.speed * min(1, q.servers/float64(len(q.jobs)))
}

// advance moves V to now.
func (q *ps) advance(now time.Duration) {
	dt := (now - q.at).Seconds()
	if dt > 0 && len(q.jobs) > 0 {
		q.v += q.rate() * dt
		q.busy += min(q.servers, float64(len(q.jobs))) * dt
	}
	q.at = now
}

// add admits a task with work w and reschedules the next departure.
func (q *ps) add(k *sim.Kernel, t *task, w float64) {
	q.advance(k.Now())
	q.jobs.push(job{tag: q.v + w, task: t})
	q.reschedule(k)
}

// setServers changes the cores at now (a new CPU share).
func (q *ps) setServers(k *sim.Kernel, servers float64) {
	q.advance(k.Now())
	q.servers = servers
	q.reschedule(k)
}

func (q *ps) reschedule(k *sim.Kernel) {
	k.Cancel(&q.ev)
	if len(q.jobs) == 0 {
		return
	}
	r := q.rate()
	if r <= 0 {
		return // no cores: the jobs wait for a share
	}
	wait := max(q.jobs[0].tag-q.v, 0) / r
	k.After(&q.ev, time.Duration(wait*1e9)+1)
}

// done pops the jobs finished by now.
func (q *ps) done(k *sim.Kernel, out []*task) []*task {
	q.advance(k.Now())
	for len(q.jobs) > 0 && q.jobs[0].tag <= q.v+1e-12 {
		out = append(out, q.jobs.pop().task)
	}
	q.reschedule(k)
	return out
}
