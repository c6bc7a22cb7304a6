package metrics

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// MeanCI summarises independent replications xs (one value per seed, any unit) by their mean and
// the half-width of a two-sided confidence interval at the given level (e.g. 0.95), using Student's
// t: half = t_{n-1, (1+level)/2} * s / sqrt(n), with s the sample standard deviation (n-1 in the
// denominator). The interval is mean ± half, in the unit of xs. With fewer than 2 values half is
// NaN (and mean is NaN for none). It panics if level is not in (0, 1).
func MeanCI(xs []float64, level float64) (mean, half float64) {
	if !(level > 0 && level < 1) {
		panic(fmt.Sprintf("metrics: MeanCI level %v: must be in (0, 1)", level))
	}
	n := len(xs)
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	var w Welford
	for _, x := range xs {
		w.Add(x)
	}
	if n < 2 {
		return w.Mean(), math.NaN()
	}
	t := StudentTQuantile((1+level)/2, n-1)
	return w.Mean(), t * w.StdDev() / math.Sqrt(float64(n))
}

// StudentTQuantile returns the p-quantile (p in (0, 1)) of Student's t distribution with df >= 1
// degrees of freedom: the t with P(T <= t) = p. It is exact to floating-point precision (gonum's
// distuv.StudentsT, via the inverse regularised incomplete beta function); e.g.
// StudentTQuantile(0.975, 1) = 12.706. It panics for p outside (0, 1) or df < 1.
func StudentTQuantile(p float64, df int) float64 {
	if !(p > 0 && p < 1) {
		panic(fmt.Sprintf("metrics: StudentTQuantile p %v: must be in (0, 1)", p))
	}
	if df < 1 {
		panic(fmt.Sprintf("metrics: StudentTQuantile df %d: must be >= 1", df))
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(p)
}

// Welford accumulates count, mean and variance of a stream in one pass with Welford's update
// (numerically stable, no stored samples). The zero value is empty and ready; Add does not
// allocate. Values are in any unit; Var is in its square.
type Welford struct {
	n    int64
	mean float64
	m2   float64 // sum of squared deviations from the running mean
}

// Add adds one value.
func (w *Welford) Add(x float64) {
	w.n++
	d := x - w.mean
	w.mean += d / float64(w.n)
	w.m2 += d * (x - w.mean)
}

// Merge adds all values accumulated in o, as if they had been added to w (Chan et al.'s pairwise
// combination).
func (w *Welford) Merge(o Welford) {
	if o.n == 0 {
		return
	}
	if w.n == 0 {
		*w = o
		return
	}
	n := w.n + o.n
	d := o.mean - w.mean
	w.mean += d * float64(o.n) / float64(n)
	w.m2 += o.m2 + d*d*float64(w.n)*float64(o.n)/float64(n)
	w.n = n
}

// Count returns the number of values added.
func (w *Welford) Count() int64 { return w.n }

// Mean returns the mean of the values added; 0 if none.
func (w *Welford) Mean() float64 { return w.mean }

// Var returns the unbiased sample variance (n-1 in the denominator); 0 with fewer than 2 values.
func (w *Welford) Var() float64 {
	if w.n < 2 {
		return 0
	}
	return w.m2 / float64(w.n-1)
}

// PopVar returns the population variance (n in the denominator); 0 if empty.
func (w *Welford) PopVar() float64 {
	if w.n == 0 {
		return 0
	}
	return w.m2 / float64(w.n)
}

// StdDev returns sqrt(Var()), the sample standard deviation.
func (w *Welford) StdDev() float64 { return math.Sqrt(w.Var()) }

// Reset empties w.
func (w *Welford) Reset() { *w = Welford{} }
