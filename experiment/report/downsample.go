package report

import "math"

// columnReducer reduces a polyline given in pixel coordinates, point by
// point, so that it keeps its drawn shape with at most four points per
// pixel column: every run of consecutive points that fall into the same
// column (floor of x) is replaced by the first, the lowest, the highest and
// the last point of the run, in their original order. The extremes of every
// column, and thus the global minimum and maximum, survive.
type columnReducer struct {
	x, y []float64 // output

	n        int     // points in the current run
	col      float64 // its column
	run      [4]pt   // first, lowest, highest, last
	runIndex [4]int  // their positions in the run
}

type pt struct{ x, y float64 }

// add feeds the next point.
func (r *columnReducer) add(x, y float64) {
	c := math.Floor(x)
	if r.n > 0 && c != r.col {
		r.flush()
	}
	p := pt{x, y}
	if r.n == 0 {
		r.col = c
		r.run = [4]pt{p, p, p, p}
		r.runIndex = [4]int{0, 0, 0, 0}
	} else {
		if y < r.run[1].y {
			r.run[1], r.runIndex[1] = p, r.n
		}
		if y > r.run[2].y {
			r.run[2], r.runIndex[2] = p, r.n
		}
		r.run[3], r.runIndex[3] = p, r.n
	}
	r.n++
}

// flush emits the current run.
func (r *columnReducer) flush() {
	if r.n == 0 {
		return
	}
	lo, hi := 1, 2
	if r.runIndex[lo] > r.runIndex[hi] {
		lo, hi = hi, lo
	}
	prev := -1
	for _, k := range [4]int{0, lo, hi, 3} {
		if i := r.runIndex[k]; i != prev {
			r.x = append(r.x, r.run[k].x)
			r.y = append(r.y, r.run[k].y)
			prev = i
		}
	}
	r.n = 0
}

// decimate appends to dx, dy the reduction of the polyline xs, ys (see
// columnReducer) and returns the extended slices.
func decimate(dx, dy, xs, ys []float64) ([]float64, []float64) {
	r := columnReducer{x: dx, y: dy}
	for i := range min(len(xs), len(ys)) {
		r.add(xs[i], ys[i])
	}
	r.flush()
	return r.x, r.y
}
