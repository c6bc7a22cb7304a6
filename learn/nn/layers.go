package nn

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"math"
	"math/rand/v2"
	"strings"
)

// Module is a network part with trainable parameters.
type Module[T Float] interface {
	// Params returns the trainable parameters in a fixed order.
	Params() []*Node[T]
	// Arch describes the architecture (layer kinds and sizes); files saved
	// from one architecture load only into the same architecture.
	Arch() string
}

// Linear is a fully connected layer y = x·W + B with W of shape in×out and
// B of shape 1×out.
type Linear[T Float] struct {
	W, B *Node[T]
}

// NewLinear returns an in→out layer initialised like PyTorch's nn.Linear:
// W and B uniform in ±1/√in. name prefixes the parameter names.
func NewLinear[T Float](rng *rand.Rand, name string, in, out int) *Linear[T] {
	l := &Linear[T]{W: NewParam[T](name+".W", in, out), B: NewParam[T](name+".B", 1, out)}
	bound := 1 / math.Sqrt(float64(in))
	uniformFill(rng, l.W.Value.Data, bound)
	uniformFill(rng, l.B.Value.Data, bound)
	return l
}

func uniformFill[T Float](rng *rand.Rand, x []T, bound float64) {
	for i := range x {
		x[i] = T((2*rng.Float64() - 1) * bound)
	}
}

// Forward records y = x·W + B on t for a batch x (B×in).
func (l *Linear[T]) Forward(t *Tape[T], x *Node[T]) *Node[T] { return t.Linear(x, l.W, l.B) }

// Params returns W and B.
func (l *Linear[T]) Params() []*Node[T] { return []*Node[T]{l.W, l.B} }

// Arch returns "linear(in,out)".
func (l *Linear[T]) Arch() string {
	return fmt.Sprintf("linear(%d,%d)", l.W.Value.Rows, l.W.Value.Cols)
}

// In returns the input width.
func (l *Linear[T]) In() int { return l.W.Value.Rows }

// Out returns the output width.
func (l *Linear[T]) Out() int { return l.W.Value.Cols }

// Activation is an elementwise nonlinearity used between MLP layers.
type Activation uint8

// Activations.
const (
	Identity Activation = iota
	ReLU
	Tanh
	Sigmoid
	Softplus
	LeakyReLU // slope 0.01 for negative inputs
	ELU       // alpha 1
)

var activationNames = [...]string{"identity", "relu", "tanh", "sigmoid", "softplus", "leakyrelu", "elu"}

// String returns the activation's lowercase name.
func (a Activation) String() string {
	if int(a) < len(activationNames) {
		return activationNames[a]
	}
	return fmt.Sprintf("activation(%d)", uint8(a))
}

// leakySlope is the negative slope of the LeakyReLU activation.
const leakySlope = 0.01

func activate[T Float](t *Tape[T], a Activation, x *Node[T]) *Node[T] {
	switch a {
	case Identity:
		return x
	case ReLU:
		return t.ReLU(x)
	case Tanh:
		return t.Tanh(x)
	case Sigmoid:
		return t.Sigmoid(x)
	case Softplus:
		return t.Softplus(x)
	case LeakyReLU:
		return t.LeakyReLU(x, leakySlope)
	case ELU:
		return t.ELU(x, 1)
	}
	panic(fmt.Sprintf("nn: unknown activation %d", a))
}

// activateInPlace applies a to x (the inference path).
func activateInPlace[T Float](a Activation, x []T) {
	switch a {
	case Identity:
	case ReLU:
		for i, v := range x {
			x[i] = max(v, 0)
		}
	case Tanh:
		for i, v := range x {
			x[i] = T(math.Tanh(float64(v)))
		}
	case Sigmoid:
		for i, v := range x {
			x[i] = sigmoid(v)
		}
	case Softplus:
		for i, v := range x {
			x[i] = softplus(v)
		}
	case LeakyReLU:
		for i, v := range x {
			if v < 0 {
				x[i] = v * leakySlope
			}
		}
	case ELU:
		for i, v := range x {
			if v < 0 {
				x[i] = T(math.Expm1(float64(v)))
			}
		}
	default:
		panic(fmt.Sprintf("nn: unknown activation %d", a))
	}
}

// MLP is a multilayer perceptron: Linear layers with Hidden between them
// and Output after the last one.
type MLP[T Float] struct {
	Layers []*Linear[T]
	Hidden Activation
	Output Activation
}

// NewMLP returns an MLP with layer widths sizes (input first, output last,
// at least two entries). Parameters are named name.0.W, name.0.B, ….
func NewMLP[T Float](rng *rand.Rand, name string, sizes []int, hidden, output Activation) *MLP[T] {
	if len(sizes) < 2 {
		panic(fmt.Sprintf("nn: NewMLP needs at least 2 sizes, got %v", sizes))
	}
	m := &MLP[T]{Hidden: hidden, Output: output}
	for i := 0; i+1 < len(sizes); i++ {
		if sizes[i] < 1 || sizes[i+1] < 1 {
			panic(fmt.Sprintf("nn: NewMLP: sizes must be positive, got %v", sizes))
		}
		m.Layers = append(m.Layers, NewLinear[T](rng, fmt.Sprintf("%s.%d", name, i), sizes[i], sizes[i+1]))
	}
	return m
}

// Forward records the network applied to a batch x (B×in) on t.
func (m *MLP[T]) Forward(t *Tape[T], x *Node[T]) *Node[T] {
	for i, l := range m.Layers {
		x = l.Forward(t, x)
		if i+1 < len(m.Layers) {
			x = activate(t, m.Hidden, x)
		} else {
			x = activate(t, m.Output, x)
		}
	}
	return x
}

// Params returns the parameters of all layers, in layer order.
func (m *MLP[T]) Params() []*Node[T] {
	var ps []*Node[T]
	for _, l := range m.Layers {
		ps = append(ps, l.W, l.B)
	}
	return ps
}

// In returns the input width.
func (m *MLP[T]) In() int { return m.Layers[0].In() }

// Out returns the output width.
func (m *MLP[T]) Out() int { return m.Layers[len(m.Layers)-1].Out() }

// Arch returns "mlp(in,h1,...,out;hidden;output)".
func (m *MLP[T]) Arch() string {
	var b strings.Builder
	b.WriteString("mlp(")
	fmt.Fprintf(&b, "%d", m.In())
	for _, l := range m.Layers {
		fmt.Fprintf(&b, ",%d", l.Out())
	}
	fmt.Fprintf(&b, ";%s;%s)", m.Hidden, m.Output)
	return b.String()
}

// MLPPredictor runs an MLP forward on one sample without allocating. It reads
// the MLP's current weights, so it stays valid across training steps. It is
// not safe for concurrent use; make one per goroutine.
type MLPPredictor[T Float] struct {
	m    *MLP[T]
	bufs [2][]T
}

// NewPredictor returns an allocation-free single-sample inference path.
func (m *MLP[T]) NewPredictor() *MLPPredictor[T] {
	w := 0
	for _, l := range m.Layers {
		w = max(w, l.Out())
	}
	return &MLPPredictor[T]{m: m, bufs: [2][]T{make([]T, w), make([]T, w)}}
}

// Predict writes the network output for input x (len In) to dst (len Out)
// and returns dst. It allocates nothing, except a new dst when dst is nil.
func (p *MLPPredictor[T]) Predict(dst, x []T) []T {
	m := p.m
	if dst == nil {
		dst = make([]T, m.Out())
	}
	if len(x) != m.In() || len(dst) != m.Out() {
		panic(fmt.Sprintf("nn: Predict: len(x)=%d, len(dst)=%d; want %d and %d", len(x), len(dst), m.In(), m.Out()))
	}
	cur := x
	for i, l := range m.Layers {
		var out []T
		if i+1 == len(m.Layers) {
			out = dst
		} else {
			out = p.bufs[i%2][:l.Out()]
		}
		vecMat(out, cur, l.W.Value, l.B.Value.Data)
		if i+1 < len(m.Layers) {
			activateInPlace(m.Hidden, out)
		} else {
			activateInPlace(m.Output, out)
		}
		cur = out
	}
	return dst
}

// vecMat writes y = x·W + b (b nil means 0) for a row vector x (len W.Rows), through
// BLAS gemv (y = Wᵀx + y), whose SIMD axpy kernels beat a plain loop.
func vecMat[T Float](y, x []T, w Tensor[T], b []T) {
	if b == nil {
		clear(y)
	} else {
		copy(y, b)
	}
	switch xd := any(x).(type) {
	case []float32:
		blas32.Gemv(blas.Trans, 1, blas32.General{Rows: w.Rows, Cols: w.Cols, Stride: w.Cols, Data: any(w.Data).([]float32)},
			blas32.Vector{N: len(xd), Inc: 1, Data: xd}, 1, blas32.Vector{N: len(y), Inc: 1, Data: any(y).([]float32)})
	case []float64:
		blas64.Gemv(blas.Trans, 1, blas64.General{Rows: w.Rows, Cols: w.Cols, Stride: w.Cols, Data: any(w.Data).([]float64)},
			blas64.Vector{N: len(xd), Inc: 1, Data: xd}, 1, blas64.Vector{N: len(y), Inc: 1, Data: any(y).([]float64)})
	}
}

// State returns Params (an MLP has no other state).
func (m *MLP[T]) State() []*Node[T] { return m.Params() }

// State returns Params (a linear layer has no other state).
func (l *Linear[T]) State() []*Node[T] { return l.Params() }
