package lbenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/learn/es"
	"github.com/shoal-project/shoal/scenario"
	"go.yaml.in/yaml/v3"
)

// GeneralConfig sets up the training of one general policy across a family
// of worlds. Zero fields take the defaults noted.
type GeneralConfig struct {
	Family Family // default DefaultFamily()
	// Generations of the evolution strategy (default 300).
	Generations int
	// ES configures the search (es.Config's defaults; Seed and Workers are
	// set from this config).
	ES es.Config
	// Hidden are the network's hidden widths (default [32], chosen on the validation worlds over 16).
	Hidden []int
	// Seed seeds the network's initial weights, the noise and every world.
	Seed uint64
	// Workers is the number of episodes simulated at once (default 2).
	// The result is the same for any number.
	Workers int
	// ValidateEvery is how often, in generations, the parameters are run
	// on ValidationWorlds worlds of their own beside probing-sed (default
	// 10 and 48). Training returns the parameters of the best validation;
	// the untrained network, which is probing-sed, scores 0.
	ValidateEvery    int
	ValidationWorlds int
	// Checkpoint, if set, is a file the search's state is saved to after
	// every generation and resumed from when it exists.
	Checkpoint string
	// Progress, if set, is called after every generation.
	Progress func(GeneralProgress)
	// Command is the command line recorded in the policy's provenance.
	Command string
}

// GeneralProgress is one generation's report.
type GeneralProgress struct {
	es.Generation
	Of       int // generations in all
	Episodes int // simulated so far, validation included
	// Validation is the score of this generation's validation (NaN when
	// none ran) and Best the best so far: the mean over the validation
	// worlds of (log p99 ratio + log mean ratio)/2 against probing-sed,
	// lower is better.
	Validation, Best float64
	// Worse is the share of the validation worlds where this generation's
	// p99 is more than 2% above probing-sed's (NaN when none ran).
	Worse   float64
	Resumed bool // this generation's state came from the checkpoint
}

func (c *GeneralConfig) defaults() error {
	if c.Family == (Family{}) {
		c.Family = DefaultFamily()
	}
	if err := c.Family.Validate(); err != nil {
		return fmt.Errorf("family: %w", err)
	}
	if c.Generations == 0 {
		c.Generations = 300
	}
	if len(c.Hidden) == 0 {
		c.Hidden = []int{32}
	}
	if c.Workers <= 0 {
		c.Workers = 2
	}
	if c.ValidateEvery == 0 {
		c.ValidateEvery = 10
	}
	if c.ValidationWorlds == 0 {
		c.ValidationWorlds = 48
	}
	c.ES.Seed, c.ES.Workers = c.Seed, c.Workers
	if c.ES.Pairs == 0 {
		c.ES.Pairs = 16
	}
	if c.Generations < 1 {
		return fmt.Errorf("generations: must be >= 1, got %d", c.Generations)
	}
	return nil
}

// ValidateGeneral runs p on the validation worlds of cfg's family beside
// probing-sed and returns its validation score (the mean log ratio, lower
// is better) and the share of worlds where its p99 is over 2% worse: what
// training selects on, for comparing policies trained on other families or
// settings.
func ValidateGeneral(ctx context.Context, cfg GeneralConfig, p *lb.GeneralPolicy) (score, worse float64, err error) {
	if err := cfg.defaults(); err != nil {
		return 0, 0, err
	}
	t := &generalTrainer{cfg: cfg, pol: p}
	if err := t.validationWorlds(); err != nil {
		return 0, 0, err
	}
	return t.validate(ctx, p.Params())
}

// checkpoint is what a checkpoint file holds.
type checkpoint struct {
	Config   string    `json:"config"` // the settings that must match to resume
	State    *es.State `json:"state"`
	Best     []float64 `json:"best"`
	BestGen  int       `json:"best_generation"`
	BestVal  float64   `json:"best_validation"`
	Episodes int       `json:"episodes"`
}

// TrainGeneral trains a general policy: an evolution strategy (learn/es)
// over the network's parameters, each pair of a generation scored on one
// world drawn from the family, with common random numbers, by
// −(log p99 + log mean)/2 of its response times. Validation keeps the
// best parameters, starting from the untrained network (probing-sed).
func TrainGeneral(ctx context.Context, cfg GeneralConfig) (*lb.GeneralPolicy, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	pol, err := lb.NewGeneralPolicy(cfg.Hidden, cfg.Seed)
	if err != nil {
		return nil, err
	}
	fam, err := yaml.Marshal(cfg.Family)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("seed %d hidden %v es %+v validate %d/%d family %s", cfg.Seed, cfg.Hidden, cfg.ES, cfg.ValidateEvery, cfg.ValidationWorlds, fam)
	cp := &checkpoint{Config: key, State: es.NewState(pol.Params()), Best: pol.Params()}
	resumed := false
	if cfg.Checkpoint != "" {
		if resumed, err = cp.load(cfg.Checkpoint); err != nil {
			return nil, err
		}
	}
	t := &generalTrainer{cfg: cfg, pol: pol}
	if err := t.validationWorlds(); err != nil {
		return nil, err
	}
	for cp.State.Generation < cfg.Generations {
		g, err := es.Step(ctx, cp.State, cfg.ES, t.score)
		if err != nil {
			return nil, err
		}
		cp.Episodes += 2 * cfg.ES.Pairs
		val, worse := math.NaN(), math.NaN()
		if g.Index%cfg.ValidateEvery == 0 || g.Index == cfg.Generations {
			if val, worse, err = t.validate(ctx, cp.State.Theta); err != nil {
				return nil, err
			}
			cp.Episodes += cfg.ValidationWorlds
			if val < cp.BestVal {
				cp.Best, cp.BestGen, cp.BestVal = slices.Clone(cp.State.Theta), g.Index, val
			}
		}
		if cfg.Checkpoint != "" {
			if err := cp.save(cfg.Checkpoint); err != nil {
				return nil, err
			}
		}
		if cfg.Progress != nil {
			cfg.Progress(GeneralProgress{Generation: g, Of: cfg.Generations, Episodes: cp.Episodes, Validation: val, Best: cp.BestVal, Worse: worse, Resumed: resumed})
		}
	}
	if err := pol.SetParams(cp.Best); err != nil {
		return nil, err
	}
	pol.Provenance = lb.GeneralProvenance{Command: cfg.Command, Family: string(fam), Seed: cfg.Seed, Generations: cfg.Generations,
		Selected: cp.BestGen, Validation: cp.BestVal, Episodes: cp.Episodes}
	return pol, nil
}

func (cp *checkpoint) load(path string) (bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("checkpoint: %w", err)
	}
	var old checkpoint
	if err := json.Unmarshal(b, &old); err != nil {
		return false, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if old.Config != cp.Config {
		return false, fmt.Errorf("checkpoint %s was written by another training (%s); remove it or change --checkpoint", path, old.Config)
	}
	if old.State == nil || len(old.State.Theta) != len(cp.State.Theta) || len(old.Best) != len(cp.Best) {
		return false, fmt.Errorf("checkpoint %s: parameters of another size", path)
	}
	*cp = old
	return true, nil
}

// save writes the checkpoint atomically: to a temporary file, then renamed.
func (cp *checkpoint) save(path string) error {
	b, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return os.Rename(tmp, path)
}

// generalTrainer scores parameters on worlds of the family.
type generalTrainer struct {
	cfg GeneralConfig
	pol *lb.GeneralPolicy
	val []*scenario.Scenario
	// base holds probing-sed's mean and p99 on each validation world.
	base [][2]float64
}

// world draws the world of pair k of generation gen from the training
// seed's stream, or with gen −1 validation world k, from a stream of its
// own that no training seed shares, so that runs of different seeds and
// settings are compared on the same validation worlds.
func (t *generalTrainer) world(gen, k int) (*scenario.Scenario, error) {
	seed := t.cfg.Seed ^ 0x35a1_9e37
	if gen < 0 {
		seed = validationStream
	}
	rng := rand.New(rand.NewPCG(seed, uint64(gen+1)<<24|uint64(k)))
	return t.cfg.Family.Draw(rng, k)
}

// validationStream seeds the validation worlds.
const validationStream = 0x7a11_da7e

func (t *generalTrainer) validationWorlds() error {
	t.val, t.base = make([]*scenario.Scenario, t.cfg.ValidationWorlds), make([][2]float64, t.cfg.ValidationWorlds)
	return es.Each(context.Background(), t.cfg.Workers, t.cfg.ValidationWorlds, func(k int) error {
		sc, err := t.world(-1, k)
		if err != nil {
			return err
		}
		t.val[k] = sc
		m, p, err := RunGeneral(sc, nil)
		t.base[k] = [2]float64{m, p}
		return err
	})
}

// score is the evolution strategy's objective.
func (t *generalTrainer) score(_ context.Context, theta []float64, gen, k int) (float64, error) {
	sc, err := t.world(gen, k)
	if err != nil {
		return 0, err
	}
	p := t.pol.Clone()
	if err := p.SetParams(theta); err != nil {
		return 0, err
	}
	m, p99, err := RunGeneral(sc, p)
	return -(math.Log(p99) + math.Log(m)) / 2, err
}

// validate scores theta on the validation worlds against probing-sed:
// the mean log ratio, and the share of worlds with a p99 over 2% above.
func (t *generalTrainer) validate(ctx context.Context, theta []float64) (score, worse float64, err error) {
	p := t.pol.Clone()
	if err := p.SetParams(theta); err != nil {
		return 0, 0, err
	}
	ratios, tails := make([]float64, len(t.val)), make([]float64, len(t.val))
	err = es.Each(ctx, t.cfg.Workers, len(t.val), func(k int) error {
		m, p99, err := RunGeneral(t.val[k], p) // selectors only read the network
		ratios[k] = (math.Log(p99/t.base[k][1]) + math.Log(m/t.base[k][0])) / 2
		tails[k] = p99 / t.base[k][1]
		return err
	})
	for k, r := range ratios {
		score += r / float64(len(ratios))
		if tails[k] > 1.02 {
			worse += 1 / float64(len(ratios))
		}
	}
	return score, worse, err
}

// RunGeneral runs a world once with its own seed, every LB point running the
// general policy p (nil: probing-sed), and returns the mean and p99
// response time of its requests, in seconds.
func RunGeneral(sc *scenario.Scenario, p *lb.GeneralPolicy) (mean, p99 float64, err error) {
	reg, name := lb.Classical(), "probing-sed"
	if p != nil {
		reg[lb.GeneralName], name = p.Selector, lb.GeneralName
	}
	cl, err := cluster.New(&sc.Config, cluster.Options{Seed: sc.Seed, Selectors: reg, Policy: name, Traces: sc.Traces(),
		Horizon: sc.Horizon, Warmup: sc.Warmup, SamplePeriod: sc.SamplePeriod})
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", sc.Name, err)
	}
	cl.RunUntil(sc.Horizon)
	cl.Drain(sc.Drain)
	h := &cl.Results().Latency
	if h.Count() == 0 {
		return 0, 0, fmt.Errorf("%s: no request completed", sc.Name)
	}
	return h.Mean(), h.Quantile(0.99), nil
}
