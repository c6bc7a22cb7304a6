package lb

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// A general policy's file reads back to the same network, and a header
// out of range is refused naming its field.
func TestGeneralPolicyFile(t *testing.T) {
	p, err := NewGeneralPolicy([]int{6, 3}, 4)
	if err != nil {
		t.Fatal(err)
	}
	theta := p.Params()
	for i := range theta {
		theta[i] = float64(i%7) / 10
	}
	if err := p.SetParams(theta); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	file := b.String()
	q, err := ReadGeneralPolicy(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(q.Params(), theta) || q.Decades != p.Decades || q.Period != p.Period {
		t.Fatal("the policy read back differs")
	}
	for field, edit := range map[string][2]string{
		"decades": {`"decades":0.5`, `"decades":3`},
		"memory":  {`"memory":32`, `"memory":0`},
		"hidden":  {`"hidden":[6,3]`, `"hidden":[6,0]`},
		"period":  {`"period":"500ms"`, `"period":"0s"`},
	} {
		bad := strings.Replace(file, edit[0], edit[1], 1)
		if bad == file {
			t.Fatalf("%s: %q not in the header", field, edit[0])
		}
		if _, err := ReadGeneralPolicy(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s out of range: %v", field, err)
		}
	}
	if err := p.SetParams(theta[1:]); err == nil {
		t.Error("a parameter vector one short was accepted")
	}
}

// LearnedSED decides and selects without allocating.
func TestLearnedSEDAllocatesNothing(t *testing.T) {
	p, err := NewGeneralPolicy([]int{16}, 1)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := p.Selector(Deps{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	s := sel.(*LearnedSED)
	v := &View{InFlight: make([]int32, 8), Weights: []float64{1, 1, 2, 2, 4, 4, 8, 8}, Up: make([]bool, 8)}
	for j := range v.Up {
		v.Up[j] = true
	}
	now := time.Duration(0)
	allocs := testing.AllocsPerRun(1000, func() {
		now += 100 * time.Millisecond // a decision every fifth call
		j := s.Select(v, Request{Now: now})
		s.Sent(now, j)
		s.Reported(now, j, Load{RIF: 3, Service: 20 * time.Millisecond})
		s.Done(now, j, 10*time.Millisecond, 20*time.Millisecond)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per request", allocs)
	}
}

// BenchmarkRequest times one request's selector work (select, sent,
// piggybacked load, done) with 16 backends: probing-sed, and the general
// policy over it deciding every 100th request.
func BenchmarkRequest(b *testing.B) {
	p, err := NewGeneralPolicy([]int{16}, 1)
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"probing-sed", "distr-lb-general"} {
		b.Run(name, func(b *testing.B) {
			reg := Classical()
			reg["distr-lb-general"] = p.Selector
			sel, err := reg.New(name, Deps{Rand: rand.New(rand.NewPCG(1, 2))})
			if err != nil {
				b.Fatal(err)
			}
			fb, lf := sel.(Feedback), sel.(LoadFeedback)
			v := &View{InFlight: make([]int32, 16), Weights: make([]float64, 16), Up: make([]bool, 16)}
			for j := range v.Up {
				v.Up[j], v.Weights[j] = true, float64(1+j%4)
			}
			b.ReportAllocs()
			now := time.Duration(0)
			for b.Loop() {
				now += 5 * time.Millisecond // 100 requests per 500 ms decision
				j := sel.Select(v, Request{Now: now})
				fb.Sent(now, j)
				lf.Reported(now, j, Load{RIF: 3, Service: 20 * time.Millisecond})
				fb.Done(now, j, 10*time.Millisecond, 20*time.Millisecond)
			}
		})
	}
}

// The shipped general policy reads, records the command that trained it
// (scripts/general-policy.sh trains it again and compares the bytes),
// corrects probing-sed (its network is not all zeros), and runs under its
// name from the registry as a learned policy, not a classical one.
func TestDefaultGeneral(t *testing.T) {
	p, err := DefaultGeneral()
	if err != nil {
		t.Fatal(err)
	}
	if want := "shoal train distr-lb --family default --seed 1"; p.Provenance.Command != want || p.Provenance.Seed != 1 {
		t.Errorf("provenance %+v, want the command %q", p.Provenance, want)
	}
	if !slices.ContainsFunc(p.Params(), func(x float64) bool { return x != 0 }) || p.Provenance.Selected == 0 {
		t.Errorf("the shipped policy is untrained (generation %d kept)", p.Provenance.Selected)
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil || !bytes.Equal(b.Bytes(), defaultGeneral) {
		t.Errorf("the shipped file does not read back to itself (%v)", err)
	}
	sel, err := Classical().New(GeneralName, Deps{Rand: rand.New(rand.NewPCG(1, 2))})
	if _, ok := sel.(*LearnedSED); err != nil || !ok {
		t.Fatalf("%s from the registry: %T, %v", GeneralName, sel, err)
	}
	if IsClassical(GeneralName) || IsClassical("oracle") || !IsClassical("probing-sed") || !IsBound("oracle") || IsBound(GeneralName) {
		t.Error("the general policy must be learned, not classical; the oracle a bound")
	}
}
