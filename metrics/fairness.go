package metrics

import "math"

// Jain returns Jain's fairness index of x, (sum x)^2 / (n * sum x^2), in (0, 1] for non-negative
// x: 1 when all entries are equal, 1/n when one entry carries everything. An all-zero or empty
// vector is perfectly fair and gives 1. x is a load vector, e.g. each server's time to finish its
// remaining work in seconds (any unit: the index is scale-free).
func Jain(x []float64) float64 {
	var s, s2 float64
	for _, v := range x {
		s += v
		s2 += v * v
	}
	if s2 == 0 {
		return 1
	}
	return s * s / (float64(len(x)) * s2)
}

// VarianceFairness returns the variance-based fairness (VBF) of x, Definition 2 of the Distr-LB
// paper (Yao et al., "Distributed Load Balancing ... Markov Potential Game"):
// F(l) = -(1/N) sum_j (l_j - mean(l))^2, the negative population variance, in the squared unit of
// x (s^2 for times). 0 is perfectly fair; more negative is less fair. Empty x gives 0. Computed
// in two passes, so it does not lose precision when the mean is large.
func VarianceFairness(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	var s float64
	for _, v := range x {
		s += v
	}
	m := s / float64(len(x))
	var ss float64
	for _, v := range x {
		d := v - m
		ss += d * d
	}
	return -ss / float64(len(x))
}

// ProductFairness returns the product-based fairness (PBF) of x, Definition 5 of the Distr-LB
// paper: F(l) = prod_j (l_j / max(l)), in [0, 1] for non-negative x (dimensionless). It is 1 when all
// entries are equal and 0 as soon as one server is idle while another is not. An all-zero or empty
// vector gives 1. (The product is of the ratios l_j/max(l), as in the paper, so it does not depend
// on the unit of x.)
func ProductFairness(x []float64) float64 {
	mx := Makespan(x)
	if mx == 0 {
		return 1
	}
	p := 1.0
	for _, v := range x {
		p *= v / mx
	}
	return p
}

// Makespan returns max_j x_j (Definition 1 of the Distr-LB paper: the time at which the most loaded
// server finishes its work), in the unit of x; 0 for an empty vector.
func Makespan(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	m := math.Inf(-1)
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	return m
}
