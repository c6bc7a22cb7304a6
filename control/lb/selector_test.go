package lb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func view(q []int32, w []float64, up []bool) *View {
	if up == nil {
		up = make([]bool, len(q))
		for i := range up {
			up[i] = true
		}
	}
	return &View{InFlight: q, Weights: w, Up: up, Version: 1}
}

func counts(t *testing.T, s Selector, v *View, n int) []int {
	t.Helper()
	c := make([]int, v.Len())
	for i := 0; i < n; i++ {
		j := s.Select(v, Request{})
		if j < 0 || !v.Up[j] {
			t.Fatalf("picked %d, not an up backend", j)
		}
		c[j]++
	}
	return c
}

// within checks a count against a binomial expectation at 5 sigma.
func within(t *testing.T, name string, got int, n int, p float64) {
	t.Helper()
	mean, sd := float64(n)*p, math.Sqrt(float64(n)*p*(1-p))
	if math.Abs(float64(got)-mean) > 5*sd+1 {
		t.Errorf("%s: count %d, want %.0f ± %.0f", name, got, mean, 5*sd)
	}
}

func TestECMPUniformOverUp(t *testing.T) {
	v := view(make([]int32, 4), []float64{1, 1, 1, 1}, []bool{true, false, true, true})
	c := counts(t, &ECMP{Rand: rand.New(rand.NewPCG(1, 1))}, v, 30000)
	for _, j := range []int{0, 2, 3} {
		within(t, "ecmp", c[j], 30000, 1.0/3)
	}
}

func TestWCMPProportionalToWeights(t *testing.T) {
	w := []float64{1, 2, 3, 4}
	v := view(make([]int32, 4), w, nil)
	s := &WCMP{Rand: rand.New(rand.NewPCG(1, 2))}
	c := counts(t, s, v, 40000)
	for j := range w {
		within(t, "wcmp", c[j], 40000, w[j]/10)
	}
	// Changing the weights (and the version) takes effect.
	v.Weights[3], v.Up[0] = 0, false
	v.Version++
	c = counts(t, s, v, 10000)
	if c[0] != 0 || c[3] != 0 {
		t.Fatalf("picked a down or zero-weight backend: %v", c)
	}
}

func TestLSQPicksLocalMinimum(t *testing.T) {
	s := &LSQ{Rand: rand.New(rand.NewPCG(1, 3))}
	v := view([]int32{3, 1, 2, 1}, []float64{1, 1, 1, 1}, nil)
	c := counts(t, s, v, 10000)
	if c[0] != 0 || c[2] != 0 {
		t.Fatalf("lsq picked a longer queue: %v", c)
	}
	within(t, "lsq tie", c[1], 10000, 0.5)
}

func TestSEDUsesWeights(t *testing.T) {
	s := &SED{Rand: rand.New(rand.NewPCG(1, 4))}
	// (q+1)/w: (4+1)/10=0.5, (0+1)/1=1, (2+1)/4=0.75
	v := view([]int32{4, 0, 2}, []float64{10, 1, 4}, nil)
	if j := s.Select(v, Request{}); j != 0 {
		t.Fatalf("sed picked %d, want 0", j)
	}
	v.Up[0] = false
	if j := s.Select(v, Request{}); j != 2 {
		t.Fatalf("sed picked %d, want 2", j)
	}
}

func TestP2CNeverPicksTheUniqueMaximum(t *testing.T) {
	s := &P2C{Rand: rand.New(rand.NewPCG(1, 5))}
	v := view([]int32{0, 1, 2, 9}, []float64{1, 1, 1, 1}, nil)
	c := counts(t, s, v, 60000)
	if c[3] != 0 {
		t.Fatalf("p2c picked the longest queue: %v", c)
	}
	// Backend j wins when it is sampled with a longer queue: P = (pairs containing j
	// with a worse partner) / 6 pairs.
	within(t, "p2c 0", c[0], 60000, 3.0/6)
	within(t, "p2c 1", c[1], 60000, 2.0/6)
	within(t, "p2c 2", c[2], 60000, 1.0/6)
}

func TestRoundRobinSkipsDown(t *testing.T) {
	s := &RoundRobin{}
	v := view(make([]int32, 4), []float64{1, 1, 1, 1}, []bool{true, false, true, true})
	var got []int
	for i := 0; i < 6; i++ {
		got = append(got, s.Select(v, Request{}))
	}
	want := []int{0, 2, 3, 0, 2, 3}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("rr order %v, want %v", got, want)
		}
	}
}

// TestWeightedRoundRobinNginxSequence checks the sequence nginx documents for
// smooth weighted round robin with weights {a:5, b:1, c:1}: a a b a c a a.
func TestWeightedRoundRobinNginxSequence(t *testing.T) {
	s := &WeightedRoundRobin{}
	v := view(make([]int32, 3), []float64{5, 1, 1}, nil)
	var b strings.Builder
	for i := 0; i < 7; i++ {
		b.WriteByte("abc"[s.Select(v, Request{})])
	}
	if b.String() != "aabacaa" {
		t.Fatalf("sequence %s, want aabacaa", b.String())
	}
}

type fixedEst []float64

func (f fixedEst) EstimateCompletion(j int, r Request) float64 { return f[j] * r.CPU }

func TestOracleMinimisesEstimate(t *testing.T) {
	s := &Oracle{Est: fixedEst{3, 1, 2}, Rand: rand.New(rand.NewPCG(1, 6))}
	v := view(make([]int32, 3), []float64{1, 1, 1}, nil)
	if j := s.Select(v, Request{CPU: 1}); j != 1 {
		t.Fatalf("oracle picked %d, want 1", j)
	}
}

func TestNoneUp(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 7))
	reg := Classical()
	for _, name := range reg.Names() {
		s, err := reg.New(name, Deps{Rand: rng, Est: fixedEst{1, 1}})
		if err != nil {
			t.Fatal(err)
		}
		v := view(make([]int32, 2), []float64{1, 1}, []bool{false, false})
		if j := s.Select(v, Request{}); j != -1 {
			t.Errorf("%s picked %d with nothing up", name, j)
		}
	}
	if _, err := reg.New("nope", Deps{}); err == nil || !strings.Contains(err.Error(), "known: c3, distr-lb-general, ecmp") {
		t.Fatalf("unknown selector error: %v", err)
	}
	if _, err := reg.New("oracle", Deps{Rand: rng}); err == nil {
		t.Fatal("oracle without an estimator built")
	}
}

func TestSelectorsAllocateNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 8))
	reg := Classical()
	v := view([]int32{1, 2, 0, 4, 1, 3, 2}, []float64{1, 2, 3, 1, 2, 3, 1}, nil)
	for _, name := range reg.Names() {
		s, _ := reg.New(name, Deps{Rand: rng, Est: fixedEst{1, 2, 3, 4, 5, 6, 7}})
		s.Select(v, Request{CPU: 1}) // warm caches
		if a := testing.AllocsPerRun(1000, func() { s.Select(v, Request{CPU: 1}) }); a != 0 {
			t.Errorf("%s: %v allocs per Select", name, a)
		}
	}
}

func BenchmarkSelect(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 9))
	reg := Classical()
	q := make([]int32, 20)
	w := make([]float64, 20)
	for i := range q {
		q[i], w[i] = int32(i%5), float64(1+i%3)
	}
	v := view(q, w, nil)
	for _, name := range reg.Names() {
		s, _ := reg.New(name, Deps{Rand: rng, Est: fixedEst(w)})
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				s.Select(v, Request{CPU: 1})
			}
		})
	}
}

// TestTiesAreUniform: LSQ and SED pick uniformly among equal backends.
func TestTiesAreUniform(t *testing.T) {
	v := view([]int32{1, 0, 0, 2, 0}, []float64{1, 1, 1, 1, 1}, nil)
	for name, s := range map[string]Selector{
		"lsq": &LSQ{Rand: rand.New(rand.NewPCG(2, 1))},
		"sed": &SED{Rand: rand.New(rand.NewPCG(2, 2))},
	} {
		c := counts(t, s, v, 30000)
		if c[0] != 0 || c[3] != 0 {
			t.Fatalf("%s picked a longer queue: %v", name, c)
		}
		for _, j := range []int{1, 2, 4} {
			within(t, name, c[j], 30000, 1.0/3)
		}
	}
}

// sampleTwo must give every unordered pair of distinct up backends the same
// chance, by a scan in small pools and by rejection in large ones, also
// when most backends are down (the rejection falls back to a scan).
func TestSampleTwoIsUniformOverUpPairs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		upIdx []int
	}{
		{"scan", 8, []int{0, 2, 3, 7}},
		{"rejection", 400, []int{1, 57, 200, 399}},
		{"rejection, all but two down", 400, []int{3, 398}},
	} {
		up := make([]bool, tc.n)
		for _, j := range tc.upIdx {
			up[j] = true
		}
		v := &View{InFlight: make([]int32, tc.n), Weights: make([]float64, tc.n), Up: up}
		rng := rand.New(rand.NewPCG(3, 9))
		got := map[[2]int]int{}
		const draws = 60000
		for range draws {
			a, b := sampleTwo(v, rng)
			if a == b || a < 0 || b < 0 || !up[a] || !up[b] {
				t.Fatalf("%s: drew %d, %d", tc.name, a, b)
			}
			got[[2]int{min(a, b), max(a, b)}]++
		}
		k := len(tc.upIdx)
		pairs := k * (k - 1) / 2
		if len(got) != pairs {
			t.Fatalf("%s: %d distinct pairs, want %d", tc.name, len(got), pairs)
		}
		for p, c := range got {
			within(t, fmt.Sprintf("%s pair %v", tc.name, p), c, draws, 1/float64(pairs))
		}
	}
	one := &View{InFlight: make([]int32, 100), Weights: make([]float64, 100), Up: make([]bool, 100)}
	one.Up[42] = true
	if a, b := sampleTwo(one, rand.New(rand.NewPCG(1, 1))); a != 42 || b != -1 {
		t.Fatalf("one up of 100: drew %d, %d, want 42, -1", a, b)
	}
}
