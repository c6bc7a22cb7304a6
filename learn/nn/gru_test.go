package nn

import (
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
