package experiment

import (
	"math/rand/v2"

	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/envs/faasconfenv"
)

// FaaSTuner is a method of FaaSConf's comparison (section 5.1.3): in a
// tuning session at one workload level it proposes the workflow's
// configurations one at a time and sees how each did.
type FaaSTuner interface {
	// Next returns the configurations to measure next. last is the
	// measurement before (the scenario's own configuration at the start)
	// and obs the agents' observation of it; first says it is the start.
	Next(level float64, last faasconfenv.Measurement, obs [][]float64, first bool) []faasconf.Config
}

// FaaSSession is one tuning session: every configuration measured, and
// the price per hour of the cheapest that met the QoS (0 if none did).
type FaaSSession struct {
	Level        float64
	Measurements []faasconfenv.Measurement
	Best         float64
	Met          int
}

// RunFaaSSession measures the scenario's own configuration at the level,
// then lets the tuner propose iterations configurations (the paper's 15
// rounds), each measured on a seed drawn from rng.
func RunFaaSSession(env *faasconfenv.Env, level float64, t FaaSTuner, iterations int, rng *rand.Rand) FaaSSession {
	s := FaaSSession{Level: level}
	last, obs := env.Measure(level, env.Defaults(), rng)
	for i := range iterations {
		m, o := env.Measure(level, t.Next(level, last, obs, i == 0), rng)
		s.Measurements = append(s.Measurements, m)
		if m.Met {
			s.Met++
			if s.Best == 0 || m.Price < s.Best {
				s.Best = m.Price
			}
		}
		last, obs = m, o
	}
	return s
}

// FaaSConfTuner tunes with a trained policy: its actors propose, its safe
// exploration filters, and every outcome joins the history.
type FaaSConfTuner struct{ Agent *faasconf.Agent }

// Next implements FaaSTuner.
func (t FaaSConfTuner) Next(level float64, last faasconfenv.Measurement, obs [][]float64, first bool) []faasconf.Config {
	if !first {
		t.Agent.Record(level, last.Met)
	}
	return t.Agent.Propose(level, obs)
}

// RandomTuner is random search (RS): configurations drawn uniformly from
// the space.
type RandomTuner struct {
	Space faasconf.Space
	N     int // functions
	Rng   *rand.Rand
}

// Next implements FaaSTuner.
func (t RandomTuner) Next(float64, faasconfenv.Measurement, [][]float64, bool) []faasconf.Config {
	out := make([]faasconf.Config, t.N)
	a := make([]float64, faasconf.ActionDim)
	for j := range out {
		for k := range a {
			a[k] = 2*t.Rng.Float64() - 1
		}
		out[j] = t.Space.Decode(a)
	}
	return out
}
