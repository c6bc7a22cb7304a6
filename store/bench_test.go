package store

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkRecord measures the write rate, one run of a two-class scenario
// (46 statistics) per Record, on each back end:
//
//	go test ./store -bench Record -benchmem -run '^$'
func BenchmarkRecord(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			s, ctx := open(b, be.dsn(b)), context.Background()
			r := benchRun()
			n := 0
			for b.Loop() {
				r.ID, r.Key = "", ""
				if err := s.Record(ctx, r); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "runs/s")
		})
	}
}

// benchRun is a run with the statistics `shoal sim` has: 20 for the whole
// run, 13 for each of two classes.
func benchRun() *Run {
	r := sample(0)
	r.Summary = map[string]Stat{}
	for i := range 20 {
		r.Summary[fmt.Sprintf("stat%d", i)] = Stat{Mean: float64(i), CI95: 0.1}
	}
	for c := range r.Classes {
		r.Classes[c].Stats = map[string]Stat{}
		for i := range 13 {
			r.Classes[c].Stats[fmt.Sprintf("stat%d", i)] = Stat{Mean: float64(i), CI95: 0.1}
		}
	}
	return r
}
