package forecast

import (
	"fmt"
	"math"
)

// DefaultMAPEFloor is the MAPE floor Evaluate uses when given 0: actuals
// below 5% of their series' mean absolute value on the test segment are
// left out of MAPE.
const DefaultMAPEFloor = 0.05

// Errors are rolling-origin forecast errors of one forecaster on one test
// segment, per horizon h (1..Horizon periods ahead) and series k. MSE is in
// the series' squared units; MAPE in percent.
//
// MAPE rule: the absolute percentage error |forecast−actual|/|actual| is
// undefined at a zero actual and explodes near one (a NASA minute with no
// request, an idle night), so a pair whose |actual| is below Floor[k] is
// left out of MAPE (it still counts in MSE). Floor[k] is the relative floor
// given to Evaluate times the mean |actual| of series k over the test
// segment; MAPEPairs says how many pairs remained.
type Errors struct {
	Horizon, Dims int
	// Floor[k] is the absolute MAPE floor of series k.
	Floor []float64

	sqErr, absPctErr []float64 // sums, index (h-1)·Dims+k
	pairs, mapePairs []int
}

// MSE returns the mean squared error h periods ahead over all series.
func (e *Errors) MSE(h int) float64 { return e.pooled(e.sqErr, e.pairs, h) }

// MAPE returns the mean absolute percentage error h periods ahead over all
// series, in percent (NaN when no actual was above its floor).
func (e *Errors) MAPE(h int) float64 { return 100 * e.pooled(e.absPctErr, e.mapePairs, h) }

// SeriesMSE returns the mean squared error of series k, h periods ahead.
func (e *Errors) SeriesMSE(h, k int) float64 { return ratio(e.sqErr, e.pairs, e.at(h, k)) }

// SeriesMAPE returns the MAPE of series k, h periods ahead, in percent.
func (e *Errors) SeriesMAPE(h, k int) float64 {
	return 100 * ratio(e.absPctErr, e.mapePairs, e.at(h, k))
}

// Pairs returns the number of (origin, series) pairs h periods ahead, and
// how many of them MAPE counts.
func (e *Errors) Pairs(h int) (all, mape int) {
	for k := 0; k < e.Dims; k++ {
		all += e.pairs[e.at(h, k)]
		mape += e.mapePairs[e.at(h, k)]
	}
	return all, mape
}

func (e *Errors) at(h, k int) int {
	if h < 1 || h > e.Horizon || k < 0 || k >= e.Dims {
		panic(fmt.Sprintf("forecast: Errors: horizon %d, series %d out of range (horizon %d, %d series)", h, k, e.Horizon, e.Dims))
	}
	return (h-1)*e.Dims + k
}

func (e *Errors) pooled(sum []float64, n []int, h int) float64 {
	var s float64
	var c int
	for k := 0; k < e.Dims; k++ {
		s += sum[e.at(h, k)]
		c += n[e.at(h, k)]
	}
	if c == 0 {
		return math.NaN()
	}
	return s / float64(c)
}

func ratio(sum []float64, n []int, i int) float64 {
	if n[i] == 0 {
		return math.NaN()
	}
	return sum[i] / float64(n[i])
}

// Evaluate measures f on series[testStart:] by rolling origin: for every
// period t of the test segment, f forecasts from the history series[:t]
// (training part included, nothing after t−1) and each forecast h periods
// ahead is compared with series[t+h−1] while that is inside the series, so
// the targets h periods ahead are series[testStart+h−1:]. mapeFloor is the relative MAPE floor described at
// Errors (0 means DefaultMAPEFloor).
//
// testStart must leave f a full window of history: testStart >= f.Window().
func Evaluate(f Forecaster, series [][]float64, testStart int, mapeFloor float64) (*Errors, error) {
	K, H := f.Dims(), f.Horizon()
	switch {
	case testStart < f.Window():
		return nil, fmt.Errorf("forecast: evaluate: test start %d leaves less than the forecaster's window of %d periods", testStart, f.Window())
	case testStart >= len(series):
		return nil, fmt.Errorf("forecast: evaluate: test start %d is not before the end of the series (%d periods)", testStart, len(series))
	case mapeFloor < 0 || math.IsNaN(mapeFloor):
		return nil, fmt.Errorf("forecast: evaluate: MAPE floor must be >= 0, got %g", mapeFloor)
	}
	if mapeFloor == 0 {
		mapeFloor = DefaultMAPEFloor
	}
	if err := checkSeries(series[testStart-f.Window():], K); err != nil {
		return nil, fmt.Errorf("forecast: evaluate: %w", err)
	}
	e := &Errors{Horizon: H, Dims: K, Floor: make([]float64, K),
		sqErr: make([]float64, H*K), absPctErr: make([]float64, H*K),
		pairs: make([]int, H*K), mapePairs: make([]int, H*K)}
	for _, row := range series[testStart:] {
		for k, v := range row {
			e.Floor[k] += math.Abs(v)
		}
	}
	for k := range e.Floor {
		e.Floor[k] *= mapeFloor / float64(len(series)-testStart)
	}
	dst := make([]float64, H*K)
	for t := testStart; t < len(series); t++ {
		f.Predict(dst, series[:t])
		for h := 1; h <= H && t+h-1 < len(series); h++ {
			actual := series[t+h-1]
			for k, a := range actual {
				i := (h-1)*K + k
				d := dst[i] - a
				e.sqErr[i] += d * d
				e.pairs[i]++
				if math.Abs(a) >= e.Floor[k] && a != 0 {
					e.absPctErr[i] += math.Abs(d) / math.Abs(a)
					e.mapePairs[i]++
				}
			}
		}
	}
	return e, nil
}

// checkSeries reports a row of the wrong width or a value that is not
// finite.
func checkSeries(series [][]float64, dims int) error {
	for t, row := range series {
		if len(row) != dims {
			return fmt.Errorf("period %d has %d values, want %d", t, len(row), dims)
		}
		for k, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("period %d, series %d: value %g is not finite", t, k, v)
			}
		}
	}
	return nil
}
