package firm

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/learn/nn"
)

// PolicyFormat names FIRM policy files in their header.
const PolicyFormat = "shoal-firm-policy"

const policyVersion = 1

// A policy file is one JSON header line (a Policy without its weights)
// followed by one learn/nn parameter file holding the DDPG actor, under an
// architecture string derived from the header (as control/drpc's files).

// Policy is a trained FIRM-like policy.
type Policy struct {
	Format    string `json:"format"`
	Version   int    `json:"version"`
	Algorithm string `json:"algorithm"` // "firm"
	// Period is the control period the policy was trained with.
	Period      drpc.Duration     `json:"period"`
	Deployments []drpc.Deployment `json:"deployments"`
	Ingress     []string          `json:"ingress"`
	SLO         drpc.Duration     `json:"slo"`
	Steps       drpc.Steps        `json:"steps"`
	// Window is the number of periods of the RI correlation.
	Window int `json:"window"`
	// Alpha weighs the SLO term of the reward against utilisation.
	Alpha      float64    `json:"alpha"`
	Classifier Classifier `json:"classifier"`
	Hidden     []int      `json:"hidden"`
	Provenance Provenance `json:"provenance"`

	actor *nn.MLP[float32]
}

// Provenance records a policy's training.
type Provenance struct {
	Scenario      string  `json:"scenario"`
	Seed          uint64  `json:"seed"`
	LabelEpisodes int     `json:"label_episodes"`
	Samples       int     `json:"samples"`        // labelled culprit samples the classifier was fitted on
	Accuracy      float64 `json:"accuracy"`       // the classifier's accuracy on them
	Episodes      int     `json:"episodes"`       // DDPG episodes
	EnvSteps      int     `json:"env_steps"`      // decision periods with a culprit
	Updates       int     `json:"updates"`        // DDPG updates
	WallSeconds   float64 `json:"wall_seconds"`   // set by the caller
	Score         float64 `json:"score"`          // mean reward of the last episode
	SLOViolations float64 `json:"slo_violations"` // of the last episode
}

// NewPolicy returns a policy with a freshly initialised actor.
func NewPolicy(p Policy, rng *rand.Rand) (*Policy, error) {
	p.Format, p.Version, p.Algorithm = PolicyFormat, policyVersion, "firm"
	if err := p.init(rng); err != nil {
		return nil, err
	}
	return &p, nil
}

func (p *Policy) init(rng *rand.Rand) error {
	switch {
	case p.Format != PolicyFormat:
		return fmt.Errorf("format %q, want %s", p.Format, PolicyFormat)
	case p.Version != policyVersion:
		return fmt.Errorf("version %d, this build reads %d", p.Version, policyVersion)
	case len(p.Deployments) == 0:
		return errors.New("deployments: none")
	case len(p.Hidden) == 0:
		return errors.New("hidden: need at least one hidden layer")
	case p.Period <= 0:
		return errors.New("period: must be > 0")
	case len(p.Classifier.W) != CulpritFeatures:
		return fmt.Errorf("classifier.w: %d weights, want %d", len(p.Classifier.W), CulpritFeatures)
	}
	p.actor = nn.NewMLP[float32](rng, "actor", append(append([]int{StateDim}, p.Hidden...), ActionDim), nn.ReLU, nn.Tanh)
	return nil
}

// Actor returns the DDPG actor.
func (p *Policy) Actor() *nn.MLP[float32] { return p.actor }

// SetActor copies the weights of a trained actor of the same shape.
func (p *Policy) SetActor(actor *nn.MLP[float32]) error {
	if actor.Arch() != p.actor.Arch() {
		return fmt.Errorf("actor: %s, policy wants %s", actor.Arch(), p.actor.Arch())
	}
	nn.HardCopy(p.actor.Params(), actor.Params())
	return nil
}

// Parameters is the number of weights the controller runs on: the actor's
// and the classifier's.
func (p *Policy) Parameters() int {
	n := len(p.Classifier.W) + 1
	for _, w := range p.actor.Params() {
		n += len(w.Value.Data)
	}
	return n
}

func (p *Policy) arch() string {
	return fmt.Sprintf("%s/v%d %s", PolicyFormat, policyVersion, p.actor.Arch())
}

// Write writes the policy file.
func (p *Policy) Write(w io.Writer) error {
	if err := modelfile.Write(w, p, p.arch(), p.actor.Params()); err != nil {
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
		return p.arch(), p.actor.Params(), nil
	}); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return p, nil
}
