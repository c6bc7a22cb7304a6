package forecast

import "fmt"

// Forecaster predicts the next Horizon periods of a Dims-dimensional series
// from its recent past. Every forecaster of this package has this shape, so
// the rolling-origin evaluation (Evaluate) compares them on equal terms.
type Forecaster interface {
	// Predict writes the forecast to dst (len Horizon·Dims): dst[(h-1)·Dims+k]
	// is series k, h periods after the newest row of recent. recent holds
	// the observations up to now, recent[t][k], oldest first; it needs at
	// least Window rows and only its last Window rows are read.
	Predict(dst []float64, recent [][]float64)
	// Dims is the number of series.
	Dims() int
	// Horizon is the number of periods forecast.
	Horizon() int
	// Window is the number of past periods Predict reads.
	Window() int
}

// LastValue is the persistence forecast: every future period equals the
// newest observation. It is the baseline a learned predictor must beat to be
// worth its cost.
type LastValue struct {
	dims, horizon int
}

// NewLastValue returns a persistence forecaster for dims series over
// horizon periods. It panics unless both are positive.
func NewLastValue(dims, horizon int) *LastValue {
	if dims < 1 || horizon < 1 {
		panic(fmt.Sprintf("forecast: NewLastValue(%d, %d): dims and horizon must be >= 1", dims, horizon))
	}
	return &LastValue{dims: dims, horizon: horizon}
}

// Dims implements Forecaster.
func (f *LastValue) Dims() int { return f.dims }

// Horizon implements Forecaster.
func (f *LastValue) Horizon() int { return f.horizon }

// Window implements Forecaster: one period.
func (f *LastValue) Window() int { return 1 }

// Predict implements Forecaster. It allocates nothing.
func (f *LastValue) Predict(dst []float64, recent [][]float64) {
	checkPredict(f, dst, recent)
	last := recent[len(recent)-1]
	for h := 0; h < f.horizon; h++ {
		copy(dst[h*f.dims:(h+1)*f.dims], last)
	}
}

// SeasonalNaive forecasts each period by the observation one season
// earlier: period t+h gets y[t+h-m·S] with S the season and m the smallest
// whole number of seasons that reaches back into the observed past
// (m = ⌈h/S⌉). It is exact on a series of period S, and it is the baseline
// for diurnal traffic (S = one day of periods).
type SeasonalNaive struct {
	dims, horizon, season int
}

// NewSeasonalNaive returns a seasonal naive forecaster for dims series over
// horizon periods with a season of season periods. It panics unless all
// three are positive.
func NewSeasonalNaive(dims, horizon, season int) *SeasonalNaive {
	if dims < 1 || horizon < 1 || season < 1 {
		panic(fmt.Sprintf("forecast: NewSeasonalNaive(%d, %d, %d): dims, horizon and season must be >= 1", dims, horizon, season))
	}
	return &SeasonalNaive{dims: dims, horizon: horizon, season: season}
}

// Dims implements Forecaster.
func (f *SeasonalNaive) Dims() int { return f.dims }

// Horizon implements Forecaster.
func (f *SeasonalNaive) Horizon() int { return f.horizon }

// Window implements Forecaster: one season.
func (f *SeasonalNaive) Window() int { return f.season }

// Season returns the season length in periods.
func (f *SeasonalNaive) Season() int { return f.season }

// Predict implements Forecaster. It allocates nothing.
func (f *SeasonalNaive) Predict(dst []float64, recent [][]float64) {
	checkPredict(f, dst, recent)
	n := len(recent) // recent[n-1] is period t; period t+h is index n-1+h
	for h := 1; h <= f.horizon; h++ {
		back := f.season * ((h + f.season - 1) / f.season)
		copy(dst[(h-1)*f.dims:h*f.dims], recent[n-1+h-back])
	}
}

// checkPredict panics when dst or recent do not fit f: these are
// programming errors, like a wrong slice length in gonum.
func checkPredict(f Forecaster, dst []float64, recent [][]float64) {
	if len(dst) != f.Horizon()*f.Dims() || len(recent) < f.Window() {
		panic(fmt.Sprintf("forecast: Predict: len(dst)=%d, len(recent)=%d; want %d and at least %d",
			len(dst), len(recent), f.Horizon()*f.Dims(), f.Window()))
	}
	for _, row := range recent[len(recent)-f.Window():] {
		if len(row) != f.Dims() {
			panic(fmt.Sprintf("forecast: Predict: a row of recent has %d values, want %d", len(row), f.Dims()))
		}
	}
}
