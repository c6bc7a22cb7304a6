package lb

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/learn/nn"
)

// PolicyFormat names Shoal's load-balancing policy files in their header.
const PolicyFormat = "shoal-lb-policy"

// policyVersion is the file version this build writes and reads. Version 2
// maps actions to weights 10^(x/2) (WeightDecades); version 1 used 10^x.
const policyVersion = 2

// A policy file is one JSON header line (a Policy without its weights)
// followed by one learn/nn parameter file holding every network's weights
// under an architecture string derived from the header, so a header that
// does not match its weights is refused.

// Policy is a trained load-balancing policy: one or more actor networks,
// each reading the observations of its LB points (an Observer each) and
// setting their weights. Distr-LB has one network per LB point; the
// centralised comparison (Centr-LB) one network for all of them.
type Policy struct {
	Format    string `json:"format"`
	Version   int    `json:"version"`
	Algorithm string `json:"algorithm"` // e.g. "distr-lb", "centr-lb"
	// Period is the control period the policy was trained with.
	Period Duration `json:"period"`
	// Nets are the actor networks.
	Nets []NetSpec `json:"nets"`
	// Provenance records how the policy was trained.
	Provenance Provenance `json:"provenance"`

	actors []*actor
}

// NetSpec describes one actor network: a GRU over a window of the last
// SeqLen (normalised) observations from a zero state, then an MLP head to
// (μ, log σ); the action is tanh(μ) in [-1, 1] per backend of each LB,
// mapped to weights by ActionToWeights. With GRUHidden 0 the head reads the
// newest observation directly (the no-GRU ablation).
type NetSpec struct {
	// LBs are the LB points whose observations the network reads,
	// concatenated in this order, and whose weights it sets.
	LBs []string `json:"lbs"`
	// Backends is the number of backends behind each LB point.
	Backends  int   `json:"backends"`
	SeqLen    int   `json:"seq_len"`
	GRUHidden int   `json:"gru_hidden"`
	Hidden    []int `json:"hidden"`
	// ObsMean and ObsStd normalise the observation, x' = (x-mean)/std,
	// before the network (empty: none).
	ObsMean []float64 `json:"obs_mean,omitempty"`
	ObsStd  []float64 `json:"obs_std,omitempty"`
	// Actions is how the head's output becomes an action: ActionsBox
	// (default) or ActionsSteps.
	Actions string `json:"actions,omitempty"`
	// StepSize is the change of x per step with ActionsSteps.
	StepSize float64 `json:"step_size,omitempty"`
}

// Action kinds of a network (NetSpec.Actions).
const (
	// ActionsBox: the head outputs (μ, log σ) and the action is tanh(μ),
	// one x per backend (SAC actors).
	ActionsBox = "box"
	// ActionsSteps: the head outputs one value per discrete action
	// (2·backends+1, see StepAction) and the greedy one moves the agent's
	// x (QMIX agents, whose actions must be discrete).
	ActionsSteps = "steps"
)

// StepActions is the number of discrete step actions for n backends.
func StepActions(n int) int { return 2*n + 1 }

// StepAction applies discrete action k to x (one value in [-1, 1] per
// backend, weights 10^(x/2)): 0 keeps x, 1..n raise x_{k-1} by delta, n+1..2n
// lower x_{k-n-1} by delta, clipped to [-1, 1].
func StepAction(x []float64, k int, delta float64) {
	n := len(x)
	switch {
	case k >= 1 && k <= n:
		x[k-1] = math.Min(1, x[k-1]+delta)
	case k > n && k <= 2*n:
		x[k-n-1] = math.Max(-1, x[k-n-1]-delta)
	}
}

// Provenance records a policy's training run.
type Provenance struct {
	Scenario       string  `json:"scenario"`
	Seed           uint64  `json:"seed"`
	Reward         string  `json:"reward"`
	Estimate       string  `json:"estimate"` // what the reward measured per server
	Learner        string  `json:"learner"`
	Episodes       int     `json:"episodes"`
	Selected       int     `json:"selected_episode"` // the episode whose policy this is (best validation)
	EnvSteps       int     `json:"env_steps"`        // environment steps when the selected policy was taken
	WallSeconds    float64 `json:"wall_seconds"`
	StepsPerSecond float64 `json:"steps_per_second"`
	// OnlineUpdates counts the updates of online training on a real data
	// plane after the simulator's (OnlineLearner).
	OnlineUpdates int `json:"online_updates,omitempty"`
}

// Duration is a time.Duration written as "500ms" in JSON.
type Duration = modelfile.Duration

// ObsDim is the network's input length: the concatenated observations of
// its LB points.
func (s *NetSpec) ObsDim() int { return len(s.LBs) * ObservationLen(s.Backends) }

// ActDim is the network's action length: one weight per backend per LB.
func (s *NetSpec) ActDim() int { return len(s.LBs) * s.Backends }

// outputs is the head's output length.
func (s *NetSpec) outputs() int {
	if s.Actions == ActionsSteps {
		return StepActions(s.Backends)
	}
	return 2 * s.ActDim()
}

// ObservationLen is the length of one LB point's observation with n backends.
func ObservationLen(n int) int { return n*(perBackend+1) + lbLevel }

func (s *NetSpec) validate() error {
	switch {
	case len(s.LBs) == 0:
		return errors.New("lbs: empty")
	case s.Backends < 1:
		return fmt.Errorf("backends: must be >= 1, got %d", s.Backends)
	case s.SeqLen < 1:
		return fmt.Errorf("seq_len: must be >= 1, got %d", s.SeqLen)
	case s.GRUHidden < 0:
		return fmt.Errorf("gru_hidden: must be >= 0, got %d", s.GRUHidden)
	case s.GRUHidden == 0 && s.SeqLen != 1:
		return fmt.Errorf("seq_len: a network without GRU reads one observation, got %d", s.SeqLen)
	case s.Actions != "" && s.Actions != ActionsBox && s.Actions != ActionsSteps:
		return fmt.Errorf("actions: %q, want %s or %s", s.Actions, ActionsBox, ActionsSteps)
	case s.Actions == ActionsSteps && (len(s.LBs) != 1 || !(s.StepSize > 0 && s.StepSize <= 2)):
		return fmt.Errorf("actions: steps need one LB and step_size in (0, 2], got %d LBs and %g", len(s.LBs), s.StepSize)
	case len(s.ObsMean) != len(s.ObsStd):
		return fmt.Errorf("obs_mean, obs_std: lengths %d and %d differ", len(s.ObsMean), len(s.ObsStd))
	case len(s.ObsMean) != 0 && len(s.ObsMean) != s.ObsDim():
		return fmt.Errorf("obs_mean: length %d, want the observation length %d", len(s.ObsMean), s.ObsDim())
	}
	for i, h := range s.Hidden {
		if h < 1 || h > maxWidth {
			return fmt.Errorf("hidden[%d]: must be in [1, %d], got %d", i, maxWidth, h)
		}
	}
	if s.Backends > maxWidth || s.GRUHidden > maxWidth || s.SeqLen > maxWidth || len(s.LBs) > maxWidth {
		return fmt.Errorf("backends, gru_hidden, seq_len, lbs: each at most %d", maxWidth)
	}
	if n := s.params(); n > maxParams {
		return fmt.Errorf("network of %d parameters exceeds the limit of %d", n, maxParams)
	}
	for i, v := range s.ObsStd {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("obs_std[%d]: must be positive and finite, got %g", i, v)
		}
	}
	return nil
}

// Limits that keep a hostile header from allocating without bound.
const (
	maxWidth  = 1 << 12
	maxParams = 1 << 22
)

// params counts the network's parameters.
func (s *NetSpec) params() int {
	n, in := 0, s.ObsDim()
	if s.GRUHidden > 0 {
		n += 3*s.GRUHidden*(in+s.GRUHidden) + 6*s.GRUHidden
		in = s.GRUHidden
	}
	for _, h := range append(s.Hidden, s.outputs()) {
		n += (in + 1) * h
		in = h
	}
	return n
}

// actor is one network's layers.
type actor struct {
	gru  *nn.GRU[float32] // nil without GRU
	head *nn.MLP[float32]
}

func newActor(s *NetSpec, name string) *actor {
	rng := rand.New(rand.NewPCG(0, 0)) // weights are overwritten by Load or SetWeights
	a := &actor{}
	in := s.ObsDim()
	if s.GRUHidden > 0 {
		a.gru = nn.NewGRU[float32](rng, name+".gru", in, s.GRUHidden)
		in = s.GRUHidden
	}
	sizes := append(append([]int{in}, s.Hidden...), s.outputs())
	a.head = nn.NewMLP[float32](rng, name+".head", sizes, nn.ReLU, nn.Identity)
	return a
}

func (a *actor) state() []*nn.Node[float32] {
	var st []*nn.Node[float32]
	if a.gru != nil {
		st = append(st, a.gru.State()...)
	}
	return append(st, a.head.State()...)
}

func (a *actor) arch() string {
	if a.gru == nil {
		return a.head.Arch()
	}
	return a.gru.Arch() + " " + a.head.Arch()
}

// NewPolicy returns a policy of the given networks, with weights to be
// set by SetWeights (or loaded by ReadPolicy).
func NewPolicy(algorithm string, period time.Duration, nets []NetSpec, prov Provenance) (*Policy, error) {
	p := &Policy{Format: PolicyFormat, Version: policyVersion, Algorithm: algorithm,
		Period: Duration(period), Nets: nets, Provenance: prov}
	if err := p.init(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Policy) init() error {
	if p.Format != PolicyFormat {
		return fmt.Errorf("format: %q is not a %s file", p.Format, PolicyFormat)
	}
	if p.Version != policyVersion {
		return fmt.Errorf("version: %d, this build reads %d", p.Version, policyVersion)
	}
	if p.Period <= 0 {
		return fmt.Errorf("period: must be > 0, got %v", time.Duration(p.Period))
	}
	if len(p.Nets) == 0 {
		return errors.New("nets: empty")
	}
	total := 0
	for i := range p.Nets {
		if err := p.Nets[i].validate(); err != nil {
			return fmt.Errorf("nets[%d].%w", i, err)
		}
		if total += p.Nets[i].params(); total > maxParams {
			return fmt.Errorf("nets: more than %d parameters in all", maxParams)
		}
	}
	seen := map[string]bool{}
	p.actors = p.actors[:0]
	for i := range p.Nets {
		s := &p.Nets[i]
		for _, name := range s.LBs {
			if seen[name] {
				return fmt.Errorf("nets[%d].lbs: LB %q appears twice", i, name)
			}
			seen[name] = true
		}
		p.actors = append(p.actors, newActor(s, fmt.Sprintf("net%d", i)))
	}
	return nil
}

// SetWeights copies trained weights into network i: the GRU (nil when the
// network has none) and the head, which must have the spec's shapes.
func (p *Policy) SetWeights(i int, gru *nn.GRU[float32], head *nn.MLP[float32]) error {
	a := p.actors[i]
	if (gru == nil) != (a.gru == nil) {
		return fmt.Errorf("policy: net %d: GRU given %t, spec has one %t", i, gru != nil, a.gru != nil)
	}
	var src []*nn.Node[float32]
	if gru != nil {
		src = append(src, gru.State()...)
	}
	src = append(src, head.State()...)
	dst := a.state()
	if len(src) != len(dst) {
		return fmt.Errorf("policy: net %d: %d tensors given, spec has %d", i, len(src), len(dst))
	}
	for k := range src {
		s, d := src[k].Value, dst[k].Value
		if s.Rows != d.Rows || s.Cols != d.Cols {
			return fmt.Errorf("policy: net %d: tensor %s is %dx%d, spec wants %dx%d", i, dst[k].Name, s.Rows, s.Cols, d.Rows, d.Cols)
		}
		copy(d.Data, s.Data)
	}
	return nil
}

func (p *Policy) arch() string {
	parts := []string{fmt.Sprintf("%s/v%d %s", PolicyFormat, policyVersion, p.Algorithm)}
	for i, a := range p.actors {
		parts = append(parts, fmt.Sprintf("net%d[%s] %s", i, strings.Join(p.Nets[i].LBs, ","), a.arch()))
	}
	return strings.Join(parts, "; ")
}

func (p *Policy) state() []*nn.Node[float32] {
	var st []*nn.Node[float32]
	for _, a := range p.actors {
		st = append(st, a.state()...)
	}
	return st
}

// Write writes the policy file.
func (p *Policy) Write(w io.Writer) error {
	if err := modelfile.Write(w, p, p.arch(), p.state()); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	return nil
}

// ReadPolicy reads a policy file, checking its header and that its weights
// match the header's networks.
func ReadPolicy(r io.Reader) (*Policy, error) {
	p := &Policy{}
	if _, err := modelfile.Read(r, p, PolicyFormat, func() (string, []*nn.Node[float32], error) {
		if err := p.init(); err != nil {
			return "", nil, err
		}
		return p.arch(), p.state(), nil
	}); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return p, nil
}

// NewAgents returns a fresh agent per network, ready to decide from time 0.
func (p *Policy) NewAgents() []*Agent {
	var as []*Agent
	for i := range p.Nets {
		as = append(as, newAgent(p, i))
	}
	return as
}

// Agent returns a fresh agent for the network that drives LB point name
// alone (a Distr-LB agent), or an error naming the policy's LB points.
func (p *Policy) Agent(name string) (*Agent, error) {
	var names []string
	for i, s := range p.Nets {
		if len(s.LBs) == 1 && s.LBs[0] == name {
			return newAgent(p, i), nil
		}
		names = append(names, strings.Join(s.LBs, "+"))
	}
	return nil, fmt.Errorf("policy: no network drives LB %q alone (networks: %s)", name, strings.Join(names, ", "))
}
