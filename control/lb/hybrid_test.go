package lb

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestProbingSEDSeesOtherLBsLoad: the probed RIF (other LB points' load)
// decides, corrected by this LB point's own requests since the answer.
func TestProbingSEDSeesOtherLBsLoad(t *testing.T) {
	s := &ProbingSED{Rand: rand.New(rand.NewPCG(1, 1))}
	v := upView(2)
	ms := time.Millisecond
	s.Select(v, Request{}) // sizes it
	s.Probed(ms, 0, Load{RIF: 5})
	s.Probed(ms, 1, Load{RIF: 0})
	// Own in-flight counts are equal (0): only the answers tell 1 is idle.
	for i := range 5 {
		if j := s.Select(v, Request{Now: 2 * ms}); j != 1 {
			t.Fatalf("request %d went to %d, want 1 (estimates 5 and %d)", i, j, i)
		}
		s.Sent(2*ms, 1)
	}
	// Now 5 vs 5: a tie. One more to 1 makes 0 the choice...
	s.Sent(2*ms, 1)
	if j := s.Select(v, Request{Now: 2 * ms}); j != 0 {
		t.Fatalf("went to %d with estimates 5 and 6, want 0", j)
	}
	// ...until three of 1's come back.
	for range 3 {
		s.Done(3*ms, 1, ms, ms)
	}
	if j := s.Select(v, Request{Now: 3 * ms}); j != 1 {
		t.Fatalf("went to %d with estimates 5 and 3, want 1", j)
	}
	// A newer answer replaces the estimate; an older one is ignored.
	s.Probed(4*ms, 1, Load{RIF: 9})
	s.Probed(3*ms, 1, Load{RIF: 0})
	if j := s.Select(v, Request{Now: 4 * ms}); j != 0 {
		t.Fatalf("went to %d with estimates 5 and 9, want 0", j)
	}
}

// TestProbingSEDWeightsAndAge: weights divide the estimates; answers older
// than MaxAge are not used, and with fewer than two fresh ones SED on the
// own in-flight counts decides.
func TestProbingSEDWeightsAndAge(t *testing.T) {
	s := &ProbingSED{Rand: rand.New(rand.NewPCG(2, 2)), MaxAge: time.Second}
	v := upView(2)
	v.Weights[0] = 4
	s.Select(v, Request{})
	s.Probed(0, 0, Load{RIF: 6}) // (6+1)/4 = 1.75
	s.Probed(0, 1, Load{RIF: 1}) // (1+1)/1 = 2
	if j := s.Select(v, Request{Now: time.Millisecond}); j != 0 {
		t.Fatalf("went to %d, want 0 (1.75 < 2)", j)
	}
	v.InFlight[0] = 9 // own view: (9+1)/4 = 2.5 against (0+1)/1 = 1
	if j := s.Select(v, Request{Now: 2 * time.Second}); j != 1 {
		t.Fatalf("with stale answers went to %d, want SED's 1", j)
	}
	// The own in-flight count bounds the estimate from below.
	s.Probed(3*time.Second, 0, Load{RIF: 0})
	s.Probed(3*time.Second, 1, Load{RIF: 1})
	if j := s.Select(v, Request{Now: 3 * time.Second}); j != 1 {
		t.Fatalf("went to %d: backend 0 has 9 of ours in flight whatever it answered", j)
	}
}

// TestProbingSEDPiggybackAndQuiet: a response's piggybacked RIF is an
// answer (the answered request, already gone from it, is offset against its
// Done), and only backends quiet for Quiet are probed.
func TestProbingSEDPiggybackAndQuiet(t *testing.T) {
	ms := time.Millisecond
	s := &ProbingSED{Rand: rand.New(rand.NewPCG(4, 4)), ProbeRate: 2, Quiet: 100 * ms}
	v := upView(2)
	s.Select(v, Request{})
	if got := s.ProbeTargets(0, v, nil); len(got) != 2 {
		t.Fatalf("probed %v with no answers, want both", got)
	}
	s.Probed(ms, 0, Load{RIF: 1})
	s.Probed(ms, 1, Load{RIF: 1})
	s.Sent(2*ms, 1)
	s.Sent(2*ms, 1)
	// Backend 1 answers its first request's response: 4 in flight after it
	// (one of them ours); then the Done of the answered request follows.
	s.Reported(3*ms, 1, Load{RIF: 4})
	s.Done(3*ms, 1, ms, ms)
	if est := s.rif[1] + s.since[1]; est != 4 {
		t.Fatalf("estimate %d after the piggybacked answer, want 4", est)
	}
	if j := s.Select(v, Request{Now: 4 * ms}); j != 0 {
		t.Fatalf("went to %d, want 0 (estimates 1 and 4)", j)
	}
	if got := s.ProbeTargets(50*ms, v, nil); len(got) != 0 {
		t.Fatalf("probed %v 49 ms after both answered, want none", got)
	}
	s.Reported(60*ms, 1, Load{RIF: 0})
	if got := s.ProbeTargets(120*ms, v, nil); len(got) != 1 || got[0] != 0 {
		t.Fatalf("probed %v, want only 0 (quiet 119 ms; 1 answered 60 ms ago)", got)
	}
	// Quiet < 0 probes every draw.
	s.Quiet = -1
	if got := s.ProbeTargets(120*ms, v, nil); len(got) != 2 {
		t.Fatalf("probed %v with Quiet < 0, want both", got)
	}
}

// TestTee: both sinks hear everything, in order.
func TestTee(t *testing.T) {
	a, b := &ProbingSED{}, &ProbingSED{}
	a.size(1)
	b.size(1)
	tee := Tee{a, b}
	tee.Sent(0, 0)
	tee.Sent(0, 0)
	tee.Done(0, 0, 0, 0)
	if a.since[0] != 1 || b.since[0] != 1 {
		t.Errorf("since %d and %d, want 1 and 1", a.since[0], b.since[0])
	}
}

func BenchmarkProbingSED(b *testing.B) {
	benchProber(b, &ProbingSED{Rand: rand.New(rand.NewPCG(3, 3))})
}
