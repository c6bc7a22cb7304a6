package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSquashedGaussianClosedForm compares action and log-probability with
// the textbook formula evaluated naively: log N(u; mu, σ) summed over
// dimensions minus Σ log(1 - tanh(u)²).
func TestSquashedGaussianClosedForm(t *testing.T) {
	mu := TensorFrom(2, 2, []float64{0.1, -0.4, 1.2, 0})
	ls := TensorFrom(2, 2, []float64{-0.5, 0.2, -1, 0.3})
	eps := TensorFrom(2, 2, []float64{0.3, -1.1, 0.7, 2})
	var tp Tape[float64]
	a, lp := tp.SquashedGaussian(tp.Const(mu), tp.Const(ls), eps)
	for i := 0; i < 2; i++ {
		var want float64
		for j := 0; j < 2; j++ {
			s := math.Exp(ls.At(i, j))
			u := mu.At(i, j) + s*eps.At(i, j)
			if got := a.Value.At(i, j); math.Abs(got-math.Tanh(u)) > 1e-15 {
				t.Errorf("action[%d,%d] = %v, want tanh(%v)", i, j, got, u)
			}
			z := (u - mu.At(i, j)) / s
			want += -0.5*z*z - math.Log(s) - 0.5*math.Log(2*math.Pi) - math.Log(1-math.Tanh(u)*math.Tanh(u))
		}
		if got := lp.Value.Data[i]; math.Abs(got-want) > 1e-12 {
			t.Errorf("logprob[%d] = %.15g, want %.15g", i, got, want)
		}
	}
	// The stable form stays finite where the naive one gives +Inf.
	tp.Reset()
	_, lp = tp.SquashedGaussian(tp.Const(TensorFrom(1, 1, []float64{30})), tp.Const(TensorFrom(1, 1, []float64{0})), TensorFrom(1, 1, []float64{0}))
	if v := lp.Value.Data[0]; math.IsInf(v, 0) || math.IsNaN(v) {
		t.Errorf("saturated logprob = %v, want finite", v)
	}
}

// TestGaussianLogProbClosedForm checks against the normal density.
func TestGaussianLogProbClosedForm(t *testing.T) {
	var tp Tape[float64]
	x := tp.Const(TensorFrom(1, 2, []float64{0.5, -1}))
	mu := tp.Const(TensorFrom(1, 2, []float64{0, 0.5}))
	ls := tp.Const(TensorFrom(1, 2, []float64{0, math.Log(2)}))
	got := tp.GaussianLogProb(x, mu, ls).Value.Data[0]
	pdf := func(x, m, s float64) float64 { return math.Exp(-(x-m)*(x-m)/(2*s*s)) / (s * math.Sqrt(2*math.Pi)) }
	want := math.Log(pdf(0.5, 0, 1) * pdf(-1, 0.5, 2))
	if math.Abs(got-want) > 1e-12 {
		t.Fatalf("GaussianLogProb = %v, want %v", got, want)
	}
}

// TestSquashedGaussianSampling draws many reparameterised samples and
// checks the mean of tanh(mu + σ·eps) against numerical integration.
func TestSquashedGaussianSampling(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	const n = 20000
	eps := NewTensor[float64](n, 1)
	for i := range eps.Data {
		eps.Data[i] = rng.NormFloat64()
	}
	var tp Tape[float64]
	mu, ls := tp.Input(n, 1), tp.Input(n, 1)
	for i := 0; i < n; i++ {
		mu.Value.Data[i], ls.Value.Data[i] = 0.5, math.Log(0.8)
	}
	a, _ := tp.SquashedGaussian(mu, ls, eps)
	var mean float64
	for _, v := range a.Value.Data {
		mean += v / n
	}
	// E[tanh(0.5 + 0.8 Z)] by the trapezoid rule.
	var want float64
	const h = 1e-3
	for z := -8.0; z <= 8; z += h {
		want += math.Tanh(0.5+0.8*z) * math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) * h
	}
	if math.Abs(mean-want) > 0.01 { // standard error ≈ 0.005
		t.Fatalf("sample mean %v, want %v", mean, want)
	}
}

// TestHuberValues checks Huber against its definition at both branches.
func TestHuberValues(t *testing.T) {
	var tp Tape[float64]
	a := tp.Const(TensorFrom(1, 3, []float64{0.5, 3, -2}))
	b := tp.Const(TensorFrom(1, 3, []float64{0, 0, 0}))
	got := tp.Huber(a, b, 1).Scalar()
	want := (0.5*0.25 + (3 - 0.5) + (2 - 0.5)) / 3
	if math.Abs(got-want) > 1e-15 {
		t.Fatalf("Huber = %v, want %v", got, want)
	}
	if got, want := tp.MSE(a, b).Scalar(), (0.25+9+4)/3; math.Abs(got-want) > 1e-15 {
		t.Fatalf("MSE = %v, want %v", got, want)
	}
}

// naiveAttention is the reference: per group, per query, softmax over the
// allowed keys of q·k/√d, then the weighted sum of values.
func naiveAttention(q, k, v Tensor[float64], groups int, allowed func(g, i, j int) bool) Tensor[float64] {
	n, m := q.Rows/groups, k.Rows/groups
	out := NewTensor[float64](q.Rows, v.Cols)
	for g := 0; g < groups; g++ {
		for i := 0; i < n; i++ {
			w := make([]float64, m)
			var z float64
			for j := 0; j < m; j++ {
				if !allowed(g, i, j) {
					continue
				}
				var s float64
				for c := 0; c < q.Cols; c++ {
					s += q.At(g*n+i, c) * k.At(g*m+j, c)
				}
				w[j] = math.Exp(s / math.Sqrt(float64(q.Cols)))
				z += w[j]
			}
			for j := 0; j < m; j++ {
				for c := 0; c < v.Cols; c++ {
					if z > 0 {
						out.Data[(g*n+i)*v.Cols+c] += w[j] / z * v.At(g*m+j, c)
					}
				}
			}
		}
	}
	return out
}

func TestAttentionMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const groups, n, m, d, dv = 3, 2, 4, 5, 3
	rnd := func(r, c int) Tensor[float64] {
		x := NewTensor[float64](r, c)
		for i := range x.Data {
			x.Data[i] = rng.NormFloat64()
		}
		return x
	}
	q, k, v := rnd(groups*n, d), rnd(groups*m, d), rnd(groups*m, dv)
	// Per-group 0/1 mask; group 2, query 1 sees nothing.
	mask := NewTensor[float64](groups*n, m)
	for i := range mask.Data {
		if rng.IntN(3) > 0 {
			mask.Data[i] = 1
		}
	}
	for j := 0; j < m; j++ {
		mask.Set(2*n+1, j, 0)
	}
	add := NewTensor[float64](groups*n, m)
	for i, x := range mask.Data {
		if x == 0 {
			add.Data[i] = math.Inf(-1)
		}
	}
	allowed := func(g, i, j int) bool { return mask.At(g*n+i, j) == 1 }
	want := naiveAttention(q, k, v, groups, allowed)
	all := naiveAttention(q, k, v, groups, func(int, int, int) bool { return true })
	var tp Tape[float64]
	for _, tc := range []struct {
		name string
		kind MaskKind
		mask Tensor[float64]
		want Tensor[float64]
	}{
		{"none", NoMask, Tensor[float64]{}, all},
		{"multiplicative", MultiplicativeMask, mask, want},
		{"additive", AdditiveMask, add, want},
	} {
		tp.Reset()
		got := tp.Attention(tp.Const(q), tp.Const(k), tp.Const(v), groups, tc.mask, tc.kind)
		for i := range got.Value.Data {
			if math.Abs(got.Value.Data[i]-tc.want.Data[i]) > 1e-12 {
				t.Fatalf("%s: element %d = %v, want %v", tc.name, i, got.Value.Data[i], tc.want.Data[i])
			}
		}
	}
}

// A dropped entry whose score is far above the kept ones (its exponential
// overflows float32) leaves the output finite: the kept entries' weights.
func TestAttentionMaskedHugeScore(t *testing.T) {
	var tp Tape[float32]
	q := Tensor[float32]{Rows: 1, Cols: 1, Data: []float32{1}}
	k := Tensor[float32]{Rows: 3, Cols: 1, Data: []float32{0, 1000, 0}}
	v := Tensor[float32]{Rows: 3, Cols: 1, Data: []float32{1, 100, 3}}
	mask := Tensor[float32]{Rows: 1, Cols: 3, Data: []float32{1, 0, 1}}
	got := tp.Attention(tp.Const(q), tp.Const(k), tp.Const(v), 1, mask, MultiplicativeMask)
	if y := got.Value.Data[0]; y != 2 {
		t.Fatalf("attention %v, want 2 (the mean of the kept values)", y)
	}
}
