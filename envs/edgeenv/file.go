package edgeenv

import (
	"bufio"
	"fmt"
	"io"

	"github.com/shoal-project/shoal/edge"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/learn/nn"
	"github.com/shoal-project/shoal/learn/venv"
)

// EnvFormat names a virtual environment file.
const EnvFormat = "shoal-edge-env"

// envHeader describes a virtual environment file: this header line, the
// ensemble's joint models (learn/venv files, one after another), then the
// logged steps' observations and actions.
type envHeader struct {
	Format string `json:"format"`
	Agents int    `json:"agents"`
	ObsDim int    `json:"obs_dim"`
	ActDim int    `json:"act_dim"`
	Steps  int    `json:"steps"`
	Models int    `json:"models,omitempty"` // the ensemble's members (absent: 1)
	// Provenance says how the environment was learned.
	Provenance EnvProvenance `json:"provenance"`
}

// EnvProvenance records how a virtual environment was learned.
type EnvProvenance struct {
	Logs string `json:"logs"`
	// Rule is the offloading rule the logs were made under (edge.RuleName).
	Rule        string      `json:"rule,omitempty"`
	Config      venv.Config `json:"config"`
	WallSeconds float64     `json:"wall_seconds"`
}

func (h envHeader) arch() string {
	return fmt.Sprintf("edge-env steps=%d agents=%d obs=%d act=%d", h.Steps, h.Agents, h.ObsDim, h.ActDim)
}

// Write writes the virtual environment, with prov, to w.
func (v *Virtual) Write(w io.Writer, prov EnvProvenance) error {
	h := envHeader{Format: EnvFormat, Agents: edge.Agents, ObsDim: edge.ObsDim, ActDim: edge.ActDim, Steps: len(v.States),
		Models: len(v.models.Models), Provenance: prov}
	if err := modelfile.WriteHeader(w, h); err != nil {
		return err
	}
	for _, m := range v.models.Models {
		if err := m.Write(w); err != nil {
			return err
		}
	}
	return nn.Save(w, h.arch(), v.Steps.tensors())
}

// tensors lays the steps out as two tensors, a row per step.
func (s Steps) tensors() []*nn.Node[float64] {
	obs := nn.NewParam[float64]("observations", max(len(s.States), 1), edge.Agents*edge.ObsDim)
	act := nn.NewParam[float64]("actions", max(len(s.States), 1), edge.Agents*edge.ActDim)
	for i := range s.States {
		for a := range edge.Agents {
			copy(obs.Value.Data[(i*edge.Agents+a)*edge.ObsDim:], s.States[i][a])
			copy(act.Value.Data[(i*edge.Agents+a)*edge.ActDim:], s.Actions[i][a])
		}
	}
	return []*nn.Node[float64]{obs, act}
}

// ReadVirtual reads a virtual environment file and its provenance.
func ReadVirtual(r io.Reader) (*Virtual, EnvProvenance, error) {
	var h envHeader
	br, err := modelfile.ReadHeader(r, &h, EnvFormat)
	if err != nil {
		return nil, EnvProvenance{}, err
	}
	if h.Format != EnvFormat {
		return nil, EnvProvenance{}, fmt.Errorf("edgeenv: format %q, want %q", h.Format, EnvFormat)
	}
	h.Models = max(h.Models, 1)
	if h.Agents != edge.Agents || h.ObsDim != edge.ObsDim || h.ActDim != edge.ActDim || h.Steps < 1 || h.Models > 64 {
		return nil, EnvProvenance{}, fmt.Errorf("edgeenv: an environment of %d agents, observations of %d and actions of %d over %d steps, %d models; want %d, %d, %d, at least one step and at most 64 models",
			h.Agents, h.ObsDim, h.ActDim, h.Steps, h.Models, edge.Agents, edge.ObsDim, edge.ActDim)
	}
	v := &Virtual{models: &venv.Ensemble{}}
	rd := bufio.NewReader(br)
	for k := range h.Models {
		m, err := venv.Read(rd)
		if err != nil {
			return nil, EnvProvenance{}, fmt.Errorf("edgeenv: model %d: %w", k, err)
		}
		v.models.Models = append(v.models.Models, m)
	}
	v.States = make([][edge.Agents][]float64, h.Steps)
	v.Actions = make([][edge.Agents][]float64, h.Steps)
	t := v.Steps.tensors()
	if err := nn.Load(rd, h.arch(), t); err != nil {
		return nil, EnvProvenance{}, err
	}
	for i := range h.Steps {
		for a := range edge.Agents {
			o := (i*edge.Agents + a) * edge.ObsDim
			v.States[i][a] = t[0].Value.Data[o : o+edge.ObsDim]
			o = (i*edge.Agents + a) * edge.ActDim
			v.Actions[i][a] = t[1].Value.Data[o : o+edge.ActDim]
		}
	}
	return v, h.Provenance, nil
}
