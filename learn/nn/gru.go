package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// GRU is a gated recurrent unit cell (Cho et al. 2014) in PyTorch's form,
// with gates r (reset), z (update), n (candidate) stored side by side in
// the columns of its weights:
//
//	r  = σ(x·Wx_r + Bx_r + h·Wh_r + Bh_r)
//	z  = σ(x·Wx_z + Bx_z + h·Wh_z + Bh_z)
//	n  = tanh(x·Wx_n + Bx_n + r ⊙ (h·Wh_n + Bh_n))
//	h' = (1 - z) ⊙ n + z ⊙ h
//
// Wx is in×3H, Wh is H×3H, Bx and Bh are 1×3H. Backpropagation through time
// is recording Step once per time step on one tape (see Unroll).
type GRU[T Float] struct {
	Wx, Wh, Bx, Bh *Node[T]
}

// NewGRU returns a GRU cell with input width in and hidden width hidden,
// initialised like PyTorch's nn.GRU: uniform in ±1/√hidden.
func NewGRU[T Float](rng *rand.Rand, name string, in, hidden int) *GRU[T] {
	g := &GRU[T]{
		Wx: NewParam[T](name+".Wx", in, 3*hidden),
		Wh: NewParam[T](name+".Wh", hidden, 3*hidden),
		Bx: NewParam[T](name+".Bx", 1, 3*hidden),
		Bh: NewParam[T](name+".Bh", 1, 3*hidden),
	}
	bound := 1 / math.Sqrt(float64(hidden))
	for _, p := range g.Params() {
		uniformFill(rng, p.Value.Data, bound)
	}
	return g
}

// In returns the input width.
func (g *GRU[T]) In() int { return g.Wx.Value.Rows }

// Hidden returns the hidden-state width H.
func (g *GRU[T]) Hidden() int { return g.Wh.Value.Rows }

// Params returns Wx, Wh, Bx, Bh.
func (g *GRU[T]) Params() []*Node[T] { return []*Node[T]{g.Wx, g.Wh, g.Bx, g.Bh} }

// State returns Params (a GRU has no other state).
func (g *GRU[T]) State() []*Node[T] { return g.Params() }

// Arch returns "gru(in,hidden)".
func (g *GRU[T]) Arch() string { return fmt.Sprintf("gru(%d,%d)", g.In(), g.Hidden()) }

// Step records one time step on t: the next hidden state (B×H) from input
// x (B×in) and hidden state h (B×H). Pass a zero h (t.Input(B, H)) at the
// start of a sequence.
func (g *GRU[T]) Step(t *Tape[T], x, h *Node[T]) *Node[T] {
	H := g.Hidden()
	B := x.Value.Rows
	if x.Value.Cols != g.In() || h.Value.Rows != B || h.Value.Cols != H {
		panic(fmt.Sprintf("nn: GRU(%d,%d).Step: x %s, h %s", g.In(), H, x.Value.shape(), h.Value.shape()))
	}
	n := t.node(opGRU, B, H, x, h, g.Wx, g.Wh, g.Bx, g.Bh)
	gx, gh, gates := &n.aux[0], &n.aux[1], &n.aux[2]
	gx.resize(B, 3*H)
	gh.resize(B, 3*H)
	gates.resize(B, 3*H)
	broadcastRows(gx, g.Bx.Value.Data)
	gemm(false, false, 1, x.Value, g.Wx.Value, 1, *gx)
	broadcastRows(gh, g.Bh.Value.Data)
	gemm(false, false, 1, h.Value, g.Wh.Value, 1, *gh)
	for b := 0; b < B; b++ {
		gruGates(n.Value.Data[b*H:(b+1)*H], gates.Data[b*3*H:(b+1)*3*H],
			gx.Data[b*3*H:(b+1)*3*H], gh.Data[b*3*H:(b+1)*3*H], h.Value.Data[b*H:(b+1)*H])
	}
	return n
}

// broadcastRows sets every row of dst to row.
func broadcastRows[T Float](dst *Tensor[T], row []T) {
	for i := 0; i < dst.Rows; i++ {
		copy(dst.Data[i*dst.Cols:(i+1)*dst.Cols], row)
	}
}

// gruGates computes one sample's gates [r|z|n] and next state hNext from the
// preactivations gx = x·Wx+Bx and gh = h·Wh+Bh (each 3H wide). hNext may
// alias h.
func gruGates[T Float](hNext, gates, gx, gh, h []T) {
	H := len(h)
	for j := 0; j < H; j++ {
		r := sigmoid(gx[j] + gh[j])
		z := sigmoid(gx[H+j] + gh[H+j])
		nn := T(math.Tanh(float64(gx[2*H+j] + r*gh[2*H+j])))
		if gates != nil {
			gates[j], gates[H+j], gates[2*H+j] = r, z, nn
		}
		hNext[j] = (1-z)*nn + z*h[j]
	}
}

func (n *Node[T]) backGRU() {
	x, h, wx, wh, bx, bh := n.in[0], n.in[1], n.in[2], n.in[3], n.in[4], n.in[5]
	B, H := n.Value.Rows, n.Value.Cols
	gh, gates := n.aux[1].Data, n.aux[2].Data
	dGx, dGh := &n.aux[3], &n.aux[4]
	dGx.resize(B, 3*H)
	dGh.resize(B, 3*H)
	for b := 0; b < B; b++ {
		dy := n.Grad.Data[b*H : (b+1)*H]
		hv := h.Value.Data[b*H : (b+1)*H]
		gt := gates[b*3*H : (b+1)*3*H]
		ghb := gh[b*3*H : (b+1)*3*H]
		dx := dGx.Data[b*3*H : (b+1)*3*H]
		dh := dGh.Data[b*3*H : (b+1)*3*H]
		for j, d := range dy {
			r, z, nn := gt[j], gt[H+j], gt[2*H+j]
			dan := d * (1 - z) * (1 - nn*nn) // ∂/∂(candidate preactivation)
			daz := d * (hv[j] - nn) * z * (1 - z)
			dar := dan * ghb[2*H+j] * r * (1 - r)
			dx[j], dx[H+j], dx[2*H+j] = dar, daz, dan
			dh[j], dh[H+j], dh[2*H+j] = dar, daz, dan*r
		}
	}
	if h.needGrad {
		for b := 0; b < B; b++ {
			dy := n.Grad.Data[b*H : (b+1)*H]
			z := gates[b*3*H+H : b*3*H+2*H]
			dhv := h.Grad.Data[b*H : (b+1)*H]
			for j, d := range dy {
				dhv[j] += d * z[j]
			}
		}
		gemm(false, true, 1, *dGh, wh.Value, 1, h.Grad)
	}
	if x.needGrad {
		gemm(false, true, 1, *dGx, wx.Value, 1, x.Grad)
	}
	if wx.needGrad {
		gemm(true, false, 1, x.Value, *dGx, 1, wx.Grad)
	}
	if wh.needGrad {
		gemm(true, false, 1, h.Value, *dGh, 1, wh.Grad)
	}
	if bx.needGrad {
		colSumAdd(bx.Grad.Data, *dGx)
	}
	if bh.needGrad {
		colSumAdd(bh.Grad.Data, *dGh)
	}
}

// Unroll records the GRU over a sequence xs (each B×in) from initial state
// h0 (B×H; nil means zeros), appends the hidden state after each step to
// dst and returns it. Backward through any of them is backpropagation
// through time.
func (g *GRU[T]) Unroll(t *Tape[T], dst []*Node[T], xs []*Node[T], h0 *Node[T]) []*Node[T] {
	if len(xs) == 0 {
		return dst
	}
	h := h0
	if h == nil {
		h = t.Input(xs[0].Value.Rows, g.Hidden())
	}
	for _, x := range xs {
		h = g.Step(t, x, h)
		dst = append(dst, h)
	}
	return dst
}

// GRUPredictor runs a GRU cell forward on one sample without allocating.
// It reads the cell's current weights. It is not safe for concurrent use.
type GRUPredictor[T Float] struct {
	g      *GRU[T]
	gx, gh []T
}

// NewPredictor returns an allocation-free single-sample inference path.
func (g *GRU[T]) NewPredictor() *GRUPredictor[T] {
	return &GRUPredictor[T]{g: g, gx: make([]T, 3*g.Hidden()), gh: make([]T, 3*g.Hidden())}
}

// Step writes the next hidden state for input x (len In) and state h (len H)
// to hNext (len H, may be h itself) and returns hNext. It allocates
// nothing, except a new hNext when hNext is nil.
func (p *GRUPredictor[T]) Step(hNext, h, x []T) []T {
	g := p.g
	if hNext == nil {
		hNext = make([]T, g.Hidden())
	}
	if len(x) != g.In() || len(h) != g.Hidden() || len(hNext) != g.Hidden() {
		panic(fmt.Sprintf("nn: GRUPredictor.Step: len(hNext)=%d, len(h)=%d, len(x)=%d; want %d, %d, %d",
			len(hNext), len(h), len(x), g.Hidden(), g.Hidden(), g.In()))
	}
	vecMat(p.gx, x, g.Wx.Value, g.Bx.Value.Data)
	vecMat(p.gh, h, g.Wh.Value, g.Bh.Value.Data)
	gruGates(hNext, nil, p.gx, p.gh, h)
	return hNext
}
