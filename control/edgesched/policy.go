// Package edgesched is the run-time side of edge scheduling (the edge
// scheduling paper, Xiong et al.): a trained policy file, one network per
// agent (the scenes' offloading agents and the platform's engine), that
// maps an agent's observation to its action. It knows no world: the
// observation and action lengths are the file's.
package edgesched

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/learn/nn"
)

// Format names an edge scheduling policy file.
const Format = "shoal-edge-policy"

// Outputs of a policy network, and how they become actions in [0, 1].
const (
	OutputLinear = "linear" // clipped to [0, 1] (PPO's Gaussian means)
	OutputTanh   = "tanh"   // (y + 1) / 2 (behaviour cloning's tanh head)
)

// Policy is a trained policy: a JSON header, then the agents' networks.
type Policy struct {
	Format string `json:"format"`
	// Method is how the policy was made: mappo, bc or ppo-real.
	Method string `json:"method"`
	Agents int    `json:"agents"`
	ObsDim int    `json:"obs_dim"`
	ActDim int    `json:"act_dim"`
	Hidden []int  `json:"hidden"`
	Output string `json:"output"`
	// Ignore are observation indices the networks read as 0: what the
	// logs the policy learned from could not teach it (the week's phase
	// and the month's share are nearly constant over a day of logs).
	Ignore []int `json:"ignore,omitempty"`
	// Rule is the platform's offloading rule the scenes' weights act
	// through, as the world names it (empty: the weights themselves).
	Rule string `json:"rule,omitempty"`
	// Provenance says how the policy was trained.
	Provenance Provenance `json:"provenance"`

	nets  []*nn.MLP[float32]
	preds []*nn.MLPPredictor[float32]
	x, y  []float32
}

// Provenance records a training run.
type Provenance struct {
	Seed        uint64  `json:"seed"`
	Source      string  `json:"source,omitempty"` // the environment or log file trained on
	Steps       int     `json:"steps,omitempty"`  // environment steps per agent
	Horizon     int     `json:"horizon,omitempty"`
	Lambda      float64 `json:"lambda,omitempty"`   // Eq. 8's lambda
	Anchor      float64 `json:"anchor,omitempty"`   // Eq. 8's weight beside PPO's loss
	Penalty     float64 `json:"penalty,omitempty"`  // MOPO's lambda, of the models' disagreement
	Episodes    int     `json:"episodes,omitempty"` // hour-long episodes of a task rule's PPO
	WallSeconds float64 `json:"wall_seconds"`
}

// New returns a policy of the header h with a copy of nets' weights, one
// network per agent (ReLU hidden layers of h.Hidden, h.Output's head).
func New(h Policy, nets []*nn.MLP[float32]) (*Policy, error) {
	p, err := empty(h)
	if err != nil {
		return nil, err
	}
	if len(nets) != h.Agents {
		return nil, fmt.Errorf("edgesched: %d networks for %d agents", len(nets), h.Agents)
	}
	for i, n := range nets {
		dst := p.nets[i].Params()
		src := n.Params()
		if len(src) != len(dst) {
			return nil, fmt.Errorf("edgesched: agent %d's network has %d layers, want %d", i, len(src)/2, len(dst)/2)
		}
		for j, x := range src {
			if x.Value.Rows != dst[j].Value.Rows || x.Value.Cols != dst[j].Value.Cols {
				return nil, fmt.Errorf("edgesched: agent %d's network: %s is %dx%d, want %dx%d", i, x.Name, x.Value.Rows, x.Value.Cols, dst[j].Value.Rows, dst[j].Value.Cols)
			}
			copy(dst[j].Value.Data, x.Value.Data)
		}
	}
	return p, nil
}

// empty returns a policy of the header h with fresh networks.
func empty(h Policy) (*Policy, error) {
	h.Format = Format
	if err := h.validate(); err != nil {
		return nil, err
	}
	head := nn.Identity
	if h.Output == OutputTanh {
		head = nn.Tanh
	}
	rng := rand.New(rand.NewPCG(0, 0))
	sizes := append(append([]int{h.ObsDim}, h.Hidden...), h.ActDim)
	for i := range h.Agents {
		n := nn.NewMLP[float32](rng, fmt.Sprintf("agent%d", i), sizes, nn.ReLU, head)
		h.nets = append(h.nets, n)
		h.preds = append(h.preds, n.NewPredictor())
	}
	h.x, h.y = make([]float32, h.ObsDim), make([]float32, h.ActDim)
	return &h, nil
}

func (h *Policy) validate() error {
	switch {
	case h.Agents < 1 || h.ObsDim < 1 || h.ActDim < 1:
		return fmt.Errorf("edgesched: agents %d, obs_dim %d, act_dim %d: want each >= 1", h.Agents, h.ObsDim, h.ActDim)
	case len(h.Hidden) == 0:
		return fmt.Errorf("edgesched: hidden: want at least one layer")
	case h.Output != OutputLinear && h.Output != OutputTanh:
		return fmt.Errorf("edgesched: output %q, want %q or %q", h.Output, OutputLinear, OutputTanh)
	}
	for _, i := range h.Ignore {
		if i < 0 || i >= h.ObsDim {
			return fmt.Errorf("edgesched: ignore: index %d outside the observation's [0, %d)", i, h.ObsDim)
		}
	}
	for _, u := range h.Hidden {
		if u < 1 {
			return fmt.Errorf("edgesched: hidden %v: want widths >= 1", h.Hidden)
		}
	}
	return nil
}

// Act writes agent's action for obs to dst (ActDim values in [0, 1]). It
// allocates nothing once dst has room.
func (p *Policy) Act(agent int, obs, dst []float64) []float64 {
	for i, v := range obs[:p.ObsDim] {
		p.x[i] = float32(v)
	}
	for _, i := range p.Ignore {
		p.x[i] = 0
	}
	p.preds[agent].Predict(p.y, p.x)
	dst = dst[:0]
	for _, y := range p.y {
		a := float64(y)
		if p.Output == OutputTanh {
			a = (a + 1) / 2
		}
		dst = append(dst, min(max(a, 0), 1))
	}
	return dst
}

func (p *Policy) arch() string {
	return fmt.Sprintf("edge-policy agents=%d obs=%d act=%d hidden=%v output=%s", p.Agents, p.ObsDim, p.ActDim, p.Hidden, p.Output)
}

func (p *Policy) params() []*nn.Node[float32] {
	var all []*nn.Node[float32]
	for _, n := range p.nets {
		all = append(all, n.Params()...)
	}
	return all
}

// Write writes the policy file.
func (p *Policy) Write(w io.Writer) error {
	if err := modelfile.WriteHeader(w, p); err != nil {
		return err
	}
	return nn.Save(w, p.arch(), p.params())
}

// Read reads a policy file.
func Read(r io.Reader) (*Policy, error) {
	var h Policy
	br, err := modelfile.ReadHeader(r, &h, Format)
	if err != nil {
		return nil, err
	}
	if h.Format != Format {
		return nil, fmt.Errorf("edgesched: format %q, want %q", h.Format, Format)
	}
	p, err := empty(h)
	if err != nil {
		return nil, err
	}
	if err := nn.Load(bufio.NewReader(br), p.arch(), p.params()); err != nil {
		return nil, err
	}
	return p, nil
}
