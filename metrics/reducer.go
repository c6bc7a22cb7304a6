package metrics

import (
	"fmt"
	"math"
	"time"
)

// Positions of the 5 scalars that SampleReducer.Reduce writes.
const (
	ReduceMean                   = 0 // plain average of the samples
	ReduceP90                    = 1 // 90th percentile (linear interpolation between order statistics)
	ReduceStdDev                 = 2 // population standard deviation
	ReduceDiscountedMean         = 3 // discount-weighted average, sum w v / sum w
	ReduceWeightedDiscountedMean = 4 // discount-weighted sum over the count, sum w v / n
)

// DefaultDiscount is the per-unit discount factor of the Distr-LB paper's observation (footnote 5:
// weights 0.9^(t'-t)).
const DefaultDiscount = 0.9

// SampleReducer keeps the most recent timestamped samples (a bounded ring: when full, Add overwrites
// the oldest) and reduces them to the 5 observation scalars of a Distr-LB agent (Yao et al.,
// "Observation", Sec. 3.4): average, 90th percentile, standard deviation, discounted average and
// weighted discounted average. The values are in any unit (typically seconds of task duration,
// completion time or inter-arrival time); all 5 scalars are in that unit.
//
// With samples (t_k, v_k), k = 1..n, the reduction at time now with time unit u is:
//
//	mean   = (1/n) sum_k v_k
//	p90    = the 0.9-quantile with linear interpolation between order statistics
//	         (h = 0.9*(n-1), p90 = x_(floor h) + (h - floor h)*(x_(floor h + 1) - x_(floor h)),
//	         x_(0) <= ... <= x_(n-1) the sorted samples; numpy's default percentile)
//	std    = sqrt((1/n) sum_k (v_k - mean)^2)   (population standard deviation, numpy's default)
//	w_k    = gamma^((now - t_k)/u)              (gamma = 0.9 by default; samples stamped after now
//	                                             count as age 0, w_k = 1)
//	disc   = sum_k w_k v_k / sum_k w_k          ("discounted average")
//	wdisc  = sum_k w_k v_k / n                  ("weighted discounted average")
//
// The paper only gives the weights (footnote 5: 0.9^(t'-t), t the sample timestamp, t' the moment of
// computing) and the names; the two formulas for disc and wdisc are this package's INTERPRETATION.
// disc is the normalised, recency-weighted average (a time-decayed mean that stays in the scale of
// the samples). wdisc keeps the discount weights un-normalised, so it additionally shrinks towards 0
// when samples are old or sparse: it is disc times the mean weight (1/n) sum_k w_k, which carries how
// fresh the information is — a distinct signal from disc, which is why we read "weighted" this way.
// (Another defensible reading, weighting by value, sum w v^2 / sum w v, is not implemented.) The
// unit u is the paper's unspecified time step of t'-t; pass the agent's control period or
// time.Second.
//
// Reduce of an empty reducer writes 5 zeros. Add and Reduce do not allocate; Reduce is O(n) expected
// (the percentile uses selection on a scratch buffer owned by the reducer). Not safe for concurrent
// use.
type SampleReducer struct {
	at      []time.Duration // ring of timestamps
	v       []float64       // ring of values
	scratch []float64       // selection buffer for the percentile
	next    int             // ring position of the next Add
	n       int             // number of samples held, <= len(v)
	gamma   float64         // discount factor per unit of time
}

// NewSampleReducer returns an empty reducer that keeps the last capacity samples (capacity >= 1)
// with the discount factor DefaultDiscount.
func NewSampleReducer(capacity int) *SampleReducer {
	if capacity < 1 {
		panic(fmt.Sprintf("metrics: NewSampleReducer capacity %d: must be >= 1", capacity))
	}
	return &SampleReducer{
		at:      make([]time.Duration, capacity),
		v:       make([]float64, capacity),
		scratch: make([]float64, capacity),
		gamma:   DefaultDiscount,
	}
}

// SetDiscount sets the discount factor gamma per unit of time used by Reduce, in (0, 1]
// (1 makes disc equal to mean).
func (r *SampleReducer) SetDiscount(gamma float64) {
	if !(gamma > 0 && gamma <= 1) {
		panic(fmt.Sprintf("metrics: SampleReducer.SetDiscount(%v): must be in (0, 1]", gamma))
	}
	r.gamma = gamma
}

// Capacity returns the number of samples the ring holds at most.
func (r *SampleReducer) Capacity() int { return len(r.v) }

// Len returns the number of samples currently held.
func (r *SampleReducer) Len() int { return r.n }

// Add records sample v taken at time at (time since the start of the run). When the ring is full
// the oldest sample is dropped. NaN is a programmer error and panics. Allocation-free.
func (r *SampleReducer) Add(at time.Duration, v float64) {
	if v != v {
		panic("metrics: SampleReducer.Add of NaN")
	}
	r.at[r.next] = at
	r.v[r.next] = v
	r.next++
	if r.next == len(r.v) {
		r.next = 0
	}
	if r.n < len(r.v) {
		r.n++
	}
}

// Reset drops all samples, keeping the storage and the discount factor.
func (r *SampleReducer) Reset() {
	r.next, r.n = 0, 0
}

// Reduce writes the 5 scalars described on SampleReducer, computed at time now with discount
// time unit unit (> 0), into dst, indexed by ReduceMean .. ReduceWeightedDiscountedMean.
// Allocation-free.
func (r *SampleReducer) Reduce(now time.Duration, unit time.Duration, dst *[5]float64) {
	if unit <= 0 {
		panic(fmt.Sprintf("metrics: SampleReducer.Reduce unit %v: must be > 0", unit))
	}
	n := r.n
	if n == 0 {
		*dst = [5]float64{}
		return
	}
	vs := r.v[:n] // when not full, the samples are r.v[:n]; when full, all of r.v
	ts := r.at[:n]

	// Mean and population standard deviation, two passes.
	var s float64
	tmax := ts[0]
	for k, v := range vs {
		s += v
		if ts[k] > tmax {
			tmax = ts[k]
		}
	}
	mean := s / float64(n)
	var ss float64
	for _, v := range vs {
		d := v - mean
		ss += d * d
	}

	// Discounted sums. With ref = min(now, newest timestamp), w_k = f * r_k where
	// r_k = gamma^(max(ref - t_k, 0)/unit) and f = gamma^((now - ref)/unit). Some r_k is 1, so
	// sum r >= 1 never underflows; f cancels in disc and is applied to wdisc.
	ref := min(now, tmax)
	c := math.Log(r.gamma) / float64(unit) // per nanosecond
	var sw, swv float64
	for k, v := range vs {
		w := 1.0
		if age := ref - ts[k]; age > 0 {
			w = math.Exp(c * float64(age))
		}
		sw += w
		swv += w * v
	}
	f := math.Exp(c * float64(now-ref))

	dst[ReduceMean] = mean
	dst[ReduceP90] = r.percentile(0.9)
	dst[ReduceStdDev] = math.Sqrt(ss / float64(n))
	dst[ReduceDiscountedMean] = swv / sw
	dst[ReduceWeightedDiscountedMean] = f * swv / float64(n)
}

// percentile returns the p-quantile of the held samples with linear interpolation (numpy's default
// method), using the scratch buffer.
func (r *SampleReducer) percentile(p float64) float64 {
	n := r.n
	a := r.scratch[:n]
	copy(a, r.v[:n])
	h := p * float64(n-1)
	lo := int(h)
	x := selectKth(a, lo)
	frac := h - float64(lo)
	if frac == 0 || lo+1 >= n {
		return x
	}
	// After selection every element after position lo is >= x; the next order statistic is their
	// minimum.
	y := a[lo+1]
	for _, v := range a[lo+2:] {
		if v < y {
			y = v
		}
	}
	return x + frac*(y-x)
}

// selectKth reorders a so that a[k] is the k-th smallest (0-based) element, every element before it
// is <= a[k] and every element after it is >= a[k], and returns a[k]. Hoare partition with a
// median-of-three pivot; O(len(a)) expected.
func selectKth(a []float64, k int) float64 {
	lo, hi := 0, len(a)-1
	for hi > lo {
		mid := lo + (hi-lo)/2
		if a[mid] < a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi] < a[lo] {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if a[hi] < a[mid] {
			a[hi], a[mid] = a[mid], a[hi]
		}
		p := a[mid]
		i, j := lo, hi
		for i <= j {
			for a[i] < p {
				i++
			}
			for a[j] > p {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return a[k]
		}
	}
	return a[k]
}
