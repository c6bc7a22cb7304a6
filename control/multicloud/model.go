package multicloud

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/bo/svr"
	"github.com/shoal-project/shoal/learn/nn"
)

// Model is a service's performance model (section II-C1): the mean
// response time of its calls, ms, from the model's input (Features).
type Model interface {
	Predict(x []float64) float64
}

// SVRModel is epsilon-SVR with an RBF kernel on standardised inputs
// (section III-A: C = 960.77).
type SVRModel struct {
	Scaler nn.Scaler
	M      *svr.Model
	buf    []float64
}

// Predict implements Model; it does not allocate.
func (m *SVRModel) Predict(x []float64) float64 {
	m.buf = m.Scaler.Apply(m.buf, x)
	return m.M.Predict(m.buf)
}

// SVRC is the penalty the paper tuned on Bookinfo (III-A).
const SVRC = 960.77

// FitSVR fits an SVR model to the rows of x and targets y (ms): RBF kernel,
// C = 960.77; the paper gives no other parameter, so gamma and epsilon
// are scikit-learn's defaults (gamma "scale": 1 / (features x variance of
// the standardised inputs) = 1 / features; epsilon 0.1).
func FitSVR(x [][]float64, y []float64) (*SVRModel, error) {
	sc := nn.FitScaler(x)
	z := make([][]float64, len(x))
	for i, row := range x {
		z[i] = sc.Apply(nil, row)
	}
	m, err := svr.Fit(z, y, svr.Config{Kernel: svr.RBF, C: SVRC, Epsilon: 0.1, Gamma: 1 / float64(len(x[0]))})
	if err != nil {
		return nil, err
	}
	return &SVRModel{Scaler: sc, M: m}, nil
}

// Net is the paper's neural network (Fig. 5): five layers, each a linear
// transform to 100 units, batch normalisation and Leaky ReLU, then a linear
// transform to the scalar output.
type Net struct {
	Hidden []*nn.Linear[float32]
	Norms  []*nn.BatchNorm[float32]
	Out    *nn.Linear[float32]
	a, b   []float32 // inference scratch: alternate layers' outputs
}

// NetLayers and NetUnits are the paper's depth and width (II-C1).
const (
	NetLayers = 5
	NetUnits  = 100
)

// leakySlope is PyTorch's default negative slope of nn.LeakyReLU.
const leakySlope = 0.01

// NewNet returns a network for inputs features with fresh weights; name
// prefixes its parameters' names.
func NewNet(rng *rand.Rand, name string, inputs int) *Net {
	n := &Net{}
	in := inputs
	for k := range NetLayers {
		n.Hidden = append(n.Hidden, nn.NewLinear[float32](rng, fmt.Sprintf("%s.l%d", name, k), in, NetUnits))
		n.Norms = append(n.Norms, nn.NewBatchNorm[float32](fmt.Sprintf("%s.bn%d", name, k), NetUnits))
		in = NetUnits
	}
	n.Out = nn.NewLinear[float32](rng, name+".out", in, 1)
	return n
}

// Forward records the network on t for a batch x (rows of inputs); train
// selects batch statistics in the batch normalisation.
func (n *Net) Forward(t *nn.Tape[float32], x *nn.Node[float32], train bool) *nn.Node[float32] {
	h := x
	for k, l := range n.Hidden {
		h = t.LeakyReLU(n.Norms[k].Forward(t, l.Forward(t, h), train), leakySlope)
	}
	return n.Out.Forward(t, h)
}

// Params are the trained parameters.
func (n *Net) Params() []*nn.Node[float32] {
	var ps []*nn.Node[float32]
	for k, l := range n.Hidden {
		ps = append(ps, l.Params()...)
		ps = append(ps, n.Norms[k].Params()...)
	}
	return append(ps, n.Out.Params()...)
}

// State is everything a file keeps: the parameters and the running
// statistics of the batch normalisation.
func (n *Net) State() []*nn.Node[float32] {
	var ps []*nn.Node[float32]
	for k, l := range n.Hidden {
		ps = append(ps, l.Params()...)
		ps = append(ps, n.Norms[k].State()...)
	}
	return append(ps, n.Out.Params()...)
}

// Predict evaluates the network (batch normalisation with its running
// statistics) on one input; it does not allocate once warm.
func (n *Net) Predict(x []float32) float32 {
	if n.a == nil {
		n.a, n.b = make([]float32, NetUnits), make([]float32, NetUnits)
	}
	in := x
	for k, l := range n.Hidden {
		out := n.a
		if k%2 == 1 {
			out = n.b
		}
		affine(out, in, l)
		bn := n.Norms[k]
		for j, v := range out {
			v = (v-bn.RunMean.Value.Data[j])/float32(math.Sqrt(float64(bn.RunVar.Value.Data[j])+bn.Eps))*bn.Gamma.Value.Data[j] + bn.Beta.Value.Data[j]
			if v < 0 {
				v *= leakySlope
			}
			out[j] = v
		}
		in = out
	}
	var y [1]float32
	affine(y[:], in, n.Out)
	return y[0]
}

// affine writes x·W + b to y.
func affine(y, x []float32, l *nn.Linear[float32]) {
	w, cols := l.W.Value.Data, l.W.Value.Cols
	copy(y, l.B.Value.Data)
	for i, xi := range x {
		row := w[i*cols : (i+1)*cols]
		for j, v := range row {
			y[j] += xi * v
		}
	}
}

// NNModel is the network on standardised inputs.
type NNModel struct {
	Scaler nn.Scaler
	Net    *Net
	z      []float64
	x      []float32
}

// Predict implements Model.
func (m *NNModel) Predict(x []float64) float64 {
	m.z = m.Scaler.Apply(m.z, x)
	if len(m.x) != len(x) {
		m.x = make([]float32, len(x))
	}
	for i, v := range m.z {
		m.x[i] = float32(v)
	}
	return float64(m.Net.Predict(m.x))
}
