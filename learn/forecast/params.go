package forecast

// Parameters is the number of weights of the forecaster (GRU and head).
func (f *GRUForecaster) Parameters() int { return params(f.cfg, f.dims) }
