//go:build !amd64

package nn

// sgemmFast and actFast are false off amd64: float32 products use gonum
// and activations the scalar Go code.
var sgemmFast, actFast = false, false

func sigmoid32x4(dst, src *float32, n int) { panic("nn: sigmoid32x4 without AVX2") }

func tanh32x4(dst, src *float32, n int) { panic("nn: tanh32x4 without AVX2") }

func sgemmKernel(k int, a []float32, rs, cs int, b, c []float32, ldc int) {
	panic("nn: sgemmKernel without AVX2")
}

func adamStep32x8(w, m, v, grad *float32, n int, c *[8]float32) {
	panic("nn: adamStep32x8 without AVX")
}
