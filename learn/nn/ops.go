package nn

import (
	"fmt"
	"math"
)

type opKind uint8

const (
	opLeaf opKind = iota
	opAdd
	opSub
	opMul
	opMin
	opMax
	opScale
	opAddScalar
	opReLU
	opLeakyReLU
	opTanh
	opSigmoid
	opSoftplus
	opExp
	opLog
	opAbs
	opSquare
	opClip
	opMatMul
	opLinear
	opConcat
	opSliceCols
	opSum
	opMean
	opRowSum
	opLogSoftmax
	opSoftmax
	opGather
	opMSE
	opHuber
	opSquashAction
	opSquashLogProb
	opGaussLogProb
	opLayerNorm
	opBatchNorm
	opGRU
	opAttention
	opELU
	opColSum
	opBatchVecMat
	opRepeatRows
	opSumRowGroups
	opReshape
	opGRUSeq
	opTranspose
)

// backward adds n's contribution to the gradients of its inputs.
func (n *Node[T]) backward() {
	switch n.op {
	case opLeaf:
	case opAdd, opSub, opMul, opMin, opMax:
		n.backBinary()
	case opScale, opAddScalar, opELU, opReLU, opLeakyReLU, opTanh, opSigmoid, opSoftplus, opExp, opLog, opAbs, opSquare, opClip:
		n.backUnary()
	case opMatMul:
		n.backMatMul()
	case opLinear:
		n.backLinear()
	case opConcat:
		n.backConcat()
	case opSliceCols:
		n.backSliceCols()
	case opSum, opMean:
		n.backSum()
	case opRowSum:
		n.backRowSum()
	case opColSum:
		n.backColSum()
	case opBatchVecMat:
		n.backBatchVecMat()
	case opRepeatRows:
		n.backRepeatRows()
	case opSumRowGroups:
		n.backSumRowGroups()
	case opReshape:
		n.backReshape()
	case opTranspose:
		n.backTranspose()
	case opLogSoftmax:
		n.backLogSoftmax()
	case opSoftmax:
		n.backSoftmax()
	case opGather:
		n.backGather()
	case opMSE:
		n.backMSE()
	case opHuber:
		n.backHuber()
	case opSquashAction:
		n.backSquashAction()
	case opSquashLogProb:
		n.backSquashLogProb()
	case opGaussLogProb:
		n.backGaussLogProb()
	case opLayerNorm:
		n.backLayerNorm()
	case opBatchNorm:
		n.backBatchNorm()
	case opGRU:
		n.backGRU()
	case opGRUSeq:
		n.backGRUSeq()
	case opAttention:
		n.backAttention()
	default:
		panic(fmt.Sprintf("nn: no backward for op %d", n.op))
	}
}

// ---- binary elementwise ops with broadcasting of the second operand ----

// bstrides returns the row and column strides that map element (i, j) of a
// to the element of b broadcast against it: b may have a's shape, be a row
// vector (1×Cols), a column vector (Rows×1) or a scalar (1×1).
func bstrides[T Float](a, b Tensor[T], op string) (rs, cs int) {
	switch {
	case b.Rows == a.Rows && b.Cols == a.Cols:
		return b.Cols, 1
	case b.Rows == 1 && b.Cols == a.Cols:
		return 0, 1
	case b.Rows == a.Rows && b.Cols == 1:
		return 1, 0
	case b.Rows == 1 && b.Cols == 1:
		return 0, 0
	}
	panic(fmt.Sprintf("nn: %s: cannot broadcast %s to %s", op, b.shape(), a.shape()))
}

func (t *Tape[T]) binary(op opKind, name string, a, b *Node[T]) *Node[T] {
	rs, cs := bstrides(a.Value, b.Value, name)
	n := t.node(op, a.Value.Rows, a.Value.Cols, a, b)
	n.i0, n.i1 = rs, cs
	av, bv, y := a.Value.Data, b.Value.Data, n.Value.Data
	cols := a.Value.Cols
	if rs == cols && cs == 1 {
		switch op {
		case opAdd:
			for i := range y {
				y[i] = av[i] + bv[i]
			}
		case opSub:
			for i := range y {
				y[i] = av[i] - bv[i]
			}
		case opMul:
			for i := range y {
				y[i] = av[i] * bv[i]
			}
		case opMin:
			for i := range y {
				y[i] = min(av[i], bv[i])
			}
		case opMax:
			for i := range y {
				y[i] = max(av[i], bv[i])
			}
		}
		return n
	}
	for i := 0; i < a.Value.Rows; i++ {
		for j := 0; j < cols; j++ {
			k := i*cols + j
			x, z := av[k], bv[i*rs+j*cs]
			switch op {
			case opAdd:
				y[k] = x + z
			case opSub:
				y[k] = x - z
			case opMul:
				y[k] = x * z
			case opMin:
				y[k] = min(x, z)
			case opMax:
				y[k] = max(x, z)
			}
		}
	}
	return n
}

// Add returns a + b. b may have a's shape or broadcast as a row vector
// (1×Cols), column vector (Rows×1) or scalar (1×1).
func (t *Tape[T]) Add(a, b *Node[T]) *Node[T] { return t.binary(opAdd, "Add", a, b) }

// Sub returns a - b, broadcasting b as in Add.
func (t *Tape[T]) Sub(a, b *Node[T]) *Node[T] { return t.binary(opSub, "Sub", a, b) }

// Mul returns the elementwise product a ⊙ b, broadcasting b as in Add.
func (t *Tape[T]) Mul(a, b *Node[T]) *Node[T] { return t.binary(opMul, "Mul", a, b) }

// Min returns the elementwise minimum of a and b (for twin critics and
// PPO's clipped objective), broadcasting b as in Add. At ties the gradient
// goes to a.
func (t *Tape[T]) Min(a, b *Node[T]) *Node[T] { return t.binary(opMin, "Min", a, b) }

// Max returns the elementwise maximum of a and b, broadcasting b as in Add.
// At ties the gradient goes to a.
func (t *Tape[T]) Max(a, b *Node[T]) *Node[T] { return t.binary(opMax, "Max", a, b) }

func (n *Node[T]) backBinary() {
	a, b := n.in[0], n.in[1]
	rs, cs := n.i0, n.i1
	cols := n.Value.Cols
	dy, av, bv := n.Grad.Data, a.Value.Data, b.Value.Data
	da, db := a.Grad.Data, b.Grad.Data
	for i := 0; i < n.Value.Rows; i++ {
		for j := 0; j < cols; j++ {
			k := i*cols + j
			kb := i*rs + j*cs
			g := dy[k]
			var ga, gb T
			switch n.op {
			case opAdd:
				ga, gb = g, g
			case opSub:
				ga, gb = g, -g
			case opMul:
				ga, gb = g*bv[kb], g*av[k]
			case opMin:
				if av[k] <= bv[kb] {
					ga = g
				} else {
					gb = g
				}
			case opMax:
				if av[k] >= bv[kb] {
					ga = g
				} else {
					gb = g
				}
			}
			if a.needGrad {
				da[k] += ga
			}
			if b.needGrad {
				db[kb] += gb
			}
		}
	}
}

// ---- unary elementwise ops ----

func (t *Tape[T]) unary(op opKind, a *Node[T], f0, f1 T) *Node[T] {
	n := t.node(op, a.Value.Rows, a.Value.Cols, a)
	n.f0, n.f1 = f0, f1
	x, y := a.Value.Data, n.Value.Data
	switch op {
	case opScale:
		for i, v := range x {
			y[i] = f0 * v
		}
	case opAddScalar:
		for i, v := range x {
			y[i] = v + f0
		}
	case opReLU:
		for i, v := range x {
			y[i] = max(v, 0)
		}
	case opLeakyReLU:
		for i, v := range x {
			if v < 0 {
				v *= f0
			}
			y[i] = v
		}
	case opELU:
		for i, v := range x {
			if v < 0 {
				v = f0 * T(math.Expm1(float64(v)))
			}
			y[i] = v
		}
	case opTanh:
		for i, v := range x {
			y[i] = T(math.Tanh(float64(v)))
		}
	case opSigmoid:
		for i, v := range x {
			y[i] = sigmoid(v)
		}
	case opSoftplus:
		for i, v := range x {
			y[i] = softplus(v)
		}
	case opExp:
		for i, v := range x {
			y[i] = T(math.Exp(float64(v)))
		}
	case opLog:
		for i, v := range x {
			y[i] = T(math.Log(float64(v)))
		}
	case opAbs:
		for i, v := range x {
			y[i] = T(math.Abs(float64(v)))
		}
	case opSquare:
		for i, v := range x {
			y[i] = v * v
		}
	case opClip:
		for i, v := range x {
			y[i] = min(max(v, f0), f1)
		}
	}
	return n
}

func sigmoid[T Float](v T) T {
	if v >= 0 {
		return T(1 / (1 + math.Exp(-float64(v))))
	}
	e := math.Exp(float64(v))
	return T(e / (1 + e))
}

func softplus[T Float](v T) T {
	x := float64(v)
	return T(max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))))
}

// Scale returns s·a.
func (t *Tape[T]) Scale(a *Node[T], s T) *Node[T] { return t.unary(opScale, a, s, 0) }

// AddScalar returns a + s elementwise.
func (t *Tape[T]) AddScalar(a *Node[T], s T) *Node[T] { return t.unary(opAddScalar, a, s, 0) }

// ReLU returns max(a, 0) elementwise (gradient 0 at 0).
func (t *Tape[T]) ReLU(a *Node[T]) *Node[T] { return t.unary(opReLU, a, 0, 0) }

// LeakyReLU returns a where a ≥ 0 and alpha·a elsewhere.
func (t *Tape[T]) LeakyReLU(a *Node[T], alpha T) *Node[T] {
	return t.unary(opLeakyReLU, a, alpha, 0)
}

// ELU returns a where a ≥ 0 and alpha·(exp(a) - 1) elsewhere (QMIX's
// mixing network uses alpha = 1).
func (t *Tape[T]) ELU(a *Node[T], alpha T) *Node[T] { return t.unary(opELU, a, alpha, 0) }

// Tanh returns tanh(a) elementwise.
func (t *Tape[T]) Tanh(a *Node[T]) *Node[T] { return t.unary(opTanh, a, 0, 0) }

// Sigmoid returns 1/(1+exp(-a)) elementwise.
func (t *Tape[T]) Sigmoid(a *Node[T]) *Node[T] { return t.unary(opSigmoid, a, 0, 0) }

// Softplus returns log(1+exp(a)) elementwise, computed stably.
func (t *Tape[T]) Softplus(a *Node[T]) *Node[T] { return t.unary(opSoftplus, a, 0, 0) }

// Exp returns exp(a) elementwise.
func (t *Tape[T]) Exp(a *Node[T]) *Node[T] { return t.unary(opExp, a, 0, 0) }

// Log returns the natural logarithm of a elementwise (a must be positive).
func (t *Tape[T]) Log(a *Node[T]) *Node[T] { return t.unary(opLog, a, 0, 0) }

// Abs returns |a| elementwise (gradient 0 at 0).
func (t *Tape[T]) Abs(a *Node[T]) *Node[T] { return t.unary(opAbs, a, 0, 0) }

// Square returns a² elementwise.
func (t *Tape[T]) Square(a *Node[T]) *Node[T] { return t.unary(opSquare, a, 0, 0) }

// Clip returns a clamped to [lo, hi] elementwise; the gradient is passed
// where lo ≤ a ≤ hi and zero elsewhere (as PPO's ratio clipping needs).
func (t *Tape[T]) Clip(a *Node[T], lo, hi T) *Node[T] {
	if lo > hi {
		panic(fmt.Sprintf("nn: Clip bounds lo=%v > hi=%v", lo, hi))
	}
	return t.unary(opClip, a, lo, hi)
}

func (n *Node[T]) backUnary() {
	a := n.in[0]
	if !a.needGrad {
		return
	}
	x, y, dy, dx := a.Value.Data, n.Value.Data, n.Grad.Data, a.Grad.Data
	switch n.op {
	case opScale:
		for i, g := range dy {
			dx[i] += n.f0 * g
		}
	case opAddScalar:
		for i, g := range dy {
			dx[i] += g
		}
	case opReLU:
		for i, g := range dy {
			if x[i] > 0 {
				dx[i] += g
			}
		}
	case opLeakyReLU:
		for i, g := range dy {
			if x[i] >= 0 {
				dx[i] += g
			} else {
				dx[i] += n.f0 * g
			}
		}
	case opELU:
		for i, g := range dy {
			if x[i] >= 0 {
				dx[i] += g
			} else {
				dx[i] += g * (y[i] + n.f0)
			}
		}
	case opTanh:
		for i, g := range dy {
			dx[i] += g * (1 - y[i]*y[i])
		}
	case opSigmoid:
		for i, g := range dy {
			dx[i] += g * y[i] * (1 - y[i])
		}
	case opSoftplus:
		for i, g := range dy {
			dx[i] += g * sigmoid(x[i])
		}
	case opExp:
		for i, g := range dy {
			dx[i] += g * y[i]
		}
	case opLog:
		for i, g := range dy {
			dx[i] += g / x[i]
		}
	case opAbs:
		for i, g := range dy {
			switch {
			case x[i] > 0:
				dx[i] += g
			case x[i] < 0:
				dx[i] -= g
			}
		}
	case opSquare:
		for i, g := range dy {
			dx[i] += 2 * g * x[i]
		}
	case opClip:
		for i, g := range dy {
			if x[i] >= n.f0 && x[i] <= n.f1 {
				dx[i] += g
			}
		}
	}
}

// ---- matrix products ----

// MatMul returns the matrix product a·b of an r×k and a k×c node.
func (t *Tape[T]) MatMul(a, b *Node[T]) *Node[T] {
	if a.Value.Cols != b.Value.Rows {
		panic(fmt.Sprintf("nn: MatMul: %s times %s", a.Value.shape(), b.Value.shape()))
	}
	n := t.node(opMatMul, a.Value.Rows, b.Value.Cols, a, b)
	n.gemm(false, false, 1, a.Value, b.Value, 0, n.Value)
	return n
}

func (n *Node[T]) backMatMul() {
	a, b := n.in[0], n.in[1]
	if a.needGrad { // da += dy·bᵀ
		n.gemm(false, true, 1, n.Grad, b.Value, 1, a.Grad)
	}
	if b.needGrad { // db += aᵀ·dy
		n.gemm(true, false, 1, a.Value, n.Grad, 1, b.Grad)
	}
}

// Linear returns x·w + b for a batch x (B×in), weights w (in×out) and bias
// b (1×out), fused into one op.
func (t *Tape[T]) Linear(x, w, b *Node[T]) *Node[T] {
	if x.Value.Cols != w.Value.Rows || b.Value.Rows != 1 || b.Value.Cols != w.Value.Cols {
		panic(fmt.Sprintf("nn: Linear: x %s, w %s, b %s", x.Value.shape(), w.Value.shape(), b.Value.shape()))
	}
	n := t.node(opLinear, x.Value.Rows, w.Value.Cols, x, w, b)
	y := n.Value
	for i := 0; i < y.Rows; i++ {
		copy(y.Data[i*y.Cols:(i+1)*y.Cols], b.Value.Data)
	}
	n.gemm(false, false, 1, x.Value, w.Value, 1, y)
	return n
}

func (n *Node[T]) backLinear() {
	x, w, b := n.in[0], n.in[1], n.in[2]
	if x.needGrad {
		n.gemm(false, true, 1, n.Grad, w.Value, 1, x.Grad)
	}
	if w.needGrad {
		n.gemm(true, false, 1, x.Value, n.Grad, 1, w.Grad)
	}
	if b.needGrad {
		colSumAdd(b.Grad.Data, n.Grad)
	}
}

// colSumAdd adds the column sums of g to dst (len g.Cols), row by row.
func colSumAdd[T Float](dst []T, g Tensor[T]) {
	if d32, ok := any(dst).([]float32); ok && actFast && g.Cols >= 8 {
		// Eight columns at a time with AVX, the same additions in the same order.
		g32, v := any(g.Data).([]float32), g.Cols&^7
		for i := 0; i < g.Rows; i++ {
			row := g32[i*g.Cols : (i+1)*g.Cols]
			addTo32(&d32[0], &row[0], v)
			for j := v; j < g.Cols; j++ {
				d32[j] += row[j]
			}
		}
		return
	}
	for i := 0; i < g.Rows; i++ {
		row := g.Data[i*g.Cols : (i+1)*g.Cols]
		for j, v := range row {
			dst[j] += v
		}
	}
}

// ---- shape ops ----

// Concat joins nodes with equal row counts side by side (along columns).
func (t *Tape[T]) Concat(parts ...*Node[T]) *Node[T] {
	if len(parts) == 0 {
		panic("nn: Concat of nothing")
	}
	rows, cols := parts[0].Value.Rows, 0
	for _, p := range parts {
		if p.Value.Rows != rows {
			panic(fmt.Sprintf("nn: Concat: row counts %d and %d differ", rows, p.Value.Rows))
		}
		cols += p.Value.Cols
	}
	n := t.node(opConcat, rows, cols, parts...)
	off := 0
	for _, p := range parts {
		pc := p.Value.Cols
		for i := 0; i < rows; i++ {
			copy(n.Value.Data[i*cols+off:i*cols+off+pc], p.Value.Data[i*pc:(i+1)*pc])
		}
		off += pc
	}
	return n
}

func (n *Node[T]) backConcat() {
	rows, cols := n.Value.Rows, n.Value.Cols
	off := 0
	for _, p := range n.in {
		pc := p.Value.Cols
		if p.needGrad {
			for i := 0; i < rows; i++ {
				src := n.Grad.Data[i*cols+off : i*cols+off+pc]
				dst := p.Grad.Data[i*pc : (i+1)*pc]
				for j, g := range src {
					dst[j] += g
				}
			}
		}
		off += pc
	}
}

// SliceCols returns columns [from, to) of a (to split an actor's output
// into mean and log-std, for example).
func (t *Tape[T]) SliceCols(a *Node[T], from, to int) *Node[T] {
	if from < 0 || to > a.Value.Cols || from >= to {
		panic(fmt.Sprintf("nn: SliceCols [%d,%d) of %s", from, to, a.Value.shape()))
	}
	w := to - from
	n := t.node(opSliceCols, a.Value.Rows, w, a)
	n.i0 = from
	for i := 0; i < a.Value.Rows; i++ {
		copy(n.Value.Data[i*w:(i+1)*w], a.Value.Data[i*a.Value.Cols+from:i*a.Value.Cols+to])
	}
	return n
}

func (n *Node[T]) backSliceCols() {
	a := n.in[0]
	if !a.needGrad {
		return
	}
	w, c := n.Value.Cols, a.Value.Cols
	for i := 0; i < n.Value.Rows; i++ {
		src := n.Grad.Data[i*w : (i+1)*w]
		dst := a.Grad.Data[i*c+n.i0 : i*c+n.i0+w]
		for j, g := range src {
			dst[j] += g
		}
	}
}

// ---- reductions ----

// Sum returns the sum of all elements of a as a 1×1 node.
func (t *Tape[T]) Sum(a *Node[T]) *Node[T] {
	n := t.node(opSum, 1, 1, a)
	var s float64
	for _, v := range a.Value.Data {
		s += float64(v)
	}
	n.Value.Data[0] = T(s)
	n.f0 = 1
	return n
}

// Mean returns the mean of all elements of a as a 1×1 node.
func (t *Tape[T]) Mean(a *Node[T]) *Node[T] {
	n := t.node(opMean, 1, 1, a)
	var s float64
	for _, v := range a.Value.Data {
		s += float64(v)
	}
	cnt := max(len(a.Value.Data), 1)
	n.Value.Data[0] = T(s / float64(cnt))
	n.f0 = T(1 / float64(cnt))
	return n
}

func (n *Node[T]) backSum() {
	a := n.in[0]
	if !a.needGrad {
		return
	}
	g := n.Grad.Data[0] * n.f0
	for i := range a.Grad.Data {
		a.Grad.Data[i] += g
	}
}

// RowSum returns the sum of each row of a as a Rows×1 node.
func (t *Tape[T]) RowSum(a *Node[T]) *Node[T] {
	n := t.node(opRowSum, a.Value.Rows, 1, a)
	c := a.Value.Cols
	for i := 0; i < a.Value.Rows; i++ {
		var s T
		for _, v := range a.Value.Data[i*c : (i+1)*c] {
			s += v
		}
		n.Value.Data[i] = s
	}
	return n
}

func (n *Node[T]) backRowSum() {
	a := n.in[0]
	if !a.needGrad {
		return
	}
	c := a.Value.Cols
	for i, g := range n.Grad.Data {
		row := a.Grad.Data[i*c : (i+1)*c]
		for j := range row {
			row[j] += g
		}
	}
}

// ColSum returns the sum of each column of a as a 1×Cols node (the sum over
// a batch or over a set of agents, for example).
func (t *Tape[T]) ColSum(a *Node[T]) *Node[T] {
	n := t.node(opColSum, 1, a.Value.Cols, a)
	clear(n.Value.Data)
	colSumAdd(n.Value.Data, a.Value)
	return n
}

func (n *Node[T]) backColSum() {
	a := n.in[0]
	if !a.needGrad {
		return
	}
	c := a.Value.Cols
	for i := 0; i < a.Value.Rows; i++ {
		row := a.Grad.Data[i*c : (i+1)*c]
		for j, g := range n.Grad.Data {
			row[j] += g
		}
	}
}

// BatchVecMat multiplies each row of a (B×n) by its own n×m matrix, stored
// row-major in the matching row of w (B×n·m), giving B×m: out_b = a_b·W_b.
// This is the per-sample product of hypernetworks (QMIX's mixing weights).
func (t *Tape[T]) BatchVecMat(a, w *Node[T]) *Node[T] {
	B, nIn := a.Value.Rows, a.Value.Cols
	if w.Value.Rows != B || nIn == 0 || w.Value.Cols%nIn != 0 {
		panic(fmt.Sprintf("nn: BatchVecMat: a %s, w %s", a.Value.shape(), w.Value.shape()))
	}
	m := w.Value.Cols / nIn
	n := t.node(opBatchVecMat, B, m, a, w)
	for b := 0; b < B; b++ {
		vecMat(n.Value.Data[b*m:(b+1)*m], a.Value.Data[b*nIn:(b+1)*nIn],
			Tensor[T]{Rows: nIn, Cols: m, Data: w.Value.Data[b*nIn*m : (b+1)*nIn*m]}, nil)
	}
	return n
}

func (n *Node[T]) backBatchVecMat() {
	a, w := n.in[0], n.in[1]
	nIn, m := a.Value.Cols, n.Value.Cols
	for b := 0; b < n.Value.Rows; b++ {
		dy := n.Grad.Data[b*m : (b+1)*m]
		av := a.Value.Data[b*nIn : (b+1)*nIn]
		wv := w.Value.Data[b*nIn*m : (b+1)*nIn*m]
		for i := 0; i < nIn; i++ {
			row := wv[i*m : (i+1)*m]
			if a.needGrad {
				var s T
				for j, g := range dy {
					s += g * row[j]
				}
				a.Grad.Data[b*nIn+i] += s
			}
			if w.needGrad {
				dw := w.Grad.Data[b*nIn*m+i*m : b*nIn*m+(i+1)*m]
				for j, g := range dy {
					dw[j] += av[i] * g
				}
			}
		}
	}
}

// RepeatRows repeats each row of a k times in place: row b·k+i of the
// (Rows·k)×Cols result is row b of a (to give a per-sample vector to each
// of k agents, for example).
func (t *Tape[T]) RepeatRows(a *Node[T], k int) *Node[T] {
	if k < 1 {
		panic(fmt.Sprintf("nn: RepeatRows: k = %d", k))
	}
	r, c := a.Value.Rows, a.Value.Cols
	n := t.node(opRepeatRows, r*k, c, a)
	n.i0 = k
	for b := 0; b < r; b++ {
		src := a.Value.Data[b*c : (b+1)*c]
		for i := 0; i < k; i++ {
			copy(n.Value.Data[(b*k+i)*c:(b*k+i+1)*c], src)
		}
	}
	return n
}

func (n *Node[T]) backRepeatRows() {
	a := n.in[0]
	if !a.needGrad {
		return
	}
	k, c := n.i0, n.Value.Cols
	for i := 0; i < n.Value.Rows; i++ {
		dst := a.Grad.Data[(i/k)*c : (i/k+1)*c]
		for j, g := range n.Grad.Data[i*c : (i+1)*c] {
			dst[j] += g
		}
	}
}

// SumRowGroups sums each run of k consecutive rows of a (Rows must be a
// multiple of k), giving (Rows/k)×Cols: the inverse pooling of RepeatRows
// (sum or, with Scale, mean over k agents).
func (t *Tape[T]) SumRowGroups(a *Node[T], k int) *Node[T] {
	if k < 1 || a.Value.Rows%k != 0 {
		panic(fmt.Sprintf("nn: SumRowGroups: %d rows in groups of %d", a.Value.Rows, k))
	}
	c := a.Value.Cols
	n := t.node(opSumRowGroups, a.Value.Rows/k, c, a)
	n.i0 = k
	clear(n.Value.Data)
	for i := 0; i < a.Value.Rows; i++ {
		dst := n.Value.Data[(i/k)*c : (i/k+1)*c]
		for j, v := range a.Value.Data[i*c : (i+1)*c] {
			dst[j] += v
		}
	}
	return n
}

func (n *Node[T]) backSumRowGroups() {
	a := n.in[0]
	if !a.needGrad {
		return
	}
	k, c := n.i0, n.Value.Cols
	for i := 0; i < a.Value.Rows; i++ {
		src := n.Grad.Data[(i/k)*c : (i/k+1)*c]
		dst := a.Grad.Data[i*c : (i+1)*c]
		for j, g := range src {
			dst[j] += g
		}
	}
}

// Reshape returns a's elements in row-major order as a rows×cols node
// (rows·cols must equal a's element count).
func (t *Tape[T]) Reshape(a *Node[T], rows, cols int) *Node[T] {
	if rows*cols != a.Value.Len() || rows < 0 || cols < 0 {
		panic(fmt.Sprintf("nn: Reshape %s to %dx%d", a.Value.shape(), rows, cols))
	}
	n := t.node(opReshape, rows, cols, a)
	copy(n.Value.Data, a.Value.Data)
	return n
}

func (n *Node[T]) backReshape() {
	a := n.in[0]
	if !a.needGrad {
		return
	}
	for i, g := range n.Grad.Data {
		a.Grad.Data[i] += g
	}
}

// Transpose returns aᵀ: the cols×rows node whose element (j, i) is a's
// (i, j).
func (t *Tape[T]) Transpose(a *Node[T]) *Node[T] {
	r, c := a.Value.Rows, a.Value.Cols
	n := t.node(opTranspose, c, r, a)
	for i := range r {
		for j, v := range a.Value.Data[i*c : (i+1)*c] {
			n.Value.Data[j*r+i] = v
		}
	}
	return n
}

func (n *Node[T]) backTranspose() {
	a := n.in[0]
	if !a.needGrad {
		return
	}
	r, c := a.Value.Rows, a.Value.Cols
	for i := range r {
		row := a.Grad.Data[i*c : (i+1)*c]
		for j := range row {
			row[j] += n.Grad.Data[j*r+i]
		}
	}
}
