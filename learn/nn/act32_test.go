package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ulps32 is the distance between two float32 values in units in the last
// place (0 when equal, counting across zero).
func ulps32(a, b float32) int64 {
	ord := func(f float32) int64 {
		u := int64(math.Float32bits(f))
		if u&(1<<31) != 0 {
			return -(u &^ (1 << 31))
		}
		return u
	}
	d := ord(a) - ord(b)
	if d < 0 {
		d = -d
	}
	return d
}

// TestActivations32 compares sigmoid32 and tanh32 with float32 roundings of
// math.Exp and math.Tanh on a dense grid over [−20, 20], on random values
// across float32's exponent range, and at the special values: every result
// must be within one ulp, and almost all must be identical.
func TestActivations32(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var xs []float32
	for x := -20.0; x <= 20; x += 1.0 / 1024 {
		xs = append(xs, float32(x))
	}
	for i := 0; i < 100_000; i++ {
		e := rng.Float64()*60 - 45 // |x| from 1e-13 to 3e4
		xs = append(xs, float32(math.Copysign(math.Exp(e), rng.Float64()-0.5)))
	}
	xs = append(xs, 0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, 0.05, -0.05, 88, -88, 104, -104, 1e30, -1e30,
		float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, -math.MaxFloat32)
	for _, f := range []struct {
		name string
		fast func(float32) float32
		ref  func(float64) float64
	}{
		{"sigmoid32", sigmoid32, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }},
		{"tanh32", tanh32, math.Tanh},
	} {
		diff := 0
		for _, x := range xs {
			got, want := f.fast(x), float32(f.ref(float64(x)))
			if d := ulps32(got, want); d > 1 {
				t.Fatalf("%s(%v) = %v, want %v (%d ulps)", f.name, x, got, want, d)
			} else if d == 1 {
				diff++
			}
		}
		if frac := float64(diff) / float64(len(xs)); frac > 1e-3 {
			t.Errorf("%s: %.2g of results one ulp off, want <= 1e-3", f.name, frac)
		}
		if got := f.fast(float32(math.NaN())); got == got {
			t.Errorf("%s(NaN) = %v, want NaN", f.name, got)
		}
	}
}

// TestExpNonPos checks the float64 exponential against math.Exp to the
// relative accuracy its comment claims (1e-13).
func TestExpNonPos(t *testing.T) {
	for x := -708.0; x <= 0; x += 0.0137 {
		got, want := expNonPos(x), math.Exp(x)
		if math.Abs(got-want) > 1e-13*want {
			t.Fatalf("expNonPos(%v) = %v, want %v", x, got, want)
		}
	}
	if got := expNonPos(-1000); got != 0 {
		t.Errorf("expNonPos(-1000) = %v, want 0", got)
	}
}

func BenchmarkActivations32(b *testing.B) {
	x := make([]float32, 4096)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 3)
	}
	var s float32
	b.Run("vec", func(b *testing.B) {
		y := make([]float32, len(x))
		b.ReportAllocs()
		for b.Loop() {
			sigmoid32s(y, x)
			tanh32s(y, x)
		}
	})
	b.Run("scalar", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, v := range x {
				s += sigmoid32(v) + tanh32(v)
			}
		}
	})
	b.Run("math", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, v := range x {
				s += sigmoid(v) + float32(math.Tanh(float64(v)))
			}
		}
	})
	_ = s
}

// TestWiden checks widen against the float64 conversion on every exponent,
// both signs, and the special values.
func TestWiden(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for i := 0; i < 200_000; i++ {
		v := math.Float32frombits(rng.Uint32())
		got, want := widen(v), float64(v)
		if math.Float64bits(got) != math.Float64bits(want) && !(v != v && got != got) {
			t.Fatalf("widen(%v) = %v, want %v", v, got, want)
		}
	}
}

// TestActivations32Vec runs the vectorised activations over the same inputs
// as TestActivations32, with lengths that leave tails of 1 to 3 values, and
// requires the same accuracy against math, and agreement with the scalar
// functions to one ulp.
func TestActivations32Vec(t *testing.T) {
	if !actFast {
		t.Skip("no AVX2/FMA")
	}
	rng := rand.New(rand.NewPCG(7, 9))
	var xs []float32
	for x := -20.0; x <= 20; x += 1.0 / 1024 {
		xs = append(xs, float32(x))
	}
	for i := 0; i < 100_000; i++ {
		e := rng.Float64()*60 - 45
		xs = append(xs, float32(math.Copysign(math.Exp(e), rng.Float64()-0.5)))
	}
	xs = append(xs, 0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, 0.05, -0.05, 88, -88, 104, -104, 1e30, -1e30,
		float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, -math.MaxFloat32, float32(math.NaN()))
	for _, f := range []struct {
		name   string
		vec    func(dst, src []float32)
		scalar func(float32) float32
		ref    func(float64) float64
	}{
		{"sigmoid32s", sigmoid32s, sigmoid32, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }},
		{"tanh32s", tanh32s, tanh32, math.Tanh},
	} {
		for _, n := range []int{len(xs), len(xs) - 1, len(xs) - 2, len(xs) - 3, 3, 1} {
			src := xs[len(xs)-n:]
			got := make([]float32, n)
			f.vec(got, src)
			diff := 0
			for i, x := range src {
				want := float32(f.ref(float64(x)))
				if x != x {
					if got[i] == got[i] {
						t.Fatalf("%s(NaN) = %v", f.name, got[i])
					}
					continue
				}
				if d := ulps32(got[i], want); d > 1 {
					t.Fatalf("%s(%v) = %v, want %v (%d ulps)", f.name, x, got[i], want, d)
				} else if d == 1 {
					diff++
				}
				if d := ulps32(got[i], f.scalar(x)); d > 1 {
					t.Fatalf("%s(%v) = %v, scalar %v", f.name, x, got[i], f.scalar(x))
				}
			}
			if frac := float64(diff) / float64(n); n > 100 && frac > 1e-3 {
				t.Errorf("%s: %.2g of results one ulp off, want <= 1e-3", f.name, frac)
			}
		}
		in := append([]float32(nil), xs[:103]...) // in place
		want := make([]float32, len(in))
		f.vec(want, in)
		f.vec(in, in)
		for i := range in {
			if in[i] != want[i] {
				t.Fatalf("%s in place: [%d] = %v, want %v", f.name, i, in[i], want[i])
			}
		}
	}
}
