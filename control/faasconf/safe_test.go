package faasconf

import (
	"math"
	"slices"
	"testing"
)

// Memory holds the calls the concurrency limit admits, the limit is
// lowered to what the largest memory holds, and instances shrink, the
// function holding the most CPU first, until they fit the nodes.
func TestFitterMakesConfigurationsSafe(t *testing.T) {
	fp := Footprint{
		Memory: []MemoryModel{{BaseMB: 10, PerCallMB: 40}, {BaseMB: 10, PerCallMB: 350}},
		Nodes:  []NodeGroup{{CPU: 8, MemoryMB: 16384, Count: 2}},
		Others: []Instance{{CPU: 1}},
	}
	f := NewFitter(fp, MLSpace())
	cs := []Config{{CPU: 1, MemoryMB: 256, Instances: 2, Concurrency: 10}, {CPU: 2, MemoryMB: 512, Instances: 3, Concurrency: 10}}
	f.Safe(cs)
	// 10 calls of 40 MB on 10 MB; at most (2024-10)/350 = 5 calls of 350 MB.
	if cs[0].MemoryMB != 410 || cs[0].Concurrency != 10 || cs[1].Concurrency != 5 || cs[1].MemoryMB != 1760 {
		t.Fatalf("memory: %+v", cs)
	}
	if cs[0].Instances != 2 || cs[1].Instances != 3 {
		t.Fatalf("15 of 16 cores fit, yet instances changed: %+v", cs)
	}
	// 8 instances of 2 cores do not fit two 8-core nodes beside 1 core of
	// others and 2 of the first function: the second keeps 6 (one node
	// of 4 instances, 3 left on the other beside 3 cores: 6 in all).
	cs[1].Instances = 8
	f.Safe(cs)
	if cs[1].Instances != 6 || cs[0].Instances != 2 {
		t.Fatalf("fit: %+v", cs)
	}
	// A hardware-only space has no limit, so no calls to hold: memory stays.
	hw := []Config{{CPU: 1, MemoryMB: 256, Instances: 1}}
	NewFitter(Footprint{Memory: fp.Memory[:1]}, MLSpace().HardwareOnly()).Safe(hw)
	if hw[0].MemoryMB != 256 {
		t.Fatalf("hardware-only memory changed: %+v", hw)
	}
}

// The safe range moves down after Calm QoS-meeting records at or under
// its upper bound, not for dearer ones, and back up after violations.
func TestSESRangeMovesDown(t *testing.T) {
	s := NewSES()
	act := [][]float64{{0}}
	for p := 1.0; p <= 10; p++ {
		s.Add(Record{Workload: 1, Action: act, Price: p, Met: true})
	}
	lb, ub, _ := s.Bounds(1) // τ = {1, 2}: 1.5 ± 1
	for range s.Calm {
		s.Add(Record{Workload: 1, Action: act, Price: 9, Met: true})
	}
	if lb2, ub2, _ := s.Bounds(1); lb2 != lb || ub2 != ub {
		t.Fatalf("dearer records moved the range to [%v, %v]", lb2, ub2)
	}
	for range s.Calm {
		s.Add(Record{Workload: 1, Action: act, Price: 1.5, Met: true})
	}
	lb2, ub2, _ := s.Bounds(1)
	if d := ub - lb; math.Abs(lb2-max(0, lb-d)) > 1e-12 || math.Abs(ub2-(ub-d)) > 1e-12 {
		t.Fatalf("after %d calm records: [%v, %v], want [%v, %v] moved down by %v", s.Calm, lb2, ub2, lb, ub, d)
	}
	moves := s.Moves()
	if len(moves) != 2 || moves[0].Cause != "set" || moves[1].Cause != "down" {
		t.Fatalf("moves %+v", moves)
	}
	for range s.Violations {
		s.Add(Record{Workload: 1, Action: act, Price: 0.5, Met: false})
	}
	if lb3, ub3, _ := s.Bounds(1); lb3 <= lb2 || ub3 <= ub2 || s.Moves()[2].Cause != "reset" {
		t.Fatalf("after violations: [%v, %v], moves %+v", lb3, ub3, s.Moves())
	}
}

// A settling agent holds the cheapest configuration that met the QoS, lets
// the actors propose only after the gap, doubles the gap when they miss,
// keeps trusting a configuration that met three times as often as it
// missed, and explores when none is left.
func TestAgentSettles(t *testing.T) {
	p := testPolicy(t)
	a := NewAgent(p, Options{NoSES: true})
	obs := [][]float64{make([]float64, Features), make([]float64, Features)}
	dear := []Config{{CPU: 2, MemoryMB: 1024, Instances: 4, Concurrency: 4}, {CPU: 2, MemoryMB: 1024, Instances: 4, Concurrency: 4}}
	a.RecordRunning(1, dear, true)
	if cs := a.Propose(1, obs); cs[0] != dear[0] || a.Stats().Explored != 0 {
		t.Fatalf("the running configuration met the QoS, yet the agent ran %+v (%+v)", cs, a.Stats())
	}
	for w := 2; w <= firstGap; w++ { // the held configuration meets the QoS: calm grows to the gap
		a.Record(1, true)
		if a.Propose(1, obs); a.Stats().Explored != 0 {
			t.Fatalf("window %d: explored before the gap of %d", w, firstGap)
		}
	}
	a.Record(1, true)
	proposal := a.Propose(1, obs)[0]
	if a.Stats().Explored != 1 || proposal == dear[0] {
		t.Fatalf("after %d calm windows the actors did not propose: %+v", firstGap, a.Stats())
	}
	a.Record(1, false) // the proposal missed: back to the held one, the gap doubles
	if cs := a.Propose(1, obs); cs[0] != dear[0] || a.levels[1].gap != 2*firstGap {
		t.Fatalf("after a missed proposal: %+v, gap %d", cs, a.levels[1].gap)
	}
	a.Record(1, false) // the window of the change back: does not count
	a.Propose(1, obs)
	if k := a.levels[1].held(); k == nil || k.missed != 0 {
		t.Fatalf("the change's window counted against the held configuration: %+v", k)
	}
	a.Record(1, false) // now it counts: 1 miss to 5 met, still trusted
	if a.Propose(1, obs); a.levels[1].held() == nil {
		t.Fatal("one miss to five met lost the trust")
	}
	a.Record(1, false) // 2 to 5: no trusted configuration left, so the actors propose
	if a.Propose(1, obs); a.levels[1].held() != nil || a.Stats().Explored != 2 {
		t.Fatalf("after 2 misses to 5 met: held %+v, %+v", a.levels[1].held(), a.Stats())
	}
}

// A window's level is its rate rounded up to a trained level, with 15%
// slack before the controller moves up and no move down while the rate
// is above the level below.
func TestControllerLevelHysteresis(t *testing.T) {
	c, _ := NewController(testPolicy(t), Options{}) // base rate 10, levels 0.5 and 1
	for _, step := range []struct {
		rate int64 // requests/s (testSnapshot's classes arrive at 30 × rate per 30 s)
		want float64
	}{{6, 1}, {6, 1}, {11, 1}, {4, 0.5}, {5, 0.5}, {6, 1}, {3, 0.5}} {
		if got := c.Level(testSnapshot(step.rate)); got != step.want {
			t.Fatalf("rate %d/s: level %v, want %v", step.rate, got, step.want)
		}
	}
}

// A proposal that met the QoS cheaper than the held configuration is held
// from then on: the actors are fine-tuned toward it and the gap stays, as
// it would not for a proposal no cheaper (the held price is read before
// the ladder shifts to make room for the new one).
func TestAgentCheaperProposalKeepsTheGap(t *testing.T) {
	a := NewAgent(testPolicy(t), Options{NoSES: true})
	obs := [][]float64{make([]float64, Features), make([]float64, Features)}
	dear := []Config{{CPU: 2, MemoryMB: 1024, Instances: 4, Concurrency: 4}, {CPU: 2, MemoryMB: 1024, Instances: 4, Concurrency: 4}}
	cheap := []Config{{CPU: 0.5, MemoryMB: 512, Instances: 1, Concurrency: 1}, {CPU: 0.5, MemoryMB: 512, Instances: 1, Concurrency: 1}}
	for _, cpu := range []float64{4, 3, 2} { // three known: the ladder has room to shift in place
		cs := slices.Clone(dear)
		cs[0].CPU = cpu
		a.RecordRunning(1, cs, true)
	}
	a.Propose(1, obs)
	for range firstGap {
		a.Record(1, true)
		a.Propose(1, obs)
	}
	if a.Stats().Explored != 1 {
		t.Fatalf("the actors did not propose after the gap: %+v", a.Stats())
	}
	for j, c := range cheap { // the actors proposed the cheap configuration
		a.configs[j] = c
		a.pol.Space.Encode(a.action[j], c)
	}
	tunes := a.Stats().FineTunes
	a.Record(1, true)
	l := a.levels[1]
	if h := l.held(); h == nil || h.price != Price(cheap) {
		t.Fatalf("held %+v, want the cheap configuration at %v", h, Price(cheap))
	}
	if l.gap != firstGap || l.calm != 1 {
		t.Errorf("after a cheaper proposal that met the QoS: gap %d, calm %d; want %d and 1", l.gap, l.calm, firstGap)
	}
	if a.Stats().FineTunes != tunes+1 {
		t.Errorf("fine-tunes %d, want %d: the held configuration changed", a.Stats().FineTunes, tunes+1)
	}
}

// A serving agent starts each level from the cheapest configuration
// training verified there, without exploring, and falls back to the next
// dearer verified one when the cheapest loses its trust.
func TestAgentStartsFromVerified(t *testing.T) {
	p := testPolicy(t)
	enc := func(cs []Config) Record {
		return Record{Workload: 1, Action: p.Space.EncodeAll(cs), Price: Price(cs), Met: true}
	}
	cheap := []Config{{CPU: 0.5, MemoryMB: 512, Instances: 1, Concurrency: 1}, {CPU: 0.5, MemoryMB: 512, Instances: 1, Concurrency: 1}}
	dear := []Config{{CPU: 1, MemoryMB: 1024, Instances: 2, Concurrency: 2}, {CPU: 1, MemoryMB: 1024, Instances: 2, Concurrency: 2}}
	cheaper := []Config{{CPU: 0.25, MemoryMB: 512, Instances: 1, Concurrency: 1}, {CPU: 0.25, MemoryMB: 512, Instances: 1, Concurrency: 1}}
	missed := enc(cheaper)
	missed.Met = false
	p.History = []Record{enc(dear), enc(cheap), missed}
	a := NewAgent(p, Options{NoSES: true})
	obs := [][]float64{make([]float64, Features), make([]float64, Features)}
	if cs := a.Propose(1, obs); cs[0] != cheap[0] || a.Stats().Explored != 0 {
		t.Fatalf("ran %+v (%+v), want the cheapest verified %+v", cs, a.Stats(), cheap[0])
	}
	a.Record(1, false) // the change's window: does not count
	for range 2 {
		a.Propose(1, obs)
		a.Record(1, false)
	}
	if cs := a.Propose(1, obs); cs[0] != dear[0] || a.Stats().Explored != 0 {
		t.Fatalf("after two misses ran %+v (%+v), want the dearer verified %+v", cs, a.Stats(), dear[0])
	}
}
