package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// gradCase builds a computation from parameter inputs on a tape and returns
// its output node. Gradients are checked for every input.
type gradCase[T Float] struct {
	name   string
	inputs [][2]int                                 // shapes of the parameter inputs
	init   func(rng *rand.Rand, i int, x []T)       // optional input initialisation
	build  func(t *Tape[T], in []*Node[T]) *Node[T] // forward
	params []*Node[T]                               // layer parameters, also checked
}

// checkGrad compares analytic gradients of L = Σ c⊙out (c random, fixed)
// with central finite differences of L computed in float64, and returns the
// largest norm-relative error ‖g_num - g_ana‖/max(‖g_num‖, ‖g_ana‖, tiny)
// over the inputs and parameters.
func checkGrad[T Float](t *testing.T, gc gradCase[T], h float64) float64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	in := make([]*Node[T], len(gc.inputs))
	for i, s := range gc.inputs {
		in[i] = NewParam[T]("x", s[0], s[1])
		if gc.init != nil {
			gc.init(rng, i, in[i].Value.Data)
		} else {
			for k := range in[i].Value.Data {
				in[i].Value.Data[k] = T(rng.NormFloat64())
			}
		}
	}
	var tp Tape[T]
	out := gc.build(&tp, in)
	c := make([]T, out.Value.Len())
	for k := range c {
		c[k] = T(rng.NormFloat64())
	}
	eval := func() float64 {
		tp.Reset()
		o := gc.build(&tp, in)
		var s float64
		for k, v := range o.Value.Data {
			s += float64(c[k]) * float64(v)
		}
		return s
	}
	checked := append(append([]*Node[T](nil), in...), gc.params...)
	ZeroGrad(checked)
	tp.Reset()
	out = gc.build(&tp, in)
	tp.backward(out, c)
	worst := 0.0
	for i, p := range checked {
		ana := append([]T(nil), p.Grad.Data...)
		var dn, na, nn float64
		for k := range p.Value.Data {
			orig := p.Value.Data[k]
			p.Value.Data[k] = orig + T(h)
			lp := eval()
			p.Value.Data[k] = orig - T(h)
			lm := eval()
			p.Value.Data[k] = orig
			// Use the actually representable step.
			step := float64(orig+T(h)) - float64(orig-T(h))
			num := (lp - lm) / step
			d := num - float64(ana[k])
			dn += d * d
			na += float64(ana[k]) * float64(ana[k])
			nn += num * num
		}
		rel := math.Sqrt(dn) / math.Max(math.Max(math.Sqrt(na), math.Sqrt(nn)), 1e-12)
		if na == 0 && nn == 0 {
			rel = 0
		}
		if rel > worst {
			worst = rel
		}
		clear(p.Grad.Data)
		_ = i
	}
	return worst
}
