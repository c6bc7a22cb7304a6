package lb

import (
	"fmt"
	"math"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/learn/nn"
	"github.com/shoal-project/shoal/metrics"
)

// Agent is a deployable learned load-balancing agent (the Distr-LB agent of
// shared/papers/distr-lb-markov-potential-game.txt, section 3.4 and Alg. 2):
// it observes only what its data plane reports through Feedback, and every
// control period Decide turns the window of its recent observations into
// new weights a_ij for argmin_j (q_ij+1)/a_ij (the "sed" selector with
// these weights). It runs from a policy file, without the simulator, and
// Decide allocates nothing.
//
// An agent is not safe for concurrent use: a real data plane serialises
// Feedback calls and Decide (or gives the agent its own goroutine).
type Agent struct {
	spec *NetSpec
	net  *actor
	obs  []*Observer

	raw      []float64 // one observation of one LB
	input    []float64 // the network's input: all LBs' observations, normalised
	window   []float32 // SeqLen × ObsDim, oldest first
	filled   int       // real observations in the window (≤ SeqLen)
	gruPred  *nn.GRUPredictor[float32]
	headPred *nn.MLPPredictor[float32]
	h, out   []float32
	action   []float64 // ActDim, in [-1, 1]
	weights  [][]float64
	actions  []control.Action
}

func newAgent(p *Policy, i int) *Agent {
	s, net := &p.Nets[i], p.actors[i]
	a := &Agent{spec: s, net: net, raw: make([]float64, ObservationLen(s.Backends)),
		window: make([]float32, s.SeqLen*s.ObsDim()), headPred: net.head.NewPredictor(),
		out: make([]float32, s.outputs()), action: make([]float64, s.ActDim())}
	if net.gru != nil {
		a.gruPred = net.gru.NewPredictor()
		a.h = make([]float32, s.GRUHidden)
	}
	for _, name := range s.LBs {
		o, err := NewObserver(s.Backends, time.Duration(p.Period))
		if err != nil {
			panic(err) // the spec was validated
		}
		a.obs = append(a.obs, o)
		w := make([]float64, s.Backends)
		a.weights = append(a.weights, w)
		a.actions = append(a.actions, control.SetWeights{LB: name, Weights: w})
	}
	return a
}

// LBs names the LB points the agent drives, in order.
func (a *Agent) LBs() []string { return a.spec.LBs }

// Backends is the number of backends behind each of the agent's LB points.
func (a *Agent) Backends() int { return a.spec.Backends }

// Feedback returns the feedback sink of the agent's i-th LB point, to be
// given to that LB's data plane.
func (a *Agent) Feedback(i int) Feedback { return a.obs[i] }

// Reset forgets the history, for a new episode or a restarted data plane.
func (a *Agent) Reset() {
	for _, o := range a.obs {
		o.Reset()
	}
	clear(a.window)
	clear(a.action)
	a.filled = 0
}

// Decide implements control.Controller: it reads the agent's own feedback
// (the snapshot is not used: an agent sees only its own traffic) and
// returns one SetWeights per LB point. The returned actions and their
// weight slices are reused by the next call.
func (a *Agent) Decide(now time.Duration, _ *metrics.Snapshot) []control.Action {
	s := a.spec
	dim := s.ObsDim()
	// Shift the window and write the newest observation at its end.
	copy(a.window, a.window[dim:])
	newest := a.window[(s.SeqLen-1)*dim:]
	a.input = a.Observation(now, a.input)
	for d, v := range a.input {
		newest[d] = float32(v)
	}
	a.filled = min(a.filled+1, s.SeqLen)
	a.act(dim)
	for k, o := range a.obs {
		part := a.action[k*s.Backends : (k+1)*s.Backends]
		ActionToWeights(a.weights[k], part)
		o.SetPrevious(part)
	}
	return a.actions
}

// Observation writes the network's input at now to dst (resized to
// ObsDim): the observations of the agent's LB points, normalised as in
// training. It allocates nothing once dst has room.
func (a *Agent) Observation(now time.Duration, dst []float64) []float64 {
	s := a.spec
	dst = append(dst[:0], make([]float64, s.ObsDim())...)
	per := len(a.raw)
	for k, o := range a.obs {
		o.Observe(now, a.raw)
		for d, v := range a.raw {
			idx := k*per + d
			if len(s.ObsMean) > 0 {
				v = (v - s.ObsMean[idx]) / s.ObsStd[idx]
			}
			dst[idx] = v
		}
	}
	return dst
}

// act runs the network on the window: the GRU from a zero state over the
// real observations (the padding before the first is skipped, as in
// training), then the head; the action is tanh(μ), or the previous action
// moved by the greedy step (steps).
func (a *Agent) act(dim int) {
	in := a.window[(a.spec.SeqLen-1)*dim:]
	if a.gruPred != nil {
		clear(a.h)
		for k := a.spec.SeqLen - a.filled; k < a.spec.SeqLen; k++ {
			a.gruPred.Step(a.h, a.h, a.window[k*dim:(k+1)*dim])
		}
		in = a.h
	}
	a.headPred.Predict(a.out, in)
	if a.spec.Actions == ActionsSteps {
		best := 0
		for k, q := range a.out {
			if q > a.out[best] {
				best = k
			}
		}
		StepAction(a.action, best, a.spec.StepSize)
		return
	}
	for j := range a.action {
		a.action[j] = math.Tanh(float64(a.out[j]))
	}
}

// Action returns the last action in [-1, 1] per backend (all LB points
// concatenated), for logging; valid until the next Decide.
func (a *Agent) Action() []float64 { return a.action }

// String describes the agent.
func (a *Agent) String() string {
	return fmt.Sprintf("lb agent for %v (%d backends, window %d, gru %d)", a.spec.LBs, a.spec.Backends, a.spec.SeqLen, a.spec.GRUHidden)
}
