// Package es is an evolution strategy for policy search: the natural
// evolution strategy of Salimans et al., "Evolution Strategies as a
// Scalable Alternative to Reinforcement Learning" (2017), Algorithm 2 with
// mirrored (antithetic) sampling and Adam, as in their section 2.1 and the
// released code. It needs only a score per parameter vector, so it
// optimises what an episode's outcome measures (a tail latency) directly,
// where a per-step reward would have to stand in for it.
//
// One departure, for noisy objectives whose scale varies between tasks:
// the two members of a pair are scored on the same task (common random
// numbers), and the update weighs each pair by the difference of its two
// scores over the standard deviation of those differences, instead of by
// centred ranks of all scores, which would compare scores of different
// tasks.
package es

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
)

// Config sets up the search. Zero fields take the defaults noted.
type Config struct {
	// Pairs is the number of mirrored pairs per generation (default 16).
	Pairs int
	// Sigma is the standard deviation of the parameter noise (default 0.05).
	Sigma float64
	// LR is Adam's step size (default 0.02).
	LR float64
	// Decay is the L2 weight decay coefficient (default 0.005, Salimans
	// et al.'s).
	Decay float64
	// Seed seeds the noise: the k-th pair of generation g draws from
	// (Seed, g, k), so a generation's noise does not depend on Workers.
	Seed uint64
	// Workers is the number of scores computed at once (default 1).
	Workers int
}

func (c *Config) defaults() error {
	if c.Pairs == 0 {
		c.Pairs = 16
	}
	if c.Sigma == 0 {
		c.Sigma = 0.05
	}
	if c.LR == 0 {
		c.LR = 0.02
	}
	if c.Decay == 0 {
		c.Decay = 0.005
	}
	if c.Workers <= 0 {
		c.Workers = 1
	}
	switch {
	case c.Pairs < 1:
		return fmt.Errorf("es: pairs must be >= 1, got %d", c.Pairs)
	case !(c.Sigma > 0):
		return fmt.Errorf("es: sigma must be > 0, got %g", c.Sigma)
	case !(c.LR > 0):
		return fmt.Errorf("es: lr must be > 0, got %g", c.LR)
	case !(c.Decay >= 0):
		return fmt.Errorf("es: decay must be >= 0, got %g", c.Decay)
	}
	return nil
}

// State is the search's state: the parameters, Adam's moments and the
// generation count. It is what a checkpoint holds.
type State struct {
	Theta      []float64 `json:"theta"`
	M          []float64 `json:"m"`
	V          []float64 `json:"v"`
	Generation int       `json:"generation"`
}

// NewState starts a search at theta (copied).
func NewState(theta []float64) *State {
	n := len(theta)
	return &State{Theta: append([]float64(nil), theta...), M: make([]float64, n), V: make([]float64, n)}
}

// Objective scores parameters (higher is better) on pair k's task of
// generation gen. It must be deterministic in its arguments and safe to
// call from several goroutines at once.
type Objective func(ctx context.Context, theta []float64, gen, k int) (float64, error)

// Generation reports one step of the search.
type Generation struct {
	Index int     // 1-based
	Mean  float64 // mean score of the generation's members
	// Spread is the mean absolute difference between a pair's two scores.
	Spread float64
	// Step is the norm of the parameter change.
	Step float64
}

// Step runs one generation: 2·Pairs scores, then one Adam step along the
// estimated gradient. st is unchanged when it fails.
func Step(ctx context.Context, st *State, cfg Config, f Objective) (Generation, error) {
	if err := cfg.defaults(); err != nil {
		return Generation{}, err
	}
	if len(st.M) != len(st.Theta) || len(st.V) != len(st.Theta) {
		return Generation{}, errors.New("es: state's moments and parameters differ in length")
	}
	gen, n := st.Generation, len(st.Theta)
	scores, err := evaluate(ctx, st.Theta, gen, cfg, f)
	if err != nil {
		return Generation{}, err
	}
	out := Generation{Index: gen + 1}
	diffs := make([]float64, cfg.Pairs)
	var sd float64
	for k := range diffs {
		diffs[k] = scores[2*k] - scores[2*k+1]
		out.Mean += (scores[2*k] + scores[2*k+1]) / float64(2*cfg.Pairs)
		out.Spread += math.Abs(diffs[k]) / float64(cfg.Pairs)
		sd += diffs[k] * diffs[k] / float64(cfg.Pairs)
	}
	sd = math.Sqrt(sd)
	grad := make([]float64, n)
	if sd > 0 {
		eps := make([]float64, n)
		for k, d := range diffs {
			noise(eps, cfg.Seed, gen, k)
			for i, e := range eps {
				grad[i] += d / sd * e / (float64(cfg.Pairs) * cfg.Sigma)
			}
		}
	}
	// Adam (Kingma and Ba, Algorithm 1) ascending the score, with decay.
	const beta1, beta2, tiny = 0.9, 0.999, 1e-8
	t := float64(gen + 1)
	c1, c2 := 1-math.Pow(beta1, t), 1-math.Pow(beta2, t)
	var step float64
	for i := range grad {
		g := grad[i] - cfg.Decay*st.Theta[i]
		st.M[i] = beta1*st.M[i] + (1-beta1)*g
		st.V[i] = beta2*st.V[i] + (1-beta2)*g*g
		d := cfg.LR * (st.M[i] / c1) / (math.Sqrt(st.V[i]/c2) + tiny)
		st.Theta[i] += d
		step += d * d
	}
	out.Step = math.Sqrt(step)
	st.Generation++
	return out, nil
}

// noise writes pair k's noise of generation gen into eps.
func noise(eps []float64, seed uint64, gen, k int) {
	rng := rand.New(rand.NewPCG(seed, uint64(gen)<<24|uint64(k)))
	for i := range eps {
		eps[i] = rng.NormFloat64()
	}
}

// evaluate scores θ+σε_k and θ−σε_k for every pair k, on Workers
// goroutines; scores[2k] is the plus member.
func evaluate(ctx context.Context, theta []float64, gen int, cfg Config, f Objective) ([]float64, error) {
	scores := make([]float64, 2*cfg.Pairs)
	return scores, Each(ctx, cfg.Workers, len(scores), func(m int) error {
		eps, x := make([]float64, len(theta)), make([]float64, len(theta))
		noise(eps, cfg.Seed, gen, m/2)
		sign := 1 - 2*float64(m%2)
		for i := range x {
			x[i] = theta[i] + sign*cfg.Sigma*eps[i]
		}
		var err error
		scores[m], err = f(ctx, x, gen, m/2)
		return err
	})
}

// Each runs do(0), ..., do(n−1) on up to workers goroutines and returns
// their errors joined, or the context's error if it ended first. do must
// write only what index i owns, so results do not depend on workers.
func Each(ctx context.Context, workers, n int, do func(i int) error) error {
	jobs := make(chan int)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for range min(max(workers, 1), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				errs[i] = do(i)
			}
		}()
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(errs...)
}
