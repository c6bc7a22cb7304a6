package lb

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func upView(n int) *View {
	v := &View{InFlight: make([]int32, n), Weights: make([]float64, n), Up: make([]bool, n)}
	for j := range n {
		v.Weights[j], v.Up[j] = 1, true
	}
	return v
}

// TestPrequalHotColdLexicographic: the cold probe with the lowest latency
// wins, though a hot one is faster; the worst is the hottest.
func TestPrequalHotColdLexicographic(t *testing.T) {
	s := &Prequal{Rand: rand.New(rand.NewPCG(1, 1)), RemoveRate: 1e-9, Delta: 1000} // probes reused
	v := upView(100)
	ms := time.Millisecond
	// RIFs 1..7: the 0.84 quantile of 7 values is the 6th (ceil(5.9)),
	// RIF 6, so only RIF 7 is hot.
	for j, lat := range []time.Duration{50, 40, 30, 20, 25, 35, 1} {
		s.ProbeTargets(0, v, nil)
		s.Probed(0, j, Load{RIF: int32(j + 1), Latency: lat * ms})
	}
	if got := s.Select(v, Request{Now: ms}); got != 3 {
		t.Errorf("picked %d, want 3 (cold, 20 ms; 6 is hot at 1 ms)", got)
	}
	if w := s.pool[s.hcl(true)]; w.backend != 6 {
		t.Errorf("worst is backend %d, want 6 (the only hot probe)", w.backend)
	}
}

// TestPrequalCompensatesItsOwnQuery: a probe's RIF grows with each use,
// so the pool does not send every query to one backend.
func TestPrequalCompensatesItsOwnQuery(t *testing.T) {
	// A large δ: each probe may be used hundreds of times.
	s := &Prequal{Rand: rand.New(rand.NewPCG(2, 2)), RemoveRate: 1e-9, PoolSize: 4, QRIF: 0.5, Delta: 1000}
	v := upView(40)
	for j := range 4 {
		s.ProbeTargets(0, v, nil)
		s.Probed(0, j, Load{RIF: 2, Latency: time.Duration(j+1) * time.Millisecond})
	}
	var picks []int
	for range 4 {
		picks = append(picks, s.Select(v, Request{}))
	}
	// The median of {2,2,2,2} is 2: 0 is the fastest cold probe. Used,
	// its RIF is 3 > the median of {2,2,2,3}: hot, so 1 is next, then 2;
	// then the median of {2,3,3,3} is 3, nothing is hot, and 0 is back.
	if !slices.Equal(picks, []int{0, 1, 2, 0}) {
		t.Errorf("picks %v: want [0 1 2 0]", picks)
	}
}

// TestPrequalReuseBudget: b_reuse = (1+δ)/((1−m/n)·r_probe − r_remove),
// 2/(0.84·3 − 1) = 1.3158 with the defaults and 100 backends, randomly
// rounded: the mean of many draws matches it.
func TestPrequalReuseBudget(t *testing.T) {
	s := &Prequal{Rand: rand.New(rand.NewPCG(3, 3))}
	s.defaults()
	want := 2 / ((1-16.0/100)*3 - 1)
	sum := 0
	const n = 100000
	for range n {
		b := s.reuseBudget(100)
		if b != 1 && b != 2 {
			t.Fatalf("budget %d: want 1 or 2", b)
		}
		sum += b
	}
	if got := float64(sum) / n; math.Abs(got-want) > 0.01 {
		t.Errorf("mean budget %.4f, want %.4f", got, want)
	}
	if b := s.reuseBudget(10); b != 1 {
		t.Errorf("pool larger than the backend set: budget %d, want the floor, 1", b)
	}
	// max{1, ...}: a huge probe rate still uses each probe once.
	s.ProbeRate = 100
	if b := s.reuseBudget(100); b != 1 {
		t.Errorf("budget %d at r_probe 100, want 1", b)
	}
}

// TestPrequalRemovesOldestThenWorst: one removal per query, alternating.
func TestPrequalRemovesOldestThenWorst(t *testing.T) {
	s := &Prequal{Rand: rand.New(rand.NewPCG(4, 4)), PoolSize: 8, Delta: 1000} // probes reused
	v := upView(100)
	ms := time.Millisecond
	for j := range 8 {
		s.ProbeTargets(0, v, nil)
		s.Probed(time.Duration(j)*ms, j, Load{RIF: 1, Latency: time.Duration(10+j) * ms})
	}
	has := func(j int) bool {
		return slices.ContainsFunc(s.pool, func(p probe) bool { return p.backend == j })
	}
	s.Select(v, Request{Now: 10 * ms}) // uses 0 (fastest), removes the oldest: 0 itself or, if gone, 1
	if has(0) || len(s.pool) != 6 && len(s.pool) != 7 {
		t.Fatalf("after one query: pool %v", s.pool)
	}
	// Then 1, the fastest left, carries the query: its RIF 2 is above the
	// 0.84 quantile of {1,1,1,1,1,1,2}, so it is hot, the worst, and goes.
	if got := s.Select(v, Request{Now: 11 * ms}); got != 1 || has(1) || !has(7) {
		t.Errorf("second query to %d, pool %v: want 1, removed as the worst", got, s.pool)
	}
	// With no hot probe the worst is the slowest cold one.
	s.removeWorst = true
	s.RemoveRate = 1
	for i := range s.pool {
		s.pool[i].rif = 1
	}
	s.Select(v, Request{Now: 12 * ms})
	if has(7) {
		t.Errorf("the slowest probe survived a worst removal: %v", s.pool)
	}
}

// TestPrequalFallsBackAndAges: below two probes a query goes to a random
// backend; probes older than MaxAge leave the pool.
func TestPrequalFallsBackAndAges(t *testing.T) {
	s := &Prequal{Rand: rand.New(rand.NewPCG(5, 5)), MaxAge: time.Second}
	v := upView(3)
	s.Probed(0, 0, Load{RIF: 0, Latency: time.Millisecond})
	s.Probed(0, 1, Load{RIF: 0, Latency: 2 * time.Millisecond})
	if got := s.Select(v, Request{Now: 500 * time.Millisecond}); got != 0 {
		t.Errorf("picked %d with two fresh probes, want 0", got)
	}
	var seen [3]int
	for range 300 {
		seen[s.Select(v, Request{Now: 2 * time.Second})]++
	}
	if len(s.pool) != 0 || seen[0] < 70 || seen[1] < 70 || seen[2] < 70 {
		t.Errorf("after the age limit: pool %v, picks %v: want empty and uniform", s.pool, seen)
	}
}

// TestPrequalProbeTargets: r_probe distinct up backends, uniformly.
func TestPrequalProbeTargets(t *testing.T) {
	s := &Prequal{Rand: rand.New(rand.NewPCG(6, 6))}
	v := upView(10)
	v.Up[4] = false
	var count [10]int
	var dst []int
	for range 9000 {
		dst = s.ProbeTargets(0, v, dst[:0])
		if len(dst) != 3 {
			t.Fatalf("%d targets, want 3", len(dst))
		}
		if dst[0] == dst[1] || dst[1] == dst[2] || dst[0] == dst[2] {
			t.Fatalf("targets %v repeat", dst)
		}
		for _, j := range dst {
			count[j]++
		}
	}
	for j, c := range count {
		want := 3000 // 27000 probes over 9 up backends
		if j == 4 {
			want = 0
		}
		if math.Abs(float64(c-want)) > 200 {
			t.Errorf("backend %d probed %d times, want ~%d", j, c, want)
		}
	}
}

// TestLatencyByRIF: the median of recent samples at the RIF, else at the
// nearest RIF with samples.
func TestLatencyByRIF(t *testing.T) {
	var e LatencyByRIF
	e.Keep = 3
	if e.Estimate(2) != 0 {
		t.Fatal("no samples: want 0")
	}
	for _, ms := range []time.Duration{5, 1, 3, 100} { // keeps 1, 3, 100 (5 overwritten)
		e.Record(2, ms*time.Millisecond)
	}
	e.Record(6, 50*time.Millisecond)
	if got := e.Estimate(2); got != 3*time.Millisecond {
		t.Errorf("at 2: %v, want 3ms", got)
	}
	if got := e.Estimate(3); got != 3*time.Millisecond {
		t.Errorf("at 3: %v, want 2's 3ms", got)
	}
	if got := e.Estimate(5); got != 50*time.Millisecond {
		t.Errorf("at 5: %v, want 6's 50ms", got)
	}
	if got := e.Estimate(4); got != 3*time.Millisecond {
		t.Errorf("at 4 (tie): %v, want the lower RIF's 3ms", got)
	}
}

func BenchmarkPrequal(b *testing.B) { benchProber(b, &Prequal{Rand: rand.New(rand.NewPCG(7, 7))}) }

// benchProber times one decision of a probing selector over 32 backends,
// with its probes answered at once, and the request's feedback if it
// takes any.
func benchProber(b *testing.B, s interface {
	Selector
	Prober
}) {
	v := upView(32)
	dst := make([]int, 0, 8)
	fb, _ := s.(Feedback)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now := time.Duration(i) * time.Millisecond
		dst = s.ProbeTargets(now, v, dst[:0])
		for _, j := range dst {
			s.Probed(now, j, Load{RIF: int32(j % 5), Latency: time.Duration(j) * time.Millisecond})
		}
		j := s.Select(v, Request{Now: now})
		if fb != nil {
			fb.Sent(now, j)
			fb.Done(now, j, 0, 0)
		}
	}
}
