// Package sim is Shoal's discrete-event kernel: a virtual clock, an event queue
// of cancellable intrusive timers, and seeded random streams.
//
// The usage loop:
//
//	var k sim.Kernel
//	ev := sim.Event{Handler: h}       // owned by the component that reacts to it
//	k.Schedule(&ev, 5*time.Second)    // or k.After(&ev, d); k.Cancel(&ev)
//	k.RunUntil(horizon)               // fires events in (time, scheduling order)
//
// Events are embedded in the structs that own them, so scheduling allocates
// nothing. Time is a time.Duration since the start of the run; the kernel
// never reads the wall clock.
package sim

import (
	"fmt"
	"time"
)

// Handler reacts to an event firing at virtual time now. Arg is the Event's
// Arg, so one owner can tell its events apart.
type Handler interface {
	Handle(now time.Duration, arg int)
}

// Event is an intrusive, cancellable timer. The zero value with a Handler set
// is ready; an Event is in the queue at most once (rescheduling moves it).
type Event struct {
	Handler Handler
	Arg     int

	at time.Duration
	id int32 // its slot in the kernel's tables + 1 while queued; 0 when not
}

// Pending reports whether the event is scheduled. While its handler runs an
// event is not pending, unless the handler schedules it again.
func (e *Event) Pending() bool { return e.id != 0 }

// At is the virtual time the event is scheduled for (meaningful when Pending).
func (e *Event) At() time.Duration { return e.at }

// Kernel is the event queue and virtual clock. The zero value is ready, at time 0.
//
// A queued event holds a slot: events[slot] is the event and pos[slot] its
// entry's index in the heap. Sifting the heap writes the moved entries'
// positions into pos, a dense table, rather than into the events, which
// live in their owners all over memory: on a world of thousands of
// servers those writes were a cache miss per level.
type Kernel struct {
	now    time.Duration
	heap   []entry  // 4-ary min-heap on (at, key)
	pos    []int32  // by slot: index in heap
	events []*Event // by slot
	free   []int32  // slots not in use
	seq    uint64
	fired  uint64
	// firing is the event whose handler runs. Its entry stays at the root
	// of the heap meanwhile, so a handler that reschedules its own event (a
	// source's next arrival, a server's next completion) costs one sift
	// instead of a removal and an insertion; rearmed says it did.
	firing     *Event
	firingSlot int32
	rearmed    bool
}

// entry is one scheduled event in the heap, with its key copied in so that
// sifting compares without loading the events. key is the scheduling
// order in its high bits and the slot in its low slotBits: 16 bytes an
// entry, so a node's four children take one or two cache lines.
type entry struct {
	at  time.Duration
	key uint64
}

// slotBits bounds the events queued at once (2^24, 16.7M) and leaves 2^40
// schedulings to one kernel (days of simulation at tens of millions a
// second); past either the kernel panics rather than misorder events.
const slotBits = 24

func (k *Kernel) entry(at time.Duration, slot int32) entry {
	if k.seq >= 1<<(64-slotBits) {
		panic("sim: more than 2^40 schedulings in one run")
	}
	return entry{at, k.seq<<slotBits | uint64(slot)}
}

func (a *entry) slot() int32 { return int32(a.key & (1<<slotBits - 1)) }

func (a *entry) less(b *entry) bool { return a.at < b.at || (a.at == b.at && a.key < b.key) }

// Now is the current virtual time.
func (k *Kernel) Now() time.Duration { return k.now }

// Fired is the number of events fired so far.
func (k *Kernel) Fired() uint64 { return k.fired }

// Len is the number of scheduled events.
func (k *Kernel) Len() int { return len(k.heap) }

// Schedule arranges for e to fire at virtual time at, moving it if it is
// already scheduled. Events at the same instant fire in the order they were
// (re)scheduled. Scheduling in the past is a programmer error and panics.
func (k *Kernel) Schedule(e *Event, at time.Duration) {
	if at < k.now {
		panic(fmt.Sprintf("sim: schedule at %v before now %v", at, k.now))
	}
	if e.Handler == nil {
		panic("sim: schedule of an event without a handler")
	}
	k.seq++
	if e == k.firing && !k.rearmed { // its entry is still the root
		e.at, e.id = at, k.firingSlot+1
		k.heap[0] = k.entry(at, k.firingSlot)
		k.rearmed = true
		k.down(0)
		return
	}
	if e.id != 0 {
		old := e.at
		e.at = at
		slot := e.id - 1
		i := int(k.pos[slot])
		k.heap[i] = k.entry(at, slot)
		if at < old {
			k.up(i)
		} else {
			k.down(i)
		}
		return
	}
	slot := k.take(e)
	e.at = at
	k.heap = append(k.heap, k.entry(at, slot))
	k.up(len(k.heap) - 1)
}

// take gives e a free slot.
func (k *Kernel) take(e *Event) int32 {
	var slot int32
	if n := len(k.free); n > 0 {
		slot = k.free[n-1]
		k.free = k.free[:n-1]
		k.events[slot] = e
	} else {
		if len(k.events) >= 1<<slotBits {
			panic("sim: more than 2^24 events queued at once")
		}
		slot = int32(len(k.events))
		k.events = append(k.events, e)
		k.pos = append(k.pos, 0)
	}
	e.id = slot + 1
	return slot
}

// After schedules e to fire d after now.
func (k *Kernel) After(e *Event, d time.Duration) { k.Schedule(e, k.now+d) }

// Cancel removes e from the queue; it reports whether e was scheduled.
func (k *Kernel) Cancel(e *Event) bool {
	if e.id == 0 {
		return false
	}
	k.removeAt(int(k.pos[e.id-1]))
	return true
}

// Peek returns the time of the next event and whether there is one.
func (k *Kernel) Peek() (time.Duration, bool) {
	if len(k.heap) == 0 {
		return 0, false
	}
	return k.heap[0].at, true
}

// Step fires the next event, advancing the clock to it. It reports false when
// the queue is empty.
func (k *Kernel) Step() bool {
	if len(k.heap) == 0 {
		return false
	}
	root := k.heap[0]
	e := k.events[root.slot()]
	k.now = root.at
	k.fired++
	e.id = 0
	k.firing, k.firingSlot, k.rearmed = e, root.slot(), false
	e.Handler.Handle(k.now, e.Arg)
	k.firing = nil
	if !k.rearmed { // the root is still the fired event's entry
		k.removeAt(0)
	}
	return true
}

// RunUntil fires every event scheduled at or before t, then sets the clock to t
// (if it is not already past it).
func (k *Kernel) RunUntil(t time.Duration) {
	for len(k.heap) > 0 && k.heap[0].at <= t {
		k.Step()
	}
	if t > k.now {
		k.now = t
	}
}

// removeAt takes the entry at heap index i out and frees its slot.
func (k *Kernel) removeAt(i int) {
	h := k.heap
	slot := h[i].slot()
	k.events[slot].id = 0
	k.events[slot] = nil
	k.free = append(k.free, slot)
	last := len(h) - 1
	if i != last {
		h[i] = h[last]
		k.pos[h[i].slot()] = int32(i)
	}
	k.heap = h[:last]
	if i < last {
		if !k.up(i) {
			k.down(i)
		}
	}
}

// up moves heap[i] toward the root; it reports whether it moved.
func (k *Kernel) up(i int) bool {
	h := k.heap
	e := h[i]
	moved := false
	for i > 0 {
		p := (i - 1) / 4
		if !e.less(&h[p]) {
			break
		}
		h[i] = h[p]
		k.pos[h[i].slot()] = int32(i)
		i = p
		moved = true
	}
	h[i] = e
	k.pos[e.slot()] = int32(i)
	return moved
}

func (k *Kernel) down(i int) {
	h := k.heap
	n := len(h)
	e := h[i]
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		best := c
		end := min(c+4, n)
		for j := c + 1; j < end; j++ {
			if h[j].less(&h[best]) {
				best = j
			}
		}
		if !h[best].less(&e) {
			break
		}
		h[i] = h[best]
		k.pos[h[i].slot()] = int32(i)
		i = best
	}
	h[i] = e
	k.pos[e.slot()] = int32(i)
}
