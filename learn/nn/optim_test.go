package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

func param1(vals ...float64) *Node[float64] {
	p := NewParam[float64]("p", 1, len(vals))
	copy(p.Value.Data, vals)
	return p
}

// TestOptimisers checks parameter trajectories of each optimiser against
// its update rule worked out by hand for a constant gradient.
func TestOptimisers(t *testing.T) {
	const g = 0.5 // constant gradient
	tests := []struct {
		name string
		make func(p *Node[float64]) Optimizer[float64]
		want []float64 // parameter after steps 1, 2, 3 (from 1.0)
	}{
		{
			// Adam with constant g: m̂ = g, v̂ = g² exactly, so each step is lr·g/(|g|+eps).
			name: "Adam",
			make: func(p *Node[float64]) Optimizer[float64] {
				return NewAdam([]*Node[float64]{p}, AdamConfig{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
			},
			want: []float64{1 - 0.1*g/(g+1e-8), 1 - 0.2*g/(g+1e-8), 1 - 0.3*g/(g+1e-8)},
		},
		{
			// SGD momentum μ=0.9: b = 0.5, 0.95, 1.355; p -= 0.1·b.
			name: "SGD/momentum",
			make: func(p *Node[float64]) Optimizer[float64] {
				return NewSGD([]*Node[float64]{p}, SGDConfig{LR: 0.1, Momentum: 0.9})
			},
			want: []float64{1 - 0.05, 1 - 0.05 - 0.095, 1 - 0.05 - 0.095 - 0.1355},
		},
		{
			// Nesterov: b as above, p -= 0.1·(g + 0.9·b).
			name: "SGD/nesterov",
			make: func(p *Node[float64]) Optimizer[float64] {
				return NewSGD([]*Node[float64]{p}, SGDConfig{LR: 0.1, Momentum: 0.9, Nesterov: true})
			},
			want: []float64{1 - 0.095, 1 - 0.095 - 0.1355, 1 - 0.095 - 0.1355 - 0.17195},
		},
		{
			// Weight decay 0.1 adds 0.1·p to the gradient.
			name: "SGD/weightdecay",
			make: func(p *Node[float64]) Optimizer[float64] {
				return NewSGD([]*Node[float64]{p}, SGDConfig{LR: 0.1, WeightDecay: 0.1})
			},
			want: []float64{0.94, 0.8806, 0.821794},
		},
		{
			name: "RMSProp/momentum",
			make: func(p *Node[float64]) Optimizer[float64] {
				return NewRMSProp([]*Node[float64]{p}, RMSPropConfig{LR: 0.01, Alpha: 0.9, Eps: 1e-8, Momentum: 0.5})
			},
			want: func() []float64 {
				p, b, out := 1.0, 0.0, []float64{}
				for _, v := range []float64{0.1, 0.19, 0.271} {
					b = 0.5*b + g/(math.Sqrt(v*g*g)+1e-8)
					p -= 0.01 * b
					out = append(out, p)
				}
				return out
			}(),
		},
		{
			name: "SGD/plain",
			make: func(p *Node[float64]) Optimizer[float64] {
				return NewSGD([]*Node[float64]{p}, SGDConfig{LR: 0.1})
			},
			want: []float64{0.95, 0.9, 0.85},
		},
		{
			// RMSProp α=0.9: v = 0.1g², 0.19g², 0.271g²; p -= lr·g/(√v+eps).
			name: "RMSProp",
			make: func(p *Node[float64]) Optimizer[float64] {
				return NewRMSProp([]*Node[float64]{p}, RMSPropConfig{LR: 0.01, Alpha: 0.9, Eps: 1e-8})
			},
			want: func() []float64 {
				p, out := 1.0, []float64{}
				for _, v := range []float64{0.1, 0.19, 0.271} {
					p -= 0.01 * g / (math.Sqrt(v*g*g) + 1e-8)
					out = append(out, p)
				}
				return out
			}(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := param1(1)
			opt := tc.make(p)
			for s, want := range tc.want {
				opt.ZeroGrad()
				p.Grad.Data[0] = g
				opt.Step()
				if got := p.Value.Data[0]; math.Abs(got-want) > 1e-12 {
					t.Fatalf("step %d: p = %.15g, want %.15g", s+1, got, want)
				}
			}
			opt.ZeroGrad()
			if p.Grad.Data[0] != 0 {
				t.Errorf("ZeroGrad left %v", p.Grad.Data[0])
			}
		})
	}
}

// TestAdamMinimisesQuadratic: Adam drives f(p) = Σ (p_i - i)² to its
// minimum through the tape.
func TestAdamMinimisesQuadratic(t *testing.T) {
	p := param1(5, -3, 0.5)
	target := TensorFrom(1, 3, []float64{0, 1, 2})
	opt := NewAdam([]*Node[float64]{p}, AdamConfig{LR: 0.05, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
	var tp Tape[float64]
	for i := 0; i < 2000; i++ {
		tp.Reset()
		loss := tp.Sum(tp.Square(tp.Sub(p, tp.Const(target))))
		opt.ZeroGrad()
		tp.Backward(loss)
		opt.Step()
	}
	for i, v := range p.Value.Data {
		if math.Abs(v-float64(i)) > 1e-3 {
			t.Errorf("p[%d] = %v, want %d", i, v, i)
		}
	}
}

func TestClipGradNorm(t *testing.T) {
	a, b := param1(0, 0), param1(0)
	a.Grad.Data[0], a.Grad.Data[1], b.Grad.Data[0] = 3, 0, 4 // norm 5
	ps := []*Node[float64]{a, b}
	if n := ClipGradNorm(ps, 10); n != 5 || a.Grad.Data[0] != 3 {
		t.Fatalf("below the limit: norm %v, grad %v", n, a.Grad.Data)
	}
	if n := ClipGradNorm(ps, 1); n != 5 {
		t.Fatalf("returned norm %v, want 5", n)
	}
	if got := GradNorm(ps); math.Abs(got-1) > 1e-6 {
		t.Fatalf("norm after clipping %v, want 1", got)
	}
	if math.Abs(a.Grad.Data[0]/b.Grad.Data[0]-0.75) > 1e-12 {
		t.Errorf("clipping changed the direction: %v %v", a.Grad.Data, b.Grad.Data)
	}
}

func TestTargetUpdates(t *testing.T) {
	dst, src := param1(1, 2), param1(3, -2)
	SoftUpdate([]*Node[float64]{dst}, []*Node[float64]{src}, 0.25)
	if want := []float64{0.25*3 + 0.75*1, 0.25*-2 + 0.75*2}; dst.Value.Data[0] != want[0] || dst.Value.Data[1] != want[1] {
		t.Fatalf("SoftUpdate: got %v, want %v", dst.Value.Data, want)
	}
	HardCopy([]*Node[float64]{dst}, []*Node[float64]{src})
	if dst.Value.Data[0] != 3 || dst.Value.Data[1] != -2 {
		t.Fatalf("HardCopy: got %v", dst.Value.Data)
	}
	defer func() {
		if recover() == nil {
			t.Errorf("SoftUpdate of mismatched shapes did not panic")
		}
	}()
	SoftUpdate([]*Node[float64]{dst}, []*Node[float64]{param1(1)}, 0.5)
}

// TestOrthogonal checks WᵀW = gain²·I for tall and WWᵀ = gain²·I for wide
// parameters.
func TestOrthogonal(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for _, sh := range [][2]int{{6, 4}, {4, 6}, {5, 5}} {
		p := NewParam[float64]("w", sh[0], sh[1])
		Orthogonal(rng, p, 2)
		r, c := sh[0], sh[1]
		k := min(r, c)
		for i := 0; i < k; i++ {
			for j := 0; j < k; j++ {
				var s float64
				if r >= c { // columns i, j
					for l := 0; l < r; l++ {
						s += p.Value.At(l, i) * p.Value.At(l, j)
					}
				} else { // rows i, j
					for l := 0; l < c; l++ {
						s += p.Value.At(i, l) * p.Value.At(j, l)
					}
				}
				want := 0.0
				if i == j {
					want = 4
				}
				if math.Abs(s-want) > 1e-12 {
					t.Fatalf("%v: Gram[%d,%d] = %v, want %v", sh, i, j, s, want)
				}
			}
		}
	}
}
