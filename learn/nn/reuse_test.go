package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTapeReuseIsClean runs every gradient-check computation on a fresh
// tape and on a reset tape whose recycled buffers hold NaN, and requires
// identical values and gradients: no op may read stale memory.
func TestTapeReuseIsClean(t *testing.T) {
	cases := append(opCases[float64](), layerCases[float64]()...)
	for _, gc := range cases {
		t.Run(gc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			in := make([]*Node[float64], len(gc.inputs))
			for i, s := range gc.inputs {
				in[i] = NewParam[float64]("x", s[0], s[1])
				if gc.init != nil {
					gc.init(rng, i, in[i].Value.Data)
				} else {
					for k := range in[i].Value.Data {
						in[i].Value.Data[k] = rng.NormFloat64()
					}
				}
			}
			run := func(tp *Tape[float64]) (val, grad []float64) {
				ZeroGrad(in)
				out := tp.Sum(tp.Square(gc.build(tp, in)))
				tp.Backward(out)
				for _, p := range in {
					grad = append(grad, p.Grad.Data...)
				}
				return []float64{out.Scalar()}, grad
			}
			var fresh Tape[float64]
			v1, g1 := run(&fresh)
			var dirty Tape[float64]
			for i := 0; i < 200; i++ { // pollute buffers, aux tensors and gradients
				n := dirty.Input(40, 40)
				for k := range n.Value.Data {
					n.Value.Data[k] = math.NaN()
				}
				n.Grad.resize(40, 40)
				for k := range n.Grad.Data {
					n.Grad.Data[k] = math.NaN()
				}
				for a := range n.aux {
					n.aux[a].resize(40, 40)
					for k := range n.aux[a].Data {
						n.aux[a].Data[k] = math.NaN()
					}
				}
			}
			dirty.Reset()
			v2, g2 := run(&dirty)
			if v1[0] != v2[0] && !(math.IsNaN(v1[0]) && math.IsNaN(v2[0])) {
				t.Fatalf("value %v on a reused tape, %v on a fresh one", v2[0], v1[0])
			}
			for i := range g1 {
				if g1[i] != g2[i] {
					t.Fatalf("gradient %d: %v on a reused tape, %v on a fresh one", i, g2[i], g1[i])
				}
			}
		})
	}
}
