package bo

import (
	"fmt"
	"math"
)

// AcquisitionKind selects the acquisition function of BayesOpt. All kinds
// minimise the objective.
type AcquisitionKind int

const (
	// EI is expected improvement over the best observed feasible value
	// (Jones, Schonlau & Welch 1998, "Efficient Global Optimization of
	// Expensive Black-Box Functions", J. Global Optim. 13, eq. 15):
	//   EI(x) = (y* − μ) Φ(z) + σ φ(z),  z = (y* − μ)/σ.
	EI AcquisitionKind = iota
	// NoisyEI is expected improvement with the "plug-in" incumbent for noisy
	// observations: y* is the smallest GP posterior mean over the observed
	// feasible points instead of the smallest noisy observation, and σ is the
	// standard deviation of the latent function. This is the plug-in EI of
	// Vazquez, Villemonteix, Sidorkiewicz & Walter (2008) as benchmarked by
	// Picheny, Wagner & Ginsbourger (2013, "A benchmark of kriging-based
	// infill criteria for noisy optimization", Struct. Multidiscip. Optim. 48,
	// section 3.1). It is not the Monte-Carlo noisy EI of Letham et al. (2019);
	// see MonteCarloNoisyEI for that one.
	NoisyEI
	// MonteCarloNoisyEI is the noisy expected improvement of Letham, Karrer,
	// Ottoni & Bakshy (2019, "Constrained Bayesian Optimization with Noisy
	// Experiments", Bayesian Analysis 14(2)): the average, over joint posterior
	// samples of the latent objective at the observed points, of EI under a
	// GP conditioned noiselessly on each sample with the sample's best
	// feasible value as incumbent (Config.NoisySamples samples, drawn once per
	// Ask). Feasibility of observed points comes from their observed
	// constraint values.
	MonteCarloNoisyEI
)

// String returns the acquisition name.
func (k AcquisitionKind) String() string {
	switch k {
	case EI:
		return "ei"
	case NoisyEI:
		return "noisy-ei"
	case MonteCarloNoisyEI:
		return "mc-noisy-ei"
	}
	return fmt.Sprintf("AcquisitionKind(%d)", int(k))
}

// ExpectedImprovement returns the expected improvement below the incumbent
// best of a Gaussian with mean mean and standard deviation sd (minimisation):
//
//	EI = (best − mean) Φ(z) + sd φ(z),  z = (best − mean)/sd.
//
// For sd <= 0 it returns max(best − mean, 0).
func ExpectedImprovement(mean, sd, best float64) float64 {
	if !(sd > 0) {
		return math.Max(best-mean, 0)
	}
	z := (best - mean) / sd
	lh, _ := logH(z)
	return sd * math.Exp(lh)
}

// LogExpectedImprovement returns log ExpectedImprovement(mean, sd, best),
// computed without underflow far from the incumbent (the LogEI of Ament et al.
// 2023, "Unexpected Improvements to Expected Improvement for Bayesian
// Optimization", NeurIPS), with its partial derivatives with respect to mean
// and sd. sd must be positive.
func LogExpectedImprovement(mean, sd, best float64) (logEI, dMean, dSD float64) {
	z := (best - mean) / sd
	lh, rho := logH(z)
	// d log h/dz = Φ(z)/h(z) = rho.
	return math.Log(sd) + lh, -rho / sd, (1 - rho*z) / sd
}

// ProbabilityOfFeasibility returns P(c <= 0) for c ~ N(mean, sd²), the
// constraint weighting of Schonlau, Welch & Jones (1998) and Gardner et al.
// (2014, "Bayesian Optimization with Inequality Constraints", ICML, eq. 4).
func ProbabilityOfFeasibility(mean, sd float64) float64 {
	if !(sd > 0) {
		if mean <= 0 {
			return 1
		}
		return 0
	}
	return 0.5 * math.Erfc(mean/(sd*math.Sqrt2))
}

// logH returns log h(z) with h(z) = φ(z) + zΦ(z), and Φ(z)/h(z) = d log h/dz.
// For z < −5 it uses Laplace's continued fraction of the Mills ratio,
//
//	Φ(−t)/φ(t) = 1/(t + 1/(t + 2/(t + 3/(t + ...)))),
//
// written as 1/D with D = t + 1/E, which gives h(−t) = φ(t)/(E·D) and
// Φ/h = E exactly, without cancellation.
func logH(z float64) (lh, rho float64) {
	if z > -5 {
		cdf := 0.5 * math.Erfc(-z/math.Sqrt2)
		pdf := math.Exp(-0.5*z*z) / math.Sqrt(2*math.Pi)
		h := pdf + z*cdf
		return math.Log(h), cdf / h
	}
	t := -z
	// E = t + 2/(t + 3/(t + 4/(...))), evaluated backwards.
	e := t
	for k := 40; k >= 2; k-- {
		e = t + float64(k)/e
	}
	dd := t + 1/e
	logPDF := -0.5*t*t - 0.5*math.Log(2*math.Pi)
	return logPDF - math.Log(e*dd), e
}

// logPhi returns log Φ(z) and d log Φ/dz = φ(z)/Φ(z), stable for very negative z.
func logPhi(z float64) (float64, float64) {
	if z > -5 {
		cdf := 0.5 * math.Erfc(-z/math.Sqrt2)
		pdf := math.Exp(-0.5*z*z) / math.Sqrt(2*math.Pi)
		return math.Log(cdf), pdf / cdf
	}
	t := -z
	e := t
	for k := 40; k >= 2; k-- {
		e = t + float64(k)/e
	}
	dd := t + 1/e // Φ(−t) = φ(t)/D
	return -0.5*t*t - 0.5*math.Log(2*math.Pi) - math.Log(dd), dd
}
