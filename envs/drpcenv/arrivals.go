package drpcenv

import (
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/workload"
)

// baseRate is the scenario's total request rate (its sources' rates).
func baseRate(sc *scenario.Scenario) float64 {
	r := 0.0
	for _, s := range sc.Sources {
		r += s.Arrivals.Rate
	}
	if r <= 0 {
		r = 100
	}
	return r
}

// Surge is DRPC's motivating workload (section III, Fig. 1) at the
// scenario's rate: two minutes at the base rate, then factor times it
// within one minute, held to the end (rates per 10 s).
func Surge(sc *scenario.Scenario, factor float64) workload.ProcessSpec {
	base := baseRate(sc)
	var rates []float64
	for range 12 {
		rates = append(rates, base)
	}
	for k := 1; k <= 6; k++ {
		rates = append(rates, base*(1+(factor-1)*float64(k)/6))
	}
	for range 42 {
		rates = append(rates, base*factor)
	}
	return workload.ProcessSpec{Kind: workload.KindSeries, Step: 10 * time.Second, Rates: rates}
}

// Surges draws training workloads around the scenario's rate: in a
// quarter of the episodes a steady rate between half and one and a half
// times the base rate (a quiet service, where growing anything is waste);
// otherwise a random walk in 30 s steps between half and five times the
// base rate, with a surge to two to four times the current rate within a
// minute in half of them, so the teacher sees calm periods, drifts and
// DRPC's sudden surges. Evaluation workloads (the paper's trace, the
// surge, a steady load for an evaluation seed) are never drawn from it.
func Surges(sc *scenario.Scenario) func(rng *rand.Rand) workload.ProcessSpec {
	base := baseRate(sc)
	return func(rng *rand.Rand) workload.ProcessSpec {
		if rng.Float64() < 0.25 {
			return workload.ProcessSpec{Kind: workload.KindPoisson, Rate: base * (0.5 + rng.Float64())}
		}
		const steps = 40 // 20 minutes of 30 s steps: longer than an episode
		rate := base * (0.75 + 0.75*rng.Float64())
		surgeAt, factor := -1, 1.0
		if rng.Float64() < 0.5 {
			surgeAt, factor = 2+rng.IntN(12), 2+2*rng.Float64()
		}
		rates := make([]float64, 0, steps)
		for k := range steps {
			if k == surgeAt || k == surgeAt+1 {
				rate *= 1 + (factor-1)/2
			} else {
				rate *= 1 + 0.2*(rng.Float64()-0.5)
			}
			rate = min(max(rate, base/2), 5*base)
			rates = append(rates, rate)
		}
		return workload.ProcessSpec{Kind: workload.KindSeries, Step: 30 * time.Second, Rates: rates}
	}
}
