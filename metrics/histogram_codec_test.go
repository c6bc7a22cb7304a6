package metrics

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestHistogramJSONRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	var h Histogram
	for range 10000 {
		h.Record(math.Exp(rng.NormFloat64()*4 - 3))
	}
	h.Record(0)
	h.Record(3e7)
	b, err := json.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	var g Histogram
	g.Record(5) // replaced
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	sameHistogram(t, &g, &h)
	if g.Sum() != h.Sum() {
		t.Fatalf("sum not exact: %.17g vs %.17g", g.Sum(), h.Sum())
	}
	var empty, e2 Histogram
	b, err = json.Marshal(&empty)
	if err != nil || string(b) != `{"schema":"shoal.histogram.log2x128.v1","count":0,"sum":0,"min":0,"max":0,"buckets":[]}` {
		t.Fatalf("empty: %s, %v", b, err)
	}
	if err := json.Unmarshal(b, &e2); err != nil || e2.Count() != 0 {
		t.Fatalf("empty round trip: %v", err)
	}
	var inf Histogram
	inf.Record(math.Inf(1))
	if _, err := json.Marshal(&inf); err == nil {
		t.Errorf("marshal of +Inf max should fail")
	}
}

func TestHistogramJSONErrors(t *testing.T) {
	const s = `"schema":"shoal.histogram.log2x128.v1"`
	cases := []struct{ in, want string }{
		{`{"schema":"other","count":0,"sum":0,"min":0,"max":0,"buckets":[]}`, "schema"},
		{`{` + s + `,"count":2,"sum":2,"min":1,"max":1,"buckets":[[2560,1]]}`, "add up to 1, count is 2"},
		{`{` + s + `,"count":1,"sum":1,"min":1,"max":1,"buckets":[[5120,1]]}`, "outside"},
		{`{` + s + `,"count":2,"sum":2,"min":1,"max":1,"buckets":[[2560,1],[2560,1]]}`, "not increasing"},
		{`{` + s + `,"count":0,"sum":0,"min":0,"max":0,"buckets":[[2560,0]]}`, "count 0 <= 0"},
		{`{` + s + `,"count":1,"sum":1,"min":2,"max":1,"buckets":[[2560,1]]}`, "min <= max"},
		{`{` + s + `,"count":1,"sum":3,"min":3,"max":3,"buckets":[[2560,1]]}`, "not in the first bucket"},
		{`{` + s + `,"count":0,"sum":1,"min":0,"max":0,"buckets":[]}`, "non-zero"},
		{`{` + s + `,"count":-1}`, "count -1"},
		{`{` + s + `,"count":2,"sum":5,"min":1,"max":1,"buckets":[[2560,2]]}`, "sum 5 outside"},
		{`[1,2]`, "decoding histogram"},
	}
	for _, c := range cases {
		var h Histogram
		err := json.Unmarshal([]byte(c.in), &h)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want containing %q", c.in, err, c.want)
		}
	}
}

func FuzzHistogramJSON(f *testing.F) {
	var h Histogram
	for _, v := range []float64{0, 1e-3, 0.02, 0.02, 7, 2e6} {
		h.Record(v)
	}
	b, _ := json.Marshal(&h)
	f.Add(b)
	f.Add([]byte(`{"schema":"shoal.histogram.log2x128.v1","count":1,"sum":1,"min":1,"max":1,"buckets":[[2560,1]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var h Histogram
		if err := json.Unmarshal(data, &h); err != nil {
			return
		}
		// Anything accepted is a consistent histogram: quantiles are ordered and inside [Min, Max],
		// and it round-trips.
		prev := h.Quantile(0)
		for q := 0.05; q <= 1; q += 0.05 {
			v := h.Quantile(q)
			if v < prev || v < h.Min() || v > h.Max() {
				t.Fatalf("Quantile(%g) = %g after %g, range [%g, %g]", q, v, prev, h.Min(), h.Max())
			}
			prev = v
		}
		out, err := json.Marshal(&h)
		if err != nil {
			return // e.g. huge sums that overflow to Inf are not encodable
		}
		var g Histogram
		if err := json.Unmarshal(out, &g); err != nil {
			t.Fatalf("re-decoding %s: %v", out, err)
		}
		sameHistogram(t, &g, &h)
	})
}

func TestBucketsAndRecordDuration(t *testing.T) {
	var h Histogram
	h.RecordDuration(1500 * time.Millisecond)
	h.RecordDuration(1500 * time.Millisecond)
	h.Record(0)
	h.Record(1e9)
	bs := h.Buckets(nil)
	if len(bs) != 3 {
		t.Fatalf("Buckets = %+v", bs)
	}
	if bs[0].Lo != 0 || bs[0].Count != 1 || bs[2].Hi != math.Inf(1) || bs[2].Count != 1 {
		t.Errorf("end buckets = %+v, %+v", bs[0], bs[2])
	}
	if b := bs[1]; !(b.Lo <= 1.5 && 1.5 < b.Hi) || b.Count != 2 || (b.Hi-b.Lo)/b.Lo > 0.01 {
		t.Errorf("middle bucket %+v", b)
	}
	if h.Sum() != 3+1e9 {
		t.Errorf("Sum = %g", h.Sum())
	}
}
