package gan

import (
	"math"
	"slices"
	"sort"
)

// quantiles maps each continuous column through its empirical
// distribution function onto a standard normal, and back: the rank-
// Gaussian scaling tabular generators use for skewed and multi-modal
// columns, which a mean-and-deviation scaling leaves skewed and
// multi-modal for the generator to learn.
type quantiles struct {
	knots [][]float64 // per column, its sorted values at equal probabilities
}

// maxKnots bounds the knots kept per column.
const maxKnots = 1000

func fitQuantiles(rows [][]float64) quantiles {
	q := quantiles{knots: make([][]float64, len(rows[0]))}
	col := make([]float64, len(rows))
	for j := range q.knots {
		for i, r := range rows {
			col[i] = r[j]
		}
		slices.Sort(col)
		k := min(len(col), maxKnots)
		knots := make([]float64, k)
		for i := range knots {
			knots[i] = col[i*(len(col)-1)/max(k-1, 1)]
		}
		q.knots[j] = knots
	}
	return q
}

// clampP keeps probabilities off 0 and 1, where the normal is infinite.
func clampP(p float64) float64 { return min(max(p, 1e-3), 1-1e-3) }

// apply maps x of column j to a standard normal value.
func (q quantiles) apply(j int, x float64) float64 {
	k := q.knots[j]
	if len(k) < 2 {
		return 0
	}
	i := sort.SearchFloat64s(k, x) // k[i-1] < x <= k[i]
	var pos float64
	switch {
	case i == 0:
		pos = 0
	case i == len(k):
		pos = float64(len(k) - 1)
	default:
		lo, hi := k[i-1], k[i]
		pos = float64(i - 1)
		if hi > lo {
			pos += (x - lo) / (hi - lo)
		}
	}
	// Ties: the middle of the run of equal knots.
	if i < len(k) && k[i] == x {
		end := i
		for end+1 < len(k) && k[end+1] == x {
			end++
		}
		pos = float64(i+end) / 2
	}
	return math.Sqrt2 * math.Erfinv(2*clampP(pos/float64(len(k)-1))-1)
}

// invert maps a standard normal value z back to column j's units.
func (q quantiles) invert(j int, z float64) float64 {
	k := q.knots[j]
	if len(k) < 2 {
		return k[0]
	}
	pos := clampP(0.5*(1+math.Erf(z/math.Sqrt2))) * float64(len(k)-1)
	i := min(int(pos), len(k)-2)
	f := pos - float64(i)
	return k[i]*(1-f) + k[i+1]*f
}
