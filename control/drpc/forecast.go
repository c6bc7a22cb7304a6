package drpc

import (
	"math"

	"github.com/shoal-project/shoal/learn/forecast"
)

// RateForecast turns a one-series forecaster of the ingress request rate
// (the paper's workload predictor, section V-B) into the controller's
// Forecaster: it keeps the last Window rates and returns the forecast rate
// Horizon periods ahead over the current one. Until it has a full window it
// expects no change. It allocates nothing once built.
type RateForecast struct {
	f      forecast.Forecaster
	rows   [][]float64 // the last Window rates, oldest first
	backed []float64
	seen   int
	out    []float64
}

// NewRateForecast wraps f, which must forecast one series.
func NewRateForecast(f forecast.Forecaster) *RateForecast {
	w := f.Window()
	r := &RateForecast{f: f, rows: make([][]float64, w), backed: make([]float64, w), out: make([]float64, f.Horizon()*f.Dims())}
	for i := range r.rows {
		r.rows[i] = r.backed[i : i+1]
	}
	return r
}

// Next implements Forecaster.
func (r *RateForecast) Next(rate float64) float64 {
	copy(r.backed, r.backed[1:])
	r.backed[len(r.backed)-1] = rate
	if r.seen++; r.seen < len(r.rows) {
		return 1
	}
	r.f.Predict(r.out, r.rows)
	return math.Max(r.out[len(r.out)-1], 0) / math.Max(rate, 1)
}
