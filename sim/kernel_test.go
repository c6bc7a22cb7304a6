package sim

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

type recorder struct {
	k   *Kernel
	got []int
	at  []time.Duration
}

func (r *recorder) Handle(now time.Duration, arg int) {
	r.got = append(r.got, arg)
	r.at = append(r.at, now)
	if now != r.k.Now() {
		panic("clock not advanced before handler")
	}
}

// TestOrderMatchesSort checks the heap against a simple reference: a stable
// sort of (time, scheduling order), with random reschedules and cancels.
func TestOrderMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 50; trial++ {
		var k Kernel
		r := &recorder{k: &k}
		n := 1 + rng.IntN(300)
		evs := make([]Event, n)
		type want struct {
			at  time.Duration
			seq int
			id  int
		}
		live := map[int]want{}
		seq := 0
		for i := range evs {
			evs[i] = Event{Handler: r, Arg: i}
		}
		for op := 0; op < 3*n; op++ {
			i := rng.IntN(n)
			switch rng.IntN(4) {
			case 0:
				if k.Cancel(&evs[i]) != (live[i] != want{}) {
					t.Fatalf("cancel result disagrees with reference")
				}
				delete(live, i)
			default:
				at := time.Duration(rng.IntN(50)) // many ties
				k.Schedule(&evs[i], at)
				seq++
				live[i] = want{at, seq, i}
			}
		}
		var ref []want
		for _, w := range live {
			ref = append(ref, w)
		}
		slices.SortFunc(ref, func(a, b want) int {
			if a.at != b.at {
				return int(a.at - b.at)
			}
			return a.seq - b.seq
		})
		if k.Len() != len(ref) {
			t.Fatalf("len %d, want %d", k.Len(), len(ref))
		}
		k.RunUntil(time.Hour)
		if len(r.got) != len(ref) {
			t.Fatalf("fired %d, want %d", len(r.got), len(ref))
		}
		for j, w := range ref {
			if r.got[j] != w.id || r.at[j] != w.at {
				t.Fatalf("trial %d: event %d fired %d@%v, want %d@%v", trial, j, r.got[j], r.at[j], w.id, w.at)
			}
		}
		if k.Now() != time.Hour {
			t.Fatalf("clock %v after RunUntil(1h)", k.Now())
		}
	}
}

type chain struct {
	k *Kernel
	e Event
	n int
}

func (c *chain) Handle(now time.Duration, arg int) {
	c.n++
	if c.n < 5 {
		c.k.After(&c.e, time.Second)
	}
}

func TestRunUntilStopsAtHorizon(t *testing.T) {
	var k Kernel
	c := &chain{k: &k}
	c.e.Handler = c
	k.Schedule(&c.e, time.Second)
	k.RunUntil(3 * time.Second)
	if c.n != 3 || k.Now() != 3*time.Second || !c.e.Pending() || c.e.At() != 4*time.Second {
		t.Fatalf("n=%d now=%v pending=%v at=%v", c.n, k.Now(), c.e.Pending(), c.e.At())
	}
	for k.Step() {
	}
	if c.n != 5 || k.Fired() != 5 {
		t.Fatalf("n=%d fired=%d", c.n, k.Fired())
	}
}

func TestSchedulePastPanics(t *testing.T) {
	var k Kernel
	c := &chain{k: &k}
	c.e.Handler = c
	k.RunUntil(time.Second)
	defer func() {
		if recover() == nil {
			t.Fatal("no panic scheduling in the past")
		}
	}()
	k.Schedule(&c.e, 0)
}

type nop struct{}

func (nop) Handle(time.Duration, int) {}

func TestScheduleAllocatesNothing(t *testing.T) {
	var k Kernel
	evs := make([]Event, 64)
	for i := range evs {
		evs[i].Handler = nop{}
		k.Schedule(&evs[i], time.Duration(i))
	}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		k.Step()
		k.After(&evs[i%64], time.Duration(i%7))
		i++
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per step+schedule", allocs)
	}
}

func TestStreamsDeterministicAndIndependent(t *testing.T) {
	a := NewStreams(42).Stream("arrivals")
	b := NewStreams(42).Stream("arrivals")
	c := NewStreams(42).Stream("service")
	d := NewStreams(43).Stream("arrivals")
	same, diffName, diffSeed := 0, 0, 0
	for i := 0; i < 1000; i++ {
		x, y, z, w := a.Uint64(), b.Uint64(), c.Uint64(), d.Uint64()
		if x == y {
			same++
		}
		if x == z {
			diffName++
		}
		if x == w {
			diffSeed++
		}
	}
	if same != 1000 || diffName != 0 || diffSeed != 0 {
		t.Fatalf("same=%d diffName=%d diffSeed=%d", same, diffName, diffSeed)
	}
}

// BenchmarkHoldModel is the classic "hold" benchmark of event-set
// implementations: a steady queue of n events, each fire reschedules itself a
// random exponential time ahead.
func BenchmarkHoldModel(b *testing.B) {
	for _, n := range []int{16, 1024, 65536} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			var k Kernel
			rng := rand.New(rand.NewPCG(1, 1))
			h := &holder{k: &k, rng: rng}
			evs := make([]Event, n)
			for i := range evs {
				evs[i] = Event{Handler: h, Arg: i}
				k.Schedule(&evs[i], time.Duration(rng.ExpFloat64()*1e9))
			}
			h.evs = evs
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k.Step()
			}
		})
	}
}

type holder struct {
	k   *Kernel
	rng *rand.Rand
	evs []Event
}

func (h *holder) Handle(now time.Duration, arg int) {
	h.k.After(&h.evs[arg], time.Duration(h.rng.ExpFloat64()*1e9))
}

// selfRescheduler checks what a handler sees of its own event.
type selfRescheduler struct {
	k      *Kernel
	e      Event
	other  Event
	n      int
	sawPen bool
}

func (s *selfRescheduler) Handle(now time.Duration, arg int) {
	if arg == 1 {
		return
	}
	s.n++
	s.sawPen = s.sawPen || s.e.Pending()
	switch s.n {
	case 1: // reschedule itself behind another event at the same time
		s.k.Schedule(&s.other, now)
		s.k.Schedule(&s.e, now)
	case 2: // reschedule, then cancel: nothing left
		s.k.After(&s.e, time.Second)
		if !s.k.Cancel(&s.e) {
			panic("cancel of a rescheduled event reported false")
		}
	}
}

func TestHandlerOwnEvent(t *testing.T) {
	var k Kernel
	s := &selfRescheduler{k: &k}
	s.e.Handler, s.other.Handler, s.other.Arg = s, s, 1
	k.Schedule(&s.e, time.Second)
	for k.Step() {
	}
	if s.n != 2 || s.sawPen || k.Len() != 0 || s.e.Pending() || k.Fired() != 3 {
		t.Fatalf("n=%d sawPending=%v len=%d fired=%d", s.n, s.sawPen, k.Len(), k.Fired())
	}
	if k.Cancel(&s.e) {
		t.Fatal("cancel of a fired event reported true")
	}
}
