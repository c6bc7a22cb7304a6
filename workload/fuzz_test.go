package workload

import (
	"bytes"
	"math"
	"slices"
	"testing"
	"time"
)

// The fuzz targets check that readers never panic, and that what they accept is well formed.

func FuzzReadNASA(f *testing.F) {
	f.Add([]byte("1 0 0 2 20 3\n"))
	f.Add([]byte("0"))
	f.Add(gz([]byte("1 2 3")))
	f.Add([]byte("1 2\n3 x"))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := ReadNASA(bytes.NewReader(in))
		if err != nil {
			return
		}
		if s.Len() == 0 || s.Step != time.Second {
			t.Fatalf("accepted an empty series or bad step: %+v", s)
		}
		for _, v := range s.Values {
			if !(v >= 0) || v != math.Trunc(v) {
				t.Fatalf("accepted count %v", v)
			}
		}
	})
}

func FuzzReadWikipedia(f *testing.F) {
	f.Add([]byte("timestamp count_req sum_req\n3600 5 100\n0 4 90.5\n"))
	f.Add([]byte("timestamp sum_req\n0 1e6\n"))
	f.Add(gz([]byte("timestamp sum_req\n0 1\n3600 2\n")))
	f.Add([]byte("timestamp sum_req\n0 1\n0 2\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err := ReadWikipedia(bytes.NewReader(in))
		if err != nil {
			return
		}
		if len(h) == 0 {
			t.Fatal("accepted no rows")
		}
		for i := range h {
			if i > 0 && h[i].Unix != h[i-1].Unix+3600 {
				t.Fatalf("accepted non-consecutive hours %d, %d", h[i-1].Unix, h[i].Unix)
			}
			if !(h[i].SumReq >= 0) || math.IsInf(h[i].SumReq, 0) {
				t.Fatalf("accepted sum_req %v", h[i].SumReq)
			}
		}
	})
}

func FuzzReadAlibaba(f *testing.F) {
	f.Add([]byte("cpu_util_percent,mem_util_percent\n16.1,87\n17,86.9\n"))
	f.Add(gz([]byte("a\n1\n")))
	f.Add([]byte("a,b\n1\n"))
	f.Add([]byte("a,\"b\n1,2\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		u, err := ReadAlibaba(bytes.NewReader(in))
		if err != nil {
			return
		}
		if u.Len() == 0 || len(u.Columns) != len(u.Names) {
			t.Fatalf("accepted a malformed table: %d rows, %d columns, %d names", u.Len(), len(u.Columns), len(u.Names))
		}
		for j, c := range u.Columns {
			if len(c) != u.Len() {
				t.Fatalf("column %d has %d rows, want %d", j, len(c), u.Len())
			}
			for _, v := range c {
				if !(v >= 0) || math.IsInf(v, 0) {
					t.Fatalf("accepted value %v", v)
				}
			}
		}
	})
}

func FuzzReadAzureLLM(f *testing.F) {
	f.Add([]byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n"))
	f.Add([]byte("GeneratedTokens,TIMESTAMP,ContextTokens\n1,2023-11-16 18:15:46,2\n"))
	f.Add(gz([]byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,1,1\n")))
	f.Add([]byte("TIMESTAMP,ContextTokens,GeneratedTokens\n0001-01-01 00:00:00,1,1\n9999-12-31 23:59:59,1,1\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := ReadAzureLLM(bytes.NewReader(in))
		if err != nil {
			return
		}
		if r.Len() == 0 || len(r.Context) != r.Len() || len(r.Generated) != r.Len() || r.At[0] != 0 {
			t.Fatalf("accepted a malformed trace: %+v", r)
		}
		if !slices.IsSorted(r.At) {
			t.Fatal("instants not sorted")
		}
		// Replay needs a span below ~73 years (a quarter of time.Duration's range, for looping).
		if _, err := NewInstantReplay(r.At, ReplayOptions{}); err != nil && r.Span() > 0 && r.Span() < 50*365*24*time.Hour {
			t.Fatalf("accepted trace cannot be replayed: %v", err)
		}
	})
}

// FuzzReadTrace exercises format detection and every reader through one entry point.
func FuzzReadTrace(f *testing.F) {
	f.Add([]byte("1 2 3"))
	f.Add([]byte("timestamp sum_req\n0 1\n"))
	f.Add([]byte("cpu_util_percent\n1\n"))
	f.Add([]byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		tr, err := ReadTrace(bytes.NewReader(in), "")
		if err != nil {
			return
		}
		tr.Ref = "fuzz"
		// Any accepted series trace can be replayed (or says why not) without panicking.
		if s, err := tr.Series("", time.Second); err == nil {
			if p, err := NewSeriesReplay(s, ReplayOptions{TargetRate: 1, Loop: true}); err == nil {
				rng := newRNG(1)
				var prev time.Duration
				for range 10 {
					at, ok := p.Next(prev, rng)
					if !ok {
						break
					}
					if at < prev {
						t.Fatalf("arrival %v before %v", at, prev)
					}
					prev = at
				}
			}
		}
	})
}

// FuzzProcessSpec decodes a spec strictly; whatever validates must build (or fail cleanly) and
// produce non-decreasing arrivals without panicking or hanging.
func FuzzProcessSpec(f *testing.F) {
	for _, s := range []string{
		"{kind: poisson, rate: 50}",
		"{kind: diurnal, rate: 5, amplitude: 1, period: 1ns}",
		"{kind: mmpp, states: [{rate: 0, dwell: 1ns}, {rate: 1e300, dwell: 1000h}]}",
		"{kind: mmpp, rate: 3, states: [{rate: 1}, {rate: 0}], generator: [[0, 1e-300], [5, 0]]}",
		"{kind: trace, trace: wikipedia, speedup: 1e300, loop: true}",
		"{kind: trace, trace: azure-llm, rate: 1e-300, loop: true}",
		"{kind: trace, trace: alibaba, scale: 1e-9, start: 1h, window: 1s, bin: 1m}",
		"{kind: series, step: 1s, rates: [0, 1, 2], loop: true, rate: 5, start: 1s}",
	} {
		f.Add([]byte(s), 0.0)
	}
	f.Fuzz(func(t *testing.T, in []byte, load float64) {
		var s ProcessSpec
		if decodeStrict(in, &s) != nil || s.Validate("p") != nil {
			return
		}
		if s.Kind == KindTrace && s.Trace != FormatWikipedia && s.Trace != FormatAzureLLM && s.Trace != FormatAlibaba {
			return // no file access from the fuzzer; nasa is slow to parse per input
		}
		if s.Bin > 0 && s.Bin < time.Second {
			return // legal but slow: millions of buckets per input
		}
		p, err := s.BuildWith(load, sharedTraces)
		if err != nil {
			return
		}
		if r := p.MeanRate(); !(r > 0) {
			t.Fatalf("built process with mean rate %v", r)
		}
		rng := newRNG(1)
		var prev time.Duration
		for range 50 {
			at, ok := p.Next(prev, rng)
			if !ok {
				return
			}
			if at < prev {
				t.Fatalf("arrival %v before %v", at, prev)
			}
			prev = at
		}
	})
}
