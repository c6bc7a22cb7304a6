package nn

import (
	"math/rand/v2"
	"testing"
)

// mlpTrainer is one MLP regression training step at a fixed batch size,
// the workload of the benchmarks and allocation tests.
type mlpTrainer struct {
	net  *MLP[float32]
	opt  *Adam[float32]
	tp   Tape[float32]
	x, y []float32
	b    int
}

func newMLPTrainer(batch int) *mlpTrainer {
	rng := rand.New(rand.NewPCG(1, 1))
	tr := &mlpTrainer{net: NewMLP[float32](rng, "q", []int{16, 64, 64, 4}, ReLU, Identity), b: batch}
	tr.opt = NewAdam(tr.net.Params(), DefaultAdam())
	tr.x = make([]float32, batch*16)
	tr.y = make([]float32, batch*4)
	for i := range tr.x {
		tr.x[i] = float32(rng.NormFloat64())
	}
	for i := range tr.y {
		tr.y[i] = float32(rng.NormFloat64())
	}
	return tr
}

func (tr *mlpTrainer) step() float32 {
	tr.tp.Reset()
	x := tr.tp.Input(tr.b, 16)
	copy(x.Value.Data, tr.x)
	y := tr.tp.Input(tr.b, 4)
	copy(y.Value.Data, tr.y)
	loss := tr.tp.MSE(tr.net.Forward(&tr.tp, x), y)
	tr.opt.ZeroGrad()
	tr.tp.Backward(loss)
	tr.opt.Step()
	return loss.Scalar()
}

// BenchmarkMLPTrainStep is one forward, backward and Adam step of a
// 16-64-64-4 ReLU MLP on a batch of 256.
func BenchmarkMLPTrainStep(b *testing.B) {
	tr := newMLPTrainer(256)
	tr.step()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU()
	for b.Loop() {
		tr.step()
	}
	reportCPU(b, cpu)
}

// BenchmarkMLPPredict is single-sample inference of the same network.
func BenchmarkMLPPredict(b *testing.B) {
	tr := newMLPTrainer(1)
	p := tr.net.NewPredictor()
	out := make([]float32, 4)
	x := tr.x[:16]
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		p.Predict(out, x)
	}
	reportCPU(b, cpu)
}

// BenchmarkGRUStep is one single-sample step of a GRU(16, 64) cell with the
// predictor.
func BenchmarkGRUStep(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	g := NewGRU[float32](rng, "g", 16, 64)
	p := g.NewPredictor()
	h := make([]float32, 64)
	x := make([]float32, 16)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		p.Step(h, h, x)
	}
	reportCPU(b, cpu)
}

// BenchmarkGRUTrainSeq is forward and backward through time of a GRU(16, 64)
// over 16 steps at batch 32, with a linear head and MSE on the last state.
func BenchmarkGRUTrainSeq(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	g := NewGRU[float32](rng, "g", 16, 64)
	head := NewLinear[float32](rng, "h", 64, 1)
	params := append(g.Params(), head.Params()...)
	opt := NewAdam(params, DefaultAdam())
	var tp Tape[float32]
	xs := make([]*Node[float32], 16)
	var hs []*Node[float32]
	step := func() {
		tp.Reset()
		for s := range xs {
			xs[s] = tp.Input(32, 16)
			for i := range xs[s].Value.Data {
				xs[s].Value.Data[i] = float32(i%7) * 0.1
			}
		}
		hs = g.Unroll(&tp, hs[:0], xs, nil)
		loss := tp.MSE(head.Forward(&tp, hs[len(hs)-1]), tp.Input(32, 1))
		opt.ZeroGrad()
		tp.Backward(loss)
		opt.Step()
	}
	step()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU()
	for b.Loop() {
		step()
	}
	reportCPU(b, cpu)
}

// TestNoAllocs checks that inference paths and a warmed-up training step
// allocate nothing.
func TestNoAllocs(t *testing.T) {
	tr := newMLPTrainer(256)
	tr.step()
	if a := testing.AllocsPerRun(20, func() { tr.step() }); a != 0 {
		t.Errorf("MLP training step: %v allocs per run, want 0", a)
	}
	p := tr.net.NewPredictor()
	out := make([]float32, 4)
	if a := testing.AllocsPerRun(100, func() { p.Predict(out, tr.x[:16]) }); a != 0 {
		t.Errorf("MLP Predict: %v allocs per run, want 0", a)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	g := NewGRU[float32](rng, "g", 16, 64)
	gp := g.NewPredictor()
	h := make([]float32, 64)
	if a := testing.AllocsPerRun(100, func() { gp.Step(h, h, tr.x[:16]) }); a != 0 {
		t.Errorf("GRU predictor step: %v allocs per run, want 0", a)
	}
}
