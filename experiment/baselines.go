package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/autothrottle"
	"github.com/shoal-project/shoal/control/coscal"
	"github.com/shoal-project/shoal/control/firm"
	"github.com/shoal-project/shoal/envs/autothrottleenv"
	"github.com/shoal-project/shoal/envs/coscalenv"
	"github.com/shoal-project/shoal/envs/firmenv"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/scenario"
)

// FIRMPolicy runs a trained FIRM-like policy over the scenario's call
// graph, timing its decisions (one per period: at most one culprit).
func FIRMPolicy(p *firm.Policy, sc *scenario.Scenario) Learned {
	g := firmenv.CallGraph(sc)
	return Learned{Period: time.Duration(p.Period), Write: p.Write, New: func(*cluster.Cluster) ([]control.Controller, error) {
		c := firm.NewController(p, g)
		return []control.Controller{&timed{Controller: c, per: func() int { return c.Stats().Periods }}}, nil
	}}
}

// CoScalPolicy runs a trained CoScal-like policy, timing its decisions (one
// per deployment per period).
func CoScalPolicy(p *coscal.Policy, _ *scenario.Scenario) Learned {
	return Learned{Period: time.Duration(p.Period), Write: p.Write, New: func(*cluster.Cluster) ([]control.Controller, error) {
		c := coscal.NewController(p)
		return []control.Controller{&timed{Controller: c, per: func() int { return c.Stats().Decisions }}}, nil
	}}
}

// baselines returns DRPC's baselines FIRM and CoScal for evaluation on sc,
// each loaded from PolicyDir or trained on train (Budget of wall time each)
// and saved there, with their parameter counts.
func (s DRPCStudy) baselines(ctx context.Context, train, sc *scenario.Scenario) (map[string]Learned, map[string]int, error) {
	fp, cp, err := s.baselinePolicies(ctx, train)
	if err != nil {
		return nil, nil, err
	}
	learned := map[string]Learned{"firm": FIRMPolicy(fp, sc), "coscal": CoScalPolicy(cp, sc)}
	return learned, map[string]int{"firm": fp.Parameters(), "coscal": cp.Parameters()}, nil
}

// baselinePolicies are FIRM-like's and CoScal-like's policies, each loaded
// from PolicyDir or trained on train (Budget of wall time each) and saved
// there.
func (s DRPCStudy) baselinePolicies(ctx context.Context, train *scenario.Scenario) (*firm.Policy, *coscal.Policy, error) {
	deadline := func() (time.Time, func() time.Time) {
		if s.Budget > 0 && s.Now != nil {
			return s.Now().Add(s.Budget), s.Now
		}
		return time.Time{}, nil
	}
	var fp *firm.Policy
	err := s.loadOrTrain("firm", func(r io.Reader) (err error) { fp, err = firm.ReadPolicy(r); return err },
		func() (func(io.Writer) error, error) {
			cfg := firmenv.DefaultConfig()
			cfg.Seed = s.TrainSeed
			cfg.Deadline, cfg.Now = deadline()
			start := time.Now()
			tr, err := firmenv.Train(ctx, train, cfg)
			if err != nil {
				return nil, err
			}
			fp = tr.Policy
			fp.Provenance.WallSeconds = time.Since(start).Seconds()
			return fp.Write, nil
		})
	if err != nil {
		return nil, nil, err
	}
	var cp *coscal.Policy
	err = s.loadOrTrain("coscal", func(r io.Reader) (err error) { cp, err = coscal.ReadPolicy(r); return err },
		func() (func(io.Writer) error, error) {
			cfg := coscalenv.DefaultConfig()
			cfg.Seed = s.TrainSeed
			cfg.Deadline, cfg.Now = deadline()
			start := time.Now()
			tr, err := coscalenv.Train(ctx, train, cfg)
			if err != nil {
				return nil, err
			}
			cp = tr.Policy
			cp.Provenance.WallSeconds = time.Since(start).Seconds()
			return cp.Write, nil
		})
	if err != nil {
		return nil, nil, err
	}
	return fp, cp, nil
}

// loadOrTrain reads PolicyDir's policy file of learner name with read, or
// trains one and writes it there (renamed into place, so an interrupted
// run leaves no half-written file).
func (s DRPCStudy) loadOrTrain(name string, read func(io.Reader) error, train func() (func(io.Writer) error, error)) error {
	file := filepath.Join(s.PolicyDir, fmt.Sprintf("%s-seed%d.policy", name, s.TrainSeed))
	return reuseOrTrain(file, s.logf, read, func() (func(io.Writer) error, error) {
		s.logf("training %s", name)
		write, err := train()
		if err != nil {
			return nil, fmt.Errorf("train %s: %w", name, err)
		}
		return write, nil
	})
}

// reuseOrTrain reads a policy file with read if it exists; otherwise train
// trains, and the file is written (its directory made) with what train
// returns.
func reuseOrTrain(file string, logf func(string, ...any), read func(io.Reader) error, train func() (func(io.Writer) error, error)) error {
	if f, err := os.Open(file); err == nil {
		defer f.Close()
		if err := read(f); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		logf("reusing %s", file)
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	write, err := train()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return modelfile.WriteFile(file, write)
}

// autothrottlePolicy is the Autothrottle-like baseline's warmed-up
// policy, loaded from PolicyDir or warmed up on train and saved there.
func (s DRPCStudy) autothrottlePolicy(ctx context.Context, train *scenario.Scenario) (*autothrottle.Policy, error) {
	file := filepath.Join(s.PolicyDir, fmt.Sprintf("autothrottle-seed%d.policy", s.TrainSeed))
	var p *autothrottle.Policy
	err := reuseOrTrain(file, s.logf, func(r io.Reader) (err error) { p, err = autothrottle.ReadPolicy(r); return err },
		func() (func(io.Writer) error, error) {
			cfg := autothrottleenv.DefaultConfig(train)
			cfg.Seed = s.TrainSeed
			cfg.Progress = func(ep, samples int, v float64) {
				s.logf("autothrottle warm-up: episode %d, %d samples, SLO violations %.1f%%", ep, samples, 100*v)
			}
			var err error
			if p, err = autothrottleenv.Train(ctx, train, cfg); err != nil {
				return nil, err
			}
			return p.Write, nil
		})
	return p, err
}

// AutothrottlePolicy runs a warmed-up Autothrottle-like policy, its Tower
// aiming at slo seconds of p99 (0: the file's) and exploring with chance
// explore, timing its decisions (one per service per period). Every run
// starts from the file's samples and learns from its own.
func AutothrottlePolicy(p *autothrottle.Policy, slo, explore float64) Learned {
	q := *p
	if slo > 0 {
		q.Tower.SLO = slo
	}
	return Learned{Write: p.Write, New: func(*cluster.Cluster) ([]control.Controller, error) {
		c := autothrottle.NewController(&q, explore, q.Seed)
		return []control.Controller{&timed{Controller: c, per: func() int { return len(q.Clusters) }}}, nil
	}}
}
