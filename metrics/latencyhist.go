package metrics

import (
	"fmt"
	"math"
)

// Bucket layout of LatencyHist: lhSub equal sub-buckets per power of two from 2^lhMinExp s
// (7.6 µs) to 2^lhMaxExp s (34 min).
const (
	lhSubBits = 4
	lhSub     = 1 << lhSubBits
	lhMinExp  = -17
	lhMaxExp  = 11
	lhBuckets = (lhMaxExp - lhMinExp) * lhSub
)

// LatencyHistRelativeWidth is the largest relative width (hi-lo)/lo of a LatencyHist bucket
// (1/16): a quantile, reported as the middle of its bucket, is within half of it (3.1%) of the
// exact sample quantile inside the range.
const LatencyHistRelativeWidth = 1.0 / lhSub

// LatencyHist is the small latency histogram of per-period telemetry, what a service mesh
// exports per destination service: Istio's istio_request_duration_milliseconds, a Prometheus
// histogram from which histogram_quantile estimates p50 and p95. Its buckets are finer than
// Istio's defaults (0.5, 1, 5, 10, 25, 50, 100, 250, 500 ms, ...): 16 per power of two from
// 7.6 µs to 34 min (values outside fall in the end buckets), in 3.5 KB, so that a snapshot holds
// one per service and per request class and copies it by value.
//
// The zero value is empty. Record, Quantile, Merge and Reset do not allocate.
type LatencyHist struct {
	counts [lhBuckets]int64
}

func lhBucket(v float64) int {
	if !(v >= 1.0/(1<<-lhMinExp)) { // below the range, negative or NaN
		return 0
	}
	b := math.Float64bits(v)
	e := int(b>>52&0x7ff) - 1023
	if e >= lhMaxExp {
		return lhBuckets - 1
	}
	return (e-lhMinExp)<<lhSubBits | int(b>>(52-lhSubBits)&(lhSub-1))
}

// Record adds one latency in seconds (negative and NaN values count as 0).
func (h *LatencyHist) Record(v float64) { h.counts[lhBucket(v)]++ }

// Count is the number of recorded latencies.
func (h *LatencyHist) Count() int64 {
	var n int64
	for _, c := range h.counts {
		n += c
	}
	return n
}

// Quantile estimates the q-quantile (q in [0, 1]) of the recorded latencies: the value of rank
// ceil(q*Count()) (rank 1 for q = 0), reported as the middle of its bucket, in seconds; 0 when
// empty. It panics if q is outside [0, 1].
func (h *LatencyHist) Quantile(q float64) float64 {
	if !(q >= 0 && q <= 1) {
		panic(fmt.Sprintf("metrics: LatencyHist.Quantile(%v): q must be in [0, 1]", q))
	}
	count := h.Count()
	if count == 0 {
		return 0
	}
	rank := max(int64(math.Ceil(q*float64(count)*(1-1e-15))), 1)
	var cum int64
	for i, n := range h.counts {
		if cum += n; cum >= rank {
			o, s := i>>lhSubBits, i&(lhSub-1)
			return math.Ldexp(1+(float64(s)+0.5)/lhSub, o+lhMinExp)
		}
	}
	return 0 // unreachable: the counts add up to count
}

// Merge adds o's latencies to h.
func (h *LatencyHist) Merge(o *LatencyHist) {
	for i, n := range o.counts {
		h.counts[i] += n
	}
}

// Reset empties the histogram.
func (h *LatencyHist) Reset() { *h = LatencyHist{} }
