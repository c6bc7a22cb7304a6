package ps

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shoal-project/shoal/sim"
)

// item is a test job: its place in the queue and when it left.
type item struct {
	ps   Job[*item]
	left time.Duration
}

func newItem(seq uint64) *item {
	it := &item{left: -1}
	it.ps.Owner, it.ps.Seq = it, seq
	return it
}

// station is a Scheduled queue on a kernel that records departures.
type station struct {
	k    sim.Kernel
	q    Scheduled[*item]
	left []*item
}

func newStation(servers, speed float64) *station {
	s := &station{}
	s.q = Scheduled[*item]{Queue: New[*item](servers, speed, 0), Event: sim.Event{Handler: s}}
	return s
}

// Handle implements sim.Handler: the completion event.
func (s *station) Handle(now time.Duration, _ int) {
	for it, ok := s.q.PopDone(now); ok; it, ok = s.q.PopDone(now) {
		it.left = now
		s.left = append(s.left, it)
	}
	s.q.Reschedule(&s.k)
}

func (s *station) admitAt(at time.Duration, it *item, work float64) {
	s.k.RunUntil(at)
	s.q.Admit(&s.k, &it.ps, work)
}

func near(got, want time.Duration) bool { return got >= want && got-want <= time.Microsecond }

// Two jobs of 1 on one server at speed 1 arriving together share it and
// both leave at 2 s; a third arriving at 2 s alone leaves at 3 s.
func TestSharesOneServer(t *testing.T) {
	s := newStation(1, 1)
	a, b, c := newItem(1), newItem(2), newItem(3)
	s.admitAt(0, a, 1)
	s.admitAt(0, b, 1)
	s.admitAt(2*time.Second, c, 1)
	s.k.RunUntil(time.Minute)
	for _, x := range []struct {
		it   *item
		want time.Duration
	}{{a, 2 * time.Second}, {b, 2 * time.Second}, {c, 3 * time.Second}} {
		if !near(x.it.left, x.want) {
			t.Errorf("job %d left at %v, want %v", x.it.ps.Seq, x.it.left, x.want)
		}
	}
}

// With c servers no job gets more than one: two jobs of 1 on two servers
// leave at 1 s, and three share the two at 2/3 each, leaving at 1.5 s.
func TestMultiServerCapsEachJobAtOneUnit(t *testing.T) {
	for _, n := range []int{2, 3} {
		s := newStation(2, 1)
		for i := range n {
			s.admitAt(0, newItem(uint64(i)), 1)
		}
		s.k.RunUntil(time.Minute)
		want := time.Second
		if n == 3 {
			want = 1500 * time.Millisecond
		}
		if len(s.left) != n {
			t.Fatalf("%d jobs: %d left", n, len(s.left))
		}
		for _, it := range s.left {
			if !near(it.left, want) {
				t.Errorf("%d jobs on 2 servers: a job left at %v, want %v", n, it.left, want)
			}
		}
	}
}

// Equal finish tags leave in Seq order, whatever the admission order.
func TestTiesLeaveInSeqOrder(t *testing.T) {
	s := newStation(1, 1)
	for _, seq := range []uint64{5, 2, 9, 1, 7} {
		s.admitAt(0, newItem(seq), 1)
	}
	s.k.RunUntil(time.Minute)
	var got []uint64
	for _, it := range s.left {
		got = append(got, it.ps.Seq)
	}
	want := []uint64{1, 2, 5, 7, 9}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Fatalf("departure order %v, want %v", got, want)
		}
	}
}

// A job removed early leaves the others the whole server from then on; a
// resize takes effect at its instant; with no capacity nothing finishes.
func TestEvictResizeAndNoCapacity(t *testing.T) {
	s := newStation(1, 1)
	a, b := newItem(1), newItem(2)
	s.admitAt(0, a, 1)
	s.admitAt(0, b, 1)
	s.k.RunUntil(time.Second) // each has 0.5 done
	s.q.Evict(&s.k, &a.ps)
	s.k.RunUntil(time.Minute)
	if a.left != -1 || !near(b.left, 1500*time.Millisecond) {
		t.Errorf("evicted job left at %v (want never), the other at %v (want 1.5s)", a.left, b.left)
	}

	s = newStation(1, 1)
	c := newItem(1)
	s.admitAt(0, c, 2)
	s.k.RunUntil(time.Second)
	s.q.Resize(&s.k, 1, 2) // 1 left at speed 2: half a second
	s.k.RunUntil(time.Minute)
	if !near(c.left, 1500*time.Millisecond) {
		t.Errorf("resized job left at %v, want 1.5s", c.left)
	}

	s = newStation(0, 1)
	d := newItem(1)
	s.admitAt(0, d, 1)
	if _, ok := s.q.Next(); ok {
		t.Fatal("a queue with no servers has a next completion")
	}
	s.k.RunUntil(time.Second)
	s.q.Resize(&s.k, 0.5, 1) // one job on half a unit: 2 s
	s.k.RunUntil(time.Minute)
	if !near(d.left, 3*time.Second) {
		t.Errorf("job given half a server at 1 s left at %v, want 3s", d.left)
	}
	if got := s.q.BusyUntil(time.Minute); math.Abs(got-1) > 1e-6 {
		t.Errorf("busy %.9f unit-seconds, want 1 (half a unit for 2 s)", got)
	}
}

// M/M/1-PS and M/D/1-PS at λ = 8/s, E[S] = 0.1 s: the mean response time
// is E[S]/(1-ρ) = 0.5 s whatever the service distribution (Kleinrock,
// Queueing Systems Vol. 2, §4.4: PS is insensitive), and the server is
// busy a share ρ = 0.8 of the time.
func TestMG1PSMeanResponseTime(t *testing.T) {
	for _, dist := range []string{"exponential", "deterministic"} {
		rng := rand.New(rand.NewPCG(1, 2))
		s := newStation(1, 1)
		const n = 400000
		arrived := make(map[*item]time.Duration, n)
		at := time.Duration(0)
		for i := range n {
			at += time.Duration(rng.ExpFloat64() / 8 * 1e9)
			work := 0.1
			if dist == "exponential" {
				work = rng.ExpFloat64() * 0.1
			}
			it := newItem(uint64(i))
			arrived[it] = at
			s.admitAt(at, it, work)
		}
		s.k.RunUntil(at + time.Hour)
		if len(s.left) != n {
			t.Fatalf("%s: %d of %d jobs left", dist, len(s.left), n)
		}
		var total float64
		for _, it := range s.left {
			total += (it.left - arrived[it]).Seconds()
		}
		if mean := total / n; math.Abs(mean-0.5) > 0.02 {
			t.Errorf("%s service: mean response %.4f s, want 0.5 s (±0.02)", dist, mean)
		}
		if util := s.q.BusyUntil(at) / at.Seconds(); math.Abs(util-0.8) > 0.01 {
			t.Errorf("%s service: utilisation %.4f, want 0.8 (±0.01)", dist, util)
		}
	}
}

// The hot path allocates nothing once the heap has grown.
func TestAddAndPopDoNotAllocate(t *testing.T) {
	q := New[*item](2, 1, 0)
	items := make([]*item, 64)
	for i := range items {
		items[i] = newItem(uint64(i))
	}
	now := time.Duration(0)
	cycle := func() {
		for _, it := range items {
			q.Add(now, &it.ps, 0.01)
		}
		for q.Len() > 0 {
			t, _ := q.Next()
			now = t
			for _, ok := q.PopDone(now); ok; _, ok = q.PopDone(now) {
			}
		}
	}
	cycle()
	if a := testing.AllocsPerRun(10, cycle); a != 0 {
		t.Errorf("%v allocations per cycle of 64 jobs, want 0", a)
	}
}

func BenchmarkAddPop(b *testing.B) {
	q := New[*item](4, 1, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	items := make([]*item, 32)
	for i := range items {
		items[i] = newItem(uint64(i))
		q.Add(0, &items[i].ps, rng.ExpFloat64())
	}
	b.ReportAllocs()
	for b.Loop() {
		t, _ := q.Next()
		it, ok := q.PopDone(t)
		if !ok {
			b.Fatal("nothing done at Next")
		}
		q.Add(t, &it.ps, rng.ExpFloat64())
	}
}

// TestThrottlingCountsCFSPeriods checks the CFS counters against the
// kernel's rule (Documentation/scheduler/sched-bwc.rst: a period is
// throttled when the group's threads would use more than its quota in it),
// each job a thread that could use one unit.
func TestThrottlingCountsCFSPeriods(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name               string
		servers            float64
		at                 []time.Duration
		work               []float64
		periods, throttled int64
	}{
		// One thread of 1 s on half a core runs 2 s, over its quota in every period.
		{"half a core", 0.5, []time.Duration{0}, []float64{1}, 20, 20},
		// One thread cannot exceed one core's quota: 10 periods, none throttled.
		{"one core", 1, []time.Duration{0}, []float64{1}, 10, 0},
		// Four 10 ms threads on two cores: 40 ms of a 200 ms quota.
		{"a burst within the quota", 2, []time.Duration{0, 0, 0, 0}, []float64{0.01, 0.01, 0.01, 0.01}, 1, 0},
		// Four 30 ms threads at 50 ms on one core exceed its 100 ms quota;
		// processor sharing stretches them into the next period, which
		// counts as throttled too (the kernel would have run 80 ms of them
		// in the first).
		{"a burst over the quota", 1, []time.Duration{50 * ms, 50 * ms, 50 * ms, 50 * ms}, []float64{0.03, 0.03, 0.03, 0.03}, 2, 2},
		// Idle periods between two short jobs are not periods.
		{"idle between", 1, []time.Duration{0, 1000 * ms}, []float64{0.05, 0.05}, 2, 0},
	} {
		s := newStation(c.servers, 1)
		for i, at := range c.at {
			s.admitAt(at, newItem(uint64(i)), c.work[i])
		}
		s.k.RunUntil(5 * time.Second)
		before := s.q.Queue
		p, th := s.q.Throttling(10 * time.Second)
		if p != c.periods || th != c.throttled {
			t.Errorf("%s: %d periods, %d throttled; want %d, %d", c.name, p, th, c.periods, c.throttled)
		}
		if s.q.cfs != before.cfs || s.q.last != before.last {
			t.Errorf("%s: reading the counters moved the queue", c.name)
		}
	}
	// Read mid-run, the counters hold the periods that have ended.
	s := newStation(0.5, 1)
	s.admitAt(0, newItem(1), 1)
	if p, th := s.q.Throttling(450 * ms); p != 4 || th != 4 {
		t.Errorf("at 450 ms: %d periods, %d throttled; want 4 and 4", p, th)
	}
}

// ceilDuration rounds up as math.Ceil does, without calling it.
func TestCeilDurationIsMathCeil(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 100000 {
		dt := math.Ldexp(rng.Float64(), rng.IntN(80)-40) // 1e-12 s .. 1e12 s
		if i%10 == 0 {
			dt = float64(rng.IntN(1_000_000)) / 1e9 // whole nanoseconds
		}
		want := time.Duration(math.Ceil(dt * 1e9))
		if dt*1e9 >= float64(maxWait) {
			want = maxWait
		}
		if got := ceilDuration(dt); got != want {
			t.Fatalf("ceilDuration(%g) = %d, want %d", dt, got, want)
		}
	}
	for _, dt := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if got, want := ceilDuration(dt), map[bool]time.Duration{true: maxWait, false: 0}[dt > 0]; got != want {
			t.Errorf("ceilDuration(%g) = %d, want %d", dt, got, want)
		}
	}
}

// A queue that skips throttling serves exactly as one that counts it, and
// reports no periods.
func TestSkipThrottlingChangesNothingElse(t *testing.T) {
	a, b := New[int](1, 1, 0), New[int](1, 1, 0)
	b.SkipThrottling()
	ja, jb := make([]Job[int], 50), make([]Job[int], 50)
	rng := rand.New(rand.NewPCG(4, 4))
	now := time.Duration(0)
	for i := range ja {
		now += time.Duration(rng.IntN(300)) * time.Millisecond
		w := rng.Float64()
		ja[i].Seq, jb[i].Seq = uint64(i), uint64(i)
		a.Add(now, &ja[i], w)
		b.Add(now, &jb[i], w)
		if a.BusyUntil(now) != b.BusyUntil(now) || a.Remaining(now) != b.Remaining(now) {
			t.Fatalf("at %v the queues differ", now)
		}
	}
	if p, th := a.Throttling(now); p == 0 || th == 0 {
		t.Fatalf("the counting queue has %d periods, %d throttled: the test needs some", p, th)
	}
	if p, th := b.Throttling(now); p != 0 || th != 0 {
		t.Fatalf("the skipping queue reports %d periods, %d throttled", p, th)
	}
}
