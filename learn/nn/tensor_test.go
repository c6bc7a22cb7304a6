package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// naiveGemm is the reference for gemm: c = alpha·op(a)·op(b) + beta·c.
func naiveGemm(tA, tB bool, alpha float64, a, b Tensor[float64], beta float64, c Tensor[float64]) {
	at := func(i, k int) float64 {
		if tA {
			return a.At(k, i)
		}
		return a.At(i, k)
	}
	bt := func(k, j int) float64 {
		if tB {
			return b.At(j, k)
		}
		return b.At(k, j)
	}
	k := a.Cols
	if tA {
		k = a.Rows
	}
	for i := 0; i < c.Rows; i++ {
		for j := 0; j < c.Cols; j++ {
			var s float64
			for l := 0; l < k; l++ {
				s += at(i, l) * bt(l, j)
			}
			c.Set(i, j, alpha*s+beta*c.At(i, j))
		}
	}
}

// TestGemmTiling compares the tiled BLAS product with a naive one for
// shapes below and above the tiling thresholds, in all transpose modes.
func TestGemmTiling(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	rnd := func(r, c int) Tensor[float64] {
		x := NewTensor[float64](r, c)
		for i := range x.Data {
			x.Data[i] = rng.NormFloat64()
		}
		return x
	}
	for _, sh := range [][3]int{{3, 4, 5}, {256, 16, 64}, {300, 70, 130}, {65, 200, 300}, {1, 64, 1}, {130, 3, 260}} {
		m, k, n := sh[0], sh[1], sh[2]
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				t.Run(fmt.Sprintf("%dx%dx%d/%v/%v", m, k, n, tA, tB), func(t *testing.T) {
					a := rnd(m, k)
					if tA {
						a = rnd(k, m)
					}
					b := rnd(k, n)
					if tB {
						b = rnd(n, k)
					}
					c := rnd(m, n)
					want := NewTensor[float64](m, n)
					copy(want.Data, c.Data)
					gemm(tA, tB, 0.7, a, b, 0.3, c)
					naiveGemm(tA, tB, 0.7, a, b, 0.3, want)
					for i := range c.Data {
						if math.Abs(c.Data[i]-want.Data[i]) > 1e-9*(1+math.Abs(want.Data[i])) {
							t.Fatalf("element %d: got %v, want %v", i, c.Data[i], want.Data[i])
						}
					}
				})
			}
		}
	}
}

// TestGemmNoAllocs checks that large products stay off gonum's parallel
// path, which allocates.
func TestGemmNoAllocs(t *testing.T) {
	a, b, c := NewTensor[float32](300, 200), NewTensor[float32](200, 300), NewTensor[float32](300, 300)
	if n := testing.AllocsPerRun(5, func() { gemm(false, false, 1, a, b, 0, c) }); n != 0 {
		t.Fatalf("gemm 300x200x300: %v allocs, want 0", n)
	}
}
