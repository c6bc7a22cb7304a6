package nn

import (
	"math"
	"testing"
)

// TestBatchNormModes checks batch norm against hand-computed values:
// training mode normalises with the batch mean and biased variance and
// moves the running statistics by Momentum towards the batch mean and
// unbiased variance; evaluation mode uses the running statistics, leaves
// them unchanged and treats rows independently.
func TestBatchNormModes(t *testing.T) {
	bn := NewBatchNorm[float64]("bn", 2)
	var tp Tape[float64]
	// Column 0: 1,2,3,4 (mean 2.5, biased var 1.25, unbiased 5/3).
	// Column 1: 10,10,10,14 (mean 11, biased var 3, unbiased 4).
	x := tp.Const(TensorFrom(4, 2, []float64{1, 10, 2, 10, 3, 10, 4, 14}))
	y := bn.Forward(&tp, x, true)
	for i := 0; i < 4; i++ {
		want0 := (x.Value.At(i, 0) - 2.5) / math.Sqrt(1.25+1e-5)
		want1 := (x.Value.At(i, 1) - 11) / math.Sqrt(3+1e-5)
		if !near(y.Value.At(i, 0), want0, 1e-12) || !near(y.Value.At(i, 1), want1, 1e-12) {
			t.Fatalf("train row %d: got %v %v, want %v %v", i, y.Value.At(i, 0), y.Value.At(i, 1), want0, want1)
		}
	}
	wantMean := []float64{0.9*0 + 0.1*2.5, 0.9*0 + 0.1*11}
	wantVar := []float64{0.9*1 + 0.1*5.0/3, 0.9*1 + 0.1*4}
	for j := 0; j < 2; j++ {
		if !near(bn.RunMean.Value.Data[j], wantMean[j], 1e-12) || !near(bn.RunVar.Value.Data[j], wantVar[j], 1e-12) {
			t.Fatalf("running stats col %d: mean %v var %v, want %v %v", j, bn.RunMean.Value.Data[j], bn.RunVar.Value.Data[j], wantMean[j], wantVar[j])
		}
	}
	// Evaluation: running statistics, per row, no update.
	bn.Gamma.Value.Data[1] = 2
	bn.Beta.Value.Data[1] = -1
	tp.Reset()
	ye := bn.Forward(&tp, tp.Const(TensorFrom(2, 2, []float64{1, 10, 3, 14})), false)
	tp2 := Tape[float64]{}
	single := bn.Forward(&tp2, tp2.Const(TensorFrom(1, 2, []float64{3, 14})), false)
	for i, row := range [][]float64{{1, 10}, {3, 14}} {
		want0 := (row[0] - wantMean[0]) / math.Sqrt(wantVar[0]+1e-5)
		want1 := 2*(row[1]-wantMean[1])/math.Sqrt(wantVar[1]+1e-5) - 1
		if !near(ye.Value.At(i, 0), want0, 1e-12) || !near(ye.Value.At(i, 1), want1, 1e-12) {
			t.Fatalf("eval row %d: got %v %v, want %v %v", i, ye.Value.At(i, 0), ye.Value.At(i, 1), want0, want1)
		}
	}
	if single.Value.At(0, 1) != ye.Value.At(1, 1) {
		t.Errorf("eval output depends on the rest of the batch")
	}
	if bn.RunMean.Value.Data[0] != wantMean[0] || bn.RunVar.Value.Data[0] != wantVar[0] {
		t.Errorf("eval mode changed running statistics")
	}
	// Many training steps on one batch: running stats converge to its
	// mean and unbiased variance.
	for i := 0; i < 200; i++ {
		tp.Reset()
		bn.Forward(&tp, tp.Const(TensorFrom(4, 2, []float64{1, 10, 2, 10, 3, 10, 4, 14})), true)
	}
	if !near(bn.RunMean.Value.Data[0], 2.5, 1e-6) || !near(bn.RunVar.Value.Data[1], 4, 1e-6) {
		t.Errorf("running stats did not converge: mean %v var %v", bn.RunMean.Value.Data, bn.RunVar.Value.Data)
	}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

// TestLayerNormRows checks that each row comes out with mean 0 and biased
// variance 1 (gain 1, bias 0), matching the closed form.
func TestLayerNormRows(t *testing.T) {
	ln := NewLayerNorm[float64]("ln", 4)
	var tp Tape[float64]
	y := ln.Forward(&tp, tp.Const(TensorFrom(2, 4, []float64{1, 2, 3, 4, -5, 0, 5, 100})))
	for i := 0; i < 2; i++ {
		var m, v float64
		for _, a := range y.Value.Row(i) {
			m += a / 4
		}
		for _, a := range y.Value.Row(i) {
			v += (a - m) * (a - m) / 4
		}
		if math.Abs(m) > 1e-12 || math.Abs(v-1) > 1e-4 {
			t.Errorf("row %d: mean %g variance %g, want 0 and 1", i, m, v)
		}
	}
	if want := (1 - 2.5) / math.Sqrt(1.25+1e-5); !near(y.Value.At(0, 0), want, 1e-12) {
		t.Errorf("y[0,0] = %v, want %v", y.Value.At(0, 0), want)
	}
}
