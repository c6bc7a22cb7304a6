package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestSgemmPacked checks float32 gemm against a float64 product of the
// same operands, for shapes on both sides of every blocking size (micro-tile
// 6×16, KC, MC, NC), all transpose modes, and padded row strides. The error
// bound is the classic one for a length-k dot product in float32:
// |got − want| ≤ 2k·u·(|α|·Σ|a||b| + |β·c|) with u = 2⁻²⁴.
func TestSgemmPacked(t *testing.T) {
	if !sgemmFast {
		t.Skip("no AVX2/FMA: float32 products use gonum")
	}
	rng := rand.New(rand.NewPCG(2, 3))
	shapes := [][3]int{ // m, k, n
		{1, 1, 1}, {6, 4, 16}, {7, 5, 17}, {5, 3, 15}, {64, 89, 192}, {512, 89, 192},
		{89, 512, 192}, {64, 192, 64}, {121, 257, 385}, {13, 600, 3}, {240, 64, 1}, {2, 700, 400},
	}
	for _, sh := range shapes {
		m, k, n := sh[0], sh[1], sh[2]
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, pad := range []int{0, 3, 5} {
					t.Run(fmt.Sprintf("%dx%dx%d/%v/%v/pad%d", m, k, n, tA, tB, pad), func(t *testing.T) {
						ar, ac := m, k
						if tA {
							ar, ac = k, m
						}
						br, bc := k, n
						if tB {
							br, bc = n, k
						}
						lda, ldb, ldc := ac+pad, bc+pad, n+pad
						a, b, c := rnd32(rng, ar*lda), rnd32(rng, br*ldb), rnd32(rng, m*ldc)
						c0 := append([]float32(nil), c...)
						alpha, beta := float32(1), float32(-0.5) // alpha 1 reads op(a) in place
						if pad == 3 {
							alpha = 0.75 // packs op(a)
						}
						sgemmPacked(nil, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
						at := func(i, l int) float64 {
							if tA {
								return float64(a[l*lda+i])
							}
							return float64(a[i*lda+l])
						}
						bt := func(l, j int) float64 {
							if tB {
								return float64(b[j*ldb+l])
							}
							return float64(b[l*ldb+j])
						}
						for i := 0; i < m; i++ {
							for j := 0; j < ldc; j++ {
								got := float64(c[i*ldc+j])
								if j >= n {
									if got != float64(c0[i*ldc+j]) {
										t.Fatalf("padding (%d,%d) changed", i, j)
									}
									continue
								}
								var s, abs float64
								for l := 0; l < k; l++ {
									s += at(i, l) * bt(l, j)
									abs += math.Abs(at(i, l) * bt(l, j))
								}
								want := float64(alpha)*s + float64(beta)*float64(c0[i*ldc+j])
								tol := 2 * float64(k+2) * 0x1p-24 * (float64(alpha)*abs + math.Abs(float64(beta)*float64(c0[i*ldc+j])))
								if math.Abs(got-want) > tol {
									t.Fatalf("(%d,%d): got %v, want %v ± %v", i, j, got, want, tol)
								}
							}
						}
					})
				}
			}
		}
	}
}

// TestSgemmBetaZero checks that beta = 0 overwrites C, even NaN, as BLAS does.
func TestSgemmBetaZero(t *testing.T) {
	a, b := NewTensor[float32](7, 3), NewTensor[float32](3, 17)
	c := NewTensor[float32](7, 17)
	for i := range a.Data {
		a.Data[i] = 1
	}
	for i := range b.Data {
		b.Data[i] = 2
	}
	for i := range c.Data {
		c.Data[i] = float32(math.NaN())
	}
	gemm(false, false, 1, a, b, 0, c)
	for i, v := range c.Data {
		if v != 6 {
			t.Fatalf("c[%d] = %v, want 6", i, v)
		}
	}
}

// TestSgemmMatchesGonum runs the same float32 products through the packed
// kernel and through gonum's path and requires agreement to float32
// rounding, so machines without AVX2 compute the same function.
func TestSgemmMatchesGonum(t *testing.T) {
	if !sgemmFast {
		t.Skip("no AVX2/FMA")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := TensorFrom(64, 89, rnd32(rng, 64*89)), TensorFrom(89, 192, rnd32(rng, 89*192))
	fast, slow := NewTensor[float32](64, 192), NewTensor[float32](64, 192)
	gemm(false, false, 1, a, b, 0, fast)
	sgemmFast = false
	gemm(false, false, 1, a, b, 0, slow)
	sgemmFast = true
	for i := range fast.Data {
		if d := math.Abs(float64(fast.Data[i] - slow.Data[i])); d > 1e-5*(1+math.Abs(float64(slow.Data[i]))) {
			t.Fatalf("element %d: packed %v, gonum %v", i, fast.Data[i], slow.Data[i])
		}
	}
}

func rnd32(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// BenchmarkGemm32 times float32 products, packed kernel and gonum, of the recurrent SAC shapes:
// a GRU input projection (64×89 by 89×192), the same over a window of 8
// steps at once (512×89), and the weight gradient xᵀ·dG (89×512 by 512×192).
func BenchmarkGemm32(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name    string
		tA      bool
		m, k, n int
	}{{"64x89x192", false, 64, 89, 192}, {"512x89x192", false, 512, 89, 192}, {"T89x512x192", true, 89, 512, 192}} {
		for _, packed := range []bool{true, false} {
			if packed && !sgemmFast {
				continue
			}
			name := c.name + "/gonum"
			if packed {
				name = c.name + "/packed"
			}
			b.Run(name, func(b *testing.B) {
				defer func(f bool) { sgemmFast = f }(sgemmFast)
				sgemmFast = packed
				ar, ac := c.m, c.k
				if c.tA {
					ar, ac = c.k, c.m
				}
				x, w, y := TensorFrom(ar, ac, rnd32(rng, ar*ac)), TensorFrom(c.k, c.n, rnd32(rng, c.k*c.n)), NewTensor[float32](c.m, c.n)
				b.ReportAllocs()
				for b.Loop() {
					gemm(c.tA, false, 1, x, w, 1, y)
				}
				b.ReportMetric(float64(2*c.m*c.n*c.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestSgemmPinned checks products with a pinned right operand against the
// unpinned packed product: identical results (same kernel, same order), for
// both transposes of the pinned operand and of the left one, and that an
// operand larger than one block is refused.
func TestSgemmPinned(t *testing.T) {
	if !sgemmFast {
		t.Skip("no AVX2/FMA")
	}
	rng := rand.New(rand.NewPCG(8, 1))
	w := new(sgemmWork)
	for _, sh := range [][3]int{{64, 64, 192}, {64, 192, 64}, {7, 5, 17}, {130, 256, 192}} {
		m, k, n := sh[0], sh[1], sh[2]
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				lda, ldb := k, n
				if tA {
					lda = m
				}
				if tB {
					ldb = k
				}
				a, b := rnd32(rng, m*k), rnd32(rng, k*n)
				c0 := rnd32(rng, m*n)
				want := append([]float32(nil), c0...)
				sgemmPacked(w, tA, tB, m, n, k, 1, a, lda, b, ldb, 1, want, n)
				if !sgemmPin(w, tB, k, n, b, ldb) {
					t.Fatalf("%v: not pinned", sh)
				}
				for rep := 0; rep < 2; rep++ { // the pin survives products
					got := append([]float32(nil), c0...)
					sgemmPinned(w, tA, m, 1, a, lda, 1, got, n)
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("%v tA=%v tB=%v: [%d] = %v, want %v", sh, tA, tB, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
	if sgemmPin(w, false, sgemmKC+1, 8, make([]float32, (sgemmKC+1)*8), 8) {
		t.Error("pinned an operand deeper than one block")
	}
}
