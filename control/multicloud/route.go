package multicloud

import (
	"github.com/shoal-project/shoal/control"
)

// Pairs is the number of unordered pairs of n locations: the length of a
// request shift.
func Pairs(n int) int { return n * (n - 1) / 2 }

// pairs calls f for each unordered pair (i < j) of n locations with its
// index in a request shift: (0,1), (0,2), ..., (1,2), ...
func pairs(n int, f func(k, i, j int)) {
	k := 0
	for i := range n {
		for j := i + 1; j < n; j++ {
			f(k, i, j)
			k++
		}
	}
}

// ordered calls f for each ordered pair (i != j) of n locations with its
// index in a two-way shift: (0,1), (0,2), ..., (1,0), (1,2), ...
func ordered(n int, f func(k, i, j int)) {
	k := 0
	for i := range n {
		for j := range n {
			if j != i {
				f(k, i, j)
				k++
			}
		}
	}
}

// Weights turns a request shift into route weights, one row per caller
// location. The paper's one-way shift (section II-C1, "Request shift": one
// value in [-1, 1] per pair of clouds, its sign the direction; Pairs(n)
// long): shift s of pair (i, j) sends s of i's calls to j when positive,
// and -s of j's calls to i when negative. A two-way shift (n(n-1) long,
// ShiftTwoWay) has a value in [0, 1] per ordered pair: the share of i's
// calls sent to j, so that every location may send to every other. Each
// row keeps the rest at home; a row whose shares exceed 1 is scaled down
// to send everything away. A location the service is not placed in gets
// no calls: its share goes evenly to the placed ones. dst is reused.
func Weights(dst [][]float64, shift []float64, svc *Service) [][]float64 {
	n := len(svc.Parts)
	dst = resizeRows(dst, n)
	for i := range dst {
		clear(dst[i])
	}
	if len(shift) == ShiftLen(n, ShiftTwoWay) && n > 1 {
		ordered(n, func(k, i, j int) {
			if svc.Placed(j) {
				dst[i][j] = clamp(shift[k], 0, 1)
			}
		})
	} else {
		pairs(n, func(k, i, j int) {
			switch s := clamp(shift[k], -1, 1); {
			case s > 0 && svc.Placed(j):
				dst[i][j] = s
			case s < 0 && svc.Placed(i):
				dst[j][i] = -s
			}
		})
	}
	placed := 0
	for l := range n {
		if svc.Placed(l) {
			placed++
		}
	}
	for i, row := range dst {
		out := 0.0
		for _, w := range row {
			out += w
		}
		if out > 1 {
			for j := range row {
				row[j] /= out
			}
			continue
		}
		if svc.Placed(i) {
			row[i] = 1 - out
			continue
		}
		for j := range row {
			if svc.Placed(j) {
				row[j] += (1 - out) / float64(placed)
			}
		}
	}
	return dst
}

// Actions returns the SetRouteWeights actions that put weights (one row
// per caller location) in force for service svc.
func (t *Topology) Actions(dst []control.Action, svc *Service, weights [][]float64) []control.Action {
	for from, row := range weights {
		w := make(map[string]float64, len(row))
		for to, x := range row {
			if x > 0 {
				w[t.Locations[to]] = x
			}
		}
		dst = append(dst, control.SetRouteWeights{Service: svc.Name, From: t.Locations[from], Weights: w})
	}
	return dst
}

func resizeRows(dst [][]float64, n int) [][]float64 {
	if len(dst) != n {
		dst = make([][]float64, n)
	}
	for i := range dst {
		if len(dst[i]) != n {
			dst[i] = make([]float64, n)
		}
	}
	return dst
}

func clamp(x, lo, hi float64) float64 { return min(max(x, lo), hi) }
