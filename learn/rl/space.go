package rl

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Space describes a set of observations or actions. A space is either
// discrete (N > 0: one value in {0, ..., N-1}, carried as a float64 in a
// one-element slice) or a box (N == 0: a vector of len(Low) reals with
// Low[i] <= x[i] <= High[i]; bounds may be ±Inf).
type Space struct {
	// N is the number of discrete values; 0 for a box.
	N int
	// Low and High are the inclusive per-dimension bounds of a box.
	Low, High []float64
}

// Box returns a continuous space with the given inclusive bounds. It panics
// if the bounds differ in length or low > high somewhere.
func Box(low, high []float64) Space {
	if len(low) != len(high) {
		panic(fmt.Sprintf("rl: box bounds of different lengths %d and %d", len(low), len(high)))
	}
	for i := range low {
		if !(low[i] <= high[i]) {
			panic(fmt.Sprintf("rl: box bound %d: low %v > high %v", i, low[i], high[i]))
		}
	}
	return Space{Low: append([]float64(nil), low...), High: append([]float64(nil), high...)}
}

// UniformBox returns a box of dim dimensions, each within [low, high].
func UniformBox(dim int, low, high float64) Space {
	l := make([]float64, dim)
	h := make([]float64, dim)
	for i := range l {
		l[i], h[i] = low, high
	}
	return Box(l, h)
}

// Discrete returns a discrete space of n values {0, ..., n-1}. It panics if n < 1.
func Discrete(n int) Space {
	if n < 1 {
		panic(fmt.Sprintf("rl: discrete space needs n >= 1, got %d", n))
	}
	return Space{N: n}
}

// IsDiscrete reports whether s is a discrete space.
func (s Space) IsDiscrete() bool { return s.N > 0 }

// Dim is the length of a value of s: 1 for a discrete space, len(Low) for a box.
func (s Space) Dim() int {
	if s.N > 0 {
		return 1
	}
	return len(s.Low)
}

// Contains reports whether x is a member of s (right length, finite or
// within infinite bounds, integral and in range for a discrete space).
func (s Space) Contains(x []float64) bool {
	if len(x) != s.Dim() {
		return false
	}
	if s.N > 0 {
		v := x[0]
		return v == math.Trunc(v) && v >= 0 && v < float64(s.N)
	}
	for i, v := range x {
		if math.IsNaN(v) || v < s.Low[i] || v > s.High[i] {
			return false
		}
	}
	return true
}

// Sample writes a uniformly random member of s into dst (len Dim). For box
// dimensions with an infinite bound it samples a standard normal shifted to
// respect the finite bound, as Gymnasium's Box.sample does.
func (s Space) Sample(rng *rand.Rand, dst []float64) {
	if s.N > 0 {
		dst[0] = float64(rng.IntN(s.N))
		return
	}
	for i := range s.Low {
		lo, hi := s.Low[i], s.High[i]
		switch {
		case !math.IsInf(lo, 0) && !math.IsInf(hi, 0):
			dst[i] = lo + (hi-lo)*rng.Float64()
		case math.IsInf(lo, 0) && math.IsInf(hi, 0):
			dst[i] = rng.NormFloat64()
		case math.IsInf(hi, 0):
			dst[i] = lo + rng.ExpFloat64()
		default:
			dst[i] = hi - rng.ExpFloat64()
		}
	}
}

// Clip writes x clipped to the bounds of box s into dst (dst may alias x).
// For a discrete space it copies x.
func (s Space) Clip(dst, x []float64) {
	if s.N > 0 {
		dst[0] = x[0]
		return
	}
	for i, v := range x {
		dst[i] = math.Min(math.Max(v, s.Low[i]), s.High[i])
	}
}

// String describes the space like Gymnasium does ("Discrete(2)", "Box(3)").
func (s Space) String() string {
	if s.N > 0 {
		return fmt.Sprintf("Discrete(%d)", s.N)
	}
	return fmt.Sprintf("Box(%d)", len(s.Low))
}

func sqrt(x float64) float64 { return math.Sqrt(x) }
