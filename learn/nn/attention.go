package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// MaskKind says how Attention applies its mask to the attention scores.
type MaskKind uint8

// Mask kinds.
const (
	// NoMask ignores the mask tensor.
	NoMask MaskKind = iota
	// AdditiveMask adds the mask to the scaled scores before the softmax;
	// use 0 to keep an entry and a large negative number (or -Inf) to drop it.
	AdditiveMask
	// MultiplicativeMask weights the exponentiated scores by the mask, which
	// must be ≥ 0: p_ij = m_ij·exp(s_ij) / Σ_k m_ik·exp(s_ik). A 0/1 mask
	// drops the entries with 0. A row whose mask is all zero attends to
	// nothing and outputs zeros.
	MultiplicativeMask
)

// Attention records masked scaled dot-product attention (Vaswani et al.
// 2017) over groups independent sets: for group g, with Q_g (n×d), K_g (m×d)
// and V_g (m×dv) the g-th row blocks of q (groups·n×d), k (groups·m×d) and
// v (groups·m×dv),
//
//	out_g = softmax(Q_g·K_gᵀ/√d ∘ mask)·V_g      (groups·n×dv overall)
//
// where ∘ applies mask as kind says. mask is n×m (shared by all groups) or
// groups·n×m (one block per group); it is ignored for NoMask and not
// differentiated. Use groups = batch size to attend within each sample, and
// SliceCols on the projections for several heads.
func (t *Tape[T]) Attention(q, k, v *Node[T], groups int, mask Tensor[T], kind MaskKind) *Node[T] {
	if groups < 1 || q.Value.Rows%groups != 0 || k.Value.Rows%groups != 0 {
		panic(fmt.Sprintf("nn: Attention: %d groups for q %s, k %s", groups, q.Value.shape(), k.Value.shape()))
	}
	n, m, d := q.Value.Rows/groups, k.Value.Rows/groups, q.Value.Cols
	if k.Value.Cols != d || v.Value.Rows != k.Value.Rows {
		panic(fmt.Sprintf("nn: Attention: q %s, k %s, v %s", q.Value.shape(), k.Value.shape(), v.Value.shape()))
	}
	if kind != NoMask && (mask.Cols != m || (mask.Rows != n && mask.Rows != groups*n)) {
		panic(fmt.Sprintf("nn: Attention: mask %s, want %dx%d or %dx%d", mask.shape(), n, m, groups*n, m))
	}
	dv := v.Value.Cols
	out := t.node(opAttention, groups*n, dv, q, k, v)
	out.i0 = groups
	scale := T(1 / math.Sqrt(float64(d)))
	out.f0 = scale
	p := &out.aux[0] // attention probabilities, groups·n×m
	p.resize(groups*n, m)
	for g := 0; g < groups; g++ {
		qg, kg, vg, pg := block(q.Value, g, n), block(k.Value, g, m), block(v.Value, g, m), block(*p, g, n)
		out.gemm(false, true, scale, qg, kg, 0, pg)
		for i := 0; i < n; i++ {
			row := pg.Data[i*m : (i+1)*m]
			var mrow []T
			if kind != NoMask {
				mi := i
				if groups > 1 && mask.Rows == groups*n {
					mi = g*n + i
				}
				mrow = mask.Data[mi*m : (mi+1)*m]
			}
			maskedSoftmax(row, mrow, kind)
		}
		out.gemm(false, false, 1, pg, vg, 0, block(out.Value, g, n))
	}
	return out
}

// block returns rows [g·rows, (g+1)·rows) of x as a tensor sharing storage.
func block[T Float](x Tensor[T], g, rows int) Tensor[T] {
	return Tensor[T]{Rows: rows, Cols: x.Cols, Data: x.Data[g*rows*x.Cols : (g+1)*rows*x.Cols]}
}

// maskedSoftmax replaces the scores s by their softmax under mask mrow.
func maskedSoftmax[T Float](s, mrow []T, kind MaskKind) {
	if kind == AdditiveMask {
		for j := range s {
			s[j] += mrow[j]
		}
	}
	mx := T(math.Inf(-1))
	for j, v := range s {
		if kind == MultiplicativeMask && mrow[j] <= 0 {
			continue
		}
		mx = max(mx, v)
	}
	if math.IsInf(float64(mx), -1) { // everything masked
		clear(s)
		return
	}
	var sum T
	for j, v := range s {
		if kind == MultiplicativeMask && mrow[j] <= 0 {
			s[j] = 0 // not exp(v − mx)·0: a dropped score far above mx overflows to Inf, and Inf·0 is NaN
			continue
		}
		e := T(math.Exp(float64(v - mx)))
		if kind == MultiplicativeMask {
			e *= mrow[j]
		}
		s[j] = e
		sum += e
	}
	for j := range s {
		s[j] /= sum
	}
}

func (n *Node[T]) backAttention() {
	q, k, v := n.in[0], n.in[1], n.in[2]
	groups := n.i0
	rows, m := n.aux[0].Rows/groups, n.aux[0].Cols
	scale := n.f0
	dp := &n.aux[1]
	dp.resize(groups*rows, m)
	for g := 0; g < groups; g++ {
		pg, dyg := block(n.aux[0], g, rows), block(n.Grad, g, rows)
		vg := block(v.Value, g, m)
		if v.needGrad { // dV += Pᵀ·dY
			n.gemm(true, false, 1, pg, dyg, 1, block(v.Grad, g, m))
		}
		if !q.needGrad && !k.needGrad {
			continue
		}
		ds := block(*dp, g, rows)
		n.gemm(false, true, 1, dyg, vg, 0, ds) // dP = dY·Vᵀ
		for i := 0; i < rows; i++ {
			pr, dr := pg.Data[i*m:(i+1)*m], ds.Data[i*m:(i+1)*m]
			var s T
			for j := range pr {
				s += pr[j] * dr[j]
			}
			for j := range pr {
				dr[j] = pr[j] * (dr[j] - s) // dS
			}
		}
		if q.needGrad { // dQ += scale·dS·K
			n.gemm(false, false, scale, ds, block(k.Value, g, m), 1, block(q.Grad, g, rows))
		}
		if k.needGrad { // dK += scale·dSᵀ·Q
			n.gemm(true, false, scale, ds, block(q.Value, g, rows), 1, block(k.Grad, g, m))
		}
	}
}

// AttentionLayer is single-head attention with learned linear projections
// of queries, keys and values (the attention of FaaSConf's mean-field
// critic, for example): out = Attention(query·Q, context·K, context·V).
type AttentionLayer[T Float] struct {
	Q, K, V *Linear[T]
}

// NewAttentionLayer returns a layer that maps queries of width queryIn and
// context items of width contextIn through key width dk to outputs of
// width dv.
func NewAttentionLayer[T Float](rng *rand.Rand, name string, queryIn, contextIn, dk, dv int) *AttentionLayer[T] {
	return &AttentionLayer[T]{
		Q: NewLinear[T](rng, name+".Q", queryIn, dk),
		K: NewLinear[T](rng, name+".K", contextIn, dk),
		V: NewLinear[T](rng, name+".V", contextIn, dv),
	}
}

// Forward records attention of query (groups·n×queryIn) over context
// (groups·m×contextIn) with mask as in Tape.Attention; the result is
// groups·n×dv.
func (l *AttentionLayer[T]) Forward(t *Tape[T], query, context *Node[T], groups int, mask Tensor[T], kind MaskKind) *Node[T] {
	return t.Attention(l.Q.Forward(t, query), l.K.Forward(t, context), l.V.Forward(t, context), groups, mask, kind)
}

// Params returns the parameters of the Q, K and V projections.
func (l *AttentionLayer[T]) Params() []*Node[T] {
	return append(append(l.Q.Params(), l.K.Params()...), l.V.Params()...)
}

// State returns Params.
func (l *AttentionLayer[T]) State() []*Node[T] { return l.Params() }

// Arch returns "attention(queryIn,contextIn,dk,dv)".
func (l *AttentionLayer[T]) Arch() string {
	return fmt.Sprintf("attention(%d,%d,%d,%d)", l.Q.In(), l.K.In(), l.Q.Out(), l.V.Out())
}
