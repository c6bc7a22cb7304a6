package nn

import "math"

// Scaler standardises the columns of a network's inputs or targets:
// (x - Mean) / Std per column. A column that never varied has Std 1.
type Scaler struct {
	Mean []float64 `json:"mean"`
	Std  []float64 `json:"std"`
}

// FitScaler returns the scaler of the rows (population standard
// deviation).
func FitScaler(rows [][]float64) Scaler {
	d := len(rows[0])
	s := Scaler{Mean: make([]float64, d), Std: make([]float64, d)}
	for _, row := range rows {
		for j, v := range row {
			s.Mean[j] += v
		}
	}
	for j := range s.Mean {
		s.Mean[j] /= float64(len(rows))
	}
	for _, row := range rows {
		for j, v := range row {
			s.Std[j] += (v - s.Mean[j]) * (v - s.Mean[j])
		}
	}
	for j := range s.Std {
		s.Std[j] = math.Sqrt(s.Std[j] / float64(len(rows)))
		if s.Std[j] < 1e-12 {
			s.Std[j] = 1
		}
	}
	return s
}

// Apply writes the standardised x to dst (reused when long enough).
func (s *Scaler) Apply(dst, x []float64) []float64 {
	if cap(dst) < len(x) {
		dst = make([]float64, len(x))
	}
	dst = dst[:len(x)]
	for j, v := range x {
		dst[j] = (v - s.Mean[j]) / s.Std[j]
	}
	return dst
}

// Invert returns column j's value v in the data's units.
func (s *Scaler) Invert(j int, v float64) float64 { return v*s.Std[j] + s.Mean[j] }
