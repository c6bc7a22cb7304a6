package experiment

import (
	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/control/jolteon"
	"github.com/shoal-project/shoal/envs/faasconfenv"
	"github.com/shoal-project/shoal/envs/firmenv"
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
	cs, _ := JolteonSolve(t.env, t.samples, level, t.seed)
	return cs
}

// JolteonSolve fits the model of env's workflow to the samples and solves
// for the level; ok is false when no configuration of the space meets the
// QoS on the model (the largest is returned).
func JolteonSolve(env *faasconfenv.Env, samples []jolteon.Sample, level float64, seed uint64) ([]faasconf.Config, bool) {
	sc := env.Scenario()
	funcs := env.Functions()
	m, err := jolteon.Fit(funcs, faasconfenv.Footprint(sc, funcs).Memory, *firmenv.CallGraph(sc), samples)
	if err != nil {
		return env.Defaults(), false
	}
	s := jolteon.Solver{Model: m, Space: env.Space(), QoS: env.QoS(), Samples: jolteon.DefaultSamples, Seed: seed, CPUStep: 0.125,
		Window: env.Window()}
	return s.Solve(env.Rate(level))
}
