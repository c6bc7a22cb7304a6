package faasconfenv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/scenario"
)

// DefaultSeeds is how many seeds the default training chooses among: one,
// as choosing the best of two by their validation reward kept the more
// cautious policies, which saved nothing (docs/results/faasconf.md).
const DefaultSeeds = 1

// ValidationWindows is how many windows a candidate policy serves at each
// level when TrainBest chooses among seeds.
const ValidationWindows = 20

// TrainBest trains seeds policies, from cfg.Seed on (two at a time), and
// keeps the one that serves best on validation windows of their own
// (Validate): training variance between seeds is as large as the
// differences a recipe makes.
func TrainBest(ctx context.Context, sc *scenario.Scenario, cfg TrainConfig, seeds int) (*Trained, error) {
	if seeds <= 1 {
		return Train(ctx, sc, cfg)
	}
	env, err := New(sc, cfg.Env)
	if err != nil {
		return nil, err
	}
	out := make([]*Trained, seeds)
	errs := make([]error, seeds)
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i := range seeds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			c := cfg
			c.Seed += uint64(i)
			out[i], errs[i] = Train(ctx, sc, c)
		}()
	}
	wg.Wait()
	best, bestScore := -1, 0.0
	for i, tr := range out {
		if errs[i] != nil {
			return nil, fmt.Errorf("seed %d: %w", cfg.Seed+uint64(i), errs[i])
		}
		score := Validate(env, tr.Policy, ValidationWindows)
		tr.Policy.Provenance.Validation = append(tr.Policy.Provenance.Validation, score)
		if best < 0 || score > bestScore {
			best, bestScore = i, score
		}
	}
	for i, tr := range out { // every candidate's score, in the kept policy
		if i != best {
			out[best].Policy.Provenance.Validation = append(out[best].Policy.Provenance.Validation, tr.Policy.Provenance.Validation[0])
		}
	}
	out[best].Policy.Provenance.Candidates = seeds
	return out[best], nil
}

// Validate serves the policy as the controller does (an Agent that
// settles, from the workflow's own configuration) for windows windows at
// every level, on measurement seeds no training or study uses, and
// returns its mean reward (section 4.1: the price's term and β when the
// window met the QoS): what training maximises, measured as it serves.
func Validate(env *Env, pol *faasconf.Policy, windows int) float64 {
	total, n := 0.0, 0
	for li, level := range env.cfg.Levels {
		a := faasconf.NewAgent(pol, faasconf.Options{Seed: 0x76616c + uint64(li)}) // "val"
		rng := rand.New(rand.NewPCG(0x76616c69, uint64(li)))                       // "vali"
		own, obs := env.Measure(level, env.own(), rng)
		a.RecordRunning(level, own.Configs, own.Met)
		for range windows {
			m, o := env.Measure(level, a.Propose(level, obs), rng)
			a.Record(level, m.Met)
			total += env.alpha * m.Price
			if m.Met {
				total += env.cfg.Beta
			}
			obs, n = o, n+1
		}
	}
	return total / float64(n)
}
