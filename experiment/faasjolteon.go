package experiment

import (
	"cmp"
	"context"
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/control/jolteon"
	"github.com/shoal-project/shoal/envs/faasconfenv"
	"github.com/shoal-project/shoal/envs/firmenv"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/scenario"
)

// JolteonTuner is the Jolteon-like configurator (control/jolteon) in a
// tuning session: its profile is the warm-up measurements the BO baselines
// get, plus every measurement of the session; each round it fits the
// model to all of them and runs the chance-constrained optimum at the
// level. Like the paper's baselines it sets CPU, memory and instances
// (the hardware-only space).
type JolteonTuner struct {
	env     *faasconfenv.Env
	samples []jolteon.Sample
	seed    uint64
}

// NewJolteonTuner returns the tuner in env, told the warm-up measurements.
func NewJolteonTuner(env *faasconfenv.Env, warm []faasconfenv.Measurement, seed uint64) *JolteonTuner {
	t := &JolteonTuner{env: env, seed: seed}
	for _, m := range warm {
		t.samples = append(t.samples, SampleOf(m))
	}
	return t
}

// SampleOf is a measurement as a profiling sample.
func SampleOf(m faasconfenv.Measurement) jolteon.Sample {
	return jolteon.Sample{Configs: m.Configs, Period: m.Period, Services: m.Services, Classes: m.Classes}
}

// Next implements FaaSTuner.
func (t *JolteonTuner) Next(level float64, last faasconfenv.Measurement, _ [][]float64, _ bool) []faasconf.Config {
	t.samples = append(t.samples, SampleOf(last))
	cs, _ := JolteonSolve(t.env, t.samples, level, t.seed, last.Configs)
	return cs
}

// JolteonSolve fits the model of env's workflow to the samples and solves
// for the level, descending from the largest configuration and from the
// starts; ok is false when no configuration of the space meets the QoS on
// the model (the largest is returned).
func JolteonSolve(env *faasconfenv.Env, samples []jolteon.Sample, level float64, seed uint64, starts ...[]faasconf.Config) ([]faasconf.Config, bool) {
	m, err := jolteonModel(env, samples)
	if err != nil {
		return env.Defaults(), false
	}
	return jolteonSolve(env, m, level, seed, starts...)
}

// jolteonModel fits the model of env's workflow to the samples.
func jolteonModel(env *faasconfenv.Env, samples []jolteon.Sample) (*jolteon.Model, error) {
	sc, funcs := env.Scenario(), env.Functions()
	return jolteon.Fit(funcs, faasconfenv.Footprint(sc, funcs).Memory, *firmenv.CallGraph(sc), samples)
}

// jolteonSolve solves the model for the level, within the space and the
// nodes of env's scenario.
func jolteonSolve(env *faasconfenv.Env, m *jolteon.Model, level float64, seed uint64, starts ...[]faasconf.Config) ([]faasconf.Config, bool) {
	fp := faasconfenv.Footprint(env.Scenario(), env.Functions())
	s := jolteon.Solver{Model: m, Space: env.Space(), QoS: env.QoS(), Samples: jolteon.DefaultSamples, Seed: seed, CPUStep: 0.125,
		Window: env.Window(), Fitter: faasconf.NewFitter(fp, env.Space())}
	return s.Solve(env.Rate(level), starts...)
}

// JolteonTraining sets TrainJolteon: the workflow's QoS (zero: the
// default), the profiling seed, and a progress callback per level.
type JolteonTraining struct {
	QoS      faasconf.QoS
	Seed     uint64
	Warm     int // random configurations profiled per level (the BO baselines' warm-up)
	Rounds   int // solve, run and refit rounds per level
	Progress func(level float64, price float64, met int)
}

// TrainJolteon profiles the workflow as the study's sessions do, at every
// workload level (Warm random configurations, then Rounds of solving the
// model refitted to everything measured and running the solution), fits
// the model to all of it and solves every level: a policy the
// jolteon.Controller serves.
func TrainJolteon(ctx context.Context, sc *scenario.Scenario, cfg JolteonTraining) (*jolteon.Policy, error) {
	env, err := JolteonEnv(sc, cfg.QoS)
	if err != nil {
		return nil, err
	}
	study := FaaSConfStudy{Warm: cmp.Or(cfg.Warm, 20)}
	levels := faasconfenv.DefaultConfig().Levels
	var samples []jolteon.Sample
	for li, level := range levels {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		seed := cfg.Seed + uint64(li)<<32
		t := NewJolteonTuner(env, study.warm(env, level, seed), seed)
		r := RunFaaSSession(env, level, t, cmp.Or(cfg.Rounds, 15), rand.New(rand.NewPCG(seed, 0x70726f66))) // "prof"
		samples = append(samples, t.samples...)
		samples = append(samples, SampleOf(r.Measurements[len(r.Measurements)-1]))
		if cfg.Progress != nil {
			cfg.Progress(level, r.Best, r.Met)
		}
	}
	p := &jolteon.Policy{Functions: env.Functions(), QoS: env.QoS(), Window: modelfile.Duration(env.Window()), BaseRate: env.Rate(1),
		Levels: levels, Provenance: jolteon.Provenance{Scenario: sc.Name, Seed: cfg.Seed, Profiled: len(samples)}}
	if p.Model, err = jolteonModel(env, samples); err != nil {
		return nil, err
	}
	// Every level, from the highest down, each also descending from the
	// solutions of the levels above it (they hold a higher load).
	p.Configs = make([][]faasconf.Config, len(levels))
	for i := len(levels) - 1; i >= 0; i-- {
		p.Configs[i], _ = jolteonSolve(env, p.Model, levels[i], cfg.Seed, p.Configs[i+1:]...)
	}
	return p, p.Validate()
}

// JolteonEnv is the workflow's environment in the hardware-only space the
// Jolteon-like configures, with the QoS (zero: the default) set from the
// hybrid space's own configuration, as FaaSConf's.
func JolteonEnv(sc *scenario.Scenario, qos faasconf.QoS) (*faasconfenv.Env, error) {
	hy, err := faasconfenv.New(sc, faasconfenv.Config{QoS: qos})
	if err != nil {
		return nil, err
	}
	return faasconfenv.New(sc, faasconfenv.Config{Space: hy.Space().HardwareOnly(), QoS: hy.QoS()})
}

// JolteonPolicy serves a Jolteon-like policy: one decision per window.
func JolteonPolicy(p *jolteon.Policy) Learned {
	return Learned{Period: time.Duration(p.Window), Write: p.Write, New: func(*cluster.Cluster) ([]control.Controller, error) {
		return []control.Controller{jolteon.NewController(p)}, nil
	}}
}
