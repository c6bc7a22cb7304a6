package workload

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// TestCountCalibration checks that the arrival counts of every process over a
// horizon have the closed-form mean AND variance, over many seeds: the standardised counts
// z = (N − E N)/sd N must have mean ≈ 0 and variance ≈ 1. A process that got the rate right but
// the randomness wrong (e.g. a non-exact NHPP, a biased MMPP start) fails the variance check.
//
// It uses 200 seeds by default and 4000 (tolerances 4.5× tighter) in the long reference run:
//
//	SHOAL_LONG=1 go test -run TestCountCalibration -v ./workload
func TestCountCalibration(t *testing.T) {
	seeds := 200.0
	if os.Getenv("SHOAL_LONG") != "" {
		seeds = 4000
	}
	nasa := loadEmbedded(t, sharedTraces, FormatNASA).NASA
	type tc struct {
		name     string
		build    func() Process
		horizon  time.Duration
		mean, sd float64
	}
	var cases []tc
	{
		T := 2000.0
		cases = append(cases, tc{"poisson", func() Process { p, _ := NewPoisson(30); return p }, time.Duration(T * 1e9), 30 * T, math.Sqrt(30 * T)})
	}
	{
		l1, l2, d1, d2 := 5.0, 50.0, 4*time.Second, time.Second
		T := 3000.0
		m := 0.8*l1 + 0.2*l2
		cases = append(cases, tc{"mmpp", func() Process {
			p, _ := NewMMPPDwell([]float64{l1, l2}, []time.Duration{d1, d2})
			return p
		}, time.Duration(T * 1e9), m * T, math.Sqrt(twoStateIDC(l1, l2, 0.25, 1, T) * m * T)})
	}
	{
		T := 1234.0 // not a whole number of periods
		L := diurnalIntegral(20, 0.9, 300, 40, 0, T)
		cases = append(cases, tc{"diurnal", func() Process { p, _ := NewDiurnal(20, 0.9, 300*time.Second, 40*time.Second); return p }, time.Duration(T * 1e9), L, math.Sqrt(L)})
	}
	{
		// Two days of NASA from day 10, 600× compressed (288 s simulated), at its own rate ×600.
		o := ReplayOptions{Start: 10 * 24 * time.Hour, Window: 48 * time.Hour, Speedup: 600}
		L := 0.0
		for _, v := range nasa.Values[10*86400 : 12*86400] {
			L += v
		}
		cases = append(cases, tc{"nasa-series", func() Process { p, _ := NewSeriesReplay(nasa, o); return p }, time.Hour, L, math.Sqrt(L)})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var sz, sz2 float64
			master := newRNG(2024) // independent per-seed streams drawn from one master stream
			for range int(seeds) {
				p := c.build()
				rng := rand.New(rand.NewPCG(master.Uint64(), master.Uint64()))
				n := 0
				for at, ok := p.Next(0, rng); ok && at < c.horizon; at, ok = p.Next(at, rng) {
					n++
				}
				z := (float64(n) - c.mean) / c.sd
				sz += z
				sz2 += z * z
			}
			mz := sz / seeds
			vz := sz2/seeds - mz*mz
			t.Logf("%s: E N = %.0f, sd %.1f; standardised counts over %.0f seeds: mean %.3f, variance %.3f", c.name, c.mean, c.sd, seeds, mz, vz)
			if math.Abs(mz) > 4/math.Sqrt(seeds) {
				t.Errorf("mean of z = %.3f, want 0 ± %.3f", mz, 4/math.Sqrt(seeds))
			}
			// The sample variance of n normals has sd ≈ sqrt(2/n); allow 4 of them.
			if math.Abs(vz-1) > 4*math.Sqrt(2.0/seeds) {
				t.Errorf("variance of z = %.3f, want 1 ± %.3f", vz, 4*math.Sqrt(2.0/seeds))
			}
		})
	}
}
