package workload

import (
	"testing"
	"time"
)

func benchNext(b *testing.B, p Process) {
	b.Helper()
	rng := newRNG(1)
	var prev time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		at, ok := p.Next(prev, rng)
		if !ok {
			b.Fatal("process ended")
		}
		prev = at
	}
}

func BenchmarkPoissonNext(b *testing.B) {
	p, _ := NewPoisson(1000)
	benchNext(b, p)
}

func BenchmarkMMPPNext(b *testing.B) {
	m, _ := NewMMPPDwell([]float64{5, 50}, []time.Duration{4 * time.Second, time.Second})
	benchNext(b, m)
}

func BenchmarkDiurnalNext(b *testing.B) {
	d, _ := NewDiurnal(100, 0.8, 24*time.Hour, 14*time.Hour)
	benchNext(b, d)
}

// BenchmarkSeriesReplayNext replays the NASA per-second series (1 s buckets, about 0.7 req/s,
// zero runs up to a day and a half) looping at its own rate.
func BenchmarkSeriesReplayNext(b *testing.B) {
	tr, err := NewTraces("").Load(FormatNASA, "")
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewSeriesReplay(tr.NASA, ReplayOptions{Loop: true})
	if err != nil {
		b.Fatal(err)
	}
	benchNext(b, r)
}

// BenchmarkSeriesReplayNextDense replays a 1 s series at 100 req/s (many arrivals per bucket).
func BenchmarkSeriesReplayNextDense(b *testing.B) {
	tr, err := NewTraces("").Load(FormatNASA, "")
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewSeriesReplay(tr.NASA, ReplayOptions{Loop: true, TargetRate: 100})
	if err != nil {
		b.Fatal(err)
	}
	benchNext(b, r)
}

func BenchmarkInstantReplayNext(b *testing.B) {
	tr, err := NewTraces("").Load(FormatAzureLLM, "")
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewInstantReplay(tr.Requests.At, ReplayOptions{Loop: true})
	if err != nil {
		b.Fatal(err)
	}
	benchNext(b, r)
}

func BenchmarkDistSample(b *testing.B) {
	e, _ := NewExponential(0.01)
	l, _ := NewLogNormal(0.01, 2)
	d, _ := NewDeterministic(0.01)
	u, _ := NewUniform(0.005, 0.015)
	p, _ := NewBoundedPareto(1.5, 0.001, 1)
	em, _ := NewEmpirical([]float64{1, 2, 3, 5, 8, 13, 21}, false)
	ei, _ := NewEmpirical([]float64{1, 2, 3, 5, 8, 13, 21}, true)
	for _, c := range []struct {
		name string
		d    Dist
	}{{"exp", e}, {"lognormal", l}, {"det", d}, {"uniform", u}, {"pareto", p}, {"empirical", em}, {"empirical-interp", ei}} {
		b.Run(c.name, func(b *testing.B) {
			rng := newRNG(1)
			b.ReportAllocs()
			s := 0.0
			for b.Loop() {
				s += c.d.Sample(rng)
			}
			if s < 0 {
				b.Fatal(s)
			}
		})
	}
}

func BenchmarkReadNASA(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		f, err := OpenEmbedded(FormatNASA)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ReadNASA(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}
