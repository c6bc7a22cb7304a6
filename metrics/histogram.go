package metrics

import (
	"fmt"
	"math"
)

// Bucket layout of Histogram.
//
// A positive float64 v = 2^e * (1 + f), f in [0, 1). The bucket of v is chosen by e (one "octave" per
// power of two) and by the top subBits bits of the mantissa f, so every octave is split into
// subCount equal-width sub-buckets. The relative width of a bucket, (hi - lo) / lo, is
// 1/(subCount + s) <= 1/128 = 0.78% for sub-bucket s. Octaves cover [2^minExp, 2^maxExp) =
// [9.54e-7, 1.05e6) seconds, which contains the promised 1e-6 .. 1e6 s.
const (
	subBits    = 7
	subCount   = 1 << subBits // sub-buckets per octave
	minExp     = -20          // 2^-20 = 9.54e-7 s
	maxExp     = 20           // 2^20 = 1.05e6 s (exclusive)
	numOctaves = maxExp - minExp
	numBuckets = numOctaves * subCount
)

// HistogramRelativeWidth is the largest relative width (hi-lo)/lo of a Histogram bucket inside its
// range (dimensionless, 1/128). Quantile returns the middle of a bucket, so its relative error against
// the exact sample quantile is at most half of this, about 0.39%.
const HistogramRelativeWidth = 1.0 / subCount

// HistogramLowest and HistogramHighest bound the range of Histogram buckets, in the unit of the
// recorded values (seconds for latencies). Values below HistogramLowest (including 0) are counted in
// the first bucket and values at or above HistogramHighest in the last; Sum, Min and Max stay exact.
const (
	HistogramLowest  = 1.0 / (1 << -minExp) // 2^-20 ≈ 9.54e-7
	HistogramHighest = float64(1 << maxExp) // 2^20 ≈ 1.05e6
)

// Histogram records non-negative values (latencies in seconds, or any other unit the caller keeps
// consistent) in log-linear buckets, HDR-style: each power of two is split into 128 equal
// sub-buckets, so a bucket is at most 1/128 (0.78%) wide relative to its lower bound, over the range
// HistogramLowest .. HistogramHighest (about 1e-6 .. 1e6 s). Values outside the range are counted in
// the end buckets, but Count, Sum, Mean, Min and Max are exact for all values.
//
// The zero value is an empty histogram ready to use. A Histogram is a plain value of about 41 KiB
// (the buckets are stored inline): assigning it copies its contents, and nothing is shared. Record
// is O(1) and never allocates; Quantile, Merge, CopyFrom and Reset touch only the octaves (powers of
// two) that hold values. A Histogram is not safe for concurrent use.
//
// Usage loop of a simulated service: Record every completed request's latency, read Quantile/Mean at
// the end of a control period, Merge per-instance histograms into a per-service one, Reset for the
// next period.
type Histogram struct {
	count int64
	sum   float64
	min   float64
	max   float64
	// octCount[o] is the number of values in octave o; it lets Quantile skip whole octaves.
	octCount [numOctaves]int64
	// counts[o<<subBits | s] is the count of sub-bucket s of octave o.
	counts [numBuckets]int64
}

// bucketIndex maps a value to its bucket in [0, numBuckets). Values below 2^minExp (0, subnormals)
// map to 0, values at or above 2^maxExp (and +Inf) to numBuckets-1.
func bucketIndex(v float64) int {
	b := math.Float64bits(v)
	e := int(b>>52&0x7ff) - 1023
	if e < minExp {
		return 0
	}
	if e >= maxExp {
		return numBuckets - 1
	}
	return (e-minExp)<<subBits | int(b>>(52-subBits)&(subCount-1))
}

// bucketLow returns the inclusive lower bound of bucket i.
func bucketLow(i int) float64 {
	o, s := i>>subBits, i&(subCount-1)
	return math.Ldexp(1+float64(s)/subCount, o+minExp)
}

// bucketHigh returns the exclusive upper bound of bucket i.
func bucketHigh(i int) float64 {
	o, s := i>>subBits, i&(subCount-1)
	return math.Ldexp(1+float64(s+1)/subCount, o+minExp)
}

// Record adds one value. Negative values (e.g. -1e-18 from rounding) are recorded as 0. NaN is a
// programmer error and panics. Record is O(1) and does not allocate.
func (h *Histogram) Record(v float64) {
	if !(v >= 0) {
		if v != v {
			panic("metrics: Histogram.Record of NaN")
		}
		v = 0
	}
	i := bucketIndex(v)
	h.counts[i]++
	h.octCount[i>>subBits]++
	if h.count == 0 {
		h.min, h.max = v, v
	} else if v < h.min {
		h.min = v
	} else if v > h.max {
		h.max = v
	}
	h.count++
	h.sum += v
}

// RecordN adds the value v n times (n >= 0), as n calls of Record would, except that Sum grows by
// v*n in one step.
func (h *Histogram) RecordN(v float64, n int64) {
	if n < 0 {
		panic(fmt.Sprintf("metrics: Histogram.RecordN with negative count %d", n))
	}
	if n == 0 {
		return
	}
	if !(v >= 0) {
		if v != v {
			panic("metrics: Histogram.RecordN of NaN")
		}
		v = 0
	}
	i := bucketIndex(v)
	h.counts[i] += n
	h.octCount[i>>subBits] += n
	if h.count == 0 {
		h.min, h.max = v, v
	} else if v < h.min {
		h.min = v
	} else if v > h.max {
		h.max = v
	}
	h.count += n
	h.sum += v * float64(n)
}

// Count returns the number of recorded values.
func (h *Histogram) Count() int64 { return h.count }

// Sum returns the exact (floating-point) sum of the recorded values, in their unit.
func (h *Histogram) Sum() float64 { return h.sum }

// Mean returns Sum()/Count(), exact up to floating-point rounding (not from buckets); 0 if empty.
func (h *Histogram) Mean() float64 {
	if h.count == 0 {
		return 0
	}
	return h.sum / float64(h.count)
}

// Min returns the smallest recorded value exactly; 0 if empty.
func (h *Histogram) Min() float64 { return h.min }

// Max returns the largest recorded value exactly; 0 if empty.
func (h *Histogram) Max() float64 { return h.max }

// Quantile returns an estimate of the q-quantile (q in [0, 1]) of the recorded values: the value of
// rank ceil(q*Count()) (rank 1 for q = 0) in sorted order, reported as the middle of its bucket and
// clamped to [Min, Max]. (A rank that falls among values clamped into an end bucket is reported
// inside that bucket, or as Min/Max.) Inside the histogram's range the result is within HistogramRelativeWidth/2
// (0.39%) of that exact sample quantile; Quantile(0) == Min() and Quantile(1) == Max() exactly.
// It returns 0 for an empty histogram and panics if q is outside [0, 1] or NaN. Allocation-free,
// O(octaves + sub-buckets).
func (h *Histogram) Quantile(q float64) float64 {
	if !(q >= 0 && q <= 1) {
		panic(fmt.Sprintf("metrics: Histogram.Quantile(%v): q must be in [0, 1]", q))
	}
	if h.count == 0 {
		return 0
	}
	if q == 0 {
		return h.min
	}
	if q == 1 {
		return h.max
	}
	// q*n carries the rounding of q itself (0.07*100 = 7.000000000000001): shrink it by a few ulps
	// so that a decimal q times n lands on the intended rank.
	rank := int64(math.Ceil(q * float64(h.count) * (1 - 1e-15)))
	if rank < 1 {
		rank = 1
	}
	if rank > h.count {
		rank = h.count
	}
	i := h.bucketOfRank(rank)
	return h.clamp(h.bucketValue(i))
}

// bucketOfRank returns the bucket holding the value of 1-based rank r (1 <= r <= count).
func (h *Histogram) bucketOfRank(r int64) int {
	var cum int64
	for o := 0; o < numOctaves; o++ {
		n := h.octCount[o]
		if cum+n < r {
			cum += n
			continue
		}
		for s, n := range h.octave(o) {
			cum += n
			if cum >= r {
				return o<<subBits | s
			}
		}
	}
	return numBuckets - 1 // unreachable when counts are consistent
}

// octave returns the sub-bucket counts of octave o.
func (h *Histogram) octave(o int) *[subCount]int64 {
	return (*[subCount]int64)(h.counts[o<<subBits:])
}

// bucketValue is the representative value of bucket i: its middle.
func (h *Histogram) bucketValue(i int) float64 {
	return 0.5 * (bucketLow(i) + bucketHigh(i))
}

func (h *Histogram) clamp(v float64) float64 {
	if v < h.min {
		return h.min
	}
	if v > h.max {
		return h.max
	}
	return v
}

// Merge adds all values recorded in o to h, as if they had been recorded in h. o is unchanged
// (unless it is h itself: then every count doubles). Allocation-free.
func (h *Histogram) Merge(o *Histogram) {
	if o.count == 0 {
		return
	}
	for k := 0; k < numOctaves; k++ {
		n := o.octCount[k]
		if n == 0 {
			continue
		}
		dst := h.counts[k<<subBits : (k+1)<<subBits]
		src := o.counts[k<<subBits : (k+1)<<subBits]
		for s := range dst {
			dst[s] += src[s]
		}
		h.octCount[k] += n
	}
	if h.count == 0 {
		h.min, h.max = o.min, o.max
	} else {
		h.min = math.Min(h.min, o.min)
		h.max = math.Max(h.max, o.max)
	}
	h.count += o.count
	h.sum += o.sum
}

// CopyFrom makes h an exact copy of o, like *h = *o but touching only the octaves in use, so it is
// cheaper for sparse histograms. Allocation-free.
func (h *Histogram) CopyFrom(o *Histogram) {
	if h == o {
		return
	}
	h.Reset()
	h.Merge(o)
}

// Reset empties the histogram, touching only the octaves in use.
func (h *Histogram) Reset() {
	for k := range h.octCount {
		if h.octCount[k] != 0 {
			clear(h.counts[k<<subBits : (k+1)<<subBits])
			h.octCount[k] = 0
		}
	}
	h.count, h.sum, h.min, h.max = 0, 0, 0, 0
}

// Point is one point of a plotted curve: X in the unit of the recorded values, Y dimensionless.
type Point struct{ X, Y float64 }

// CDF appends to dst[:0] the empirical cumulative distribution function for plotting and returns
// it: one point per non-empty bucket, X = the bucket's upper bound clamped to [Min, Max] (so the
// last X is Max), Y = fraction of values <= X (the bucket's cumulative fraction, up to bucket
// resolution), Y strictly increasing and ending at exactly 1. If there are more non-empty buckets
// than maxPoints > 0, buckets are chosen evenly in bucket order (evenly in log-value) and the last
// is always kept; maxPoints <= 0 means no limit. Returns dst[:0] for an empty histogram.
func (h *Histogram) CDF(dst []Point, maxPoints int) []Point {
	dst = dst[:0]
	if h.count == 0 {
		return dst
	}
	nonEmpty := 0
	for o := 0; o < numOctaves; o++ {
		if h.octCount[o] == 0 {
			continue
		}
		for _, n := range h.octave(o) {
			if n != 0 {
				nonEmpty++
			}
		}
	}
	keepAll := maxPoints <= 0 || nonEmpty <= maxPoints
	total := float64(h.count)
	var cum int64
	k := 0 // index among non-empty buckets
	for o := 0; o < numOctaves; o++ {
		if h.octCount[o] == 0 {
			continue
		}
		for s, n := range h.octave(o) {
			if n == 0 {
				continue
			}
			cum += n
			last := k == nonEmpty-1
			// Keep bucket k if it is the last or if the evenly spaced selection k*maxPoints/nonEmpty
			// steps to a new integer at k.
			keep := keepAll || last || (k+1)*maxPoints/nonEmpty != k*maxPoints/nonEmpty && (k+1)*maxPoints/nonEmpty < maxPoints
			k++
			if !keep {
				continue
			}
			x := h.clamp(bucketHigh(o<<subBits | s))
			y := float64(cum) / total
			if last {
				y = 1
			}
			dst = append(dst, Point{X: x, Y: y})
		}
	}
	return dst
}
