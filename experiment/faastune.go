package experiment

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/envs/faasconfenv"
	"github.com/shoal-project/shoal/learn/bo"
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

// AquatopeTuner is Aquatope-like Bayesian optimisation (Zhou et al.,
// ASPLOS 2023, as FaaSConf section 5.1.3 describes it): a Gaussian process
// of the price over the whole workflow's configuration, an independent one
// of the QoS (two constraints: mean latency over the target, and the share
// served under its bound), and noisy expected improvement; warmed up with
// training measurements at the level, then one proposal per round. Its
// first proposal is one point of learn/bo's Latin-hypercube design (it
// needs at least one).
type AquatopeTuner struct {
	opt   *bo.BayesOpt
	space faasconf.Space
	qos   faasconf.QoS
	n     int
}

// NewAquatopeTuner returns the tuner for n functions, told the warm-up
// measurements first.
func NewAquatopeTuner(space faasconf.Space, n int, qos faasconf.QoS, warm []faasconfenv.Measurement, rng *rand.Rand) (*AquatopeTuner, error) {
	var params []bo.Param
	for j := range n {
		params = append(params,
			bo.Param{Name: fmt.Sprintf("cpu%d", j), Kind: bo.Continuous, Low: space.CPU[0], High: space.CPU[1]},
			bo.Param{Name: fmt.Sprintf("memory%d", j), Kind: bo.Continuous, Low: space.MemoryMB[0], High: space.MemoryMB[1]},
			bo.Param{Name: fmt.Sprintf("instances%d", j), Kind: bo.Integer, Low: float64(space.Instances[0]), High: float64(space.Instances[1])},
			bo.Param{Name: fmt.Sprintf("concurrency%d", j), Kind: bo.Integer, Low: float64(space.Concurrency[0]), High: float64(space.Concurrency[1])})
	}
	opt, err := bo.NewBayesOpt(bo.Config{Space: params, Constraints: 2, Acquisition: bo.NoisyEI, InitialPoints: 1}, rng)
	if err != nil {
		return nil, err
	}
	t := &AquatopeTuner{opt: opt, space: space, qos: qos, n: n}
	for _, m := range warm {
		if err := t.tell(m); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Next implements FaaSTuner.
func (t *AquatopeTuner) Next(_ float64, last faasconfenv.Measurement, _ [][]float64, _ bool) []faasconf.Config {
	if err := t.tell(last); err != nil {
		panic(fmt.Sprintf("aquatope: %v", err)) // configurations of the space: cannot fail
	}
	x, err := t.opt.Ask()
	if err != nil {
		panic(fmt.Sprintf("aquatope: %v", err))
	}
	out := make([]faasconf.Config, t.n)
	for j := range out {
		out[j] = faasconf.Config{CPU: x[4*j], MemoryMB: x[4*j+1], Instances: int(x[4*j+2]), Concurrency: int(x[4*j+3])}
	}
	return out
}

// tell records a measurement: its price, and its QoS as constraints
// (latency capped at ten times the target when nothing was served).
func (t *AquatopeTuner) tell(m faasconfenv.Measurement) error {
	x := make([]float64, 0, 4*t.n)
	for _, c := range m.Configs {
		sp := t.space
		x = append(x, max(sp.CPU[0], min(sp.CPU[1], c.CPU)), max(sp.MemoryMB[0], min(sp.MemoryMB[1], c.MemoryMB)),
			float64(max(sp.Instances[0], min(sp.Instances[1], c.Instances))),
			float64(max(sp.Concurrency[0], min(sp.Concurrency[1], c.Concurrency))))
	}
	target := t.qos.Latency.Seconds()
	lat := math.Min(m.Window.MeanLatency(), 10*target)
	return t.opt.Tell(x, m.Price, []float64{lat - target, t.qos.MinServed - m.Window.ServedShare()})
}
