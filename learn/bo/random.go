package bo

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// RandomSearch is the baseline optimiser: Ask returns independent uniform
// points of the space (integers and categories uniform over their values).
type RandomSearch struct {
	sp  *space
	nc  int
	rng *rand.Rand
	obs []Observation
}

var _ Optimizer = (*RandomSearch)(nil)

// NewRandomSearch returns a random-search optimiser over params with
// constraints constraint values per observation, drawing from rng.
func NewRandomSearch(params []Param, constraints int, rng *rand.Rand) (*RandomSearch, error) {
	if rng == nil {
		return nil, errors.New("bo: new random search: nil rng")
	}
	sp, err := newSpace(params)
	if err != nil {
		return nil, fmt.Errorf("bo: new random search: %w", err)
	}
	if constraints < 0 {
		return nil, fmt.Errorf("bo: new random search: constraints: must be >= 0, got %d", constraints)
	}
	return &RandomSearch{sp: sp, nc: constraints, rng: rng}, nil
}

// Ask implements Optimizer.
func (r *RandomSearch) Ask() ([]float64, error) { return r.sp.sample(r.rng), nil }

// AskBatch returns q independent uniform points.
func (r *RandomSearch) AskBatch(q int) ([][]float64, error) {
	if q < 1 {
		return nil, fmt.Errorf("bo: ask batch: q must be >= 1, got %d", q)
	}
	xs := make([][]float64, q)
	for i := range xs {
		xs[i] = r.sp.sample(r.rng)
	}
	return xs, nil
}

// Tell implements Optimizer.
func (r *RandomSearch) Tell(x []float64, y float64, c []float64) error {
	o, err := checkObservation(x, y, c, r.nc)
	if err != nil {
		return fmt.Errorf("bo: tell: %w", err)
	}
	if _, err := r.sp.encode(x); err != nil {
		return fmt.Errorf("bo: tell: %w", err)
	}
	r.obs = append(r.obs, o)
	return nil
}

// Best implements Optimizer.
func (r *RandomSearch) Best() (Observation, bool) { return bestOf(r.obs) }

// Observations returns the observations told so far, in order.
func (r *RandomSearch) Observations() []Observation { return r.obs }
