package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

func mlpCases[T Float]() []gradCase[T] {
	var cases []gradCase[T]
	for _, act := range []Activation{Tanh, Sigmoid, Softplus, ELU} {
		rng := rand.New(rand.NewPCG(3, 4))
		m := NewMLP[T](rng, "m", []int{3, 5, 2}, act, Tanh)
		cases = append(cases, gradCase[T]{
			name:   "MLP/" + act.String(),
			inputs: [][2]int{{4, 3}},
			params: m.Params(),
			build: func(t *Tape[T], in []*Node[T]) *Node[T] {
				return m.Forward(t, in[0])
			},
		})
	}
	return cases
}

func TestGradMLP(t *testing.T) {
	t.Run("float64", func(t *testing.T) { runGradChecks(t, mlpCases[float64](), 1e-5, 1e-6) })
	t.Run("float32", func(t *testing.T) { runGradChecks(t, mlpCases[float32](), 1e-2, 1e-3) })
}

// TestGradCheckDetectsWrongGradient makes sure the checker can fail: an
// output that silently detaches its input has zero analytic gradient but a
// nonzero numeric one.
func TestGradCheckDetectsWrongGradient(t *testing.T) {
	gc := gradCase[float64]{name: "detached", inputs: [][2]int{{2, 3}}, build: func(t *Tape[float64], in []*Node[float64]) *Node[float64] {
		return t.Tanh(t.Const(in[0].Value))
	}}
	if rel := checkGrad(t, gc, 1e-5); rel < 0.5 {
		t.Fatalf("checker missed a wrong gradient: relative error %g", rel)
	}
}

// TestMLPFitsQuadratic trains a 1-32-1 tanh MLP with Adam on y = x² over
// [-1, 1] and requires the mean squared error to fall below 1e-3 (variance
// of the target is 4/45 ≈ 0.089).
func TestMLPFitsQuadratic(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	net := NewMLP[float32](rng, "f", []int{1, 32, 1}, Tanh, Identity)
	cfg := DefaultAdam()
	cfg.LR = 1e-2
	opt := NewAdam(net.Params(), cfg)
	var tp Tape[float32]
	const batch = 64
	var loss float32
	for step := 0; step < 2000; step++ {
		tp.Reset()
		x := tp.Input(batch, 1)
		y := tp.Input(batch, 1)
		for i := 0; i < batch; i++ {
			v := float32(2*rng.Float64() - 1)
			x.Value.Data[i] = v
			y.Value.Data[i] = v * v
		}
		l := tp.MSE(net.Forward(&tp, x), y)
		opt.ZeroGrad()
		tp.Backward(l)
		opt.Step()
		loss = l.Scalar()
	}
	if loss > 1e-3 {
		t.Fatalf("final MSE %g, want < 1e-3", loss)
	}
	// The predictor agrees with the tape forward pass.
	p := net.NewPredictor()
	out := make([]float32, 1)
	tp.Reset()
	x := tp.Input(1, 1)
	x.Value.Data[0] = 0.5
	want := net.Forward(&tp, x).Value.Data[0]
	if got := p.Predict(out, []float32{0.5})[0]; math.Abs(float64(got-want)) > 1e-6 {
		t.Fatalf("Predict(0.5) = %g, tape forward = %g", got, want)
	}
}

// TestPredictorsMatchTape checks the allocation-free inference paths against
// the tape forward pass for every activation and for the GRU cell.
func TestPredictorsMatchTape(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	x := make([]float64, 5)
	for i := range x {
		x[i] = 2 * rng.NormFloat64()
	}
	for a := Identity; a <= ELU; a++ {
		m := NewMLP[float64](rng, "m", []int{5, 7, 6, 3}, a, a)
		var tp Tape[float64]
		want := m.Forward(&tp, tp.Const(TensorFrom(1, 5, x))).Value.Data
		got := m.NewPredictor().Predict(nil, x) // nil destination sizes itself
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-12 {
				t.Errorf("%v: output %d = %v, tape %v", a, i, got[i], want[i])
			}
		}
	}
	g := NewGRU[float64](rng, "g", 5, 4)
	h := []float64{0.1, -0.3, 0.5, 0.9}
	var tp Tape[float64]
	want := g.Step(&tp, tp.Const(TensorFrom(1, 5, x)), tp.Const(TensorFrom(1, 4, h))).Value.Data
	got := g.NewPredictor().Step(h, h, x) // in place
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("GRU: h'[%d] = %v, tape %v", i, got[i], want[i])
		}
	}
}
