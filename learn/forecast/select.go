package forecast

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Selection is the outcome of Select: the scores of every candidate on the
// validation segment and the chosen one, refitted.
type Selection struct {
	// Best is the index of the chosen candidate.
	Best int
	// ScoreHorizon is the horizon, in periods ahead, at which the
	// candidates were scored: the middle one, (Horizon+1)/2.
	ScoreHorizon int
	// ValidationStart is the first period of the validation segment.
	ValidationStart int
	// MAPE[i] is candidate i's rolling-origin MAPE, in percent, on the
	// validation segment ScoreHorizon periods ahead.
	MAPE []float64
	// Forecaster is candidates[Best] refitted on the whole series.
	Forecaster *GRUForecaster
}

// Select chooses a GRU configuration among candidates using series alone,
// and returns it refitted on the whole of series. Give it the training part
// only: nothing after series enters the choice, so a test segment scored
// afterwards stays unseen.
//
// The last valFraction of series (in (0, 0.5), rounded to whole periods) is
// the validation segment. Each candidate is fitted (Fit) on the periods
// before it and scored on it by rolling origin (Evaluate, default MAPE
// floor) at the middle horizon, (Horizon+1)/2 periods ahead; the candidate
// with the lowest validation MAPE wins (the first one on a tie). It is then
// fitted again with the same configuration on the whole series, so its
// Validation hold-out, if any, now picks the epoch on the last part of
// series, the very periods the validation segment held.
//
// A candidate's own Validation is a second hold-out nested in the first:
// while scoring, it picks the epoch on the last part of the periods before
// the validation segment, never on the segment itself.
//
// Every fit, the candidates' and the final one, starts from one random
// state drawn from rng before any fit, so the result does not depend on the
// order of the candidates and the same rng state gives the same Selection.
// The candidates must share one Horizon (after defaults) so that their
// scores are comparable. Select fails if any candidate cannot be fitted or
// scored.
func Select(series [][]float64, candidates []Config, valFraction float64, rng *rand.Rand) (*Selection, error) {
	if len(candidates) == 0 {
		return nil, errors.New("forecast: select: no candidates")
	}
	if !(valFraction > 0 && valFraction < 0.5) {
		return nil, fmt.Errorf("forecast: select: validation fraction must be in (0, 0.5), got %g", valFraction)
	}
	H := candidates[0].withDefaults().Horizon
	for i, c := range candidates {
		if h := c.withDefaults().Horizon; h != H {
			return nil, fmt.Errorf("forecast: select: candidate %d has horizon %d, candidate 0 has %d; scores at different horizons are not comparable", i, h, H)
		}
	}
	valStart := len(series) - int(math.Round(valFraction*float64(len(series))))
	if valStart <= 0 || valStart >= len(series) {
		return nil, fmt.Errorf("forecast: select: %d periods are too few for a validation fraction of %g", len(series), valFraction)
	}
	s1, s2 := rng.Uint64(), rng.Uint64()
	newRNG := func() *rand.Rand { return rand.New(rand.NewPCG(s1, s2)) }

	sel := &Selection{Best: -1, ScoreHorizon: (H + 1) / 2, ValidationStart: valStart, MAPE: make([]float64, len(candidates))}
	for i, c := range candidates {
		f, err := Fit(series[:valStart], c, newRNG())
		if err != nil {
			return nil, fmt.Errorf("forecast: select: candidate %d: %w", i, err)
		}
		e, err := Evaluate(f, series, valStart, 0)
		if err != nil {
			return nil, fmt.Errorf("forecast: select: candidate %d: %w", i, err)
		}
		m := e.MAPE(sel.ScoreHorizon)
		if math.IsNaN(m) || math.IsInf(m, 0) {
			return nil, fmt.Errorf("forecast: select: candidate %d: validation MAPE %d ahead is %g", i, sel.ScoreHorizon, m)
		}
		sel.MAPE[i] = m
		if sel.Best < 0 || m < sel.MAPE[sel.Best] {
			sel.Best = i
		}
	}
	f, err := Fit(series, candidates[sel.Best], newRNG())
	if err != nil {
		return nil, fmt.Errorf("forecast: select: refit candidate %d: %w", sel.Best, err)
	}
	sel.Forecaster = f
	return sel, nil
}
