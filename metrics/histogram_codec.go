package metrics

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// RecordDuration records d in seconds (d.Seconds()), the unit of latency histograms.
func (h *Histogram) RecordDuration(d time.Duration) { h.Record(d.Seconds()) }

// Bucket is one non-empty bucket of a Histogram: Count values v with Lo <= v < Hi (unit of the
// recorded values). The first bucket of the layout reports Lo = 0 and the last Hi = +Inf, since
// values outside the range are clamped into them.
type Bucket struct {
	Lo, Hi float64
	Count  int64
}

// Buckets appends the non-empty buckets of h to dst[:0] in increasing order and returns the
// result (for exporters, e.g. Prometheus cumulative "le" buckets at Hi).
func (h *Histogram) Buckets(dst []Bucket) []Bucket {
	dst = dst[:0]
	for o := 0; o < numOctaves; o++ {
		if h.octCount[o] == 0 {
			continue
		}
		for s, n := range h.counts[o<<subBits : (o+1)<<subBits] {
			if n == 0 {
				continue
			}
			i := o<<subBits | s
			b := Bucket{Lo: bucketLow(i), Hi: bucketHigh(i), Count: n}
			if i == 0 {
				b.Lo = 0
			}
			if i == numBuckets-1 {
				b.Hi = math.Inf(1)
			}
			dst = append(dst, b)
		}
	}
	return dst
}

// histogramSchema names the bucket layout in encoded histograms; decoding rejects other layouts.
const histogramSchema = "shoal.histogram.log2x128.v1"

// histogramJSON is the encoded form: exact count, sum, min and max, and the non-empty buckets as
// [bucket index, count] pairs. Bucket index i covers
// [2^(i/128 - 20) * (1 + (i%128)/128), 2^(i/128 - 20) * (1 + (i%128 + 1)/128)).
type histogramJSON struct {
	Schema  string     `json:"schema"`
	Count   int64      `json:"count"`
	Sum     float64    `json:"sum"`
	Min     float64    `json:"min"`
	Max     float64    `json:"max"`
	Buckets [][2]int64 `json:"buckets"`
}

// MarshalJSON encodes h exactly (a decoded histogram equals h). It fails if Sum or Max is not
// finite (+Inf was recorded), which JSON cannot represent.
func (h *Histogram) MarshalJSON() ([]byte, error) {
	e := histogramJSON{Schema: histogramSchema, Count: h.count, Sum: h.sum, Min: h.min, Max: h.max, Buckets: [][2]int64{}}
	for o := 0; o < numOctaves; o++ {
		if h.octCount[o] == 0 {
			continue
		}
		for s, n := range h.counts[o<<subBits : (o+1)<<subBits] {
			if n != 0 {
				e.Buckets = append(e.Buckets, [2]int64{int64(o<<subBits | s), n})
			}
		}
	}
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encoding histogram: %w", err)
	}
	return b, nil
}

// UnmarshalJSON decodes a histogram written by MarshalJSON into h, replacing its contents. It
// checks the encoding's consistency (schema, bucket indexes in range and increasing, positive
// counts adding up to count, 0 <= min <= max, min/max inside their buckets, and
// count*min <= sum <= count*max up to rounding).
func (h *Histogram) UnmarshalJSON(data []byte) error {
	var e histogramJSON
	if err := json.Unmarshal(data, &e); err != nil {
		return fmt.Errorf("decoding histogram: %w", err)
	}
	if e.Schema != histogramSchema {
		return fmt.Errorf("decoding histogram: schema %q, want %q", e.Schema, histogramSchema)
	}
	if e.Count < 0 {
		return fmt.Errorf("decoding histogram: count %d < 0", e.Count)
	}
	var total int64
	prev := -1
	for k, b := range e.Buckets {
		i, n := b[0], b[1]
		if i < 0 || i >= numBuckets {
			return fmt.Errorf("decoding histogram: buckets[%d]: index %d outside [0, %d)", k, i, numBuckets)
		}
		if int(i) <= prev {
			return fmt.Errorf("decoding histogram: buckets[%d]: index %d not increasing", k, i)
		}
		if n <= 0 {
			return fmt.Errorf("decoding histogram: buckets[%d]: count %d <= 0", k, n)
		}
		if total > math.MaxInt64-n {
			return errors.New("decoding histogram: bucket counts overflow")
		}
		total += n
		prev = int(i)
	}
	if total != e.Count {
		return fmt.Errorf("decoding histogram: bucket counts add up to %d, count is %d", total, e.Count)
	}
	if e.Count == 0 {
		if e.Sum != 0 || e.Min != 0 || e.Max != 0 {
			return errors.New("decoding histogram: empty histogram with non-zero sum, min or max")
		}
	} else {
		if !(e.Min >= 0 && e.Min <= e.Max) {
			return fmt.Errorf("decoding histogram: min %g, max %g: want 0 <= min <= max", e.Min, e.Max)
		}
		if n := float64(e.Count); !(e.Sum >= n*e.Min*(1-1e-9) && e.Sum <= n*e.Max*(1+1e-9)) {
			return fmt.Errorf("decoding histogram: sum %g outside [count*min, count*max]", e.Sum)
		}
		if first := int(e.Buckets[0][0]); bucketIndex(e.Min) != first {
			return fmt.Errorf("decoding histogram: min %g is not in the first bucket %d", e.Min, first)
		}
		if last := int(e.Buckets[len(e.Buckets)-1][0]); bucketIndex(e.Max) != last {
			return fmt.Errorf("decoding histogram: max %g is not in the last bucket %d", e.Max, last)
		}
	}
	h.Reset()
	for _, b := range e.Buckets {
		i := int(b[0])
		h.counts[i] = b[1]
		h.octCount[i>>subBits] += b[1]
	}
	h.count, h.sum, h.min, h.max = e.Count, e.Sum, e.Min, e.Max
	return nil
}
