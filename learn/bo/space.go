package bo

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// ParamKind is the type of a search-space parameter.
type ParamKind int

const (
	// Continuous is a real parameter in [Low, High].
	Continuous ParamKind = iota
	// Integer is an integer parameter in {Low, ..., High} (Low and High integral).
	Integer
	// Categorical is an unordered choice among Categories; its value in a
	// point is the category index 0..len(Categories)−1.
	Categorical
)

// String returns the kind name.
func (k ParamKind) String() string {
	switch k {
	case Continuous:
		return "continuous"
	case Integer:
		return "integer"
	case Categorical:
		return "categorical"
	}
	return fmt.Sprintf("ParamKind(%d)", int(k))
}

// Param is one dimension of a search space. A point of the space is a
// []float64 holding one value per Param, in order: the real value for
// Continuous, the integer value for Integer and the category index for
// Categorical.
type Param struct {
	// Name identifies the parameter in errors.
	Name string
	// Kind is the parameter type.
	Kind ParamKind
	// Low and High are the inclusive bounds of Continuous and Integer parameters,
	// in the parameter's own units.
	Low, High float64
	// Log, for Continuous parameters with Low > 0, models the parameter on a
	// log scale.
	Log bool
	// Categories names the choices of a Categorical parameter (at least 2).
	Categories []string
}

// Internally a point is encoded into the unit box [0,1]^D where every
// Continuous and Integer parameter takes one coordinate and a Categorical
// parameter with K choices takes K one-hot coordinates. Following
// Garrido-Merchán & Hernández-Lobato (2020, "Dealing with categorical and
// integer-valued variables in Bayesian optimization with Gaussian processes",
// Neurocomputing 380), the GP always sees the canonical encoding: integers
// are rounded to their bin centre and one-hot blocks are set to the argmax
// category, both inside the acquisition function.
type space struct {
	params []Param
	offset []int // first encoded coordinate of each parameter
	dim    int   // encoded dimension D
	mixed  bool  // any Integer or Categorical parameter
}

func newSpace(params []Param) (*space, error) {
	if len(params) == 0 {
		return nil, fmt.Errorf("space: no parameters")
	}
	s := &space{params: append([]Param(nil), params...), offset: make([]int, len(params))}
	for i, p := range params {
		path := fmt.Sprintf("space[%d] (%s)", i, p.Name)
		s.offset[i] = s.dim
		switch p.Kind {
		case Continuous:
			if !(p.Low < p.High) || math.IsInf(p.Low, 0) || math.IsInf(p.High, 0) {
				return nil, fmt.Errorf("%s: need finite low < high, got [%g, %g]", path, p.Low, p.High)
			}
			if p.Log && !(p.Low > 0) {
				return nil, fmt.Errorf("%s: log scale needs low > 0, got %g", path, p.Low)
			}
			s.dim++
		case Integer:
			if p.Low != math.Trunc(p.Low) || p.High != math.Trunc(p.High) || !(p.Low <= p.High) {
				return nil, fmt.Errorf("%s: need integral low <= high, got [%g, %g]", path, p.Low, p.High)
			}
			s.dim++
			s.mixed = true
		case Categorical:
			if len(p.Categories) < 2 {
				return nil, fmt.Errorf("%s: need at least 2 categories, got %d", path, len(p.Categories))
			}
			s.dim += len(p.Categories)
			s.mixed = true
		default:
			return nil, fmt.Errorf("%s: unknown kind %v", path, p.Kind)
		}
	}
	return s, nil
}

// encode maps a user point to its canonical unit-box encoding.
func (s *space) encode(x []float64) ([]float64, error) {
	if len(x) != len(s.params) {
		return nil, fmt.Errorf("point has %d values, want %d", len(x), len(s.params))
	}
	u := make([]float64, s.dim)
	for i, p := range s.params {
		v, o := x[i], s.offset[i]
		if math.IsNaN(v) {
			return nil, fmt.Errorf("%s: value is NaN", p.Name)
		}
		switch p.Kind {
		case Continuous:
			if v < p.Low || v > p.High {
				return nil, fmt.Errorf("%s: value %g outside [%g, %g]", p.Name, v, p.Low, p.High)
			}
			if p.Log {
				u[o] = (math.Log(v) - math.Log(p.Low)) / (math.Log(p.High) - math.Log(p.Low))
			} else {
				u[o] = (v - p.Low) / (p.High - p.Low)
			}
		case Integer:
			if v != math.Trunc(v) || v < p.Low || v > p.High {
				return nil, fmt.Errorf("%s: value %g is not an integer in [%g, %g]", p.Name, v, p.Low, p.High)
			}
			u[o] = (v - p.Low + 0.5) / (p.High - p.Low + 1)
		case Categorical:
			k := int(v)
			if float64(k) != v || k < 0 || k >= len(p.Categories) {
				return nil, fmt.Errorf("%s: category index %g outside 0..%d", p.Name, v, len(p.Categories)-1)
			}
			u[o+k] = 1
		}
	}
	return u, nil
}

// decode maps any point of the unit box to a user point, rounding integers
// and taking the argmax of one-hot blocks.
func (s *space) decode(u []float64) []float64 {
	x := make([]float64, len(s.params))
	for i, p := range s.params {
		o := s.offset[i]
		switch p.Kind {
		case Continuous:
			t := clamp01(u[o])
			if p.Log {
				x[i] = math.Exp(math.Log(p.Low) + t*(math.Log(p.High)-math.Log(p.Low)))
			} else {
				x[i] = p.Low + t*(p.High-p.Low)
			}
			x[i] = math.Min(math.Max(x[i], p.Low), p.High)
		case Integer:
			m := p.High - p.Low + 1
			x[i] = p.Low + math.Min(math.Floor(clamp01(u[o])*m), m-1)
		case Categorical:
			best := 0
			for k := 1; k < len(p.Categories); k++ {
				if u[o+k] > u[o+best] {
					best = k
				}
			}
			x[i] = float64(best)
		}
	}
	return x
}

// canonical writes the canonical encoding of u into dst (dst may alias u):
// clamped to the box, integers at bin centres, one-hot categorical blocks.
func (s *space) canonical(dst, u []float64) {
	for i, p := range s.params {
		o := s.offset[i]
		switch p.Kind {
		case Continuous:
			dst[o] = clamp01(u[o])
		case Integer:
			m := p.High - p.Low + 1
			k := math.Min(math.Floor(clamp01(u[o])*m), m-1)
			dst[o] = (k + 0.5) / m
		case Categorical:
			best := 0
			for k := 1; k < len(p.Categories); k++ {
				if u[o+k] > u[o+best] {
					best = k
				}
			}
			for k := range p.Categories {
				dst[o+k] = 0
			}
			dst[o+best] = 1
		}
	}
}

// sample draws a uniform random user point.
func (s *space) sample(rng *rand.Rand) []float64 {
	x := make([]float64, len(s.params))
	for i, p := range s.params {
		x[i] = s.fromUnit(p, rng.Float64())
	}
	return x
}

// fromUnit maps t in [0,1) to a value of p, uniformly over its range.
func (s *space) fromUnit(p Param, t float64) float64 {
	switch p.Kind {
	case Integer:
		m := p.High - p.Low + 1
		return p.Low + math.Min(math.Floor(t*m), m-1)
	case Categorical:
		return math.Min(math.Floor(t*float64(len(p.Categories))), float64(len(p.Categories)-1))
	default:
		if p.Log {
			return math.Exp(math.Log(p.Low) + t*(math.Log(p.High)-math.Log(p.Low)))
		}
		return math.Min(p.Low+t*(p.High-p.Low), p.High)
	}
}

// latinHypercube returns n user points whose parameters are each stratified
// into n equal-probability strata (McKay, Beckman & Conover 1979), with a
// random permutation per parameter and a uniform position inside the stratum.
func (s *space) latinHypercube(n int, rng *rand.Rand) [][]float64 {
	pts := make([][]float64, n)
	for i := range pts {
		pts[i] = make([]float64, len(s.params))
	}
	for j, p := range s.params {
		perm := rng.Perm(n)
		for i := range n {
			t := (float64(perm[i]) + rng.Float64()) / float64(n)
			pts[i][j] = s.fromUnit(p, t)
		}
	}
	return pts
}

func clamp01(v float64) float64 { return math.Min(math.Max(v, 0), 1) }
