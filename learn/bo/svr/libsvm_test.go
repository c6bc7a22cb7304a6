package svr

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// TestAgainstLIBSVM compares with solutions computed by LIBSVM itself (via
// scikit-learn's SVR; testdata/libsvm_reference.py wrote
// testdata/libsvm_reference.json) on the same deterministic data set:
// predictions, bias and the dual coefficients α_i − α*_i must agree.
func TestAgainstLIBSVM(t *testing.T) {
	raw, err := os.ReadFile("testdata/libsvm_reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Generator string
		Cases     []struct {
			C, Epsilon, Gamma float64
			Intercept         float64
			Support           []int
			DualCoef          []float64 `json:"dual_coef"`
			Tests             [][]float64
			Predictions       []float64
		}
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	const n = 30
	x := make([][]float64, n)
	z := make([]float64, n)
	for i := range n {
		a := float64(i) / (n - 1)
		b := math.Mod(float64(i)*0.6180339887498949, 1)
		x[i] = []float64{a, b}
		z[i] = math.Sin(2*math.Pi*a) + 0.5*b*b + 0.1*math.Cos(13*float64(i))
	}
	if len(ref.Cases) == 0 {
		t.Fatal("no reference cases")
	}
	for _, c := range ref.Cases {
		m, err := Fit(x, z, Config{C: c.C, Epsilon: c.Epsilon, Gamma: c.Gamma, Tolerance: 1e-8})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(m.Bias()-c.Intercept) > 1e-6 {
			t.Errorf("C=%g: bias %.8g, LIBSVM %.8g", c.C, m.Bias(), c.Intercept)
		}
		for k, p := range c.Tests {
			if got := m.Predict(p); math.Abs(got-c.Predictions[k]) > 1e-6 {
				t.Errorf("C=%g: f(%v) = %.8g, LIBSVM %.8g", c.C, p, got, c.Predictions[k])
			}
		}
		a, as := m.Dual()
		want := make([]float64, n)
		for k, s := range c.Support {
			want[s] = c.DualCoef[k]
		}
		for i := range n {
			if got := a[i] - as[i]; math.Abs(got-want[i]) > 1e-5*c.C {
				t.Errorf("C=%g: point %d: α−α* = %.8g, LIBSVM %.8g", c.C, i, got, want[i])
			}
		}
		t.Logf("C=%g ε=%g γ=%g: %d SVs (LIBSVM %d), bias %.6f (LIBSVM %.6f); reference from %s",
			c.C, c.Epsilon, c.Gamma, m.NumSupportVectors(), len(c.Support), m.Bias(), c.Intercept, ref.Generator)
	}
}
