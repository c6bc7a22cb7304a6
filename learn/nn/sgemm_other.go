//go:build !amd64

package nn

// sgemmFast is false off amd64: float32 products use gonum.
var sgemmFast = false

func sgemmKernel(k int, a, b, c []float32, ldc int) {
	panic("nn: sgemmKernel without AVX2")
}
