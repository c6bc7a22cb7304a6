package nn

import "sync"

// Packed float32 GEMM. gonum's float32 GEMM updates one row of C at a time
// with an axpy, loading and storing C for every multiply-add. With AVX2 and
// FMA, sgemmPacked instead copies op(A) and op(B) into panels (which also
// absorbs transposes, strides and alpha) and multiplies them with a 6×16
// register-blocked kernel that keeps its tile of C in registers over the
// whole inner dimension. Summation order is fixed by the blocking, so
// results are deterministic on a given machine.
const (
	sgemmMR = 6   // rows of a micro-tile
	sgemmNR = 16  // columns of a micro-tile
	sgemmKC = 256 // depth of a packed block
	sgemmMC = 120 // rows of a packed A block (multiple of sgemmMR)
	sgemmNC = 192 // columns of a packed B block (multiple of sgemmNR)
)

// sgemmWork holds the packing buffers of sgemmPacked (about 320 KB). Each
// Tape owns one, made at its first float32 product, so training loops do
// not allocate; products outside a tape take one from sgemmPool.
type sgemmWork struct {
	a    [sgemmMC * sgemmKC]float32
	b    [sgemmKC * sgemmNC]float32
	tile [sgemmMR * sgemmNR]float32
	// pinned reports that b holds a whole k×n operand packed by sgemmPin.
	pinned     bool
	pinK, pinN int
}

var sgemmPool = sync.Pool{New: func() any { return new(sgemmWork) }}

// sgemmPacked computes c = alpha·op(a)·op(b) + beta·c for an m×k op(a) and
// a k×n op(b); a, b and c are row-major with row strides lda, ldb and ldc.
// w holds the packing buffers (nil: one from sgemmPool). It requires
// sgemmFast, m, n, k > 0.
func sgemmPacked(w *sgemmWork, tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if w == nil {
		w = sgemmPool.Get().(*sgemmWork)
		defer sgemmPool.Put(w)
	}
	w.pinned = false
	if alpha == 0 || beta != 0 {
		scaleRows(c, m, n, ldc, beta)
	}
	if alpha == 0 {
		return
	}
	for jc := 0; jc < n; jc += sgemmNC {
		nc := min(sgemmNC, n-jc)
		for pc := 0; pc < k; pc += sgemmKC {
			kc := min(sgemmKC, k-pc)
			packB(w.b[:], tB, b, ldb, pc, kc, jc, nc)
			// With beta = 0 the first depth block stores instead of adding,
			// so C is neither cleared nor read.
			sgemmBlock(w, tA, m, nc, kc, pc, alpha, a, lda, c[jc:], ldc, beta == 0 && pc == 0)
		}
	}
}

// sgemmPin packs op(b) (k×n) into w for several sgemmPinned products with
// the same right operand, such as a GRU's recurrent weights over the steps
// of a window. It reports false when op(b) exceeds one packed block. The
// packing stays valid until the next sgemmPacked call with w.
func sgemmPin(w *sgemmWork, tB bool, k, n int, b []float32, ldb int) bool {
	if k > sgemmKC || n > sgemmNC {
		return false
	}
	packB(w.b[:], tB, b, ldb, 0, k, 0, n)
	w.pinned, w.pinK, w.pinN = true, k, n
	return true
}

// sgemmPinned computes c = alpha·op(a)·B + beta·c for the m×k op(a) and the
// matrix B pinned in w by sgemmPin.
func sgemmPinned(w *sgemmWork, tA bool, m int, alpha float32, a []float32, lda int, beta float32, c []float32, ldc int) {
	if !w.pinned {
		panic("nn: sgemmPinned without a pinned operand")
	}
	if alpha == 0 || beta != 0 {
		scaleRows(c, m, w.pinN, ldc, beta)
	}
	if alpha != 0 {
		sgemmBlock(w, tA, m, w.pinN, w.pinK, 0, alpha, a, lda, c, ldc, beta == 0)
	}
}

// scaleRows multiplies the m×n matrix c (row stride ldc) by beta.
func scaleRows(c []float32, m, n, ldc int, beta float32) {
	if beta != 1 {
		for i := 0; i < m; i++ {
			scaleInPlace(c[i*ldc:i*ldc+n], beta)
		}
	}
}

// sgemmBlock adds alpha·op(a)[:, pc:pc+kc] times the kc×nc block of op(b)
// packed in w.b to the m×nc matrix c, or stores it there if overwrite. With alpha = 1 the kernel reads whole
// 6-row panels of op(a) in place; only a last partial panel is packed (with
// zeros) into w.a. Otherwise all of op(a) is packed, scaled by alpha.
func sgemmBlock(w *sgemmWork, tA bool, m, nc, kc, pc int, alpha float32, a []float32, lda int, c []float32, ldc int, overwrite bool) {
	for ic := 0; ic < m; ic += sgemmMC {
		mc := min(sgemmMC, m-ic)
		direct := alpha == 1
		full := mc // rows read in place
		if direct {
			full = mc - mc%sgemmMR
			if full < mc {
				packA(w.a[:], tA, a, lda, ic+full, mc-full, pc, kc, 1)
			}
		} else {
			packA(w.a[:], tA, a, lda, ic, mc, pc, kc, alpha)
		}
		for jr := 0; jr < nc; jr += sgemmNR {
			nr := min(sgemmNR, nc-jr)
			bp := w.b[jr*kc : (jr+sgemmNR)*kc]
			for ir := 0; ir < mc; ir += sgemmMR {
				mr := min(sgemmMR, mc-ir)
				// The panel: op(a)(i, l) at ap[i·rs + l·cs].
				var ap []float32
				rs, cs := 1, sgemmMR
				switch {
				case direct && ir < full && tA:
					ap, rs, cs = a[pc*lda+ic+ir:], 1, lda
				case direct && ir < full:
					ap, rs, cs = a[(ic+ir)*lda+pc:], lda, 1
				case direct:
					ap = w.a[:sgemmMR*kc]
				default:
					ap = w.a[ir*kc : (ir+sgemmMR)*kc]
				}
				off := (ic+ir)*ldc + jr
				if mr == sgemmMR && nr == sgemmNR {
					sgemmKernel(kc, ap, rs, cs, bp, c[off:], ldc, overwrite)
					continue
				}
				sgemmKernel(kc, ap, rs, cs, bp, w.tile[:], sgemmNR, true)
				for i := 0; i < mr; i++ {
					dst := c[off+i*ldc : off+i*ldc+nr]
					src := w.tile[i*sgemmNR : i*sgemmNR+nr]
					if overwrite {
						copy(dst, src)
						continue
					}
					for j, v := range src {
						dst[j] += v
					}
				}
			}
		}
	}
}

// packB copies rows pc:pc+kc, columns jc:jc+nc of op(b) into panels of
// sgemmNR columns, each kc×sgemmNR row-major, zero-padding the last panel.
func packB(dst []float32, tB bool, b []float32, ldb, pc, kc, jc, nc int) {
	for jr := 0; jr < nc; jr += sgemmNR {
		nr := min(sgemmNR, nc-jr)
		p := dst[jr*kc : (jr+sgemmNR)*kc]
		j0 := jc + jr
		if !tB && nr == sgemmNR {
			for l := 0; l < kc; l++ {
				o := (pc+l)*ldb + j0
				*(*[sgemmNR]float32)(p[l*sgemmNR:]) = [sgemmNR]float32(b[o : o+sgemmNR])
			}
			continue
		}
		if !tB {
			for l := 0; l < kc; l++ {
				row := p[l*sgemmNR : (l+1)*sgemmNR]
				src := b[(pc+l)*ldb+j0 : (pc+l)*ldb+j0+nr]
				copy(row, src)
				clear(row[nr:])
			}
			continue
		}
		if nr < sgemmNR {
			clear(p)
		}
		for j := 0; j < nr; j++ { // op(b)(l, j0+j) = b[(j0+j)*ldb + l]
			src := b[(j0+j)*ldb+pc : (j0+j)*ldb+pc+kc]
			for l, v := range src {
				p[l*sgemmNR+j] = v
			}
		}
	}
}

// packA copies alpha times rows ic:ic+mc, columns pc:pc+kc of op(a) into
// panels of sgemmMR rows, each kc×sgemmMR (column of the panel per step),
// zero-padding the last panel.
func packA(dst []float32, tA bool, a []float32, lda, ic, mc, pc, kc int, alpha float32) {
	for ir := 0; ir < mc; ir += sgemmMR {
		mr := min(sgemmMR, mc-ir)
		p := dst[ir*kc : (ir+sgemmMR)*kc]
		if mr < sgemmMR {
			clear(p)
		}
		i0 := ic + ir
		if tA { // op(a)(i0+i, l) = a[l*lda + i0+i]
			for l := 0; l < kc; l++ {
				src := a[(pc+l)*lda+i0 : (pc+l)*lda+i0+mr]
				q := p[l*sgemmMR : l*sgemmMR+mr]
				for i, v := range src {
					q[i] = alpha * v
				}
			}
			continue
		}
		if mr == sgemmMR { // six rows at once: sequential writes
			o := i0*lda + pc
			r0, r1, r2 := a[o:o+kc], a[o+lda:o+lda+kc], a[o+2*lda:o+2*lda+kc]
			r3, r4, r5 := a[o+3*lda:o+3*lda+kc], a[o+4*lda:o+4*lda+kc], a[o+5*lda:o+5*lda+kc]
			for l := range r0 {
				q := (*[sgemmMR]float32)(p[l*sgemmMR:])
				q[0], q[1], q[2] = alpha*r0[l], alpha*r1[l], alpha*r2[l]
				q[3], q[4], q[5] = alpha*r3[l], alpha*r4[l], alpha*r5[l]
			}
			continue
		}
		for i := 0; i < mr; i++ {
			src := a[(i0+i)*lda+pc : (i0+i)*lda+pc+kc]
			for l, v := range src {
				p[l*sgemmMR+i] = alpha * v
			}
		}
	}
}
