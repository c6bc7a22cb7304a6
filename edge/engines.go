package edge

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The logging engines of issue 36: the policies an operator's platform
// runs over months, which its logs record. Each acts through the agents'
// weights, so that a log's actions are what decided where tasks went. An
// engine runs in the real world and may read it (GreedyWeights does); the
// learners see only the log.

// HoldPolicy draws random weights, as RandomPolicy does, and holds each
// agent's for a number of steps drawn uniformly from [1, MaxHold]: the
// settings an operator tries and keeps for a while.
type HoldPolicy struct {
	Rand    *rand.Rand
	MaxHold int
	held    [Agents][]float64
	left    [Agents]int
}

// Act implements Policy.
func (p *HoldPolicy) Act(agent int, obs, dst []float64) []float64 {
	if p.left[agent] <= 0 {
		p.held[agent] = RandomPolicy{Rand: p.Rand}.Act(agent, obs, p.held[agent])
		p.left[agent] = 1 + p.Rand.IntN(max(p.MaxHold, 1))
	}
	p.left[agent]--
	return append(dst[:0], p.held[agent]...)
}

// GreedyWeights is the greedy heuristic as weights: each step every scene
// weighs each target by the inverse square of the time its mean task
// would take there (at the devices' mean backlog, the edge nodes' and the
// cloud's current jobs and the links' delays, as Greedy estimates a task).
// All of a step's tasks on the single fastest target would pile up there;
// the inverse square favours the fast ones and spreads the rest. With
// probability Eps a step's weights are random instead (ε-noise, an
// operator's experiments). The weights are scaled so the largest is 1, in
// the actions' range [0, 1] like every other engine's. The edge shares
// stay equal.
type GreedyWeights struct {
	World *World
	Rand  *rand.Rand
	Eps   float64
}

// Act implements Policy.
func (p GreedyWeights) Act(agent int, obs, dst []float64) []float64 {
	if p.Rand.Float64() < p.Eps {
		return RandomPolicy{Rand: p.Rand}.Act(agent, obs, dst)
	}
	dst = zeroAction(dst)
	if agent == Engine {
		return equalShares(dst)
	}
	w := p.World
	gr := &w.cfg.Groups[agent]
	t := task{w: w, group: agent, work: gr.WorkG, sizeMB: gr.SizeMB}
	for target := range Targets {
		var at time.Duration
		if target == targetLocal {
			at = time.Duration((w.backlog(agent) + gr.WorkG/gr.DeviceSpeed) * 1e9)
		} else {
			at = w.estimate(&t, target)
		}
		s := max(at.Seconds(), 1e-3)
		dst[target] = 1 / (s * s)
	}
	top := slices.Max(dst[:Targets])
	for target := range Targets {
		dst[target] /= top
	}
	return dst
}

// Stretch is one engine's share of a log.
type Stretch struct {
	Name   string
	Weight float64
}

// ParseMix reads an engine mix written NAME:WEIGHT,... (a lone NAME has
// weight 1), e.g. "greedy:0.6,threshold:0.2,hold:0.1,random:0.1".
func ParseMix(s string) ([]Stretch, error) {
	var mix []Stretch
	for _, part := range strings.Split(s, ",") {
		name, weight, found := strings.Cut(strings.TrimSpace(part), ":")
		st := Stretch{Name: name, Weight: 1}
		if found {
			x, err := strconv.ParseFloat(weight, 64)
			if err != nil {
				return nil, fmt.Errorf("edge: engine %s: weight %q is not a number", name, weight)
			}
			st.Weight = x
		}
		mix = append(mix, st)
	}
	return mix, checkMix(mix)
}

// DefaultMix is the history 'shoal edge log' writes by default, under
// DefaultRule: mostly the greedy heuristic itself (even weights), and an
// operator's experiments with held and random biases. (Chosen on
// validation windows over the paper-world mix greedy:0.6,threshold:0.2,
// hold:0.1,random:0.1, whose threshold stretches are a tenfold bias to
// the device under the weighted-greedy rule.)
const DefaultMix = "even:0.6,hold:0.2,random:0.2"

// Engines are the names of the logging engines a Mix draws from.
var Engines = []string{"random", "hold", "greedy", "threshold", "even"}

// Mix runs the log in stretches of 10 to 60 steps, each under one engine
// drawn with its weight: an operator's months of mostly one heuristic,
// with changes and experiments. "threshold" is the threshold rule acting
// through the weights: all on the device while its backlog is under half
// the deadline, otherwise on the edge node with the lowest latency.
type Mix struct {
	rand    *rand.Rand
	mix     []Stretch
	engines map[string]Policy
	current string
	left    int
}

// checkMix reports an unknown engine, a negative weight or a mix without
// weight.
func checkMix(mix []Stretch) error {
	total := 0.0
	for _, s := range mix {
		if !slices.Contains(Engines, s.Name) {
			return fmt.Errorf("edge: unknown engine %q (want %v)", s.Name, Engines)
		}
		if !(s.Weight >= 0) {
			return fmt.Errorf("edge: engine %s: weight %g, want >= 0", s.Name, s.Weight)
		}
		total += s.Weight
	}
	if !(total > 0) {
		return fmt.Errorf("edge: engine mix %v has no weight", mix)
	}
	return nil
}

// NewMix returns the engine mix for world w, drawing from rng.
func NewMix(w *World, rng *rand.Rand, mix []Stretch) (*Mix, error) {
	if err := checkMix(mix); err != nil {
		return nil, err
	}
	m := &Mix{rand: rng, mix: mix, engines: map[string]Policy{
		"random":    RandomPolicy{Rand: rng},
		"hold":      &HoldPolicy{Rand: rng, MaxHold: 30},
		"greedy":    GreedyWeights{World: w, Rand: rng, Eps: 0.1},
		"threshold": thresholdWeights{w},
		"even":      EvenWeights{},
	}}
	return m, nil
}

// Current names the engine of the step being decided.
func (m *Mix) Current() string { return m.current }

// Act implements Policy. The engine agent decides last in a step (Log asks
// agents in order), so a new stretch begins with the scenes' first agent.
func (m *Mix) Act(agent int, obs, dst []float64) []float64 {
	if agent == 0 {
		if m.left <= 0 {
			m.current, m.left = m.draw(), 10+m.rand.IntN(51)
		}
		m.left--
	}
	return m.engines[m.current].Act(agent, obs, dst)
}

func (m *Mix) draw() string {
	total := 0.0
	for _, s := range m.mix {
		total += s.Weight
	}
	u := m.rand.Float64() * total
	for _, s := range m.mix {
		if u -= s.Weight; u < 0 {
			return s.Name
		}
	}
	return m.mix[len(m.mix)-1].Name
}

// EvenWeights gives every target and every scene's share the same
// weight: the platform's defaults, under which the weighted-greedy rule
// is Greedy exactly.
type EvenWeights struct{}

// Act implements Policy.
func (EvenWeights) Act(agent int, _, dst []float64) []float64 {
	dst = zeroAction(dst)
	n := Targets
	if agent == Engine {
		n = Scenes
	}
	for i := range n {
		dst[i] = 1
	}
	return dst
}

// thresholdWeights is the Threshold heuristic through the weights.
type thresholdWeights struct{ w *World }

func (p thresholdWeights) Act(agent int, _, dst []float64) []float64 {
	dst = zeroAction(dst)
	if agent == Engine {
		return equalShares(dst)
	}
	w := p.w
	gr := &w.cfg.Groups[agent]
	best := w.nearestEdge()
	dst[best] = 1
	if w.backlog(agent) < gr.Deadline.Seconds()/2 {
		dst[targetLocal], dst[best] = 1, 1e-6 // the edge node only for tasks that must run on one
	}
	return dst
}

// zeroAction returns dst as ActDim zeros.
func zeroAction(dst []float64) []float64 {
	dst = slices.Grow(dst[:0], ActDim)[:ActDim]
	clear(dst)
	return dst
}

// equalShares writes the engine action of equal edge shares into dst.
func equalShares(dst []float64) []float64 {
	for g := range Scenes {
		dst[g] = 1
	}
	return dst
}
