package lb

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/learn/nn"
)

// GeneralFormat names the general Distr-LB policy files in their header.
const GeneralFormat = "shoal-lb-general"

const generalVersion = 1

// GeneralFeatures is the number of features the general policy's network
// reads per server (see LearnedSED.features).
const GeneralFeatures = 10

// GeneralPolicy is one learned load-balancing policy for every cluster:
// a small network, shared by every server and every LB point,
// that reads features of one server, normalised against the other servers
// so that 4 or 32 servers and 1 ms or 2 s requests look alike, and outputs
// a correction to probing-sed's weight of that server. The correction is
// a multiplier 10^(Decades·tanh(y)), so a network that outputs 0 is
// probing-sed exactly. Its selector is LearnedSED.
//
// A file is one JSON header line (the policy without its weights) and one
// learn/nn parameter file, like Policy's.
type GeneralPolicy struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Period is how often an LB point recomputes its corrections.
	Period Duration `json:"period"`
	// Hidden are the widths of the network's hidden layers (tanh).
	Hidden []int `json:"hidden"`
	// Decades is the span of a correction: weights times 10^±Decades.
	Decades float64 `json:"decades"`
	// Memory is the number of responses a server's statistics average
	// over (the EWMA's 1/α).
	Memory float64 `json:"memory"`
	// Provenance records how the policy was trained.
	Provenance GeneralProvenance `json:"provenance"`

	net *nn.MLP[float64]
}

// GeneralProvenance records a general policy's training run. It holds
// nothing that varies from run to run (no wall time), so training again
// with the same command writes the same file, byte for byte.
type GeneralProvenance struct {
	Command     string  `json:"command"` // the command that trained it
	Family      string  `json:"family"`  // the family's ranges, as YAML
	Seed        uint64  `json:"seed"`
	Generations int     `json:"generations"`
	Selected    int     `json:"selected_generation"` // the generation whose parameters these are (best validation)
	Validation  float64 `json:"validation"`          // its validation score: mean log ratio to probing-sed (lower is better)
	Episodes    int     `json:"episodes"`            // simulated episodes, validation included
}

// GeneralName is the name the general policy runs under: the shipped
// policy (DefaultGeneral) in a registry, or a file's.
const GeneralName = "distr-lb-general"

// defaultGeneral is the general policy Shoal ships, trained by the command
// in its provenance; scripts/general-policy.sh trains it again and checks
// that the file is the same, byte for byte.
//
//go:embed general.slb
var defaultGeneral []byte

// DefaultGeneral returns the general policy Shoal ships (read once; its
// selectors only read the network, so every run may share it).
var DefaultGeneral = sync.OnceValues(func() (*GeneralPolicy, error) {
	return ReadGeneralPolicy(bytes.NewReader(defaultGeneral))
})

// NewGeneralPolicy returns an untrained general policy: hidden weights
// drawn from seed, the output layer zero, so it runs probing-sed.
func NewGeneralPolicy(hidden []int, seed uint64) (*GeneralPolicy, error) {
	p := &GeneralPolicy{Format: GeneralFormat, Version: generalVersion, Period: Duration(500 * time.Millisecond),
		Hidden: hidden, Decades: 0.5, Memory: 32}
	if err := p.init(rand.New(rand.NewPCG(seed, 35))); err != nil {
		return nil, err
	}
	out := p.net.Layers[len(p.net.Layers)-1]
	clear(out.W.Value.Data)
	clear(out.B.Value.Data)
	return p, nil
}

func (p *GeneralPolicy) init(rng *rand.Rand) error {
	var errs []error
	if p.Format != GeneralFormat || p.Version != generalVersion {
		errs = append(errs, fmt.Errorf("format: want %s version %d, got %q version %d", GeneralFormat, generalVersion, p.Format, p.Version))
	}
	if p.Period <= 0 {
		errs = append(errs, fmt.Errorf("period: must be > 0, got %v", time.Duration(p.Period)))
	}
	if !(p.Decades > 0 && p.Decades <= 2) {
		errs = append(errs, fmt.Errorf("decades: must be in (0, 2], got %g", p.Decades))
	}
	if !(p.Memory >= 1) {
		errs = append(errs, fmt.Errorf("memory: must be >= 1, got %g", p.Memory))
	}
	sizes := []int{GeneralFeatures}
	for i, h := range p.Hidden {
		if h < 1 || h > 256 {
			errs = append(errs, fmt.Errorf("hidden[%d]: must be in [1, 256], got %d", i, h))
		}
		sizes = append(sizes, h)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	p.net = nn.NewMLP[float64](rng, "general", append(sizes, 1), nn.Tanh, nn.Identity)
	return nil
}

// Params returns the network's parameters as one vector (a copy).
func (p *GeneralPolicy) Params() []float64 {
	var theta []float64
	for _, n := range p.net.Params() {
		theta = append(theta, n.Value.Data...)
	}
	return theta
}

// SetParams sets the network's parameters from one vector of Params'
// length.
func (p *GeneralPolicy) SetParams(theta []float64) error {
	want := 0
	for _, n := range p.net.Params() {
		want += len(n.Value.Data)
	}
	if len(theta) != want {
		return fmt.Errorf("general policy: %d parameters, want %d", len(theta), want)
	}
	for _, n := range p.net.Params() {
		theta = theta[copy(n.Value.Data, theta):]
	}
	return nil
}

// Clone returns a copy of the policy with its own network.
func (p *GeneralPolicy) Clone() *GeneralPolicy {
	c := *p
	c.Hidden = append([]int(nil), p.Hidden...)
	if err := c.init(rand.New(rand.NewPCG(0, 0))); err != nil {
		panic(err) // p was valid
	}
	if err := c.SetParams(p.Params()); err != nil {
		panic(err)
	}
	return &c
}

func (p *GeneralPolicy) arch() string {
	return fmt.Sprintf("%s/v%d %s", GeneralFormat, generalVersion, p.net.Arch())
}

// Write writes the policy file.
func (p *GeneralPolicy) Write(w io.Writer) error {
	if err := modelfile.Write(w, p, p.arch(), p.net.Params()); err != nil {
		return fmt.Errorf("general policy: %w", err)
	}
	return nil
}

// ReadGeneralPolicy reads a general policy file.
func ReadGeneralPolicy(r io.Reader) (*GeneralPolicy, error) {
	p := &GeneralPolicy{}
	if _, err := modelfile.Read(r, p, GeneralFormat, func() (string, []*nn.Node[float64], error) {
		if err := p.init(rand.New(rand.NewPCG(0, 0))); err != nil {
			return "", nil, err
		}
		return p.arch(), p.net.Params(), nil
	}); err != nil {
		return nil, fmt.Errorf("general policy: %w", err)
	}
	return p, nil
}

// Selector returns a fresh LearnedSED for one LB point, running this
// policy over a ProbingSED with the given parameters (probe_rate,
// max_age, quiet) and random stream.
func (p *GeneralPolicy) Selector(d Deps) (Selector, error) {
	inner, err := Classical().New("probing-sed", d)
	if err != nil {
		return nil, err
	}
	return &LearnedSED{pol: p, inner: inner.(*ProbingSED), pred: p.net.NewPredictor()}, nil
}
