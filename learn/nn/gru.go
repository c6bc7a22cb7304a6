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
	n.gemm(false, false, 1, x.Value, g.Wx.Value, 1, *gx)
	broadcastRows(gh, g.Bh.Value.Data)
	n.gemm(false, false, 1, h.Value, g.Wh.Value, 1, *gh)
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
	if h32, ok := any(h).([]float32); ok {
		gruGates32(any(hNext).([]float32), any(gates).([]float32), any(gx).([]float32), any(gh).([]float32), h32)
		return
	}
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

// gruGates32 is gruGates with float32 activations: the preactivations of
// r and z, then of n, are formed in gates and activated in place as
// vectors (sigmoid32s, tanh32s). gates must not be nil.
func gruGates32(hNext, gates, gx, gh, h []float32) {
	H := len(h)
	gx, gh, gates = gx[:3*H], gh[:3*H], gates[:3*H]
	hNext = hNext[:H]
	rz, cand := gates[:2*H], gates[2*H:]
	for j := range rz {
		rz[j] = gx[j] + gh[j]
	}
	sigmoid32s(rz, rz)
	for j := range cand {
		cand[j] = gx[2*H+j] + rz[j]*gh[2*H+j]
	}
	tanh32s(cand, cand)
	z := gates[H : 2*H]
	for j, nn := range cand {
		hNext[j] = (1-z[j])*nn + z[j]*h[j]
	}
}

// gruGatesBias is gruGates for the products gx = x·Wx and gh = h·Wh
// without biases: it adds bx and bh (each 3H wide) as the gates need them,
// with the same roundings as adding them first, and stores gh + bh back
// into gh (backward reads its n part). gx is left without its bias.
func gruGatesBias[T Float](hNext, gates, gx, gh, bx, bh, h []T) {
	if h32, ok := any(h).([]float32); ok {
		gruGatesBias32(any(hNext).([]float32), any(gates).([]float32), any(gx).([]float32), any(gh).([]float32),
			any(bx).([]float32), any(bh).([]float32), h32)
		return
	}
	H := len(h)
	for j := 0; j < 3*H; j++ {
		gh[j] += bh[j]
	}
	for j := 0; j < H; j++ {
		r := sigmoid((gx[j] + bx[j]) + gh[j])
		z := sigmoid((gx[H+j] + bx[H+j]) + gh[H+j])
		nn := T(math.Tanh(float64((gx[2*H+j] + bx[2*H+j]) + r*gh[2*H+j])))
		gates[j], gates[H+j], gates[2*H+j] = r, z, nn
		hNext[j] = (1-z)*nn + z*h[j]
	}
}

// gruGatesBias32 is gruGatesBias with the vectorised float32 activations
// and, with AVX2, vectorised elementwise loops (gates_amd64.s) for the
// multiple-of-8 part of each loop; the scalar loops below do the rest with
// the same operations.
func gruGatesBias32(hNext, gates, gx, gh, bx, bh, h []float32) {
	H := len(h)
	gx, gh, bx, bh, gates = gx[:3*H], gh[:3*H], bx[:3*H], bh[:3*H], gates[:3*H]
	hNext = hNext[:H]
	rz, cand := gates[:2*H], gates[2*H:]
	v2, v1 := 0, 0 // lengths done by the vector loops
	if actFast {
		v2, v1 = 2*H&^7, H&^7
	}
	if v2 > 0 {
		gruPreRZ32(&rz[0], &gx[0], &bx[0], &gh[0], &bh[0], v2)
	}
	for j := v2; j < 2*H; j++ {
		g := gh[j] + bh[j]
		gh[j] = g
		rz[j] = (gx[j] + bx[j]) + g
	}
	sigmoid32s(rz, rz)
	if v1 > 0 {
		gruPreN32(&cand[0], &gx[2*H], &bx[2*H], &gh[2*H], &bh[2*H], &rz[0], v1)
	}
	for j := v1; j < H; j++ {
		g := gh[2*H+j] + bh[2*H+j]
		gh[2*H+j] = g
		cand[j] = (gx[2*H+j] + bx[2*H+j]) + rz[j]*g
	}
	tanh32s(cand, cand)
	z := gates[H : 2*H]
	if v1 > 0 {
		gruMix32(&hNext[0], &z[0], &cand[0], &h[0], v1)
	}
	for j := v1; j < H; j++ {
		hNext[j] = (1-z[j])*cand[j] + z[j]*h[j]
	}
}

// gruGatesBack computes one sample's gradients with respect to the
// preactivations gx (dx) and gh (dh), each 3H wide, from the gradient dy of
// the next state, the previous state hv, the saved gates [r|z|n] and gh.
func gruGatesBack[T Float](dx, dh, dy, hv, gt, ghb []T) {
	H := len(dy)
	for j, d := range dy {
		r, z, nn := gt[j], gt[H+j], gt[2*H+j]
		dan := d * (1 - z) * (1 - nn*nn) // ∂/∂(candidate preactivation)
		daz := d * (hv[j] - nn) * z * (1 - z)
		dar := dan * ghb[2*H+j] * r * (1 - r)
		dx[j], dx[H+j], dx[2*H+j] = dar, daz, dan
		dh[j], dh[H+j], dh[2*H+j] = dar, daz, dan*r
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
		gruGatesBack(dGx.Data[b*3*H:(b+1)*3*H], dGh.Data[b*3*H:(b+1)*3*H], n.Grad.Data[b*H:(b+1)*H],
			h.Value.Data[b*H:(b+1)*H], gates[b*3*H:(b+1)*3*H], gh[b*3*H:(b+1)*3*H])
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
		n.gemm(false, true, 1, *dGh, wh.Value, 1, h.Grad)
	}
	if x.needGrad {
		n.gemm(false, true, 1, *dGx, wx.Value, 1, x.Grad)
	}
	if wx.needGrad {
		n.gemm(true, false, 1, x.Value, *dGx, 1, wx.Grad)
	}
	if wh.needGrad {
		n.gemm(true, false, 1, h.Value, *dGh, 1, wh.Grad)
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
	g             *GRU[T]
	gx, gh, gates []T
}

// NewPredictor returns an allocation-free single-sample inference path.
func (g *GRU[T]) NewPredictor() *GRUPredictor[T] {
	H := g.Hidden()
	return &GRUPredictor[T]{g: g, gx: make([]T, 3*H), gh: make([]T, 3*H), gates: make([]T, 3*H)}
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
	gruGates(hNext, p.gates, p.gx, p.gh, h)
	return hNext
}

// UnrollMasked records the GRU over a window of steps time steps given as
// one time-major node x ((steps·B)×In: rows k·B to (k+1)·B−1 are the B
// inputs of step k) from a zero initial state, and returns the state after
// the last step (B×H). mask (len steps·B, time-major like x's rows; nil
// means all ones) gates each sample's update:
//
//	h_k = h_{k−1} + m_k ⊙ (GRU(x_k, h_{k−1}) − h_{k−1})
//
// so a step with mask 0 (padding before an episode's start) leaves the state
// unchanged. It computes what Step followed by Sub, Mul and Add per step
// computes (up to the order of floating-point sums in the products), as one
// op: the input projection x·Wx of all steps is one matrix product, and so
// are the weight gradients in Backward, which makes it several times faster
// on small batches.
func (g *GRU[T]) UnrollMasked(t *Tape[T], x *Node[T], steps int, mask []T) *Node[T] {
	H, in := g.Hidden(), g.In()
	LB := x.Value.Rows
	if steps < 1 || x.Value.Cols != in || LB%steps != 0 || (mask != nil && len(mask) != LB) {
		panic(fmt.Sprintf("nn: GRU(%d,%d).UnrollMasked: x %s, %d steps, len(mask)=%d", in, H, x.Value.shape(), steps, len(mask)))
	}
	B := LB / steps
	n := t.node(opGRUSeq, B, H, x, g.Wx, g.Wh, g.Bx, g.Bh)
	n.i0 = steps
	gates, gh, hPrev, m, gx, hn := &n.aux[0], &n.aux[1], &n.aux[2], &n.aux[3], &n.aux[4], &n.aux[7]
	gates.resize(LB, 3*H)
	gh.resize(LB, 3*H)
	hPrev.resize(LB, H)
	m.resize(LB, 1)
	gx.resize(LB, 3*H)
	hn.resize(B, H)
	if mask == nil {
		for i := range m.Data {
			m.Data[i] = 1
		}
	} else {
		copy(m.Data, mask)
	}
	// The products x·Wx (all steps at once) and h·Wh are stored without
	// their biases, which gruGatesBias adds while the rows are in cache.
	n.gemm(false, false, 1, x.Value, g.Wx.Value, 0, *gx)
	bx, bh := g.Bx.Value.Data, g.Bh.Value.Data
	h := n.Value
	clear(h.Data)
	pinned := steps > 1 && n.pinB(false, g.Wh.Value) // Wh packed once for all steps
	for k := 0; k < steps; k++ {
		copy(hPrev.Data[k*B*H:(k+1)*B*H], h.Data)
		ghk := gh.Data[k*B*3*H : (k+1)*B*3*H]
		switch {
		case k == 0: // h·Wh is zero at the zero initial state
			clear(ghk)
		case pinned:
			n.gemmPinned(false, 1, h, 0, TensorFrom(B, 3*H, ghk))
		default:
			n.gemm(false, false, 1, h, g.Wh.Value, 0, TensorFrom(B, 3*H, ghk))
		}
		gxk, gk := gx.Data[k*B*3*H:(k+1)*B*3*H], gates.Data[k*B*3*H:(k+1)*B*3*H]
		for b := 0; b < B; b++ {
			hb := h.Data[b*H : (b+1)*H]
			hnb := hn.Data[b*H : (b+1)*H]
			gruGatesBias(hnb, gk[b*3*H:(b+1)*3*H], gxk[b*3*H:(b+1)*3*H], ghk[b*3*H:(b+1)*3*H], bx, bh, hb)
			mb := m.Data[k*B+b]
			for j, v := range hnb { // T(·) rounds the product as Mul does (no fused multiply-add)
				hb[j] += T((v - hb[j]) * mb)
			}
		}
	}
	return n
}

func (n *Node[T]) backGRUSeq() {
	x, wx, wh, bx, bh := n.in[0], n.in[1], n.in[2], n.in[3], n.in[4]
	steps, B, H := n.i0, n.Value.Rows, n.Value.Cols
	LB := steps * B
	gates, gh, hPrev, m := n.aux[0].Data, n.aux[1].Data, n.aux[2], n.aux[3].Data
	dGx, dGh, dh, dPrev := &n.aux[4], &n.aux[5], &n.aux[6], &n.aux[7]
	dGx.resize(LB, 3*H) // the forward input projections are not needed any more
	dGh.resize(LB, 3*H)
	dh.resize(B, H)
	dPrev.resize(B, H)
	copy(dh.Data, n.Grad.Data)
	pinned := steps > 1 && n.pinB(true, wh.Value) // Whᵀ packed once for all steps
	var zero T
	_, is32 := any(zero).(float32)
	fast := is32 && actFast && H%8 == 0 // gruBackRow32 (gates_amd64.s) for each sample
	for k := steps - 1; k >= 0; k-- {
		// h_k = h_{k−1} + m ⊙ (hn − h_{k−1}): ∂/∂hn = m, ∂/∂h_{k−1} = 1 − m
		// directly, plus hn's own dependence on h_{k−1}.
		off := k * B * 3 * H
		for b := 0; b < B; b++ {
			mb := m[k*B+b]
			dy := dh.Data[b*H : (b+1)*H]
			dp := dPrev.Data[b*H : (b+1)*H]
			i3 := off + b*3*H
			hv := hPrev.Data[(k*B+b)*H : (k*B+b+1)*H]
			if fast {
				gruBackRow32(any(&dGx.Data[i3]).(*float32), any(&dGh.Data[i3]).(*float32), any(&dy[0]).(*float32),
					any(&dp[0]).(*float32), any(&hv[0]).(*float32), any(&gates[i3]).(*float32), any(&gh[i3]).(*float32),
					any(mb).(float32), H)
				continue
			}
			for j, d := range dy {
				dy[j] = d * mb
				dp[j] = d - dy[j]
			}
			gruGatesBack(dGx.Data[i3:i3+3*H], dGh.Data[i3:i3+3*H], dy, hv, gates[i3:i3+3*H], gh[i3:i3+3*H])
			z := gates[i3+H : i3+2*H]
			for j, d := range dy {
				dp[j] += d * z[j]
			}
		}
		if k == 0 { // the initial state is a constant
			break
		}
		if dG := TensorFrom(B, 3*H, dGh.Data[off:off+B*3*H]); pinned {
			n.gemmPinned(false, 1, dG, 1, *dPrev)
		} else {
			n.gemm(false, true, 1, dG, wh.Value, 1, *dPrev)
		}
		*dh, *dPrev = *dPrev, *dh
	}
	if x.needGrad {
		n.gemm(false, true, 1, *dGx, wx.Value, 1, x.Grad)
	}
	if wx.needGrad {
		n.gemm(true, false, 1, x.Value, *dGx, 1, wx.Grad)
	}
	if wh.needGrad && steps > 1 { // step 0's h·Wh term is zero
		n.gemm(true, false, 1, TensorFrom(LB-B, H, hPrev.Data[B*H:]),
			TensorFrom(LB-B, 3*H, dGh.Data[B*3*H:]), 1, wh.Grad)
	}
	if bx.needGrad {
		colSumAdd(bx.Grad.Data, *dGx)
	}
	if bh.needGrad {
		colSumAdd(bh.Grad.Data, *dGh)
	}
}
