package nn

import (
	"fmt"
	"math"
)

// LayerNorm normalises each row of x to zero mean and unit variance over
// its columns, then applies a per-column gain (1×Cols) and bias (1×Cols):
// y = gain·(x - mean)/√(var + eps) + bias (Ba et al. 2016; biased variance).
func (t *Tape[T]) LayerNorm(x, gain, bias *Node[T], eps float64) *Node[T] {
	r, c := x.Value.Rows, x.Value.Cols
	if gain.Value.Rows != 1 || gain.Value.Cols != c || bias.Value.Rows != 1 || bias.Value.Cols != c {
		panic(fmt.Sprintf("nn: LayerNorm: x %s, gain %s, bias %s", x.Value.shape(), gain.Value.shape(), bias.Value.shape()))
	}
	n := t.node(opLayerNorm, r, c, x, gain, bias)
	xhat, istd := &n.aux[0], &n.aux[1]
	xhat.resize(r, c)
	istd.resize(r, 1)
	g, b := gain.Value.Data, bias.Value.Data
	for i := 0; i < r; i++ {
		row := x.Value.Data[i*c : (i+1)*c]
		var mean, v float64
		for _, a := range row {
			mean += float64(a)
		}
		mean /= float64(c)
		for _, a := range row {
			d := float64(a) - mean
			v += d * d
		}
		is := 1 / math.Sqrt(v/float64(c)+eps)
		istd.Data[i] = T(is)
		xh := xhat.Data[i*c : (i+1)*c]
		y := n.Value.Data[i*c : (i+1)*c]
		for j, a := range row {
			xh[j] = T((float64(a) - mean) * is)
			y[j] = g[j]*xh[j] + b[j]
		}
	}
	return n
}

func (n *Node[T]) backLayerNorm() {
	x, gain, bias := n.in[0], n.in[1], n.in[2]
	r, c := n.Value.Rows, n.Value.Cols
	xhat, istd := n.aux[0].Data, n.aux[1].Data
	g := gain.Value.Data
	for i := 0; i < r; i++ {
		dy := n.Grad.Data[i*c : (i+1)*c]
		xh := xhat[i*c : (i+1)*c]
		if gain.needGrad {
			for j, d := range dy {
				gain.Grad.Data[j] += d * xh[j]
			}
		}
		if bias.needGrad {
			for j, d := range dy {
				bias.Grad.Data[j] += d
			}
		}
		if !x.needGrad {
			continue
		}
		// dx = istd·(dxhat - mean(dxhat) - xhat·mean(dxhat·xhat)), dxhat = dy·gain.
		var m1, m2 T
		for j, d := range dy {
			dxh := d * g[j]
			m1 += dxh
			m2 += dxh * xh[j]
		}
		m1 /= T(c)
		m2 /= T(c)
		dx := x.Grad.Data[i*c : (i+1)*c]
		for j, d := range dy {
			dx[j] += istd[i] * (d*g[j] - m1 - xh[j]*m2)
		}
	}
}

// LayerNormLayer is a LayerNorm with learned Gain (initially 1) and Bias
// (initially 0).
type LayerNormLayer[T Float] struct {
	Gain, Bias *Node[T]
	Eps        float64 // added to the variance; 1e-5 by default
}

// NewLayerNorm returns a layer normalising rows of width features.
func NewLayerNorm[T Float](name string, features int) *LayerNormLayer[T] {
	l := &LayerNormLayer[T]{Gain: NewParam[T](name+".gain", 1, features), Bias: NewParam[T](name+".bias", 1, features), Eps: 1e-5}
	for i := range l.Gain.Value.Data {
		l.Gain.Value.Data[i] = 1
	}
	return l
}

// Forward records the normalisation of x (B×features) on t.
func (l *LayerNormLayer[T]) Forward(t *Tape[T], x *Node[T]) *Node[T] {
	return t.LayerNorm(x, l.Gain, l.Bias, l.Eps)
}

// Params returns Gain and Bias.
func (l *LayerNormLayer[T]) Params() []*Node[T] { return []*Node[T]{l.Gain, l.Bias} }

// State returns Params (a layer norm has no other state).
func (l *LayerNormLayer[T]) State() []*Node[T] { return l.Params() }

// Arch returns "layernorm(features)".
func (l *LayerNormLayer[T]) Arch() string { return fmt.Sprintf("layernorm(%d)", l.Gain.Value.Cols) }

// BatchNorm is batch normalisation over the rows of a batch (Ioffe &
// Szegedy 2015) with learned per-feature Gamma (initially 1) and Beta
// (initially 0). In training mode it normalises with the batch mean and
// biased variance and updates the running statistics:
// running = (1-Momentum)·running + Momentum·batch, using the unbiased batch
// variance for RunVar (as PyTorch does). In evaluation mode it normalises
// with RunMean and RunVar. RunMean and RunVar are saved with the parameters
// but never trained.
type BatchNorm[T Float] struct {
	Gamma, Beta     *Node[T]
	RunMean, RunVar *Node[T] // 1×features running statistics (not trainable)
	Momentum        float64  // weight of the new batch in the running statistics; 0.1 by default
	Eps             float64  // added to the variance; 1e-5 by default
}

// NewBatchNorm returns a batch-norm layer for features columns, with running
// mean 0 and running variance 1.
func NewBatchNorm[T Float](name string, features int) *BatchNorm[T] {
	bn := &BatchNorm[T]{
		Gamma:    NewParam[T](name+".gamma", 1, features),
		Beta:     NewParam[T](name+".beta", 1, features),
		RunMean:  NewParam[T](name+".runmean", 1, features),
		RunVar:   NewParam[T](name+".runvar", 1, features),
		Momentum: 0.1,
		Eps:      1e-5,
	}
	bn.RunMean.needGrad, bn.RunVar.needGrad = false, false
	bn.RunMean.Grad, bn.RunVar.Grad = Tensor[T]{}, Tensor[T]{}
	for i := 0; i < features; i++ {
		bn.Gamma.Value.Data[i] = 1
		bn.RunVar.Value.Data[i] = 1
	}
	return bn
}

// Params returns Gamma and Beta.
func (bn *BatchNorm[T]) Params() []*Node[T] { return []*Node[T]{bn.Gamma, bn.Beta} }

// State returns Gamma, Beta, RunMean and RunVar: everything Save must write.
func (bn *BatchNorm[T]) State() []*Node[T] {
	return []*Node[T]{bn.Gamma, bn.Beta, bn.RunMean, bn.RunVar}
}

// Arch returns "batchnorm(features)".
func (bn *BatchNorm[T]) Arch() string { return fmt.Sprintf("batchnorm(%d)", bn.Gamma.Value.Cols) }

// Forward records batch normalisation of x (B×features) on t; train selects
// batch statistics (and updates the running ones) or running statistics.
// Training mode needs B ≥ 2.
func (bn *BatchNorm[T]) Forward(t *Tape[T], x *Node[T], train bool) *Node[T] {
	r, c := x.Value.Rows, x.Value.Cols
	if c != bn.Gamma.Value.Cols {
		panic(fmt.Sprintf("nn: BatchNorm of %d features applied to %s", bn.Gamma.Value.Cols, x.Value.shape()))
	}
	if train && r < 2 {
		panic("nn: BatchNorm in training mode needs at least 2 rows")
	}
	n := t.node(opBatchNorm, r, c, x, bn.Gamma, bn.Beta)
	n.i0 = 0
	if train {
		n.i0 = 1
	}
	xhat, istd := &n.aux[0], &n.aux[1]
	xhat.resize(r, c)
	istd.resize(1, c)
	mean, vr := &n.aux[2], &n.aux[3]
	mean.resize(1, c)
	vr.resize(1, c)
	if train {
		clear(mean.Data)
		clear(vr.Data)
		for i := 0; i < r; i++ {
			for j, a := range x.Value.Data[i*c : (i+1)*c] {
				mean.Data[j] += a
			}
		}
		for j := range mean.Data {
			mean.Data[j] /= T(r)
		}
		for i := 0; i < r; i++ {
			for j, a := range x.Value.Data[i*c : (i+1)*c] {
				d := a - mean.Data[j]
				vr.Data[j] += d * d
			}
		}
		mom := T(bn.Momentum)
		for j := range vr.Data {
			biased := vr.Data[j] / T(r)
			unbiased := vr.Data[j] / T(r-1)
			vr.Data[j] = biased
			bn.RunMean.Value.Data[j] = (1-mom)*bn.RunMean.Value.Data[j] + mom*mean.Data[j]
			bn.RunVar.Value.Data[j] = (1-mom)*bn.RunVar.Value.Data[j] + mom*unbiased
		}
	} else {
		copy(mean.Data, bn.RunMean.Value.Data)
		copy(vr.Data, bn.RunVar.Value.Data)
	}
	for j := range istd.Data {
		istd.Data[j] = T(1 / math.Sqrt(float64(vr.Data[j])+bn.Eps))
	}
	g, b := bn.Gamma.Value.Data, bn.Beta.Value.Data
	for i := 0; i < r; i++ {
		row := x.Value.Data[i*c : (i+1)*c]
		xh := xhat.Data[i*c : (i+1)*c]
		y := n.Value.Data[i*c : (i+1)*c]
		for j, a := range row {
			xh[j] = (a - mean.Data[j]) * istd.Data[j]
			y[j] = g[j]*xh[j] + b[j]
		}
	}
	return n
}

func (n *Node[T]) backBatchNorm() {
	x, gamma, beta := n.in[0], n.in[1], n.in[2]
	r, c := n.Value.Rows, n.Value.Cols
	xhat, istd := n.aux[0].Data, n.aux[1].Data
	g := gamma.Value.Data
	// Column sums Σdy and Σdy·xhat, kept in aux[2] and aux[3] (free now).
	s1, s2 := n.aux[2].Data, n.aux[3].Data
	clear(s1)
	clear(s2)
	for i := 0; i < r; i++ {
		dy := n.Grad.Data[i*c : (i+1)*c]
		xh := xhat[i*c : (i+1)*c]
		for j, d := range dy {
			s1[j] += d
			s2[j] += d * xh[j]
		}
	}
	if gamma.needGrad {
		for j := range s2 {
			gamma.Grad.Data[j] += s2[j]
		}
	}
	if beta.needGrad {
		for j := range s1 {
			beta.Grad.Data[j] += s1[j]
		}
	}
	if !x.needGrad {
		return
	}
	train := n.i0 == 1
	for i := 0; i < r; i++ {
		dy := n.Grad.Data[i*c : (i+1)*c]
		xh := xhat[i*c : (i+1)*c]
		dx := x.Grad.Data[i*c : (i+1)*c]
		for j, d := range dy {
			if train {
				// dx = γ·istd/N·(N·dy - Σdy - xhat·Σ(dy·xhat))
				dx[j] += g[j] * istd[j] * (d - s1[j]/T(r) - xh[j]*s2[j]/T(r))
			} else {
				dx[j] += g[j] * istd[j] * d
			}
		}
	}
}
