package nn

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Optimizer updates parameters from their accumulated gradients.
type Optimizer[T Float] interface {
	// Step applies one update to every parameter from its Grad. It does not
	// clear gradients.
	Step()
	// ZeroGrad clears the gradients of the optimiser's parameters.
	ZeroGrad()
}

// ZeroGrad clears the gradients of params.
func ZeroGrad[T Float](params []*Node[T]) {
	for _, p := range params {
		clear(p.Grad.Data)
	}
}

// GradNorm returns the global L2 norm of the gradients of params.
func GradNorm[T Float](params []*Node[T]) float64 {
	var s float64
	for _, p := range params {
		for _, g := range p.Grad.Data {
			s += float64(g) * float64(g)
		}
	}
	return math.Sqrt(s)
}

// ClipGradNorm rescales the gradients of params so that their global L2 norm
// is at most maxNorm, and returns the norm before clipping (like PyTorch's
// clip_grad_norm_).
func ClipGradNorm[T Float](params []*Node[T], maxNorm float64) float64 {
	norm := GradNorm(params)
	if norm > maxNorm && norm > 0 {
		s := T(maxNorm / (norm + 1e-6))
		for _, p := range params {
			scaleInPlace(p.Grad.Data, s)
		}
	}
	return norm
}

func checkPair[T Float](op string, dst, src []*Node[T]) {
	if len(dst) != len(src) {
		panic(fmt.Sprintf("nn: %s: %d destination and %d source parameters", op, len(dst), len(src)))
	}
	for i := range dst {
		if dst[i].Value.Rows != src[i].Value.Rows || dst[i].Value.Cols != src[i].Value.Cols {
			panic(fmt.Sprintf("nn: %s: parameter %d shapes %s and %s differ", op, i, dst[i].Value.shape(), src[i].Value.shape()))
		}
	}
}

// SoftUpdate moves target parameters towards source ones (Polyak averaging):
// dst = tau·src + (1-tau)·dst, elementwise, for each pair of parameters.
func SoftUpdate[T Float](dst, src []*Node[T], tau T) {
	checkPair("SoftUpdate", dst, src)
	for i, d := range dst {
		s := src[i].Value.Data
		for k, v := range d.Value.Data {
			d.Value.Data[k] = tau*s[k] + (1-tau)*v
		}
	}
}

// HardCopy copies the values of src parameters into dst.
func HardCopy[T Float](dst, src []*Node[T]) {
	checkPair("HardCopy", dst, src)
	for i, d := range dst {
		copy(d.Value.Data, src[i].Value.Data)
	}
}

// AdamConfig holds Adam's hyperparameters (Kingma & Ba 2015).
type AdamConfig struct {
	LR          float64 // step size
	Beta1       float64 // decay of the first-moment estimate
	Beta2       float64 // decay of the second-moment estimate
	Eps         float64 // added to √v̂ in the denominator
	WeightDecay float64 // L2 penalty coefficient added to the gradient (0 = none)
}

// DefaultAdam returns LR 3e-4, betas 0.9 and 0.999, eps 1e-8, no weight decay.
func DefaultAdam() AdamConfig {
	return AdamConfig{LR: 3e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
}

// Adam is the Adam optimiser with bias correction.
type Adam[T Float] struct {
	Config AdamConfig
	params []*Node[T]
	m, v   [][]T
	t      int
}

// NewAdam returns an Adam optimiser for params.
func NewAdam[T Float](params []*Node[T], cfg AdamConfig) *Adam[T] {
	a := &Adam[T]{Config: cfg, params: params}
	for _, p := range params {
		a.m = append(a.m, make([]T, p.Value.Len()))
		a.v = append(a.v, make([]T, p.Value.Len()))
	}
	return a
}

// Step applies one Adam update:
// m = β1·m + (1-β1)·g, v = β2·v + (1-β2)·g², p -= lr·m̂/(√v̂ + eps).
func (a *Adam[T]) Step() {
	a.t++
	c := a.Config
	b1, b2 := T(c.Beta1), T(c.Beta2)
	bc1 := 1 - math.Pow(c.Beta1, float64(a.t))
	bc2 := 1 - math.Pow(c.Beta2, float64(a.t))
	// p -= lr/bc1 · m / (√v/√bc2 + eps)
	stepSize := T(c.LR / bc1)
	isb2 := T(1 / math.Sqrt(bc2))
	eps, wd := T(c.Eps), T(c.WeightDecay)
	c32 := [8]float32{float32(b1), float32(1 - b1), float32(b2), float32(1 - b2), float32(stepSize), float32(isb2), float32(eps)}
	for i, p := range a.params {
		m, v, g, w := a.m[i], a.v[i], p.Grad.Data, p.Value.Data
		m = m[:len(w)]
		v = v[:len(w)]
		g = g[:len(w)]
		if w32, ok := any(w).([]float32); ok && wd == 0 && actFast && len(w) >= 8 {
			// The same operations eight at a time (optim_amd64.s), then the tail.
			n := len(w) &^ 7
			adamStep32x8(&w32[0], &any(m).([]float32)[0], &any(v).([]float32)[0], &any(g).([]float32)[0], n, &c32)
			m, v, g, w = m[n:], v[n:], g[n:], w[n:]
		}
		for k := range w {
			gk := g[k]
			if wd != 0 {
				gk += wd * w[k]
			}
			m[k] = b1*m[k] + (1-b1)*gk
			v[k] = b2*v[k] + (1-b2)*gk*gk
			w[k] -= stepSize * m[k] / (T(math.Sqrt(float64(v[k])))*isb2 + eps)
		}
	}
}

// ZeroGrad clears the gradients of the optimiser's parameters.
func (a *Adam[T]) ZeroGrad() { ZeroGrad(a.params) }

// SGDConfig holds the hyperparameters of SGD with momentum (PyTorch's form:
// b = μ·b + g, p -= lr·b).
type SGDConfig struct {
	LR          float64 // step size
	Momentum    float64 // μ; 0 is plain SGD
	Nesterov    bool    // use Nesterov momentum: p -= lr·(g + μ·b)
	WeightDecay float64 // L2 penalty coefficient added to the gradient
}

// SGD is stochastic gradient descent with optional momentum.
type SGD[T Float] struct {
	Config SGDConfig
	params []*Node[T]
	buf    [][]T
}

// NewSGD returns an SGD optimiser for params.
func NewSGD[T Float](params []*Node[T], cfg SGDConfig) *SGD[T] {
	s := &SGD[T]{Config: cfg, params: params}
	for _, p := range params {
		s.buf = append(s.buf, make([]T, p.Value.Len()))
	}
	return s
}

// Step applies one update.
func (s *SGD[T]) Step() {
	lr, mu, wd := T(s.Config.LR), T(s.Config.Momentum), T(s.Config.WeightDecay)
	for i, p := range s.params {
		b, g, w := s.buf[i], p.Grad.Data, p.Value.Data
		for k := range w {
			gk := g[k] + wd*w[k]
			if mu == 0 {
				w[k] -= lr * gk
				continue
			}
			b[k] = mu*b[k] + gk
			if s.Config.Nesterov {
				w[k] -= lr * (gk + mu*b[k])
			} else {
				w[k] -= lr * b[k]
			}
		}
	}
}

// ZeroGrad clears the gradients of the optimiser's parameters.
func (s *SGD[T]) ZeroGrad() { ZeroGrad(s.params) }

// RMSPropConfig holds RMSProp's hyperparameters (PyTorch's form:
// v = α·v + (1-α)·g², p -= lr·g/(√v + eps), optionally with momentum).
type RMSPropConfig struct {
	LR       float64 // step size
	Alpha    float64 // smoothing constant of the squared-gradient average
	Eps      float64 // added to √v in the denominator
	Momentum float64 // momentum on the scaled step; 0 for none
}

// DefaultRMSProp returns LR 1e-2, alpha 0.99, eps 1e-8, no momentum (PyTorch's defaults).
func DefaultRMSProp() RMSPropConfig { return RMSPropConfig{LR: 1e-2, Alpha: 0.99, Eps: 1e-8} }

// RMSProp is the RMSProp optimiser (Tieleman & Hinton 2012).
type RMSProp[T Float] struct {
	Config RMSPropConfig
	params []*Node[T]
	sq     [][]T
	mom    [][]T
}

// NewRMSProp returns an RMSProp optimiser for params.
func NewRMSProp[T Float](params []*Node[T], cfg RMSPropConfig) *RMSProp[T] {
	r := &RMSProp[T]{Config: cfg, params: params}
	for _, p := range params {
		r.sq = append(r.sq, make([]T, p.Value.Len()))
		r.mom = append(r.mom, make([]T, p.Value.Len()))
	}
	return r
}

// Step applies one update.
func (r *RMSProp[T]) Step() {
	lr, alpha, eps, mu := T(r.Config.LR), T(r.Config.Alpha), T(r.Config.Eps), T(r.Config.Momentum)
	for i, p := range r.params {
		sq, mb, g, w := r.sq[i], r.mom[i], p.Grad.Data, p.Value.Data
		for k := range w {
			sq[k] = alpha*sq[k] + (1-alpha)*g[k]*g[k]
			d := g[k] / (T(math.Sqrt(float64(sq[k]))) + eps)
			if mu != 0 {
				mb[k] = mu*mb[k] + d
				d = mb[k]
			}
			w[k] -= lr * d
		}
	}
}

// ZeroGrad clears the gradients of the optimiser's parameters.
func (r *RMSProp[T]) ZeroGrad() { ZeroGrad(r.params) }

// Compile-time checks that the optimisers and layers satisfy the interfaces.
var (
	_ Optimizer[float32] = (*Adam[float32])(nil)
	_ Optimizer[float32] = (*SGD[float32])(nil)
	_ Optimizer[float32] = (*RMSProp[float32])(nil)
	_ Module[float32]    = (*Linear[float32])(nil)
	_ Module[float32]    = (*MLP[float32])(nil)
	_ Module[float32]    = (*GRU[float32])(nil)
	_ Module[float32]    = (*BatchNorm[float32])(nil)
	_ Module[float32]    = (*LayerNormLayer[float32])(nil)
	_ Module[float32]    = (*AttentionLayer[float32])(nil)
)

// Save writes the optimiser's state, its step count and moment estimates,
// so that Load into an optimiser of the same parameters continues exactly
// where this one stopped (a training checkpoint).
func (a *Adam[T]) Save(w io.Writer) error {
	if err := binary.Write(w, binary.LittleEndian, int64(a.t)); err != nil {
		return fmt.Errorf("nn: adam: %w", err)
	}
	return Save(w, a.arch(), a.moments())
}

// Load reads a state written by Save. Give it a *bufio.Reader when more
// follows in the same stream: it reads no further than the state then.
func (a *Adam[T]) Load(r io.Reader) error {
	br := bufio.NewReader(r)
	var t int64
	if err := binary.Read(br, binary.LittleEndian, &t); err != nil {
		return fmt.Errorf("nn: adam: step count: %w", err)
	}
	if err := Load(br, a.arch(), a.moments()); err != nil {
		return fmt.Errorf("nn: adam: %w", err)
	}
	a.t = int(t)
	return nil
}

func (a *Adam[T]) arch() string { return fmt.Sprintf("adam moments of %d tensors", len(a.params)) }

// moments are the first and second moment estimates as tensors shaped like
// their parameters, sharing their memory.
func (a *Adam[T]) moments() []*Node[T] {
	nodes := make([]*Node[T], 0, 2*len(a.params))
	for i, p := range a.params {
		shape := func(s []T) Tensor[T] { return Tensor[T]{Rows: p.Value.Rows, Cols: p.Value.Cols, Data: s} }
		nodes = append(nodes, &Node[T]{Name: p.Name + ".m", Value: shape(a.m[i])}, &Node[T]{Name: p.Name + ".v", Value: shape(a.v[i])})
	}
	return nodes
}
