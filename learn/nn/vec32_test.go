package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAdamVectorMatchesScalar runs Adam on float32 parameters of several
// lengths (multiples of 8, tails, and shorter than 8) with the AVX path and
// with the scalar loop, and requires bit-identical parameters and moments
// after several steps.
func TestAdamVectorMatchesScalar(t *testing.T) {
	if !actFast {
		t.Skip("no AVX2")
	}
	run := func(fast bool) [][]float32 {
		defer func(f bool) { actFast = f }(actFast)
		actFast = fast
		rng := rand.New(rand.NewPCG(4, 4))
		var ps []*Node[float32]
		for _, n := range []int{1, 7, 8, 9, 64, 203} {
			p := NewParam[float32]("p", 1, n)
			for i := range p.Value.Data {
				p.Value.Data[i] = float32(rng.NormFloat64())
			}
			ps = append(ps, p)
		}
		opt := NewAdam(ps, DefaultAdam())
		for step := 0; step < 5; step++ {
			for _, p := range ps {
				for i := range p.Grad.Data {
					p.Grad.Data[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(7)-3)))
				}
			}
			opt.Step()
		}
		var out [][]float32
		for i, p := range ps {
			out = append(out, p.Value.Data, opt.m[i], opt.v[i])
		}
		return out
	}
	fast, slow := run(true), run(false)
	for i := range fast {
		for j := range fast[i] {
			if math.Float32bits(fast[i][j]) != math.Float32bits(slow[i][j]) {
				t.Fatalf("array %d element %d: vector %v, scalar %v", i, j, fast[i][j], slow[i][j])
			}
		}
	}
}

// TestColSumAddVector checks the AVX column sums against the scalar loop:
// identical bits (same additions, same order), with and without a tail.
func TestColSumAddVector(t *testing.T) {
	if !actFast {
		t.Skip("no AVX")
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for _, cols := range []int{8, 13, 192} {
		g := TensorFrom(37, cols, rnd32(rng, 37*cols))
		fast := rnd32(rng, cols)
		slow := append([]float32(nil), fast...)
		colSumAdd(fast, g)
		actFast = false
		colSumAdd(slow, g)
		actFast = true
		for j := range fast {
			if math.Float32bits(fast[j]) != math.Float32bits(slow[j]) {
				t.Fatalf("cols=%d: [%d] = %v, scalar %v", cols, j, fast[j], slow[j])
			}
		}
	}
}
