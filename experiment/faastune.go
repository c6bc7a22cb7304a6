package experiment

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

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
	// Verified is the price per hour of the cheapest configuration that
	// met the QoS and meets it again on the oracle's seeds (0: none;
	// FaaSOracle.verify sets it).
	Verified float64
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
// exploration filters, and every outcome joins the history, the scenario's
// own configuration measured at the start included (as the other methods
// are told it), kept by the lowest level trained on at or above the
// session's (as the run-time controller keeps it).
type FaaSConfTuner struct{ Agent *faasconf.Agent }

// Next implements FaaSTuner.
func (t FaaSConfTuner) Next(level float64, last faasconfenv.Measurement, obs [][]float64, first bool) []faasconf.Config {
	p := t.Agent.Policy()
	if first {
		t.Agent.RecordRunning(p.Level(last.Level*p.BaseRate), last.Configs, last.Met)
	} else {
		t.Agent.Record(p.Level(last.Level*p.BaseRate), last.Met)
	}
	return t.Agent.Propose(p.Level(level*p.BaseRate), obs)
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

// boSpace encodes a workflow's configuration as a point of learn/bo's
// space: CPU, memory, instances and (in a hybrid space) the concurrency of
// every function in turn.
type boSpace struct {
	space faasconf.Space
	n     int
}

func (b boSpace) width() int {
	if b.space.Hybrid() {
		return 4
	}
	return 3
}

func (b boSpace) params() []bo.Param {
	sp := b.space
	var ps []bo.Param
	for j := range b.n {
		ps = append(ps,
			bo.Param{Name: fmt.Sprintf("cpu%d", j), Kind: bo.Continuous, Low: sp.CPU[0], High: sp.CPU[1]},
			bo.Param{Name: fmt.Sprintf("memory%d", j), Kind: bo.Continuous, Low: sp.MemoryMB[0], High: sp.MemoryMB[1]},
			bo.Param{Name: fmt.Sprintf("instances%d", j), Kind: bo.Integer, Low: float64(sp.Instances[0]), High: float64(sp.Instances[1])})
		if sp.Hybrid() {
			ps = append(ps, bo.Param{Name: fmt.Sprintf("concurrency%d", j), Kind: bo.Integer, Low: float64(sp.Concurrency[0]), High: float64(sp.Concurrency[1])})
		}
	}
	return ps
}

// point is the configurations as a point, clamped into the space (the
// scenario's own configuration may lie outside it).
func (b boSpace) point(cs []faasconf.Config) []float64 {
	sp := b.space
	x := make([]float64, 0, b.width()*b.n)
	for _, c := range cs {
		x = append(x, max(sp.CPU[0], min(sp.CPU[1], c.CPU)), max(sp.MemoryMB[0], min(sp.MemoryMB[1], c.MemoryMB)),
			float64(max(sp.Instances[0], min(sp.Instances[1], c.Instances))))
		if sp.Hybrid() {
			x = append(x, float64(max(sp.Concurrency[0], min(sp.Concurrency[1], c.Concurrency))))
		}
	}
	return x
}

// configs is the point's configurations (no concurrency limit in a
// hardware-only space).
func (b boSpace) configs(x []float64) []faasconf.Config {
	w := b.width()
	out := make([]faasconf.Config, b.n)
	for j := range out {
		out[j] = faasconf.Config{CPU: x[w*j], MemoryMB: x[w*j+1], Instances: int(x[w*j+2])}
		if w == 4 {
			out[j].Concurrency = int(x[w*j+3])
		}
	}
	return out
}

// cappedLatency is what the QoS bounds in a window (its mean latency, or
// its percentile), in seconds, capped at ten times the QoS target (and at
// the cap when nothing was served).
func cappedLatency(w faasconf.Window, q faasconf.QoS) float64 {
	return math.Min(q.Measure(w), 10*q.Latency.Seconds())
}

// AquatopeTuner is Aquatope-like Bayesian optimisation (Zhou et al.,
// ASPLOS 2023, as FaaSConf section 5.1.3 describes it): a Gaussian process
// of the price over the whole workflow's configuration, an independent one
// of the QoS (two constraints: mean latency over the target, and the share
// served under its bound), and noisy expected improvement; warmed up with
// training measurements at the level, then one proposal per round.
// Aquatope configures CPU, memory and instances, not
// the concurrency (FaaSConf Table 1), so the study gives it the
// hardware-only space; in a hybrid space it tunes the concurrency too.
type AquatopeTuner struct {
	opt *bo.BayesOpt
	enc boSpace
	qos faasconf.QoS
}

// NewAquatopeTuner returns the tuner for n functions, told the warm-up
// measurements first.
func NewAquatopeTuner(space faasconf.Space, n int, qos faasconf.QoS, warm []faasconfenv.Measurement, rng *rand.Rand) (*AquatopeTuner, error) {
	enc := boSpace{space: space, n: n}
	opt, err := bo.NewBayesOpt(bo.Config{Space: enc.params(), Constraints: 2, Acquisition: bo.NoisyEI, InitialPoints: 1}, rng)
	if err != nil {
		return nil, err
	}
	t := &AquatopeTuner{opt: opt, enc: enc, qos: qos}
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
	return t.enc.configs(x)
}

// tell records a measurement: its price, and its QoS as constraints.
func (t *AquatopeTuner) tell(m faasconfenv.Measurement) error {
	target := t.qos.Latency.Seconds()
	return t.opt.Tell(t.enc.point(m.Configs), m.Price, []float64{cappedLatency(m.Window, t.qos) - target, t.qos.MinServed - m.Window.ServedShare()})
}

// RAMBOTuner is RAMBO-like multi-objective Bayesian optimisation (Li et al.,
// IEEE CAL 2021, as FaaSConf section 5.1.3 describes it): a holistic view
// of the workflow, searching the trade-off between performance and cost.
// RAMBO's text names multi-objective BO without its acquisition; this is
// ParEGO (Knowles 2006): every round draws weights λ on the simplex and
// fits a Gaussian process to the augmented Chebyshev scalarisation
// max_i λ_i f_i + 0.05 Σ_i λ_i f_i of the two objectives, the price over
// the largest configuration's and the mean latency over the target (ten
// times the target when under 99% were served), then proposes the
// expected-improvement maximiser. Warmed up as the Aquatope-like tuner,
// in the hardware-only space (FaaSConf: the baselines neglect the
// concurrency).
type RAMBOTuner struct {
	enc     boSpace
	qos     faasconf.QoS
	largest float64
	rng     *rand.Rand
	xs      [][]float64
	fs      [][2]float64
}

// NewRAMBOTuner returns the tuner for n functions, told the warm-up
// measurements first.
func NewRAMBOTuner(space faasconf.Space, n int, qos faasconf.QoS, warm []faasconfenv.Measurement, rng *rand.Rand) *RAMBOTuner {
	t := &RAMBOTuner{enc: boSpace{space: space, n: n}, qos: qos, largest: space.LargestPrice(n), rng: rng}
	for _, m := range warm {
		t.tell(m)
	}
	return t
}

func (t *RAMBOTuner) tell(m faasconfenv.Measurement) {
	lat := cappedLatency(m.Window, t.qos)
	if m.Window.ServedShare() < t.qos.MinServed {
		lat = 10 * t.qos.Latency.Seconds()
	}
	t.xs = append(t.xs, t.enc.point(m.Configs))
	t.fs = append(t.fs, [2]float64{m.Price / t.largest, lat / t.qos.Latency.Seconds()})
}

// Next implements FaaSTuner.
func (t *RAMBOTuner) Next(_ float64, last faasconfenv.Measurement, _ [][]float64, _ bool) []faasconf.Config {
	t.tell(last)
	x, err := t.ask()
	if err != nil {
		panic(fmt.Sprintf("rambo: %v", err)) // configurations of the space: cannot fail
	}
	return t.enc.configs(x)
}

// ask draws the round's weights λ and fits the scalarised outcomes.
func (t *RAMBOTuner) ask() ([]float64, error) {
	l := t.rng.Float64()
	w := [2]float64{l, 1 - l}
	opt, err := bo.NewBayesOpt(bo.Config{Space: t.enc.params(), InitialPoints: 1}, t.rng)
	if err != nil {
		return nil, err
	}
	for i, x := range t.xs {
		f := t.fs[i]
		if err := opt.Tell(x, max(w[0]*f[0], w[1]*f[1])+0.05*(w[0]*f[0]+w[1]*f[1]), nil); err != nil {
			return nil, err
		}
	}
	return opt.Ask()
}

// FirmTuner is FIRM-like tuning (Qiu et al., OSDI 2020, as FaaSConf
// section 5.1.3 describes it): a DDPG agent adjusts the resources of the
// function that needs scaling and leaves the others as they are. FIRM finds
// that function with an SVM over the critical path; in a tuning session
// with one window per round this tuner takes, after a window that missed
// the QoS, the function with the highest 95th-percentile latency relative
// to the target (the critical component), and after one that met it the
// function using the least of its CPU (the one FIRM's utilisation reward
// reclaims first). Its actor is the trained independent-DDPG policy's (in
// the hardware-only space: FIRM scales CPU, memory and instances), with
// DDPG's Gaussian exploration noise.
type FirmTuner struct {
	Policy *faasconf.Policy
	Noise  float64 // std of the exploration noise in action units (0.1)
	Rng    *rand.Rand
}

// Next implements FaaSTuner.
func (t *FirmTuner) Next(_ float64, last faasconfenv.Measurement, obs [][]float64, _ bool) []faasconf.Config {
	cs := slices.Clone(last.Configs)
	j := culprit(obs, last.Met)
	a := make([]float64, faasconf.ActionDim)
	for k, v := range t.Policy.Actors().Act(obs)[j] {
		a[k] = float64(v) + t.Noise*t.Rng.NormFloat64()
	}
	cs[j] = t.Policy.Space.Decode(a)
	return cs
}

// culprit is the function FirmTuner changes: the highest 95th-percentile
// latency over the target after a violation, else the lowest CPU
// utilisation (faasconf.Observe's features 2 and 0).
func culprit(obs [][]float64, met bool) int {
	best := 0
	for j, o := range obs {
		if (!met && o[2] > obs[best][2]) || (met && o[0] < obs[best][0]) {
			best = j
		}
	}
	return best
}
