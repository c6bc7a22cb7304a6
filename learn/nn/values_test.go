package nn

import (
	"math"
	"testing"
)

// TestOpValues checks forward values of ops against hand-computed results.
func TestOpValues(t *testing.T) {
	a := TensorFrom(2, 3, []float64{1, -2, 3, 0, 5, -6})
	w := TensorFrom(2, 6, []float64{1, 0, 0, 1, 1, 1, 2, 0, 0, 2, 0, 0}) // per-row 3×2 matrices
	ln2 := math.Log(2)
	lse := math.Log(math.Exp(1) + math.Exp(-2) + math.Exp(3))
	tests := []struct {
		name string
		op   func(t *Tape[float64], a *Node[float64]) *Node[float64]
		want []float64
	}{
		{"Add/scalar", func(t *Tape[float64], a *Node[float64]) *Node[float64] {
			return t.Add(a, t.Const(TensorFrom(1, 1, []float64{10})))
		}, []float64{11, 8, 13, 10, 15, 4}},
		{"Sub/col", func(t *Tape[float64], a *Node[float64]) *Node[float64] {
			return t.Sub(a, t.Const(TensorFrom(2, 1, []float64{1, 2})))
		}, []float64{0, -3, 2, -2, 3, -8}},
		{"Max/row", func(t *Tape[float64], a *Node[float64]) *Node[float64] {
			return t.Max(a, t.Const(TensorFrom(1, 3, []float64{0, 0, 0})))
		}, []float64{1, 0, 3, 0, 5, 0}},
		{"Concat", func(t *Tape[float64], a *Node[float64]) *Node[float64] { return t.Concat(t.SliceCols(a, 2, 3), a) },
			[]float64{3, 1, -2, 3, -6, 0, 5, -6}},
		{"RepeatRows", func(t *Tape[float64], a *Node[float64]) *Node[float64] { return t.RepeatRows(a, 2) },
			[]float64{1, -2, 3, 1, -2, 3, 0, 5, -6, 0, 5, -6}},
		{"SumRowGroups", func(t *Tape[float64], a *Node[float64]) *Node[float64] { return t.SumRowGroups(a, 2) },
			[]float64{1, 3, -3}},
		{"Reshape", func(t *Tape[float64], a *Node[float64]) *Node[float64] { return t.Reshape(a, 3, 2) },
			[]float64{1, -2, 3, 0, 5, -6}},
		{"Transpose", func(t *Tape[float64], a *Node[float64]) *Node[float64] { return t.Transpose(a) },
			[]float64{1, 0, -2, 5, 3, -6}},
		{"RowSum", func(t *Tape[float64], a *Node[float64]) *Node[float64] { return t.RowSum(a) }, []float64{2, -1}},
		{"ColSum", func(t *Tape[float64], a *Node[float64]) *Node[float64] { return t.ColSum(a) }, []float64{1, 3, -3}},
		{"Mean", func(t *Tape[float64], a *Node[float64]) *Node[float64] { return t.Mean(a) }, []float64{1.0 / 6}},
		{"Gather", func(t *Tape[float64], a *Node[float64]) *Node[float64] { return t.Gather(a, []int{2, 1}) }, []float64{3, 5}},
		{"BatchVecMat", func(t *Tape[float64], a *Node[float64]) *Node[float64] { return t.BatchVecMat(a, t.Const(w)) },
			[]float64{1 + 3, -2 + 3, 0, 10}},
		{"MatMul", func(t *Tape[float64], a *Node[float64]) *Node[float64] {
			return t.MatMul(a, t.Const(TensorFrom(3, 1, []float64{1, 1, 1})))
		}, []float64{2, -1}},
		{"Clip", func(t *Tape[float64], a *Node[float64]) *Node[float64] { return t.Clip(a, -1, 2) }, []float64{1, -1, 2, 0, 2, -1}},
		{"ReLU", func(t *Tape[float64], a *Node[float64]) *Node[float64] { return t.ReLU(a) }, []float64{1, 0, 3, 0, 5, 0}},
		{"LeakyReLU", func(t *Tape[float64], a *Node[float64]) *Node[float64] { return t.LeakyReLU(a, 0.5) }, []float64{1, -1, 3, 0, 5, -3}},
		{"ELU", func(t *Tape[float64], a *Node[float64]) *Node[float64] { return t.SliceCols(t.ELU(a, 2), 1, 2) },
			[]float64{2 * (math.Exp(-2) - 1), 5}},
		{"Softplus", func(t *Tape[float64], a *Node[float64]) *Node[float64] { return t.SliceCols(t.Softplus(a), 0, 1) },
			[]float64{math.Log(1 + math.E), ln2}},
		{"Sigmoid", func(t *Tape[float64], a *Node[float64]) *Node[float64] { return t.SliceCols(t.Sigmoid(a), 0, 1) },
			[]float64{1 / (1 + math.Exp(-1)), 0.5}},
		{"LogSoftmax", func(t *Tape[float64], a *Node[float64]) *Node[float64] { return t.SliceCols(t.LogSoftmax(a), 0, 3) },
			[]float64{1 - lse, -2 - lse, 3 - lse, 0 - math.Log(1+math.Exp(5)+math.Exp(-6)), 5 - math.Log(1+math.Exp(5)+math.Exp(-6)), -6 - math.Log(1+math.Exp(5)+math.Exp(-6))}},
		{"Softmax", func(t *Tape[float64], a *Node[float64]) *Node[float64] { return t.SliceCols(t.Softmax(a), 2, 3) },
			[]float64{math.Exp(3 - lse), math.Exp(-6) / (1 + math.Exp(5) + math.Exp(-6))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var tp Tape[float64]
			got := tc.op(&tp, tp.Const(a)).Value.Data
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if math.Abs(got[i]-tc.want[i]) > 1e-12 {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}
