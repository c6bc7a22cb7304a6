package nn

import "fmt"

// Node is a value in a computation: a parameter, an input, or the result of
// an op recorded on a Tape. Value holds the forward result; Grad holds
// ∂loss/∂Value after Tape.Backward (same shape as Value), or is empty when no
// gradient flows to the node.
//
// Parameters (NewParam) live outside any tape and accumulate gradients across
// Backward calls until ZeroGrad; nodes made by a Tape are recycled by
// Tape.Reset and must not be used afterwards.
type Node[T Float] struct {
	Value Tensor[T]
	Grad  Tensor[T]
	// Name identifies a parameter in saved files; empty for tape nodes.
	Name string

	op       opKind
	needGrad bool
	param    bool
	tape     *Tape[T]
	idx      int // position on the tape

	in   []*Node[T] // inputs, reused across Reset
	i0   int        // integer attribute (slice start, groups, ...)
	i1   int
	f0   T // scalar attributes (alpha, bounds, delta, ...)
	f1   T
	aux  [8]Tensor[T] // saved intermediates for backward, reused across Reset
	ints []int        // integer data (gather indices), reused
}

// NewParam returns a trainable rows×cols parameter named name, with zero
// value and gradient. Layers initialise their parameters themselves.
func NewParam[T Float](name string, rows, cols int) *Node[T] {
	return &Node[T]{
		Value:    NewTensor[T](rows, cols),
		Grad:     NewTensor[T](rows, cols),
		Name:     name,
		needGrad: true,
		param:    true,
		idx:      -1,
	}
}

// RequiresGrad reports whether gradients flow to n.
func (n *Node[T]) RequiresGrad() bool { return n.needGrad }

// Scalar returns the value of a 1×1 node (a loss). It panics otherwise.
func (n *Node[T]) Scalar() T {
	if n.Value.Rows != 1 || n.Value.Cols != 1 {
		panic(fmt.Sprintf("nn: Scalar of a %s node", n.Value.shape()))
	}
	return n.Value.Data[0]
}

// Tape records ops for reverse-mode differentiation. Build the forward pass
// with the Tape's op methods, call Backward on a scalar loss, then Reset the
// tape before the next pass: Reset keeps every buffer, so a training loop of
// fixed shape stops allocating after its first step.
//
// The zero value is ready to use. A Tape is not safe for concurrent use.
type Tape[T Float] struct {
	nodes []*Node[T]
	n     int
	work  *sgemmWork // float32 GEMM packing buffers, made on first use
}

// sgemmWork returns t's packing buffers for float32 products, or nil for
// parameters (no tape) and float64 tapes.
func (t *Tape[T]) sgemmWork() *sgemmWork {
	if t == nil {
		return nil
	}
	if t.work == nil {
		var zero T
		if _, ok := any(zero).(float32); !ok || !sgemmFast {
			return nil
		}
		t.work = new(sgemmWork)
	}
	return t.work
}

// Reset forgets all recorded nodes but keeps their memory for reuse.
// Nodes returned before Reset become invalid.
func (t *Tape[T]) Reset() { t.n = 0 }

// Len returns the number of nodes recorded since the last Reset.
func (t *Tape[T]) Len() int { return t.n }

// node takes the next recycled node and shapes its value rows×cols.
// Contents of Value are unspecified.
func (t *Tape[T]) node(op opKind, rows, cols int, inputs ...*Node[T]) *Node[T] {
	if t.n == len(t.nodes) {
		t.nodes = append(t.nodes, &Node[T]{tape: t})
	}
	n := t.nodes[t.n]
	n.idx = t.n
	t.n++
	n.op = op
	n.Value.resize(rows, cols)
	n.Grad.Rows, n.Grad.Cols = 0, 0
	n.Grad.Data = n.Grad.Data[:0]
	n.in = append(n.in[:0], inputs...)
	n.needGrad = false
	for _, in := range inputs {
		if in.needGrad {
			n.needGrad = true
		}
		if !in.param && in.tape != t {
			panic("nn: op input recorded on another tape")
		}
		if !in.param && in.idx >= t.n-1 {
			panic("nn: op input is stale (recorded before Tape.Reset)")
		}
	}
	return n
}

// Input returns a rows×cols constant node whose zeroed Value the caller
// fills (no gradient flows to it).
func (t *Tape[T]) Input(rows, cols int) *Node[T] {
	n := t.node(opLeaf, rows, cols)
	clear(n.Value.Data)
	return n
}

// Const returns a constant node holding a copy of v (no gradient flows to
// it). Const(n.Value) detaches n: it stops gradients.
func (t *Tape[T]) Const(v Tensor[T]) *Node[T] {
	n := t.node(opLeaf, v.Rows, v.Cols)
	copy(n.Value.Data, v.Data)
	return n
}

// Backward computes ∂loss/∂x for every node x recorded on the tape up to
// loss, and adds ∂loss/∂p to the Grad of every parameter p that loss depends
// on. loss must be a 1×1 node of this tape.
func (t *Tape[T]) Backward(loss *Node[T]) {
	if loss.Value.Rows != 1 || loss.Value.Cols != 1 {
		panic(fmt.Sprintf("nn: Backward of a %s node; want a 1x1 loss", loss.Value.shape()))
	}
	t.backward(loss, nil)
}

// backward seeds out.Grad with seed (ones when seed is nil) and propagates.
func (t *Tape[T]) backward(out *Node[T], seed []T) {
	if out.param || out.tape != t || out.idx >= t.n || t.nodes[out.idx] != out {
		panic("nn: Backward of a node not on this tape")
	}
	if !out.needGrad {
		return
	}
	for i := 0; i <= out.idx; i++ {
		n := t.nodes[i]
		if n.needGrad {
			n.Grad.resizeZero(n.Value.Rows, n.Value.Cols)
		}
	}
	if seed == nil {
		for i := range out.Grad.Data {
			out.Grad.Data[i] = 1
		}
	} else {
		copy(out.Grad.Data, seed)
	}
	for i := out.idx; i >= 0; i-- {
		n := t.nodes[i]
		if n.needGrad {
			n.backward()
		}
	}
}
