//go:build !noasm

package nn

// Declarations of the amd64 assembly kernels (sgemm_amd64.s, act32_amd64.s,
// gates_amd64.s, optim_amd64.s) and the CPU feature check that enables
// them; asm_other.go stands in elsewhere and with the build tag noasm.

// cpuid executes CPUID with the given leaf and subleaf.
func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)

// xgetbv0 reads extended control register 0 (the OS-enabled state).
func xgetbv0() (eax, edx uint32)

// sgemmKernel6x16 adds the 6×16 product of a 6-row panel of op(A) (element
// (i, l) at a[i·rs + l·cs]) and a packed 16-column panel b (k×16) to c (row
// stride ldc elements), or stores it there when overwrite is set. It needs
// AVX2 and FMA.
//
//go:noescape
func sgemmKernel6x16(k int, a *float32, rs, cs int, b, c *float32, ldc int, overwrite bool)

// hasAVX2FMA queries CPUID and XCR0 for AVX2 and FMA3.
func hasAVX2FMA() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const fma, osxsave, avx = 1 << 12, 1 << 27, 1 << 28
	if ecx1&(fma|osxsave|avx) != fma|osxsave|avx {
		return false
	}
	if xcr0, _ := xgetbv0(); xcr0&6 != 6 { // XMM and YMM state enabled
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0
}

// cpuAVX2FMA reports whether the CPU and OS support AVX2 and FMA3.
var cpuAVX2FMA = hasAVX2FMA()

// sgemmFast reports whether sgemmPacked's AVX2 kernel is used for float32
// products. Tests may switch it off to exercise the gonum path.
var sgemmFast = cpuAVX2FMA

// actFast reports whether the other vectorised float32 kernels (GRU gate
// activations and loops, Adam, column sums) are used. Tests may switch it
// off to exercise the scalar Go paths.
var actFast = cpuAVX2FMA

// sigmoid32x4 and tanh32x4 apply sigmoid and tanh to n (a multiple of 4)
// float32 values from src to dst, which may be the same. They need AVX2 and
// FMA.
//
//go:noescape
func sigmoid32x4(dst, src *float32, n int)

//go:noescape
func tanh32x4(dst, src *float32, n int)

func sgemmKernel(k int, a []float32, rs, cs int, b, c []float32, ldc int, overwrite bool) {
	sgemmKernel6x16(k, &a[0], rs, cs, &b[0], &c[0], ldc, overwrite)
}

// adamStep32x8 is Adam's update of n (a multiple of 8) float32 parameters
// w with moments m, v and gradients grad; c holds β1, 1−β1, β2, 1−β2, the step
// size, 1/√bc2 and ε. It needs AVX.
//
//go:noescape
func adamStep32x8(w, m, v, grad *float32, n int, c *[8]float32)

// gruPreRZ32, gruPreN32 and gruMix32 are the elementwise loops of
// gruGatesBias32 for n (a multiple of 8) values (gates_amd64.s). They need
// AVX2 (VBROADCASTSS from a register).
//
//go:noescape
func gruPreRZ32(rz, gx, bx, gh, bh *float32, n int)

//go:noescape
func gruPreN32(cand, gx, bx, gh, bh, r *float32, n int)

//go:noescape
func gruMix32(hNext, z, cand, h *float32, n int)

// gruBackRow32 is one sample's step of backGRUSeq for h (a multiple of 8)
// units (gates_amd64.s). It needs AVX2.
//
//go:noescape
func gruBackRow32(dx, dg, dy, dp, hv, gt, gh *float32, m float32, h int)

// addTo32 adds src to dst elementwise for n (a multiple of 8) values
// (gates_amd64.s). It needs AVX.
//
//go:noescape
func addTo32(dst, src *float32, n int)
