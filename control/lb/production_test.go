package lb

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestPeakEWMAFollowsTower replays tower's compound_decay test
// (tower/src/load/peak_ewma.rs) on one backend: default RTT 20 ms, decay
// 1 s; the cost is the estimate times pending+1.
func TestPeakEWMAFollowsTower(t *testing.T) {
	s := &PeakEWMA{Rand: rand.New(rand.NewPCG(1, 2)), DefaultRTT: 20 * time.Millisecond, Decay: time.Second}
	s.size(1)
	ms := time.Millisecond
	cost := func(at time.Duration) float64 { return s.cost(at, 0) * 1000 }
	if c := cost(0); c != 20 {
		t.Fatalf("cost at 0: %g ms, want 20", c)
	}
	s.Sent(100*ms, 0)
	if c := cost(100 * ms); !(c > 20) {
		t.Errorf("one pending: %g ms, want > 20", c)
	}
	s.Sent(200*ms, 0)
	if c := cost(200 * ms); !(c > 40) {
		t.Errorf("two pending: %g ms, want > 40", c)
	}
	s.Done(300*ms, 0, 200*ms, 200*ms) // the peak: 200 ms
	if c := cost(300 * ms); math.Abs(c-400) > 1e-9 {
		t.Errorf("after the first response: %g ms, want 400", c)
	}
	s.Done(400*ms, 0, 200*ms, 200*ms)
	if c := cost(400 * ms); math.Abs(c-200) > 1e-9 {
		t.Errorf("after the second: %g ms, want 200", c)
	}
	if c := cost(1400 * ms); !(c < 100) {
		t.Errorf("a second later: %g ms, want < 100", c)
	}
	if c := cost(11400 * ms); !(c < 0.1) {
		t.Errorf("eleven seconds later: %g ms, want < 0.1", c)
	}
}

// TestPeakEWMAAvoidsTheSlowBackend: of two backends, the one whose
// responses take ten times longer gets few requests.
func TestPeakEWMAAvoidsTheSlowBackend(t *testing.T) {
	s := &PeakEWMA{Rand: rand.New(rand.NewPCG(3, 4))}
	v := &View{InFlight: make([]int32, 2), Weights: []float64{1, 1}, Up: []bool{true, true}}
	var picks [2]int
	took := [2]time.Duration{10 * time.Millisecond, 100 * time.Millisecond}
	for i := range 2000 {
		now := time.Duration(i) * 5 * time.Millisecond
		j := s.Select(v, Request{Now: now})
		picks[j]++
		s.Sent(now, j)
		s.Done(now, j, took[j], took[j])
	}
	if picks[1] > picks[0]/5 {
		t.Errorf("picks %v: the slow backend got more than a sixth", picks)
	}
}

// TestLeastRequestNChoices: with equal weights Envoy draws two hosts with
// replacement and keeps the one with fewer active requests, the first on a
// tie: with in-flight 0, 1 and 2 the hosts win 5/9, 3/9 and 1/9 of picks.
func TestLeastRequestNChoices(t *testing.T) {
	s := &LeastRequest{Rand: rand.New(rand.NewPCG(5, 6))}
	v := &View{InFlight: []int32{0, 1, 2}, Weights: []float64{1, 1, 1}, Up: []bool{true, true, true}}
	var picks [3]float64
	const n = 90000
	for range n {
		picks[s.Select(v, Request{})]++
	}
	for j, want := range []float64{5. / 9, 3. / 9, 1. / 9} {
		if got := picks[j] / n; math.Abs(got-want) > 0.01 {
			t.Errorf("host %d: %.4f of picks, want %.4f", j, got, want)
		}
	}
}

// TestLeastRequestEDF: with unequal weights the EDF schedule gives each
// host its weight's share exactly when nothing is in flight, and a host's
// active requests divide its weight when it is rescheduled.
func TestLeastRequestEDF(t *testing.T) {
	s := &LeastRequest{Rand: rand.New(rand.NewPCG(7, 8))}
	v := &View{InFlight: []int32{0, 0}, Weights: []float64{1, 3}, Up: []bool{true, true}}
	var picks [2]int
	for range 400 {
		picks[s.Select(v, Request{})]++
	}
	if picks != [2]int{100, 300} {
		t.Errorf("picks %v, want [100 300]", picks)
	}
	// Host 1 holds 2 requests: rescheduled at weight 3/3, it ties host 0.
	v.InFlight[1] = 2
	picks = [2]int{}
	for range 400 {
		picks[s.Select(v, Request{})]++
	}
	if math.Abs(float64(picks[0]-picks[1])) > 2 {
		t.Errorf("picks %v with host 1 at 2 in flight, want even", picks)
	}
}
