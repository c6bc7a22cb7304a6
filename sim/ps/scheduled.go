package ps

import "github.com/shoal-project/shoal/sim"

// Scheduled is a Queue whose next completion is an event on a simulator
// kernel: the simulator's instances and the edge world's servers. The
// event's handler pops the done jobs (PopDone) and calls Reschedule.
type Scheduled[T any] struct {
	Queue[T]
	Event sim.Event
}

// Admit adds j with the given work (at speed 1) at the kernel's now and
// reschedules the completion if it may have moved.
func (q *Scheduled[T]) Admit(k *sim.Kernel, j *Job[T], work float64) {
	if q.Add(k.Now(), j, work) || !q.Event.Pending() {
		q.Reschedule(k)
	}
}

// Evict takes j out early (an OOM kill) and reschedules.
func (q *Scheduled[T]) Evict(k *sim.Kernel, j *Job[T]) {
	q.Remove(k.Now(), j)
	q.Reschedule(k)
}

// Resize changes the servers and the speed at the kernel's now.
func (q *Scheduled[T]) Resize(k *sim.Kernel, servers, speed float64) {
	q.SetCapacity(k.Now(), servers, speed)
	q.Reschedule(k)
}

// Reschedule puts the completion event at Next, or cancels it when no job
// can finish.
func (q *Scheduled[T]) Reschedule(k *sim.Kernel) {
	if t, ok := q.Next(); ok {
		k.Schedule(&q.Event, t)
	} else {
		k.Cancel(&q.Event)
	}
}
