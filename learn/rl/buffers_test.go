package rl

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

func TestReplayRingAndConsistency(t *testing.T) {
	r := NewReplay(3, 2, 1)
	for i := 0; i < 5; i++ { // transitions 2, 3, 4 survive
		x := float64(i)
		r.Add([]float64{x, -x}, []float64{10 * x}, 100*x, []float64{x + 1, -x - 1}, i == 4)
	}
	if r.Len() != 3 {
		t.Fatalf("Len %d, want 3", r.Len())
	}
	var b Batch
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[float32]int{}
	r.Sample(&b, rng, 3000)
	for k := 0; k < b.N; k++ {
		x := b.Obs[2*k]
		if x < 2 || b.Obs[2*k+1] != -x || b.Act[k] != 10*x || b.Reward[k] != 100*x || b.NextObs[2*k] != x+1 || b.NextObs[2*k+1] != -x-1 {
			t.Fatalf("sample %d inconsistent: obs %v act %v r %v next %v", k, b.Obs[2*k:2*k+2], b.Act[k], b.Reward[k], b.NextObs[2*k:2*k+2])
		}
		if (b.Done[k] == 1) != (x == 4) {
			t.Fatalf("sample %d: done %v for transition %v", k, b.Done[k], x)
		}
		seen[x]++
	}
	for x := float32(2); x <= 4; x++ {
		if c := seen[x]; c < 900 || c > 1100 {
			t.Errorf("transition %v sampled %d times of 3000, want about 1000", x, c)
		}
	}
	// Same seed, same batch.
	var b1, b2 Batch
	r.Sample(&b1, rand.New(rand.NewPCG(7, 7)), 64)
	r.Sample(&b2, rand.New(rand.NewPCG(7, 7)), 64)
	for i := range b1.Obs {
		if b1.Obs[i] != b2.Obs[i] {
			t.Fatal("sampling is not deterministic for a seed")
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { r.Sample(&b1, rng, 64) }); allocs != 0 {
		t.Errorf("Sample allocates %v times per call, want 0", allocs)
	}
}

// TestReplayPenalisesCosts: a sampled reward is the stored reward less
// the penalty set now times the transition's cost, whatever the penalty
// was when it was stored, and the costs survive a checkpoint.
func TestReplayPenalisesCosts(t *testing.T) {
	r := NewReplay(4, 1, 1)
	r.AddCost([]float64{0}, []float64{0}, 1, 0.5, []float64{0}, false)
	r.SetPenalty(3)
	r.AddCost([]float64{1}, []float64{0}, 2, 0.25, []float64{0}, false)
	r.Add([]float64{2}, []float64{0}, 4, []float64{0}, false)
	r.SetPenalty(2)
	var buf bytes.Buffer
	if err := r.Save(&buf); err != nil {
		t.Fatal(err)
	}
	loaded := NewReplay(4, 1, 1)
	if err := loaded.Load(&buf); err != nil {
		t.Fatal(err)
	}
	loaded.SetPenalty(2)
	want := map[float32]float32{0: 1 - 2*0.5, 1: 2 - 2*0.25, 2: 4}
	for _, buf := range []*Replay{r, loaded} {
		var b Batch
		buf.Sample(&b, rand.New(rand.NewPCG(1, 1)), 200)
		for k := 0; k < b.N; k++ {
			if got := b.Reward[k]; got != want[b.Obs[k]] {
				t.Fatalf("transition %v: reward %v, want %v", b.Obs[k], got, want[b.Obs[k]])
			}
		}
	}
}

// TestSequenceReplayWindows stores episodes whose observations encode
// (episode, step) and checks every sampled window is a contiguous piece of
// one episode, zero-padded and masked before its start.
func TestSequenceReplayWindows(t *testing.T) {
	const L = 4
	lengths := []int{2, 6, 1, 5, 3}
	for _, capacity := range []int{100, 9} { // 9: the ring overwrites old episodes
		s := NewSequenceReplay(capacity, 2, 1, L)
		for ep, n := range lengths {
			for st := 0; st < n; st++ {
				o := []float64{float64(ep + 1), float64(st + 1)}
				next := []float64{float64(ep + 1), float64(st + 2)}
				s.Add(o, []float64{float64(st)}, float64(10*ep+st), next, st == n-1 && ep%2 == 0, st == n-1 && ep%2 == 1)
			}
		}
		var b SeqBatch
		rng := rand.New(rand.NewPCG(3, 4))
		s.Sample(&b, rng, 500)
		for i := 0; i < b.N; i++ {
			last := b.Obs[((L-1)*b.N+i)*2:]
			ep, st := int(last[0])-1, int(last[1])-1
			if b.Mask[(L-1)*b.N+i] != 1 || b.Reward[i] != float32(10*ep+st) || b.Act[i] != float32(st) {
				t.Fatalf("cap %d sample %d: last step %v mask %v reward %v act %v", capacity, i, last[:2], b.Mask[(L-1)*b.N+i], b.Reward[i], b.Act[i])
			}
			wantDone := st == lengths[ep]-1 && ep%2 == 0
			if (b.Done[i] == 1) != wantDone {
				t.Fatalf("sample %d (ep %d step %d): done %v", i, ep, st, b.Done[i])
			}
			for k := 0; k < L; k++ {
				back := L - 1 - k
				o := b.Obs[(k*b.N+i)*2 : (k*b.N+i+1)*2]
				no := b.NextObs[(k*b.N+i)*2 : (k*b.N+i+1)*2]
				m, nm := b.Mask[k*b.N+i], b.NextMask[k*b.N+i]
				if back > st {
					if m != 0 || o[0] != 0 || o[1] != 0 {
						t.Fatalf("sample %d step %d: before episode start, got %v mask %v", i, k, o, m)
					}
				} else if m == 1 && (int(o[0])-1 != ep || int(o[1])-1 != st-back) {
					t.Fatalf("sample %d step %d: got obs %v, want episode %d step %d", i, k, o, ep, st-back)
				} else if m == 0 && capacity >= 100 {
					t.Fatalf("sample %d step %d: masked although stored", i, k)
				}
				if back-1 <= st && back >= 1 && (m == 1) && (nm != 1 || int(no[1])-1 != st-back+1) {
					t.Fatalf("sample %d step %d: next obs %v mask %v, want step %d", i, k, no, nm, st-back+1)
				}
				if back == 0 && (nm != 1 || int(no[1])-1 != st+1) {
					t.Fatalf("sample %d: next obs %v, want step %d", i, no, st+1)
				}
			}
		}
	}
}

func TestSequenceReplaySamplingAllocs(t *testing.T) {
	s := NewSequenceReplay(64, 3, 2, 8)
	for i := 0; i < 100; i++ {
		s.Add([]float64{1, 2, 3}, []float64{0, 1}, 1, []float64{1, 2, 3}, i%17 == 16, false)
	}
	var b SeqBatch
	rng := rand.New(rand.NewPCG(1, 1))
	s.Sample(&b, rng, 32)
	if allocs := testing.AllocsPerRun(50, func() { s.Sample(&b, rng, 32) }); allocs != 0 {
		t.Errorf("Sample allocates %v times per call, want 0", allocs)
	}
}

func TestWindow(t *testing.T) {
	w := NewWindow(3, 1)
	w.Push([]float64{1})
	w.Push([]float64{2})
	if got := [6]float32{w.Data[0], w.Data[1], w.Data[2], w.Mask[0], w.Mask[1], w.Mask[2]}; got != [6]float32{0, 1, 2, 0, 1, 1} {
		t.Errorf("window after two pushes %v mask %v", w.Data, w.Mask)
	}
	w.Push([]float64{3})
	w.Push([]float64{4})
	if w.Data[0] != 2 || w.Data[2] != 4 || w.Mask[0] != 1 {
		t.Errorf("window after four pushes %v mask %v", w.Data, w.Mask)
	}
	w.Reset()
	if w.Data[2] != 0 || w.Mask[2] != 0 {
		t.Errorf("window after reset %v mask %v", w.Data, w.Mask)
	}
}

// TestGAEHandComputed: γ = 0.9, λ = 0.8, rewards 1, 2, 3, values 0.5, 1, 1.5,
// last value 2, the episode ending at t = 1.
func TestGAEHandComputed(t *testing.T) {
	tests := []struct {
		name      string
		truncated bool
		bootstrap float64
		wantAdv   []float64
	}{
		// δ2 = 3 + 0.9·2 − 1.5 = 3.3; δ1 = 2 − 1 = 1; δ0 = 1 + 0.9·1 − 0.5 = 1.4;
		// Â0 = 1.4 + 0.72·1 = 2.12.
		{"terminated", false, 0, []float64{2.12, 1.0, 3.3}},
		// Truncated with V(s_final) = 4: δ1 = 2 + 0.9·4 − 1 = 4.6; Â0 = 1.4 + 0.72·4.6 = 4.712.
		{"truncated", true, 4, []float64{4.712, 4.6, 3.3}},
	}
	for _, tc := range tests {
		r := NewRollout(3, 1, 1, 1)
		r.Set(0, 0, []float64{0}, []float64{0}, 0, 0.5, 1, false, false, 0)
		r.Set(1, 0, []float64{0}, []float64{0}, 0, 1.0, 2, !tc.truncated, tc.truncated, tc.bootstrap)
		r.Set(2, 0, []float64{0}, []float64{0}, 0, 1.5, 3, false, false, 0)
		r.ComputeGAE(0.9, 0.8, []float64{2})
		for i, want := range tc.wantAdv {
			if math.Abs(r.Adv[i]-want) > 1e-12 || math.Abs(r.Ret[i]-(want+r.Value[i])) > 1e-12 {
				t.Errorf("%s: Adv[%d] = %v Ret %v, want %v and %v", tc.name, i, r.Adv[i], r.Ret[i], want, want+r.Value[i])
			}
		}
	}
}

// TestGAEMatchesDefinition compares the recursion with the sum
// Â_t = Σ_l (γλ)^l δ_{t+l} over the rest of the episode, on random data with
// several environments.
func TestGAEMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const T, E, gamma, lambda = 40, 3, 0.97, 0.9
	r := NewRollout(T, E, 1, 1)
	last := make([]float64, E)
	for e := 0; e < E; e++ {
		last[e] = rng.NormFloat64()
		for s := 0; s < T; s++ {
			term, trunc := rng.Float64() < 0.05, rng.Float64() < 0.05
			r.Set(s, e, []float64{0}, []float64{0}, 0, rng.NormFloat64(), rng.NormFloat64(), term, trunc, rng.NormFloat64())
		}
	}
	r.ComputeGAE(gamma, lambda, last)
	for e := 0; e < E; e++ {
		delta := func(s int) float64 {
			i := s*E + e
			var vNext float64
			switch {
			case r.Done[i]:
				vNext = r.Bootstrap[i]
			case s == T-1:
				vNext = last[e]
			default:
				vNext = r.Value[i+E]
			}
			return r.Reward[i] + gamma*vNext - r.Value[i]
		}
		for s := 0; s < T; s++ {
			want, w := 0.0, 1.0
			for l := s; l < T; l++ {
				want += w * delta(l)
				if r.Done[l*E+e] {
					break
				}
				w *= gamma * lambda
			}
			if got := r.Adv[s*E+e]; math.Abs(got-want) > 1e-9 {
				t.Fatalf("env %d t %d: Adv %v, want %v", e, s, got, want)
			}
		}
	}
	var mb RolloutBatch
	r.Gather(&mb, r.Shuffle(rng)[:30], true)
	var m, v float64
	for _, a := range mb.Adv {
		m += float64(a)
	}
	m /= 30
	for _, a := range mb.Adv {
		v += (float64(a) - m) * (float64(a) - m)
	}
	if math.Abs(m) > 1e-5 || math.Abs(v/29-1) > 1e-4 {
		t.Errorf("normalised advantages have mean %v variance %v", m, v/29)
	}
}
