//go:build !amd64 || noasm

package nn

// sgemmFast and actFast are false off amd64 and with the build tag noasm:
// float32 products use gonum's blas32, activations and Adam scalar Go.
var sgemmFast, actFast = false, false

func sigmoid32x4(dst, src *float32, n int) { panic("nn: sigmoid32x4 without AVX2") }

func tanh32x4(dst, src *float32, n int) { panic("nn: tanh32x4 without AVX2") }

func sgemmKernel(k int, a []float32, rs, cs int, b, c []float32, ldc int, overwrite bool) {
	panic("nn: sgemmKernel without AVX2")
}

func adamStep32x8(w, m, v, grad *float32, n int, c *[8]float32) {
	panic("nn: adamStep32x8 without AVX")
}

func gruPreRZ32(rz, gx, bx, gh, bh *float32, n int) { panic("nn: gruPreRZ32 without AVX2") }

func gruPreN32(cand, gx, bx, gh, bh, r *float32, n int) { panic("nn: gruPreN32 without AVX2") }

func gruMix32(hNext, z, cand, h *float32, n int) { panic("nn: gruMix32 without AVX2") }

func gruBackRow32(dx, dg, dy, dp, hv, gt, gh *float32, m float32, h int) {
	panic("nn: gruBackRow32 without AVX2")
}

func addTo32(dst, src *float32, n int) { panic("nn: addTo32 without AVX") }
