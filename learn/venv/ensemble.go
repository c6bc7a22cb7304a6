package venv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
)

// Ensemble is models of one log that differ only in their seeds. Where
// the log holds a state and action they agree; away from it they
// disagree, and their disagreement is what a policy trained in them is
// charged (MOPO, Yu et al. 2020, section 4: the reward less lambda times
// an uncertainty estimate; the disagreement of the members' means is the
// estimate MOReL, Kidambi et al. 2020, uses, since the members'
// own variances learned from a log say nothing of where it has no rows).
type Ensemble struct {
	Models []*Model
}

// TrainEnsemble trains cfg.Models models (at least one) on data, member
// k from seed cfg.Seed+k, as many at once as there are cores. Member 0 is
// Train(data, cfg).
func TrainEnsemble(data []Transition, cfg Config) (*Ensemble, error) {
	k := max(cfg.Models, 1)
	e := &Ensemble{Models: make([]*Model, k)}
	errs := make([]error, k)
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i := range k {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			c := cfg
			c.Seed += uint64(i)
			e.Models[i], errs[i] = Train(data, c)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("venv: member %d: %w", i, err)
		}
	}
	return e, nil
}

// Step samples what follows state under action from one member drawn at
// random (MOPO's rollouts), and returns the members' disagreement: the
// largest, over the outputs, standard deviation of the members' means,
// in the log's standardised units (0 for one model). Not safe for
// concurrent use.
func (e *Ensemble) Step(state, action []float64, rng *rand.Rand) (next, outcome []float64, disagreement float64) {
	pick := e.Models[rng.IntN(len(e.Models))]
	if len(e.Models) > 1 {
		for _, m := range e.Models {
			m.predict(state, action)
		}
		w := len(pick.y) / 2
		n := float64(len(e.Models))
		for j := range w {
			var sum, sq float64
			for _, m := range e.Models {
				v := float64(m.y[j])
				sum, sq = sum+v, sq+v*v
			}
			mean := sum / n
			disagreement = max(disagreement, math.Sqrt(max(sq/n-mean*mean, 0)))
		}
	} else {
		pick.predict(state, action)
	}
	next, outcome = pick.sample(rng)
	return next, outcome, disagreement
}
