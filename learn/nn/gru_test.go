package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestGRULearnsDelayedRecall trains a GRU to output the bit it saw k = 3
// steps earlier on random bit streams, a task that needs memory: a
// memoryless model cannot beat 50% accuracy. It must exceed 95% accuracy on
// fresh sequences, evaluated with the allocation-free predictor.
func TestGRULearnsDelayedRecall(t *testing.T) {
	const (
		k      = 3
		seqLen = 16
		batch  = 32
		hidden = 16
		steps  = 600
	)
	start := time.Now()
	rng := rand.New(rand.NewPCG(11, 12))
	gru := NewGRU[float32](rng, "gru", 1, hidden)
	head := NewLinear[float32](rng, "head", hidden, 2)
	params := append(gru.Params(), head.Params()...)
	cfg := DefaultAdam()
	cfg.LR = 1e-2
	opt := NewAdam(params, cfg)
	var tp Tape[float32]
	bits := make([][]int, seqLen)
	for i := range bits {
		bits[i] = make([]int, batch)
	}
	xs := make([]*Node[float32], seqLen)
	var hs []*Node[float32]
	for step := 0; step < steps; step++ {
		tp.Reset()
		for s := 0; s < seqLen; s++ {
			xs[s] = tp.Input(batch, 1)
			for b := 0; b < batch; b++ {
				bits[s][b] = rng.IntN(2)
				xs[s].Value.Data[b] = float32(2*bits[s][b] - 1)
			}
		}
		hs = gru.Unroll(&tp, hs[:0], xs, nil)
		var total *Node[float32]
		for s := k; s < seqLen; s++ {
			lp := tp.Gather(tp.LogSoftmax(head.Forward(&tp, hs[s])), bits[s-k])
			if total == nil {
				total = tp.Sum(lp)
			} else {
				total = tp.Add(total, tp.Sum(lp))
			}
		}
		loss := tp.Scale(total, -1/float32(batch*(seqLen-k)))
		opt.ZeroGrad()
		tp.Backward(loss)
		ClipGradNorm(params, 5)
		opt.Step()
	}
	// Evaluate on fresh long streams with the predictors.
	gp := gru.NewPredictor()
	hp := &MLP[float32]{Layers: []*Linear[float32]{head}, Hidden: Identity, Output: Identity}
	pp := hp.NewPredictor()
	h := make([]float32, hidden)
	logits := make([]float32, 2)
	correct, total := 0, 0
	for seq := 0; seq < 100; seq++ {
		clear(h)
		hist := make([]int, 0, 64)
		for s := 0; s < 64; s++ {
			bit := rng.IntN(2)
			hist = append(hist, bit)
			gp.Step(h, h, []float32{float32(2*bit - 1)})
			if s < k {
				continue
			}
			pp.Predict(logits, h)
			pred := 0
			if logits[1] > logits[0] {
				pred = 1
			}
			if pred == hist[s-k] {
				correct++
			}
			total++
		}
	}
	acc := float64(correct) / float64(total)
	t.Logf("delayed recall (k=%d) accuracy %.4f after %d steps in %v", k, acc, steps, time.Since(start))
	if acc < 0.95 {
		t.Fatalf("accuracy %.4f, want > 0.95", acc)
	}
}

// TestUnrollMaskedMatchesSteps checks the fused window op against the same
// recurrence recorded op by op (Step, then h + m⊙(h' − h) with Sub, Mul and
// Add): equal states and equal gradients for the input and every weight, on
// a window with masked leading steps, in both precisions.
func TestUnrollMaskedMatchesSteps(t *testing.T) {
	for _, H := range []int{6, 16} { // 16: the vectorised float32 backward
		t.Run(fmt.Sprintf("float64/H=%d", H), func(t *testing.T) { unrollMaskedMatches[float64](t, H, 1e-13) })
		t.Run(fmt.Sprintf("float32/H=%d", H), func(t *testing.T) { unrollMaskedMatches[float32](t, H, 2e-5) })
	}
}

func unrollMaskedMatches[T Float](t *testing.T, H int, tol float64) {
	const L, B, in = 5, 7, 9
	rng := rand.New(rand.NewPCG(3, 5))
	g := NewGRU[T](rng, "g", in, H)
	x := NewParam[T]("x", L*B, in)
	for i := range x.Value.Data {
		x.Value.Data[i] = T(rng.NormFloat64())
	}
	mask := make([]T, L*B)
	for b := 0; b < B; b++ {
		for k := b % L; k < L; k++ { // sample b starts at step b mod L
			mask[k*B+b] = 1
		}
	}
	c := make([]T, B*H)
	for i := range c {
		c[i] = T(rng.NormFloat64())
	}
	params := append(g.Params(), x)
	run := func(fused bool) (out []T, grads [][]T) {
		ZeroGrad(params)
		var tp Tape[T]
		var h *Node[T]
		if fused {
			h = g.UnrollMasked(&tp, x, L, mask)
		} else {
			h = tp.Input(B, H)
			for k := 0; k < L; k++ {
				xk := tp.SliceCols(tp.MatMul(rowSelector(&tp, k, B, L*B), x), 0, in)
				m := tp.Const(TensorFrom(B, 1, mask[k*B:(k+1)*B]))
				h = tp.Add(h, tp.Mul(tp.Sub(g.Step(&tp, xk, h), h), m))
			}
		}
		loss := tp.Sum(tp.Mul(h, tp.Const(TensorFrom(B, H, c))))
		tp.Backward(loss)
		for _, p := range params {
			grads = append(grads, append([]T(nil), p.Grad.Data...))
		}
		return append([]T(nil), h.Value.Data...), grads
	}
	want, wantG := run(false)
	got, gotG := run(true)
	near := func(what string, a, b []T) {
		t.Helper()
		for i := range a {
			if math.Abs(float64(a[i]-b[i])) > tol*(1+math.Abs(float64(b[i]))) {
				t.Fatalf("%s[%d] = %v, op by op %v", what, i, a[i], b[i])
			}
		}
	}
	near("h", got, want)
	for i, p := range params {
		near(p.Name+".grad", gotG[i], wantG[i])
	}
}

// TestGRUGatesBias32Vector checks the vectorised elementwise loops of the
// float32 gates (gates_amd64.s) against the scalar loops with the same
// activations: identical bits, for widths with and without a tail, and with
// hNext aliasing h.
func TestGRUGatesBias32Vector(t *testing.T) {
	if !actFast {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(6, 6))
	for _, H := range []int{1, 8, 13, 64} {
		r := func(n int) []float32 { return rnd32(rng, n) }
		gx, gh, bx, bh, h := r(3*H), r(3*H), r(3*H), r(3*H), r(H)
		// Reference: the scalar loops.
		wgh := append([]float32(nil), gh...)
		wg := make([]float32, 3*H)
		for j := 0; j < 2*H; j++ {
			wgh[j] += bh[j]
			wg[j] = (gx[j] + bx[j]) + wgh[j]
		}
		sigmoid32s(wg[:2*H], wg[:2*H])
		for j := 0; j < H; j++ {
			wgh[2*H+j] += bh[2*H+j]
			wg[2*H+j] = (gx[2*H+j] + bx[2*H+j]) + wg[j]*wgh[2*H+j]
		}
		tanh32s(wg[2*H:], wg[2*H:])
		want := make([]float32, H)
		for j := range want {
			want[j] = (1-wg[H+j])*wg[2*H+j] + wg[H+j]*h[j]
		}
		gates := make([]float32, 3*H)
		gruGatesBias32(h, gates, gx, gh, bx, bh, h) // in place
		for j := range want {
			if math.Float32bits(h[j]) != math.Float32bits(want[j]) {
				t.Fatalf("H=%d: h'[%d] = %v, want %v", H, j, h[j], want[j])
			}
		}
		for j := range wg {
			if gates[j] != wg[j] || gh[j] != wgh[j] {
				t.Fatalf("H=%d: gate/gh %d differ", H, j)
			}
		}
	}
}

// TestGRUBackRow32 checks the vectorised per-sample backward step against
// the scalar loops of backGRUSeq: identical bits.
func TestGRUBackRow32(t *testing.T) {
	if !actFast {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(2, 9))
	for _, H := range []int{8, 64} {
		for _, mb := range []float32{0, 1} {
			r := func(n int) []float32 { return rnd32(rng, n) }
			dy, hv, gh := r(H), r(H), r(3*H)
			gt := make([]float32, 3*H)
			for j := range gt {
				gt[j] = float32(rng.Float64()) // gates lie in (0, 1) and n in (−1, 1)
			}
			wdy, wdp := append([]float32(nil), dy...), make([]float32, H)
			wdx, wdg := make([]float32, 3*H), make([]float32, 3*H)
			for j, d := range wdy {
				wdy[j] = d * mb
				wdp[j] = d - wdy[j]
			}
			gruGatesBack(wdx, wdg, wdy, hv, gt, gh)
			for j, d := range wdy {
				wdp[j] += d * gt[H+j]
			}
			dx, dg, dp := make([]float32, 3*H), make([]float32, 3*H), make([]float32, H)
			gruBackRow32(&dx[0], &dg[0], &dy[0], &dp[0], &hv[0], &gt[0], &gh[0], mb, H)
			for j := range dx {
				if math.Float32bits(dx[j]) != math.Float32bits(wdx[j]) || math.Float32bits(dg[j]) != math.Float32bits(wdg[j]) {
					t.Fatalf("H=%d m=%v: dx/dg[%d] = %v/%v, want %v/%v", H, mb, j, dx[j], dg[j], wdx[j], wdg[j])
				}
			}
			for j := range dp {
				if math.Float32bits(dp[j]) != math.Float32bits(wdp[j]) {
					t.Fatalf("H=%d m=%v: dp[%d] = %v, want %v", H, mb, j, dp[j], wdp[j])
				}
			}
		}
	}
}
