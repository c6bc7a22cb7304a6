package report

import (
	"math"
	"slices"
	"strconv"
)

// ECDF returns the empirical distribution function of the finite samples
// as a series for a KindStep figure: it starts at (min, 0) and has a point
// (x, F(x)) at every distinct sample x, F(x) being the fraction of samples
// <= x. With maxPoints > 0 and more distinct samples than that, only the
// points nearest maxPoints evenly spaced probabilities (and the maximum)
// are kept, each still with its exact F(x). samples is not modified.
func ECDF(name string, samples []float64, maxPoints int) Series {
	xs := make([]float64, 0, len(samples))
	for _, v := range samples {
		if finite(v) {
			xs = append(xs, v)
		}
	}
	s := Series{Name: name}
	if len(xs) == 0 {
		return s
	}
	slices.Sort(xs)
	n := len(xs)
	s.X = append(s.X, xs[0])
	s.Y = append(s.Y, 0)
	last := -1 // index of the last kept sample
	keep := func(i int) {
		// Move to the last of a run of ties, so F is exact there.
		for i+1 < n && xs[i+1] == xs[i] {
			i++
		}
		if i <= last {
			return
		}
		s.X = append(s.X, xs[i])
		s.Y = append(s.Y, float64(i+1)/float64(n))
		last = i
	}
	if maxPoints <= 0 || n <= maxPoints {
		for i := range n {
			keep(i)
		}
		return s
	}
	for j := 1; j <= maxPoints; j++ {
		keep(int(math.Ceil(float64(j)*float64(n)/float64(maxPoints))) - 1)
	}
	keep(n - 1)
	return s
}

// MeanCI formats a mean and the half-width of its confidence interval as
// "12.346 ± 0.012": the half-width to two significant digits and the mean
// to the same decimal place. A half-width that is zero, negative or not
// finite is left out and the mean shown with four significant digits.
func MeanCI(mean, halfWidth float64) string {
	if math.IsNaN(mean) || math.IsInf(mean, 0) {
		return strconv.FormatFloat(mean, 'g', -1, 64)
	}
	if !(halfWidth > 0) || math.IsInf(halfWidth, 0) {
		return strconv.FormatFloat(mean, 'g', 4, 64)
	}
	dec := max(0, 1-floorLog10(halfWidth))
	m := strconv.FormatFloat(mean, 'f', dec, 64)
	if m == "-"+strconv.FormatFloat(0, 'f', dec, 64) {
		m = m[1:]
	}
	return m + " ± " + strconv.FormatFloat(halfWidth, 'f', dec, 64)
}

// Best returns the index of the smallest finite value (the largest when
// largest is true), the first one on ties, or -1 when there is none: a
// value for Table.Highlight.
func Best(values []float64, largest bool) int {
	best := -1
	for i, v := range values {
		if !finite(v) {
			continue
		}
		if best < 0 || !largest && v < values[best] || largest && v > values[best] {
			best = i
		}
	}
	return best
}
