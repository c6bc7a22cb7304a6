package faasconf

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"

	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/learn/nn"
	"github.com/shoal-project/shoal/learn/rl"
)

// PolicyFormat names FaaSConf policy files in their header.
const PolicyFormat = "shoal-faasconf-policy"

// Version 2 added the footprint (safe configurations) and rounds a
// workload up to the levels trained on.
const policyVersion = 2

// A policy file is one JSON header line (a Policy without its weights,
// the safe exploration's history included) followed by one learn/nn
// parameter file holding every function's actor and its attention, under
// an architecture string derived from the header.

// Policy is a trained FaaSConf policy.
type Policy struct {
	Format    string `json:"format"`
	Version   int    `json:"version"`
	Algorithm string `json:"algorithm"` // "faasconf"
	// Variant is the actors' (and their critics' in training) view:
	// attmf, mf, maddpg or ddpg (rl.MADDPGVariant).
	Variant rl.MADDPGVariant `json:"variant"`
	// Functions are the agents, in order; Adjacency their topology.
	Functions []string    `json:"functions"`
	Adjacency [][]float64 `json:"adjacency"`
	Space     Space       `json:"space"`
	QoS       QoS         `json:"qos"`
	// Window is the time window a decision is made for (its control
	// period).
	Window modelfile.Duration `json:"window"`
	// BaseRate is the workflow's request rate at workload level 1,
	// requests/s; Levels are the levels trained on.
	BaseRate float64   `json:"base_rate"`
	Levels   []float64 `json:"levels"`
	// Hidden and AttentionDim shape the actors.
	Hidden       []int `json:"hidden"`
	AttentionDim int   `json:"attention_dim"`
	// Footprint is the cluster the configurations must fit, recorded from
	// the training scenario.
	Footprint Footprint `json:"footprint"`
	// History is the safe exploration's record of the configurations tried
	// in training (the paper's Data Store); those that met the QoS were
	// verified on seeds of their own, and a serving agent starts from them.
	History    []Record   `json:"history"`
	Provenance Provenance `json:"provenance"`

	actors *rl.MFActors
}

// Provenance records a policy's training.
type Provenance struct {
	Scenario    string  `json:"scenario"`
	Seed        uint64  `json:"seed"`
	Logged      int     `json:"logged"`  // measurements of random configurations (offline data)
	Offline     int     `json:"offline"` // updates on them
	Online      int     `json:"online"`  // measurements of the agents' own configurations
	Updates     int     `json:"updates"` // updates in all
	WallSeconds float64 `json:"wall_seconds"`
	// Candidates are the seeds trained when the best was chosen on
	// validation windows, Validation their scores (this policy's first).
	Candidates int       `json:"candidates,omitempty"`
	Validation []float64 `json:"validation,omitempty"`
}

// NewPolicy returns a policy with freshly initialised actors.
func NewPolicy(p Policy, rng *rand.Rand) (*Policy, error) {
	p.Format, p.Version, p.Algorithm = PolicyFormat, policyVersion, "faasconf"
	if err := p.init(rng); err != nil {
		return nil, err
	}
	return &p, nil
}

func (p *Policy) init(rng *rand.Rand) error {
	n := len(p.Functions)
	switch {
	case p.Format != PolicyFormat:
		return fmt.Errorf("format %q, want %s", p.Format, PolicyFormat)
	case p.Version != policyVersion:
		return fmt.Errorf("version %d, this build reads %d", p.Version, policyVersion)
	case n == 0:
		return errors.New("functions: none")
	case !p.Variant.Valid():
		return fmt.Errorf("variant: %q is none of attmf, mf, maddpg, ddpg", p.Variant)
	case p.Variant.MeanField() && len(p.Adjacency) != n:
		return fmt.Errorf("adjacency: %d rows for %d functions", len(p.Adjacency), n)
	case len(p.Hidden) == 0:
		return errors.New("hidden: need at least one hidden layer")
	case p.Variant == rl.AttMF && p.AttentionDim < 1:
		return errors.New("attention_dim: must be >= 1")
	case p.Window <= 0:
		return errors.New("window: must be > 0")
	case p.BaseRate <= 0:
		return errors.New("base_rate: must be > 0")
	case len(p.Levels) == 0 || !slices.IsSorted(p.Levels):
		return fmt.Errorf("levels: %v, want at least one, in increasing order", p.Levels)
	}
	if err := p.Space.Validate(); err != nil {
		return fmt.Errorf("space: %w", err)
	}
	if m := len(p.Footprint.Memory); m != 0 && m != n {
		return fmt.Errorf("footprint: memory: %d models for %d functions", m, n)
	}
	p.actors = rl.NewMFActors(p.Variant, p.Adjacency, n, Features, ActionDim, p.Hidden, p.AttentionDim, rng)
	return nil
}

// Copy returns a copy of the policy with actors of its own, which an
// agent may fine-tune without touching p (the history is shared: agents
// only read it).
func (p *Policy) Copy() *Policy {
	c := *p
	c.actors = rl.NewMFActors(p.Variant, p.Adjacency, len(p.Functions), Features, ActionDim, p.Hidden, p.AttentionDim, rand.New(rand.NewPCG(0, 0)))
	nn.HardCopy(c.actors.Params(), p.actors.Params())
	return &c
}

// Actors returns the functions' actors.
func (p *Policy) Actors() *rl.MFActors { return p.actors }

// SetActors copies trained actors of the same shape into the policy.
func (p *Policy) SetActors(a *rl.MFActors) error {
	if a.Arch() != p.actors.Arch() {
		return fmt.Errorf("actors %s, the policy wants %s", a.Arch(), p.actors.Arch())
	}
	nn.HardCopy(p.actors.Params(), a.Params())
	return nil
}

func (p *Policy) arch() string {
	return fmt.Sprintf("%s/v%d %v %s", PolicyFormat, policyVersion, p.Functions, p.actors.Arch())
}

// Write writes the policy file.
func (p *Policy) Write(w io.Writer) error {
	if err := modelfile.Write(w, p, p.arch(), p.actors.Params()); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	return nil
}

// ReadPolicy reads a policy file written by Write.
func ReadPolicy(r io.Reader) (*Policy, error) {
	p := &Policy{}
	if _, err := modelfile.Read(r, p, PolicyFormat, func() (string, []*nn.Node[float32], error) {
		if err := p.init(rand.New(rand.NewPCG(0, 0))); err != nil {
			return "", nil, err
		}
		return p.arch(), p.actors.Params(), nil
	}); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return p, nil
}
