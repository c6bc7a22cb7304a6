package bo

import (
	"fmt"
	"math"
)

// KernelKind selects the stationary covariance function of a Gaussian process.
// Both kinds use automatic relevance determination (ARD): one length-scale per
// input dimension.
type KernelKind int

const (
	// Matern52 is the Matérn kernel with smoothness ν = 5/2
	// (Rasmussen & Williams 2006, eq. 4.17):
	//   k(r) = σf² (1 + √5 r + 5r²/3) exp(−√5 r),  r² = Σ_d (x_d − x'_d)² / ℓ_d².
	// It is the default: sample paths are twice differentiable, a better prior
	// for real objectives than the infinitely smooth RBF (Snoek et al. 2012).
	Matern52 KernelKind = iota
	// RBF is the squared-exponential kernel (Rasmussen & Williams 2006, eq. 4.9):
	//   k(r) = σf² exp(−r²/2).
	RBF
)

// String returns the kernel name.
func (k KernelKind) String() string {
	switch k {
	case Matern52:
		return "matern52"
	case RBF:
		return "rbf"
	}
	return fmt.Sprintf("KernelKind(%d)", int(k))
}

func (k KernelKind) valid() bool { return k == Matern52 || k == RBF }

var sqrt5 = math.Sqrt(5)

// unitKernel returns k(r²)/σf² and its derivative with respect to r²,
// g = d(k/σf²)/d(r²). Both are finite at r = 0.
func unitKernel(kind KernelKind, r2 float64) (k, g float64) {
	switch kind {
	case RBF:
		k = math.Exp(-0.5 * r2)
		return k, -0.5 * k
	default: // Matern52
		r := math.Sqrt(r2)
		e := math.Exp(-sqrt5 * r)
		k = (1 + sqrt5*r + 5*r2/3) * e
		// dk/dr = −(5/3) r (1+√5 r) e^{−√5 r}; dk/dr² = (dk/dr)/(2r).
		g = -(5.0 / 6.0) * (1 + sqrt5*r) * e
		return k, g
	}
}

// Kernel is a stationary ARD covariance function with its hyperparameters.
type Kernel struct {
	// Kind is the covariance family.
	Kind KernelKind
	// LengthScales holds one length-scale ℓ_d > 0 per input dimension, in the
	// units of the inputs passed to Eval.
	LengthScales []float64
	// Variance is the signal variance σf² > 0, in output units squared.
	Variance float64
}

// Eval returns k(x, y). x and y must have len(LengthScales) elements.
func (k Kernel) Eval(x, y []float64) float64 {
	if len(x) != len(k.LengthScales) || len(y) != len(k.LengthScales) {
		panic("bo: kernel dimension mismatch")
	}
	var r2 float64
	for d, l := range k.LengthScales {
		t := (x[d] - y[d]) / l
		r2 += t * t
	}
	u, _ := unitKernel(k.Kind, r2)
	return k.Variance * u
}
