package rl

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/nn"
)

// MFActors are the decentralised actors of a MADDPG learner, what runs at
// deployment: agent j's actor reads s_j and, in the mean-field variants,
// ŝ_j, the mean of its neighbours' states weighted by its own attention
// (AttMF, FaaSConf eq. 8-9) or equally (MeanField). Act allocates nothing.
type MFActors struct {
	variant   MADDPGVariant
	n, ds, da int
	nets      []*nn.MLP[float32]
	wq, wk    []*nn.Node[float32] // AttMF: W_q and W_k of every agent's actor
	masks     [][]float32         // per agent: A^{jk}, 0 on the diagonal
	preds     []*nn.MLPPredictor[float32]
	obs32, in []float32
	query     []float32
	keys, wts []float32
	out       [][]float32
}

// NewMFActors returns freshly initialised actors of n agents with states
// of ds and actions of da values (tanh outputs in [-1, 1]).
func NewMFActors(v MADDPGVariant, adjacency [][]float64, n, ds, da int, hidden []int, attentionDim int, rng *rand.Rand) *MFActors {
	a := &MFActors{variant: v, n: n, ds: ds, da: da, obs32: make([]float32, n*ds), wts: make([]float32, n)}
	a.in = make([]float32, a.InputDim())
	for j := range n {
		a.nets = append(a.nets, newMLP(rng, fmt.Sprintf("actor%d", j), a.InputDim(), hidden, da, nn.ReLU, nn.Tanh))
		a.preds = append(a.preds, a.nets[j].NewPredictor())
		a.out = append(a.out, make([]float32, da))
		mask := make([]float32, n)
		if v.MeanField() {
			for k, w := range adjacency[j] {
				if k != j {
					mask[k] = float32(w)
				}
			}
		}
		a.masks = append(a.masks, mask)
		if v == AttMF {
			a.wq = append(a.wq, attentionWeights(rng, fmt.Sprintf("actor_wq%d", j), ds, attentionDim))
			a.wk = append(a.wk, attentionWeights(rng, fmt.Sprintf("actor_wk%d", j), ds, attentionDim))
		} else {
			a.wq, a.wk = append(a.wq, nil), append(a.wk, nil)
		}
	}
	a.query, a.keys = make([]float32, attentionDim), make([]float32, attentionDim)
	return a
}

// attentionWeights returns a rows×d query or key matrix initialised as
// nn.Linear's weights.
func attentionWeights(rng *rand.Rand, name string, rows, d int) *nn.Node[float32] {
	p := nn.NewParam[float32](name, rows, d)
	bound := 1 / math.Sqrt(float64(rows))
	for i := range p.Value.Data {
		p.Value.Data[i] = float32((2*rng.Float64() - 1) * bound)
	}
	return p
}

// InputDim is an actor's input width: ds, or 2·ds with the mean field.
func (a *MFActors) InputDim() int {
	if a.variant.ownOnly() {
		return a.ds
	}
	return 2 * a.ds
}

// Params returns every actor's parameters, attention included, agent by
// agent (for saving and loading).
func (a *MFActors) Params() []*nn.Node[float32] {
	var ps []*nn.Node[float32]
	for j, net := range a.nets {
		ps = append(ps, net.Params()...)
		if a.wq[j] != nil {
			ps = append(ps, a.wq[j], a.wk[j])
		}
	}
	return ps
}

// Arch describes the actors' shapes.
func (a *MFActors) Arch() string {
	d := 0
	if a.variant == AttMF {
		d = a.wq[0].Value.Cols
	}
	return fmt.Sprintf("mfactors %s n %d %s attention %d", a.variant, a.n, a.nets[0].Arch(), d)
}

// Act returns every agent's deterministic action in [-1, 1] units for the
// joint observation (slices owned by a, valid until its next call).
func (a *MFActors) Act(obs [][]float64) [][]float32 {
	for k, o := range obs {
		for i, v := range o {
			a.obs32[k*a.ds+i] = float32(v)
		}
	}
	for j := range a.nets {
		a.input(a.in, j, a.obs32)
		a.preds[j].Predict(a.out[j], a.in)
	}
	return a.out
}

// input writes agent j's actor input for the joint observation s (n·ds
// values): s_j, then for the mean-field variants the mean of its
// neighbours' states weighted as its attention (or equally) weighs them,
// the computation record records on a tape.
func (a *MFActors) input(dst []float32, j int, s []float32) {
	ds := a.ds
	copy(dst[:ds], s[j*ds:(j+1)*ds])
	if a.variant.ownOnly() {
		return
	}
	mask, scores := a.masks[j], a.wts
	if wq := a.wq[j]; wq != nil {
		d := wq.Value.Cols
		project(a.query, s[j*ds:(j+1)*ds], wq.Value)
		best := float32(math.Inf(-1))
		for k := range a.n {
			if mask[k] == 0 {
				continue
			}
			project(a.keys, s[k*ds:(k+1)*ds], a.wk[j].Value)
			dot := float32(0)
			for i := range a.query {
				dot += a.query[i] * a.keys[i]
			}
			scores[k] = dot / float32(math.Sqrt(float64(d)))
			best = max(best, scores[k])
		}
		for k := range a.n {
			if mask[k] != 0 {
				scores[k] = mask[k] * float32(math.Exp(float64(scores[k]-best)))
			}
		}
	} else {
		copy(scores, mask)
	}
	sum := float32(0)
	for k := range a.n {
		if mask[k] == 0 {
			scores[k] = 0
		}
		sum += scores[k]
	}
	mean := dst[ds : 2*ds]
	clear(mean)
	if sum == 0 {
		return
	}
	for k := range a.n {
		if w := scores[k] / sum; w != 0 {
			for i := range ds {
				mean[i] += w * s[k*ds+i]
			}
		}
	}
}

// project writes x·W (x of W.Rows values) into dst.
func project(dst, x []float32, w nn.Tensor[float32]) {
	clear(dst)
	for r, xv := range x {
		row := w.Data[r*w.Cols : (r+1)*w.Cols]
		for c, wv := range row {
			dst[c] += xv * wv
		}
	}
}

// rows records the B×w rows of agent j (rows b·n+j) of x (B·n × w).
func (a *MFActors) rows(tp *nn.Tape[float32], x *nn.Node[float32], j int) *nn.Node[float32] {
	w := x.Value.Cols
	return tp.SliceCols(tp.Reshape(x, x.Value.Rows/a.n, a.n*w), j*w, (j+1)*w)
}

// record records agent j's actor input from the states s (B·n × ds) with
// the attention wq and wk (the actor's own, or its target's), the
// computation input does for one observation.
func (a *MFActors) record(tp *nn.Tape[float32], j int, wq, wk, s *nn.Node[float32]) *nn.Node[float32] {
	own := a.rows(tp, s, j)
	if a.variant.ownOnly() {
		return own
	}
	return tp.Concat(own, a.meanField(tp, j, wq, wk, own, s, s))
}

// meanField records, for every sample, the mean of the rows of v (B·n × w)
// over agent j's neighbours, weighted by the attention of own (B × ds) on
// the states s through wq and wk (eq. 9) or, without them, equally.
func (a *MFActors) meanField(tp *nn.Tape[float32], j int, wq, wk, own, s, v *nn.Node[float32]) *nn.Node[float32] {
	B := own.Value.Rows
	var q, k *nn.Node[float32]
	if wq != nil {
		q, k = tp.MatMul(own, wq), tp.MatMul(s, wk)
	} else { // constant scores: the softmax weighs the neighbours equally
		q, k = tp.Input(B, 1), tp.Input(B*a.n, 1)
	}
	mask := nn.Tensor[float32]{Rows: 1, Cols: a.n, Data: a.masks[j]} // A^{jk}, 0 on the diagonal
	return tp.Attention(q, k, v, B, mask, nn.MultiplicativeMask)
}
