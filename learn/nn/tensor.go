package nn

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

// Float is the element type of tensors: float32 for networks, float64 where
// precision matters (gradient checks, small models).
type Float interface{ float32 | float64 }

// Tensor is a dense row-major matrix of Rows×Cols elements. Element (i, j)
// is Data[i*Cols+j]. A batch of samples is one sample per row. The zero value
// is an empty 0×0 tensor.
type Tensor[T Float] struct {
	Rows, Cols int
	Data       []T
}

// NewTensor returns a zeroed rows×cols tensor.
func NewTensor[T Float](rows, cols int) Tensor[T] {
	if rows < 0 || cols < 0 {
		panic(fmt.Sprintf("nn: negative tensor shape %dx%d", rows, cols))
	}
	return Tensor[T]{Rows: rows, Cols: cols, Data: make([]T, rows*cols)}
}

// TensorFrom returns a rows×cols tensor that uses data (not copied) as its
// storage. It panics if len(data) != rows*cols.
func TensorFrom[T Float](rows, cols int, data []T) Tensor[T] {
	if len(data) != rows*cols {
		panic(fmt.Sprintf("nn: TensorFrom: len(data)=%d, want %dx%d", len(data), rows, cols))
	}
	return Tensor[T]{Rows: rows, Cols: cols, Data: data}
}

// At returns element (i, j).
func (t Tensor[T]) At(i, j int) T { return t.Data[i*t.Cols+j] }

// Set sets element (i, j) to v.
func (t Tensor[T]) Set(i, j int, v T) { t.Data[i*t.Cols+j] = v }

// Row returns row i as a slice sharing storage with t.
func (t Tensor[T]) Row(i int) []T { return t.Data[i*t.Cols : (i+1)*t.Cols] }

// Len returns the number of elements, Rows*Cols.
func (t Tensor[T]) Len() int { return t.Rows * t.Cols }

// Shape returns "RxC", used in error messages.
func (t Tensor[T]) shape() string { return fmt.Sprintf("%dx%d", t.Rows, t.Cols) }

// resize sets the shape to r×c, reusing the backing array when it is large
// enough. Contents are unspecified afterwards.
func (t *Tensor[T]) resize(r, c int) {
	n := r * c
	if cap(t.Data) >= n {
		t.Data = t.Data[:n]
	} else {
		t.Data = make([]T, n)
	}
	t.Rows, t.Cols = r, c
}

// resizeZero is resize followed by zeroing.
func (t *Tensor[T]) resizeZero(r, c int) {
	t.resize(r, c)
	clear(t.Data)
}

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// gonum's GEMM spawns goroutines (and allocates) once the output has 4 or
// more 64×64 blocks. For the small matrices of RL networks the serial kernel
// is as fast on few cores, so gemm cuts large products into tiles of at most
// 3 such blocks, each of which stays on gonum's serial path.
const (
	gemmBlock     = 64
	gemmMaxBlocks = 3
)

// gemm computes c = alpha*op(a)*op(b) + beta*c, where op transposes its
// argument when the matching flag is set. Shapes must agree.
func gemm[T Float](tA, tB bool, alpha T, a, b Tensor[T], beta T, c Tensor[T]) {
	gemmWith(nil, tA, tB, alpha, a, b, beta, c)
}

// gemm is gemm with the packing buffers of n's tape.
func (n *Node[T]) gemm(tA, tB bool, alpha T, a, b Tensor[T], beta T, c Tensor[T]) {
	gemmWith(n.tape.sgemmWork(), tA, tB, alpha, a, b, beta, c)
}

// pinB packs op(b) in n's tape for repeated gemmPinned products (the
// recurrent weights over a window's steps). It returns false, and pins
// nothing, unless the product is float32 on the packed path and op(b) fits
// one packed block; callers then use gemm. Any gemm with the same tape
// invalidates the pin.
func (n *Node[T]) pinB(tB bool, b Tensor[T]) bool {
	w := n.tape.sgemmWork()
	if w == nil {
		return false
	}
	k, c := b.Rows, b.Cols
	if tB {
		k, c = c, k
	}
	return k > 0 && c > 0 && sgemmPin(w, tB, k, c, any(b.Data).([]float32), b.Cols)
}

// gemmPinned computes c = alpha·op(a)·B + beta·c with the operand B pinned
// by pinB.
func (n *Node[T]) gemmPinned(tA bool, alpha T, a Tensor[T], beta T, c Tensor[T]) {
	w := n.tape.sgemmWork()
	m, k := a.Rows, a.Cols
	if tA {
		m, k = k, m
	}
	if w == nil || !w.pinned || k != w.pinK || c.Rows != m || c.Cols != w.pinN {
		panic(fmt.Sprintf("nn: gemmPinned: op(a) %dx%d, c %s", m, k, c.shape()))
	}
	if m == 0 {
		return
	}
	sgemmPinned(w, tA, m, float32(alpha), any(a.Data).([]float32), a.Cols, float32(beta), any(c.Data).([]float32), c.Cols)
}

// gemmWith is gemm with packing buffers w for float32 products (nil: a
// pooled set).
func gemmWith[T Float](w *sgemmWork, tA, tB bool, alpha T, a, b Tensor[T], beta T, c Tensor[T]) {
	m, k := a.Rows, a.Cols
	if tA {
		m, k = k, m
	}
	kb, n := b.Rows, b.Cols
	if tB {
		kb, n = n, kb
	}
	if k != kb || c.Rows != m || c.Cols != n {
		panic(fmt.Sprintf("nn: gemm shape mismatch: op(a) %dx%d, op(b) %dx%d, c %s", m, k, kb, n, c.shape()))
	}
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		scaleInPlace(c.Data, beta)
		return
	}
	if cd, ok := any(c.Data).([]float32); ok && sgemmFast {
		sgemmPacked(w, tA, tB, m, n, k, float32(alpha), any(a.Data).([]float32), a.Cols,
			any(b.Data).([]float32), b.Cols, float32(beta), cd, n)
		return
	}
	colStep := n
	if nb := (n + gemmBlock - 1) / gemmBlock; nb > gemmMaxBlocks {
		colStep = gemmMaxBlocks * gemmBlock
	}
	rowStep := m
	if nb := (colStep + gemmBlock - 1) / gemmBlock; nb*((m+gemmBlock-1)/gemmBlock) > gemmMaxBlocks {
		rowStep = gemmBlock * (gemmMaxBlocks / nb)
	}
	for r0 := 0; r0 < m; r0 += rowStep {
		r1 := min(r0+rowStep, m)
		// Rows r0:r1 of op(a): a row block of a, or a column block when transposed.
		aOff := r0 * a.Cols
		if tA {
			aOff = r0
		}
		for c0 := 0; c0 < n; c0 += colStep {
			c1 := min(c0+colStep, n)
			// Columns c0:c1 of op(b): a column block of b, or a row block when transposed.
			bOff := c0
			if tB {
				bOff = c0 * b.Cols
			}
			gemmCall(tA, tB, r1-r0, c1-c0, k, alpha, a.Data[aOff:], a.Cols, b.Data[bOff:], b.Cols,
				beta, c.Data[r0*n+c0:], n)
		}
	}
}

// gemmCall hands one m×n×k product to blas32 or blas64. Matrices are given
// by their data from the first element and their row stride.
func gemmCall[T Float](tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	ar, ac := m, k
	if tA {
		ar, ac = k, m
	}
	br, bc := k, n
	if tB {
		br, bc = n, k
	}
	switch ad := any(a).(type) {
	case []float32:
		blas32.Gemm(trans(tA), trans(tB), float32(alpha),
			blas32.General{Rows: ar, Cols: ac, Stride: lda, Data: ad},
			blas32.General{Rows: br, Cols: bc, Stride: ldb, Data: any(b).([]float32)},
			float32(beta),
			blas32.General{Rows: m, Cols: n, Stride: ldc, Data: any(c).([]float32)})
	case []float64:
		blas64.Gemm(trans(tA), trans(tB), float64(alpha),
			blas64.General{Rows: ar, Cols: ac, Stride: lda, Data: ad},
			blas64.General{Rows: br, Cols: bc, Stride: ldb, Data: any(b).([]float64)},
			float64(beta),
			blas64.General{Rows: m, Cols: n, Stride: ldc, Data: any(c).([]float64)})
	}
}

func scaleInPlace[T Float](x []T, s T) {
	if s == 0 {
		clear(x)
		return
	}
	for i := range x {
		x[i] *= s
	}
}
