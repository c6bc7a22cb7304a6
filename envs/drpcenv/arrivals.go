package drpcenv

import (
	"fmt"
	"math/rand/v2"
	"slices"
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

// Traffic is one training episode's arrivals: Total for every source,
// the scenario's mix kept, or, when Sources is set, each source's own
// process (a mix that shifts).
type Traffic struct {
	Total   workload.ProcessSpec
	Sources []workload.ProcessSpec
}

// The Alibaba trace as trainticket-alibaba replays it: CPU utilisation x
// 12 req/s per % (1.2 after the 10x compression), ten trace minutes a
// minute. Training draws from the first half; the second half is for
// evaluation, and the frontier study's validation segment (trace minutes
// 1200-1400) is avoided, with a margin, by the default training draw.
const (
	traceHalf    = 2500 * time.Minute
	traceSpeedup = 10
	traceScale   = 1.2
)

// traceValidation is the frontier study's validation segment with 100
// trace minutes either side.
var traceValidation = [2]time.Duration{1100 * time.Minute, 1500 * time.Minute}

// AlibabaFirstHalf draws episodes of simulated length d from the first half
// of the Alibaba trace, the four user types' shares kept: a window starting
// at a random trace minute in 0 to 2500 - 10d that overlaps none of the
// avoid spans (trace time).
func AlibabaFirstHalf(d time.Duration, avoid ...[2]time.Duration) func(rng *rand.Rand) workload.ProcessSpec {
	span := traceSpeedup * d
	return func(rng *rand.Rand) workload.ProcessSpec {
		var start time.Duration
		for ok := false; !ok; {
			start = time.Duration(rng.Int64N(int64(traceHalf-span)/int64(time.Minute))) * time.Minute
			ok = !slices.ContainsFunc(avoid, func(a [2]time.Duration) bool { return start < a[1] && start+span > a[0] })
		}
		return workload.ProcessSpec{Kind: workload.KindTrace, Trace: "alibaba", Column: "cpu_util_percent",
			Start: start, Window: span, Speedup: traceSpeedup, Scale: traceScale}
	}
}

// Totals is arrivals for every source, the scenario's mix kept, from f.
func Totals(f func(*rand.Rand) workload.ProcessSpec) func(*rand.Rand) Traffic {
	return func(rng *rand.Rand) Traffic { return Traffic{Total: f(rng)} }
}

// Training draws training workloads for episodes of the given length:
// with probability traces a window of the Alibaba trace's first half (its
// slow swings at trainticket-alibaba's rate, 177-923 req/s) away from the
// validation segment, with probability mixes a shift of the request mix
// (MixShift), and otherwise Surges. Evaluation workloads (the trace's
// second half, the frontier study's mix shifts) are never drawn.
func Training(sc *scenario.Scenario, episode time.Duration, traces, mixes float64) func(*rand.Rand) Traffic {
	surges, trace := Surges(sc), AlibabaFirstHalf(episode, traceValidation)
	if traces+mixes == 0 {
		return Totals(surges) // no draw for the choice: the same episodes as before there was one
	}
	return func(rng *rand.Rand) Traffic {
		switch u := rng.Float64(); {
		case u < traces:
			return Traffic{Total: trace(rng)}
		case u < traces+mixes:
			return MixShift(sc, episode, rng)
		}
		return Traffic{Total: surges(rng)}
	}
}

// heldOutShifts are the mix shifts of the frontier study's workloads
// (experiment drpc pareto's mixshift and mixshift-validation): the class
// that rises and the one that falls. Training never draws them.
var heldOutShifts = [][2]string{{"cancel", "query"}, {"admin", "buy"}}

// MixShift draws a shift of the scenario's request mix over length, in
// four equal steps: at a total rate between 0.75 and 1.5 times the base
// rate, one class gains between 10 and 25 points of the total from another
// (less if that one has fewer), step by step; the other classes keep their
// shares. The pairs the frontier study evaluates on are never drawn.
func MixShift(sc *scenario.Scenario, length time.Duration, rng *rand.Rand) Traffic {
	shares := make([]float64, len(sc.Sources))
	base := baseRate(sc)
	for i, src := range sc.Sources {
		shares[i] = src.Arrivals.Rate / base
	}
	var up, down int
	for {
		up, down = rng.IntN(len(shares)), rng.IntN(len(shares))
		pair := [2]string{sc.Sources[up].Class, sc.Sources[down].Class}
		if up != down && !slices.Contains(heldOutShifts, pair) {
			break
		}
	}
	shift := min(0.1+0.15*rng.Float64(), 0.8*shares[down])
	total := base * (0.75 + 0.75*rng.Float64())
	tr := Traffic{Sources: make([]workload.ProcessSpec, len(shares))}
	for i := range shares {
		rates := make([]float64, 4)
		for k := range rates {
			sh := shares[i]
			switch i {
			case up:
				sh += shift * float64(k) / 3
			case down:
				sh -= shift * float64(k) / 3
			}
			rates[k] = total * sh
		}
		tr.Sources[i] = workload.ProcessSpec{Kind: workload.KindSeries, Step: length / 4, Rates: rates}
	}
	return tr
}

// apply sets the scenario's arrivals to the traffic.
func (tr Traffic) apply(sc *scenario.Scenario) error {
	if tr.Sources == nil {
		return sc.SetArrivals(tr.Total)
	}
	if len(tr.Sources) != len(sc.Sources) {
		return fmt.Errorf("%d sources' arrivals for %d sources", len(tr.Sources), len(sc.Sources))
	}
	for i, a := range tr.Sources {
		if err := a.Validate(""); err != nil {
			return err
		}
		sc.Sources[i].Arrivals = a
	}
	return nil
}
