package report

import "math"

// decimate reduces a polyline given in pixel coordinates so that it keeps
// its drawn shape with at most four points per pixel column: every run of
// consecutive points that fall into the same column (floor of x) is
// replaced by the first, the lowest, the highest and the last point of the
// run, in their original order. The extremes of every column, and thus the
// global minimum and maximum, survive. The result is appended to dx, dy.
func decimate(dx, dy, xs, ys []float64) ([]float64, []float64) {
	n := min(len(xs), len(ys))
	for start := 0; start < n; {
		col := math.Floor(xs[start])
		end := start + 1
		lo, hi := start, start
		for end < n && math.Floor(xs[end]) == col {
			if ys[end] < ys[lo] {
				lo = end
			}
			if ys[end] > ys[hi] {
				hi = end
			}
			end++
		}
		last := end - 1
		// Emit first, lo, hi, last in index order, without repeats.
		idx := [4]int{start, lo, hi, last}
		if idx[1] > idx[2] {
			idx[1], idx[2] = idx[2], idx[1]
		}
		prev := -1
		for _, i := range idx {
			if i != prev {
				dx = append(dx, xs[i])
				dy = append(dy, ys[i])
				prev = i
			}
		}
		start = end
	}
	return dx, dy
}
