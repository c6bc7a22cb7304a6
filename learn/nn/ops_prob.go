package nn

import (
	"fmt"
	"math"
)

// LogSoftmax returns the row-wise log-softmax of a: y_ij = a_ij - log Σ_k exp(a_ik).
func (t *Tape[T]) LogSoftmax(a *Node[T]) *Node[T] {
	n := t.node(opLogSoftmax, a.Value.Rows, a.Value.Cols, a)
	c := a.Value.Cols
	for i := 0; i < a.Value.Rows; i++ {
		x := a.Value.Data[i*c : (i+1)*c]
		y := n.Value.Data[i*c : (i+1)*c]
		lse := logSumExp(x)
		for j, v := range x {
			y[j] = v - lse
		}
	}
	return n
}

func logSumExp[T Float](x []T) T {
	m := x[0]
	for _, v := range x[1:] {
		m = max(m, v)
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v - m))
	}
	return m + T(math.Log(s))
}

func (n *Node[T]) backLogSoftmax() {
	a := n.in[0]
	if !a.needGrad {
		return
	}
	c := n.Value.Cols
	for i := 0; i < n.Value.Rows; i++ {
		y := n.Value.Data[i*c : (i+1)*c]
		dy := n.Grad.Data[i*c : (i+1)*c]
		dx := a.Grad.Data[i*c : (i+1)*c]
		var s T
		for _, g := range dy {
			s += g
		}
		for j, g := range dy {
			dx[j] += g - T(math.Exp(float64(y[j])))*s
		}
	}
}

// Softmax returns the row-wise softmax of a.
func (t *Tape[T]) Softmax(a *Node[T]) *Node[T] {
	n := t.node(opSoftmax, a.Value.Rows, a.Value.Cols, a)
	c := a.Value.Cols
	for i := 0; i < a.Value.Rows; i++ {
		softmaxRow(n.Value.Data[i*c:(i+1)*c], a.Value.Data[i*c:(i+1)*c])
	}
	return n
}

// softmaxRow writes softmax(x) to y.
func softmaxRow[T Float](y, x []T) {
	m := x[0]
	for _, v := range x[1:] {
		m = max(m, v)
	}
	var s T
	for j, v := range x {
		e := T(math.Exp(float64(v - m)))
		y[j] = e
		s += e
	}
	for j := range y {
		y[j] /= s
	}
}

func (n *Node[T]) backSoftmax() {
	a := n.in[0]
	if !a.needGrad {
		return
	}
	c := n.Value.Cols
	for i := 0; i < n.Value.Rows; i++ {
		y := n.Value.Data[i*c : (i+1)*c]
		dy := n.Grad.Data[i*c : (i+1)*c]
		dx := a.Grad.Data[i*c : (i+1)*c]
		var s T
		for j, g := range dy {
			s += g * y[j]
		}
		for j, g := range dy {
			dx[j] += y[j] * (g - s)
		}
	}
}

// Gather returns a Rows×1 node with element i equal to a[i, idx[i]]
// (the value of the taken discrete action, for example). idx is copied.
func (t *Tape[T]) Gather(a *Node[T], idx []int) *Node[T] {
	if len(idx) != a.Value.Rows {
		panic(fmt.Sprintf("nn: Gather: %d indices for %d rows", len(idx), a.Value.Rows))
	}
	n := t.node(opGather, a.Value.Rows, 1, a)
	n.ints = append(n.ints[:0], idx...)
	c := a.Value.Cols
	for i, j := range idx {
		if j < 0 || j >= c {
			panic(fmt.Sprintf("nn: Gather: index %d out of range [0,%d)", j, c))
		}
		n.Value.Data[i] = a.Value.Data[i*c+j]
	}
	return n
}

func (n *Node[T]) backGather() {
	a := n.in[0]
	if !a.needGrad {
		return
	}
	c := a.Value.Cols
	for i, j := range n.ints {
		a.Grad.Data[i*c+j] += n.Grad.Data[i]
	}
}

// MSE returns the mean over all elements of (a - b)², as a 1×1 node.
// a and b must have the same shape; gradients flow to both.
func (t *Tape[T]) MSE(a, b *Node[T]) *Node[T] {
	sameShape("MSE", a, b)
	n := t.node(opMSE, 1, 1, a, b)
	var s float64
	for i, v := range a.Value.Data {
		d := float64(v - b.Value.Data[i])
		s += d * d
	}
	n.Value.Data[0] = T(s / float64(max(len(a.Value.Data), 1)))
	return n
}

func sameShape[T Float](op string, a, b *Node[T]) {
	if a.Value.Rows != b.Value.Rows || a.Value.Cols != b.Value.Cols {
		panic(fmt.Sprintf("nn: %s: shapes %s and %s differ", op, a.Value.shape(), b.Value.shape()))
	}
}

func (n *Node[T]) backMSE() {
	a, b := n.in[0], n.in[1]
	k := n.Grad.Data[0] * 2 / T(max(len(a.Value.Data), 1))
	for i, v := range a.Value.Data {
		d := k * (v - b.Value.Data[i])
		if a.needGrad {
			a.Grad.Data[i] += d
		}
		if b.needGrad {
			b.Grad.Data[i] -= d
		}
	}
}

// Huber returns the mean over all elements of the Huber loss of a - b with
// threshold delta: ½d² where |d| ≤ delta, delta·(|d| - ½delta) elsewhere
// (PyTorch's HuberLoss; SmoothL1 when delta = 1). It is a 1×1 node.
func (t *Tape[T]) Huber(a, b *Node[T], delta T) *Node[T] {
	sameShape("Huber", a, b)
	if delta <= 0 {
		panic(fmt.Sprintf("nn: Huber: delta %v must be > 0", delta))
	}
	n := t.node(opHuber, 1, 1, a, b)
	n.f0 = delta
	var s float64
	dl := float64(delta)
	for i, v := range a.Value.Data {
		d := math.Abs(float64(v - b.Value.Data[i]))
		if d <= dl {
			s += 0.5 * d * d
		} else {
			s += dl * (d - 0.5*dl)
		}
	}
	n.Value.Data[0] = T(s / float64(max(len(a.Value.Data), 1)))
	return n
}

func (n *Node[T]) backHuber() {
	a, b := n.in[0], n.in[1]
	k := n.Grad.Data[0] / T(max(len(a.Value.Data), 1))
	delta := n.f0
	for i, v := range a.Value.Data {
		d := min(max(v-b.Value.Data[i], -delta), delta) * k
		if a.needGrad {
			a.Grad.Data[i] += d
		}
		if b.needGrad {
			b.Grad.Data[i] -= d
		}
	}
}

const halfLog2Pi = 0.91893853320467274178 // ½·log(2π)

// SquashedGaussian draws a reparameterised, tanh-squashed Gaussian sample as
// in SAC (Haarnoja et al. 2018, appendix C): u = mu + exp(logStd)·eps and
// action = tanh(u), with eps ~ N(0, I) supplied by the caller (B×A, same
// shape as mu and logStd). logProb (B×1) is log π(action) summed over action
// dimensions, including the tanh correction -Σ log(1 - tanh(u)²), computed
// stably as 2(log 2 - u - softplus(-2u)). Both outputs are differentiable
// with respect to mu and logStd.
func (t *Tape[T]) SquashedGaussian(mu, logStd *Node[T], eps Tensor[T]) (action, logProb *Node[T]) {
	sameShape("SquashedGaussian", mu, logStd)
	if eps.Rows != mu.Value.Rows || eps.Cols != mu.Value.Cols {
		panic(fmt.Sprintf("nn: SquashedGaussian: eps %s, mu %s", eps.shape(), mu.Value.shape()))
	}
	rows, cols := mu.Value.Rows, mu.Value.Cols
	action = t.node(opSquashAction, rows, cols, mu, logStd)
	// aux[0] = eps, aux[1] = sigma.
	action.aux[0].resize(rows, cols)
	copy(action.aux[0].Data, eps.Data)
	action.aux[1].resize(rows, cols)
	logProb = t.node(opSquashLogProb, rows, 1, mu, logStd, action)
	for i := 0; i < rows; i++ {
		var lp float64
		for j := 0; j < cols; j++ {
			k := i*cols + j
			ls := float64(logStd.Value.Data[k])
			sigma := math.Exp(ls)
			e := float64(eps.Data[k])
			u := float64(mu.Value.Data[k]) + sigma*e
			action.aux[1].Data[k] = T(sigma)
			action.Value.Data[k] = T(math.Tanh(u))
			lp += -0.5*e*e - ls - halfLog2Pi - 2*(math.Ln2-u-float64(softplus(-2*u)))
		}
		logProb.Value.Data[i] = T(lp)
	}
	return action, logProb
}

func (n *Node[T]) backSquashAction() {
	mu, logStd := n.in[0], n.in[1]
	eps, sigma := n.aux[0].Data, n.aux[1].Data
	for k, g := range n.Grad.Data {
		a := n.Value.Data[k]
		du := g * (1 - a*a)
		if mu.needGrad {
			mu.Grad.Data[k] += du
		}
		if logStd.needGrad {
			logStd.Grad.Data[k] += du * sigma[k] * eps[k]
		}
	}
}

func (n *Node[T]) backSquashLogProb() {
	mu, logStd, act := n.in[0], n.in[1], n.in[2]
	eps, sigma := act.aux[0].Data, act.aux[1].Data
	cols := act.Value.Cols
	for i, g := range n.Grad.Data {
		for j := 0; j < cols; j++ {
			k := i*cols + j
			// ∂logπ/∂u = 2·tanh(u); ∂u/∂mu = 1, ∂u/∂logStd = sigma·eps.
			du := 2 * act.Value.Data[k] * g
			if mu.needGrad {
				mu.Grad.Data[k] += du
			}
			if logStd.needGrad {
				logStd.Grad.Data[k] += du*sigma[k]*eps[k] - g
			}
		}
	}
}

// GaussianLogProb returns log N(x; mu, exp(logStd)²) summed over columns,
// as a Rows×1 node (PPO's continuous policy). All three inputs have the same
// shape; gradients flow to all of them.
func (t *Tape[T]) GaussianLogProb(x, mu, logStd *Node[T]) *Node[T] {
	sameShape("GaussianLogProb", x, mu)
	sameShape("GaussianLogProb", x, logStd)
	rows, cols := x.Value.Rows, x.Value.Cols
	n := t.node(opGaussLogProb, rows, 1, x, mu, logStd)
	for i := 0; i < rows; i++ {
		var lp float64
		for j := 0; j < cols; j++ {
			k := i*cols + j
			ls := float64(logStd.Value.Data[k])
			z := float64(x.Value.Data[k]-mu.Value.Data[k]) * math.Exp(-ls)
			lp += -0.5*z*z - ls - halfLog2Pi
		}
		n.Value.Data[i] = T(lp)
	}
	return n
}

func (n *Node[T]) backGaussLogProb() {
	x, mu, logStd := n.in[0], n.in[1], n.in[2]
	cols := x.Value.Cols
	for i, g := range n.Grad.Data {
		for j := 0; j < cols; j++ {
			k := i*cols + j
			is := T(math.Exp(-float64(logStd.Value.Data[k])))
			z := (x.Value.Data[k] - mu.Value.Data[k]) * is
			// ∂/∂x = -z/σ, ∂/∂mu = z/σ, ∂/∂logStd = z² - 1.
			if x.needGrad {
				x.Grad.Data[k] -= g * z * is
			}
			if mu.needGrad {
				mu.Grad.Data[k] += g * z * is
			}
			if logStd.needGrad {
				logStd.Grad.Data[k] += g * (z*z - 1)
			}
		}
	}
}
