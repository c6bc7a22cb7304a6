package nn

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// awayFromZero draws normal values with |x| ≥ 0.2, away from kinks at 0.
func awayFromZero[T Float](rng *rand.Rand, _ int, x []T) {
	for k := range x {
		v := rng.NormFloat64()
		if math.Abs(v) < 0.2 {
			v = math.Copysign(0.2+math.Abs(v), v)
		}
		x[k] = T(v)
	}
}

// positive draws values in [0.5, 2).
func positive[T Float](rng *rand.Rand, _ int, x []T) {
	for k := range x {
		x[k] = T(0.5 + 1.5*rng.Float64())
	}
}

// separated gives input 1 values that differ from input 0 by at least 0.2
// (for Min/Max, Huber), assuming input 0 is filled first.
func separated[T Float]() func(rng *rand.Rand, i int, x []T) {
	var first []T
	return func(rng *rand.Rand, i int, x []T) {
		if i == 0 {
			for k := range x {
				x[k] = T(rng.NormFloat64())
			}
			first = x
			return
		}
		for k := range x {
			d := 0.2 + rng.Float64()
			if rng.IntN(2) == 0 {
				d = -d
			}
			x[k] = first[k%len(first)] + T(d)
		}
	}
}

// opCases lists a gradient-check case for every op of the tape.
func opCases[T Float]() []gradCase[T] {
	return []gradCase[T]{
		{name: "Add", inputs: [][2]int{{3, 4}, {3, 4}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Add(in[0], in[1]) }},
		{name: "Add/row", inputs: [][2]int{{3, 4}, {1, 4}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Add(in[0], in[1]) }},
		{name: "Add/col", inputs: [][2]int{{3, 4}, {3, 1}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Add(in[0], in[1]) }},
		{name: "Add/scalar", inputs: [][2]int{{3, 4}, {1, 1}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Add(in[0], in[1]) }},
		{name: "Sub/row", inputs: [][2]int{{3, 4}, {1, 4}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Sub(in[0], in[1]) }},
		{name: "Mul", inputs: [][2]int{{3, 4}, {3, 4}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Mul(in[0], in[1]) }},
		{name: "Mul/col", inputs: [][2]int{{3, 4}, {3, 1}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Mul(in[0], in[1]) }},
		{name: "Mul/self", inputs: [][2]int{{3, 4}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Mul(in[0], in[0]) }},
		{name: "Min", inputs: [][2]int{{3, 4}, {3, 4}}, init: separated[T](), build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Min(in[0], in[1]) }},
		{name: "Min/row", inputs: [][2]int{{3, 4}, {1, 4}}, init: separated[T](), build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Min(in[0], in[1]) }},
		{name: "Max", inputs: [][2]int{{3, 4}, {3, 4}}, init: separated[T](), build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Max(in[0], in[1]) }},
		{name: "Scale", inputs: [][2]int{{3, 4}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Scale(in[0], -1.7) }},
		{name: "AddScalar", inputs: [][2]int{{3, 4}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.AddScalar(in[0], 0.3) }},
		{name: "ReLU", inputs: [][2]int{{3, 4}}, init: awayFromZero[T], build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.ReLU(in[0]) }},
		{name: "LeakyReLU", inputs: [][2]int{{3, 4}}, init: awayFromZero[T], build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.LeakyReLU(in[0], 0.1) }},
		{name: "ELU", inputs: [][2]int{{3, 4}}, init: awayFromZero[T], build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.ELU(in[0], 0.7) }},
		{name: "ColSum", inputs: [][2]int{{3, 4}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.ColSum(in[0]) }},
		{name: "BatchVecMat", inputs: [][2]int{{3, 4}, {3, 8}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.BatchVecMat(in[0], in[1]) }},
		{name: "RepeatRows", inputs: [][2]int{{2, 3}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.RepeatRows(in[0], 3) }},
		{name: "SumRowGroups", inputs: [][2]int{{6, 2}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.SumRowGroups(in[0], 3) }},
		{name: "Reshape", inputs: [][2]int{{2, 6}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Tanh(t.Reshape(in[0], 4, 3)) }},
		{name: "Transpose", inputs: [][2]int{{3, 5}, {3, 2}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] {
			return t.Tanh(t.MatMul(t.Transpose(in[0]), in[1]))
		}},
		{name: "Tanh", inputs: [][2]int{{3, 4}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Tanh(in[0]) }},
		{name: "Sigmoid", inputs: [][2]int{{3, 4}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Sigmoid(in[0]) }},
		{name: "Softplus", inputs: [][2]int{{3, 4}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Softplus(in[0]) }},
		{name: "Exp", inputs: [][2]int{{3, 4}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Exp(in[0]) }},
		{name: "Log", inputs: [][2]int{{3, 4}}, init: positive[T], build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Log(in[0]) }},
		{name: "Abs", inputs: [][2]int{{3, 4}}, init: awayFromZero[T], build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Abs(in[0]) }},
		{name: "Square", inputs: [][2]int{{3, 4}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Square(in[0]) }},
		{name: "Clip", inputs: [][2]int{{4, 5}}, init: func(rng *rand.Rand, _ int, x []T) {
			for k := range x { // values in ±(0.1..0.4) or ±(0.6..1.5), away from bounds ±0.5
				v := 0.1 + 0.3*rng.Float64()
				if k%2 == 0 {
					v = 0.6 + 0.9*rng.Float64()
				}
				if rng.IntN(2) == 0 {
					v = -v
				}
				x[k] = T(v)
			}
		}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Clip(in[0], -0.5, 0.5) }},
		{name: "MatMul", inputs: [][2]int{{3, 5}, {5, 2}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.MatMul(in[0], in[1]) }},
		{name: "Linear", inputs: [][2]int{{4, 3}, {3, 5}, {1, 5}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Linear(in[0], in[1], in[2]) }},
		{name: "Concat", inputs: [][2]int{{3, 2}, {3, 1}, {3, 4}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Concat(in[0], in[1], in[2]) }},
		{name: "SliceCols", inputs: [][2]int{{3, 6}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.SliceCols(in[0], 1, 4) }},
		{name: "Sum", inputs: [][2]int{{3, 4}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Sum(in[0]) }},
		{name: "Mean", inputs: [][2]int{{3, 4}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Mean(in[0]) }},
		{name: "RowSum", inputs: [][2]int{{3, 4}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.RowSum(in[0]) }},
		{name: "LogSoftmax", inputs: [][2]int{{3, 5}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.LogSoftmax(in[0]) }},
		{name: "Softmax", inputs: [][2]int{{3, 5}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Softmax(in[0]) }},
		{name: "Gather", inputs: [][2]int{{4, 3}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Gather(in[0], []int{2, 0, 1, 2}) }},
		{name: "MSE", inputs: [][2]int{{3, 4}, {3, 4}}, build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.MSE(in[0], in[1]) }},
		{name: "Huber", inputs: [][2]int{{4, 5}, {4, 5}}, init: func() func(*rand.Rand, int, []T) {
			var first []T
			return func(rng *rand.Rand, i int, x []T) {
				// differences in ±(0.2..0.8) or ±(1.2..2), away from delta = 1
				for k := range x {
					if i == 0 {
						x[k] = T(rng.NormFloat64())
						continue
					}
					d := 0.2 + 0.6*rng.Float64()
					if k%2 == 0 {
						d = 1.2 + 0.8*rng.Float64()
					}
					if rng.IntN(2) == 0 {
						d = -d
					}
					x[k] = first[k] + T(d)
				}
				first = x
			}
		}(), build: func(t *Tape[T], in []*Node[T]) *Node[T] { return t.Huber(in[0], in[1], 1) }},
		{name: "SquashedGaussian/action", inputs: [][2]int{{3, 2}, {3, 2}}, init: smallLogStd[T], build: func(t *Tape[T], in []*Node[T]) *Node[T] {
			a, _ := t.SquashedGaussian(in[0], in[1], fixedEps[T](3, 2))
			return a
		}},
		{name: "SquashedGaussian/logprob", inputs: [][2]int{{3, 2}, {3, 2}}, init: smallLogStd[T], build: func(t *Tape[T], in []*Node[T]) *Node[T] {
			_, lp := t.SquashedGaussian(in[0], in[1], fixedEps[T](3, 2))
			return lp
		}},
		{name: "GaussianLogProb", inputs: [][2]int{{3, 2}, {3, 2}, {3, 2}}, init: smallLogStd[T], build: func(t *Tape[T], in []*Node[T]) *Node[T] {
			return t.GaussianLogProb(in[0], in[1], in[2])
		}},
	}
}

// smallLogStd fills inputs with N(0, 0.5²) values (means and log-stds of
// moderate size, so tanh does not saturate).
func smallLogStd[T Float](rng *rand.Rand, _ int, x []T) {
	for k := range x {
		x[k] = T(0.5 * rng.NormFloat64())
	}
}

// fixedEps returns a deterministic standard-normal noise tensor.
func fixedEps[T Float](r, c int) Tensor[T] {
	rng := rand.New(rand.NewPCG(7, 7))
	e := NewTensor[T](r, c)
	for k := range e.Data {
		e.Data[k] = T(rng.NormFloat64())
	}
	return e
}

func runGradChecks[T Float](t *testing.T, cases []gradCase[T], h, tol float64) {
	for _, gc := range cases {
		t.Run(gc.name, func(t *testing.T) {
			if rel := checkGrad(t, gc, h); rel > tol || math.IsNaN(rel) {
				t.Errorf("relative gradient error %.3g > %.0g", rel, tol)
			} else {
				t.Logf("relative gradient error %.3g", rel)
			}
		})
	}
}

func TestGradOps64(t *testing.T) { runGradChecks(t, opCases[float64](), 1e-5, 1e-6) }
func TestGradOps32(t *testing.T) { runGradChecks(t, opCases[float32](), 1e-2, 1e-3) }

// TestEveryOpHasGradCheck makes sure no op of the Tape escapes the
// gradient checks: every exported method that records an op must have a
// case whose name starts with the method name.
func TestEveryOpHasGradCheck(t *testing.T) {
	notOps := map[string]bool{"Backward": true, "Reset": true, "Len": true, "Input": true, "Const": true}
	names := map[string]bool{}
	for _, c := range append(opCases[float64](), layerCases[float64]()...) {
		names[strings.SplitN(c.name, "/", 2)[0]] = true
	}
	typ := reflect.TypeOf(&Tape[float64]{})
	for i := 0; i < typ.NumMethod(); i++ {
		m := typ.Method(i).Name
		if !notOps[m] && !names[m] {
			t.Errorf("Tape.%s has no gradient check", m)
		}
	}
}
