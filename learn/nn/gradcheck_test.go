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
// largest norm-relative error ‖g_num - g_ana‖/max(‖g_num‖, ‖g_ana‖, floor)
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
	type errs struct{ dn, na, nn float64 }
	per := make([]errs, len(checked))
	var global float64
	for i, p := range checked {
		ana := append([]T(nil), p.Grad.Data...)
		e := &per[i]
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
			e.dn += d * d
			e.na += float64(ana[k]) * float64(ana[k])
			e.nn += num * num
		}
		global += math.Max(e.na, e.nn)
		clear(p.Grad.Data)
	}
	// A node's error is relative to its own gradient norm, floored at a
	// tenth of the whole gradient's norm so that gradients that are zero in
	// exact arithmetic (a key bias under softmax) are not judged by noise.
	floor := math.Max(0.1*math.Sqrt(global), 1e-12)
	worst := 0.0
	for _, e := range per {
		rel := math.Sqrt(e.dn) / math.Max(math.Max(math.Sqrt(e.na), math.Sqrt(e.nn)), floor)
		if rel > worst {
			worst = rel
		}
	}
	return worst
}
