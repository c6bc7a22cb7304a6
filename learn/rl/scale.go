package rl

import "math"

// ReturnScaler divides rewards by the running standard deviation of the
// discounted return and clips the result to ±10, as Stable-Baselines3's
// VecNormalize does for rewards: it keeps the critics' targets near unit
// scale when raw rewards span orders of magnitude. The zero value with
// Gamma set is ready to use.
type ReturnScaler struct {
	Gamma float64

	ret         float64 // discounted return so far in the episode
	n           float64
	mean, m2sum float64 // Welford's running moments of the returns
}

// Scale returns r scaled; done ends the episode's return.
func (s *ReturnScaler) Scale(r float64, done bool) float64 {
	s.ret = s.ret*s.Gamma + r
	s.n++
	d := s.ret - s.mean
	s.mean += d / s.n
	s.m2sum += d * (s.ret - s.mean)
	if done {
		s.ret = 0
	}
	std := math.Sqrt(s.m2sum/s.n + 1e-8)
	return math.Max(-10, math.Min(10, r/std))
}
