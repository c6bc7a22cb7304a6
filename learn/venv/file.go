package venv

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/learn/nn"
)

// Format names a saved model.
const Format = "shoal-venv-model"

// header is a saved model's description; its weights follow it.
type header struct {
	Format   string    `json:"format"`
	States   int       `json:"states"`
	Actions  int       `json:"actions"`
	Outcomes int       `json:"outcomes"`
	Hidden   int       `json:"hidden"`
	In       nn.Scaler `json:"in"`
	Out      nn.Scaler `json:"out"`
}

func (h header) arch() string {
	return fmt.Sprintf("venv states=%d actions=%d outcomes=%d hidden=%d", h.States, h.Actions, h.Outcomes, h.Hidden)
}

func (h header) net() *nn.MLP[float32] {
	w := h.States + h.Outcomes
	return nn.NewMLP[float32](rand.New(rand.NewPCG(0, 0)), "venv", []int{h.States + h.Actions, h.Hidden, h.Hidden, 2 * w}, nn.ReLU, nn.Identity)
}

func (m *Model) header() header {
	return header{Format: Format, States: m.states, Actions: len(m.in.Mean) - m.states, Outcomes: m.outs,
		Hidden: m.net.Layers[0].W.Value.Cols, In: m.in, Out: m.out}
}

// Write writes the model: a JSON header line, then its weights.
func (m *Model) Write(w io.Writer) error {
	h := m.header()
	if err := modelfile.WriteHeader(w, h); err != nil {
		return err
	}
	return nn.Save(w, h.arch(), m.net.Params())
}

// Read reads a model written by Write. Given a *bufio.Reader it reads no
// further than the model, so models can follow each other in one file.
func Read(r io.Reader) (*Model, error) {
	var h header
	br, err := modelfile.ReadHeader(r, &h, Format)
	if err != nil {
		return nil, err
	}
	if h.Format != Format {
		return nil, fmt.Errorf("venv: format %q, want %q", h.Format, Format)
	}
	if h.States < 1 || h.Actions < 0 || h.Outcomes < 0 || h.Hidden < 1 {
		return nil, fmt.Errorf("venv: states %d, actions %d, outcomes %d, hidden %d: want states and hidden >= 1", h.States, h.Actions, h.Outcomes, h.Hidden)
	}
	if len(h.In.Mean) != h.States+h.Actions || len(h.In.Std) != len(h.In.Mean) || len(h.Out.Mean) != h.States+h.Outcomes || len(h.Out.Std) != len(h.Out.Mean) {
		return nil, fmt.Errorf("venv: scalers of %d and %d columns for %d states, %d actions and %d outcomes", len(h.In.Mean), len(h.Out.Mean), h.States, h.Actions, h.Outcomes)
	}
	m := &Model{net: h.net(), in: h.In, out: h.Out, states: h.States, outs: h.Outcomes}
	if err := nn.Load(bufio.NewReader(br), h.arch(), m.net.Params()); err != nil {
		return nil, err
	}
	m.pred = m.net.NewPredictor()
	return m, nil
}
