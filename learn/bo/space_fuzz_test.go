package bo

import (
	"math"
	"testing"
)

// FuzzSpaceEncoding checks, for arbitrary relaxed unit-box coordinates, that
// decode yields a valid point, that encode∘decode equals the canonical
// encoding, and that canonicalisation is idempotent.
func FuzzSpaceEncoding(f *testing.F) {
	f.Add(0.1, 0.5, 0.99, 0.2, 0.7, 0.1)
	f.Add(0.0, 1.0, 0.0, 1.0, 0.0, 0.0)
	f.Add(-3.0, 7.0, 0.5, math.Inf(1), -1.0, 0.5)
	sp, err := newSpace([]Param{
		{Name: "x", Kind: Continuous, Low: -1, High: 3},
		{Name: "l", Kind: Continuous, Low: 0.01, High: 100, Log: true},
		{Name: "n", Kind: Integer, Low: -2, High: 5},
		{Name: "c", Kind: Categorical, Categories: []string{"a", "b", "c"}},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, a, b, c, d, e, g float64) {
		u := []float64{a, b, c, d, e, g}
		for _, v := range u {
			if math.IsNaN(v) {
				return
			}
		}
		x := sp.decode(u)
		enc, err := sp.encode(x)
		if err != nil {
			t.Fatalf("decode(%v) = %v is not a valid point: %v", u, x, err)
		}
		can := make([]float64, len(u))
		sp.canonical(can, u)
		for i := range can {
			if math.Abs(can[i]-enc[i]) > 1e-9 {
				t.Fatalf("canonical(%v) = %v, encode(decode) = %v", u, can, enc)
			}
		}
		again := make([]float64, len(u))
		sp.canonical(again, can)
		for i := range can {
			if again[i] != can[i] {
				t.Fatalf("canonical not idempotent: %v then %v", can, again)
			}
		}
	})
}
