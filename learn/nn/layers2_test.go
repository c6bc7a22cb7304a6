package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

func layerCases[T Float]() []gradCase[T] {
	rng := rand.New(rand.NewPCG(9, 9))
	gru := NewGRU[T](rng, "g", 3, 4)
	bn := NewBatchNorm[T]("bn", 3)
	bnEval := NewBatchNorm[T]("bn", 3)
	for j := 0; j < 3; j++ {
		bnEval.RunMean.Value.Data[j] = T(0.3 * float64(j))
		bnEval.RunVar.Value.Data[j] = T(0.5 + float64(j))
	}
	addMask := NewTensor[T](2, 3) // drop key 2 for query 0, key 0 for query 1
	addMask.Set(0, 2, T(math.Inf(-1)))
	addMask.Set(1, 0, -1e9)
	mulMask := TensorFrom[T](4, 3, []T{1, 1, 0, 0.5, 1, 1, 1, 0, 1, 0, 0, 0}) // per group, one row all masked
	seq := func(t *Tape[T], in []*Node[T]) *Node[T] {
		// in[0] is a 5-step sequence of 2×3 inputs stacked as 10×3; in[1] = h0.
		var xs [5]*Node[T]
		for s := range xs {
			xs[s] = t.SliceCols(t.MatMul(rowSelector(t, s, 2, 10), in[0]), 0, 3)
		}
		hs := gru.Unroll(t, nil, xs[:], in[1])
		return t.Concat(hs...)
	}
	ln := NewLayerNorm[T]("ln", 5)
	for j := range ln.Gain.Value.Data {
		ln.Gain.Value.Data[j] = T(0.5 + rng.Float64())
		ln.Bias.Value.Data[j] = T(rng.NormFloat64())
	}
	for j := range bn.Gamma.Value.Data {
		bn.Gamma.Value.Data[j] = T(0.5 + rng.Float64())
		bn.Beta.Value.Data[j] = T(rng.NormFloat64())
		bnEval.Gamma.Value.Data[j] = T(0.5 + rng.Float64())
		bnEval.Beta.Value.Data[j] = T(rng.NormFloat64())
	}
	att := NewAttentionLayer[T](rng, "att", 3, 2, 4, 3)
	return []gradCase[T]{
		{name: "AttentionLayer", inputs: [][2]int{{4, 3}, {6, 2}}, params: att.Params(), build: func(t *Tape[T], in []*Node[T]) *Node[T] {
			return att.Forward(t, in[0], in[1], 2, mulMask, MultiplicativeMask)
		}},
		{name: "LayerNormLayer", inputs: [][2]int{{3, 5}}, params: ln.Params(), build: func(t *Tape[T], in []*Node[T]) *Node[T] {
			return ln.Forward(t, in[0])
		}},
		{name: "LayerNorm", inputs: [][2]int{{3, 5}, {1, 5}, {1, 5}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] {
			return t.LayerNorm(in[0], in[1], in[2], 1e-5)
		}},
		{name: "BatchNorm/train", inputs: [][2]int{{5, 3}}, params: bn.Params(), build: func(t *Tape[T], in []*Node[T]) *Node[T] {
			return bn.Forward(t, in[0], true)
		}},
		{name: "BatchNorm/eval", inputs: [][2]int{{5, 3}}, params: bnEval.Params(), build: func(t *Tape[T], in []*Node[T]) *Node[T] {
			return bnEval.Forward(t, in[0], false)
		}},
		{name: "GRU/step", inputs: [][2]int{{2, 3}, {2, 4}}, params: gru.Params(), build: func(t *Tape[T], in []*Node[T]) *Node[T] {
			return gru.Step(t, in[0], in[1])
		}},
		{name: "GRU/bptt", inputs: [][2]int{{10, 3}, {2, 4}}, params: gru.Params(), build: seq},
		{name: "GRU/masked", inputs: [][2]int{{8, 3}}, params: gru.Params(), build: func(t *Tape[T], in []*Node[T]) *Node[T] {
			return gru.UnrollMasked(t, in[0], 4, []T{0, 0, 0, 1, 1, 1, 1, 0}) // 4 steps of 2 samples
		}},
		{name: "GRU/unmasked", inputs: [][2]int{{6, 3}}, params: gru.Params(), build: func(t *Tape[T], in []*Node[T]) *Node[T] {
			return gru.UnrollMasked(t, in[0], 3, nil)
		}},
		{name: "Attention", inputs: [][2]int{{2, 4}, {3, 4}, {3, 2}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] {
			return t.Attention(in[0], in[1], in[2], 1, Tensor[T]{}, NoMask)
		}},
		{name: "Attention/additive", inputs: [][2]int{{4, 4}, {6, 4}, {6, 2}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] {
			return t.Attention(in[0], in[1], in[2], 2, addMask, AdditiveMask)
		}},
		{name: "Attention/multiplicative", inputs: [][2]int{{4, 4}, {6, 4}, {6, 2}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] {
			return t.Attention(in[0], in[1], in[2], 2, mulMask, MultiplicativeMask)
		}},
	}
}

// rowSelector returns a constant rows×total matrix that picks rows
// [s·rows, (s+1)·rows) of a total-row matrix by multiplication.
func rowSelector[T Float](t *Tape[T], s, rows, total int) *Node[T] {
	sel := t.Input(rows, total)
	for i := 0; i < rows; i++ {
		sel.Value.Set(i, s*rows+i, 1)
	}
	return sel
}

func TestGradLayers(t *testing.T) {
	t.Run("float64", func(t *testing.T) { runGradChecks(t, layerCases[float64](), 1e-5, 1e-6) })
	t.Run("float32", func(t *testing.T) { runGradChecks(t, layerCases[float32](), 1e-2, 1e-3) })
}
