package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Dist is a non-negative random variable (service demand in seconds, sizes, ...).
// Sample does not allocate; Mean is exact (closed form), not estimated.
type Dist interface {
	Sample(rng *rand.Rand) float64
	Mean() float64
}

func finitePos(name string, x float64) error {
	if !(x > 0) || math.IsInf(x, 0) {
		return fmt.Errorf("workload: %s must be > 0 and finite, got %v", name, x)
	}
	return nil
}

// Exponential is the exponential distribution with the given mean (coefficient of variation 1).
type Exponential struct{ mean float64 }

// NewExponential returns an exponential distribution with mean > 0.
func NewExponential(mean float64) (*Exponential, error) {
	if err := finitePos("exponential mean", mean); err != nil {
		return nil, err
	}
	return &Exponential{mean: mean}, nil
}

// Sample draws one value.
func (d *Exponential) Sample(rng *rand.Rand) float64 { return rng.ExpFloat64() * d.mean }

// Mean returns the mean.
func (d *Exponential) Mean() float64 { return d.mean }

// LogNormal is the log-normal distribution exp(μ + σZ), Z standard normal, parameterised by its
// mean m and coefficient of variation c (standard deviation / mean):
//
//	σ² = ln(1 + c²),  μ = ln(m) − σ²/2
//
// which follow from E = exp(μ + σ²/2) and Var/E² = exp(σ²) − 1.
type LogNormal struct{ mu, sigma, mean float64 }

// NewLogNormal returns a log-normal distribution with mean > 0 and coefficient of variation cv > 0.
func NewLogNormal(mean, cv float64) (*LogNormal, error) {
	if err := finitePos("lognormal mean", mean); err != nil {
		return nil, err
	}
	if err := finitePos("lognormal cv", cv); err != nil {
		return nil, err
	}
	s2 := math.Log1p(cv * cv)
	return &LogNormal{mu: math.Log(mean) - s2/2, sigma: math.Sqrt(s2), mean: mean}, nil
}

// Params returns μ and σ of the underlying normal distribution.
func (d *LogNormal) Params() (mu, sigma float64) { return d.mu, d.sigma }

// Sample draws one value.
func (d *LogNormal) Sample(rng *rand.Rand) float64 {
	return math.Exp(d.mu + d.sigma*rng.NormFloat64())
}

// Mean returns the mean.
func (d *LogNormal) Mean() float64 { return d.mean }

// Deterministic always returns the same value.
type Deterministic struct{ value float64 }

// NewDeterministic returns the constant distribution at value >= 0.
func NewDeterministic(value float64) (*Deterministic, error) {
	if !(value >= 0) || math.IsInf(value, 0) {
		return nil, fmt.Errorf("workload: deterministic value must be >= 0 and finite, got %v", value)
	}
	return &Deterministic{value: value}, nil
}

// Sample returns the value; it draws nothing from rng.
func (d *Deterministic) Sample(*rand.Rand) float64 { return d.value }

// Mean returns the value.
func (d *Deterministic) Mean() float64 { return d.value }

// Uniform is the continuous uniform distribution on [min, max).
type Uniform struct{ lo, hi float64 }

// NewUniform returns the uniform distribution on [lo, hi), 0 <= lo <= hi.
func NewUniform(lo, hi float64) (*Uniform, error) {
	if !(lo >= 0 && hi >= lo) || math.IsInf(hi, 0) {
		return nil, fmt.Errorf("workload: uniform needs 0 <= min <= max (finite), got [%v, %v]", lo, hi)
	}
	return &Uniform{lo: lo, hi: hi}, nil
}

// Sample draws one value.
func (d *Uniform) Sample(rng *rand.Rand) float64 { return d.lo + (d.hi-d.lo)*rng.Float64() }

// Mean returns (min+max)/2.
func (d *Uniform) Mean() float64 { return (d.lo + d.hi) / 2 }

// Empirical is the distribution of a sample of observed values.
//
// By default it resamples: each draw is one of the values chosen uniformly (the empirical
// distribution itself; mean = arithmetic mean of the values). With interpolation it samples the
// piecewise-linear inverse CDF through the sorted values x_(0) <= ... <= x_(n-1) placed at
// quantiles i/(n-1): u ~ U[0,1), position u·(n-1), linear between the two neighbours. Its mean is
// the trapezoid average Σ (x_(i) + x_(i+1)) / (2(n-1)), and it produces values between the
// observations (a continuous distribution), never outside [min, max].
type Empirical struct {
	sorted      []float64
	interpolate bool
	mean        float64
}

// NewEmpirical returns the empirical distribution of values (all >= 0 and finite, at least one).
// It copies and sorts them.
func NewEmpirical(values []float64, interpolate bool) (*Empirical, error) {
	if len(values) == 0 {
		return nil, errors.New("workload: empirical distribution needs at least one value")
	}
	s := slices.Clone(values)
	for i, v := range s {
		if !(v >= 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("workload: empirical value %d must be >= 0 and finite, got %v", i, v)
		}
	}
	slices.Sort(s)
	d := &Empirical{sorted: s, interpolate: interpolate && len(s) > 1}
	sum := 0.0
	if d.interpolate {
		for i := 0; i+1 < len(s); i++ {
			sum += (s[i] + s[i+1]) / 2
		}
		d.mean = sum / float64(len(s)-1)
	} else {
		for _, v := range s {
			sum += v
		}
		d.mean = sum / float64(len(s))
	}
	return d, nil
}

// Sample draws one value.
func (d *Empirical) Sample(rng *rand.Rand) float64 {
	n := len(d.sorted)
	if !d.interpolate {
		return d.sorted[rng.IntN(n)]
	}
	x := rng.Float64() * float64(n-1)
	i := int(x)
	f := x - float64(i)
	return d.sorted[i] + f*(d.sorted[i+1]-d.sorted[i])
}

// Mean returns the exact mean of the distribution (see the type's documentation).
func (d *Empirical) Mean() float64 { return d.mean }

// Len returns the number of observed values.
func (d *Empirical) Len() int { return len(d.sorted) }

// BoundedPareto is the Pareto distribution with shape α truncated to [L, H], 0 < L < H:
// density α L^α x^(−α−1) / (1 − (L/H)^α). It is sampled by inversion:
//
//	x = L · (1 − u·(1 − (L/H)^α))^(−1/α)
//
// and its mean is α L^α (H^(1−α) − L^(1−α)) / ((1−α)(1 − (L/H)^α)) for α ≠ 1, and
// L H ln(H/L) / (H − L) for α = 1.
type BoundedPareto struct {
	alpha, lo, hi float64
	k             float64 // 1 − (L/H)^α
	mean          float64
}

// NewBoundedPareto returns a bounded Pareto distribution with shape alpha > 0 on [lo, hi], 0 < lo < hi.
func NewBoundedPareto(alpha, lo, hi float64) (*BoundedPareto, error) {
	if err := finitePos("pareto alpha", alpha); err != nil {
		return nil, err
	}
	if !(lo > 0 && hi > lo) || math.IsInf(hi, 0) {
		return nil, fmt.Errorf("workload: pareto needs 0 < min < max (finite), got [%v, %v]", lo, hi)
	}
	k := 1 - math.Pow(lo/hi, alpha)
	var mean float64
	if math.Abs(alpha-1) < 1e-12 {
		mean = lo * hi * math.Log(hi/lo) / (hi - lo)
	} else {
		mean = alpha * math.Pow(lo, alpha) * (math.Pow(hi, 1-alpha) - math.Pow(lo, 1-alpha)) / ((1 - alpha) * k)
	}
	return &BoundedPareto{alpha: alpha, lo: lo, hi: hi, k: k, mean: mean}, nil
}

// Sample draws one value by inversion.
func (d *BoundedPareto) Sample(rng *rand.Rand) float64 {
	x := d.lo * math.Pow(1-rng.Float64()*d.k, -1/d.alpha)
	return math.Min(x, d.hi)
}

// Mean returns the exact mean.
func (d *BoundedPareto) Mean() float64 { return d.mean }

// Scaled multiplies a distribution by a constant factor (for example tokens × seconds per token).
type Scaled struct {
	// D is the distribution scaled.
	D Dist
	// Factor multiplies every sample (unit conversion, e.g. seconds per token).
	Factor float64
}

// Sample draws D and multiplies it by Factor.
func (s Scaled) Sample(rng *rand.Rand) float64 { return s.D.Sample(rng) * s.Factor }

// Mean returns Factor · D.Mean().
func (s Scaled) Mean() float64 { return s.D.Mean() * s.Factor }
