package multicloud

import (
	"cmp"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/shoal-project/shoal/learn/bo/svr"
	"github.com/shoal-project/shoal/learn/modelfile"
	"github.com/shoal-project/shoal/learn/nn"
)

// PolicyFormat names the file format of trained performance models.
const PolicyFormat = "shoal-multicloud-models"

// StandardRPS are the request rates of the standard processing times
// (section III-A: "The range of RPS for it is [10, 20, 30, 40, 50]").
var StandardRPS = []float64{10, 20, 30, 40, 50}

// Policy is a file of trained performance models, both kinds, one per
// routed service: a JSON header, then the networks' weights.
type Policy struct {
	Format    string   `json:"format"`
	Scenario  string   `json:"scenario"`
	Locations []string `json:"locations"`
	// Inputs is the models' input layout: InputsPaper or InputsDerived.
	Inputs string `json:"inputs"`
	// Shift is the request shift's layout: ShiftOneWay (the paper's; files
	// without the field) or ShiftTwoWay.
	Shift    string         `json:"shift,omitempty"`
	Services []ServiceModel `json:"services"`
	// Provenance says how the models were made.
	Provenance Provenance `json:"provenance"`

	nets []*Net
}

// ServiceModel is one service's two models and its standard processing
// times.
type ServiceModel struct {
	Name string `json:"name"`
	// Standard is the service's mean response time, ms, at each of
	// StandardRPS, measured with one replica in one location.
	Standard  []float64 `json:"standard_ms"`
	NNScaler  nn.Scaler `json:"nn_scaler"`
	SVRScaler nn.Scaler `json:"svr_scaler"`
	SVR       svr.Saved `json:"svr"`
	// Test is each model's accuracy on the offline test split, by kind
	// ("nn", "svr"); its MAE is the margin a shift must win by (Optimise).
	Test map[string]Accuracy `json:"test"`
	// P95SVR models the 95th percentile of the service's response time,
	// ms (its calls' histograms merged over the locations, its children's
	// time included), on the same inputs: what the p95 objective
	// minimises. An SVR, the faster of the two kinds to fit; files from
	// before it have none.
	P95Scaler nn.Scaler `json:"p95_svr_scaler,omitzero"`
	P95SVR    svr.Saved `json:"p95_svr,omitzero"`
	// Choice is the kind the "chosen" models use: the one of lower MAE on
	// the held-out split (Choose), decided when the file was trained, so a
	// user need not.
	Choice string `json:"choice,omitempty"`
}

// Kinds of a file's models: the network, the SVR, or each service's
// Choice.
const (
	KindNN     = "nn"
	KindSVR    = "svr"
	KindChosen = "chosen"
	// KindP95 names the p95 model's accuracy in Test.
	KindP95 = "p95-svr"
)

// LearnedRoutes are the learned route policies the registry names
// (control/policy), by the model their BO runs on: each service's chosen
// model (the default), the network, or the SVR.
var LearnedRoutes = map[string]string{"multicloud": KindChosen, "multicloud-nn": KindNN, "multicloud-svr": KindSVR}

// Choose picks the kind of lower mean absolute error on the held-out
// split (the SVR on a tie; the one measured if only one is): the split no
// sample of the fit saw, and not the online runs the routes are compared
// on.
func Choose(test map[string]Accuracy) string {
	n, okN := test[KindNN]
	s, okS := test[KindSVR]
	if okN && (!okS || n.MAE < s.MAE) {
		return KindNN
	}
	return KindSVR
}

// Accuracy is a model's R², MSE (ms²) and MAE (ms) on N samples.
type Accuracy struct {
	R2  float64 `json:"r2"`
	MSE float64 `json:"mse"`
	MAE float64 `json:"mae"`
	N   int     `json:"n"`
}

// Provenance records the training run.
type Provenance struct {
	Seed        uint64  `json:"seed"`
	Samples     int     `json:"samples"` // offline data points per service
	Epochs      int     `json:"epochs"`
	LR          float64 `json:"lr"`
	LRDecay     float64 `json:"lr_decay"`    // factor of the step decay
	DecayEvery  int     `json:"decay_every"` // epochs between decays
	WallSeconds float64 `json:"wall_seconds"`
}

// NewPolicy returns a policy with fresh networks for services.
func NewPolicy(p Policy, rng *rand.Rand) *Policy {
	p.Format = PolicyFormat
	p.nets = nil
	for _, s := range p.Services {
		p.nets = append(p.nets, NewNet(rng, s.Name, p.inputs(len(s.Standard))))
	}
	return &p
}

// inputs is the length of a model's input.
func (p *Policy) inputs(std int) int {
	n := len(p.Locations)
	in := Inputs(n, std, ShiftLen(n, p.Shift))
	if p.Inputs == InputsDerived {
		return in + 1 + 2*n
	}
	return in
}

// Net returns service i's network.
func (p *Policy) Net(i int) *Net { return p.nets[i] }

func (p *Policy) arch() string {
	a := fmt.Sprintf("multicloud locations=%d services=%d inputs=%s layers=%d units=%d", len(p.Locations), len(p.Services), p.Inputs, NetLayers, NetUnits)
	if p.Shift == ShiftTwoWay {
		a += " shift=" + p.Shift // files from before two-way shifts name none
	}
	return a
}

func (p *Policy) state() []*nn.Node[float32] {
	var all []*nn.Node[float32]
	for _, n := range p.nets {
		all = append(all, n.State()...)
	}
	return all
}

// Write writes the policy file.
func (p *Policy) Write(w io.Writer) error {
	if err := modelfile.WriteHeader(w, p); err != nil {
		return err
	}
	return nn.Save(w, p.arch(), p.state())
}

// ReadPolicy reads a policy file.
func ReadPolicy(r io.Reader) (*Policy, error) {
	var h Policy
	br, err := modelfile.ReadHeader(r, &h, PolicyFormat)
	if err != nil {
		return nil, err
	}
	if h.Format != PolicyFormat {
		return nil, fmt.Errorf("format %q, want %q", h.Format, PolicyFormat)
	}
	if h.Inputs != InputsPaper && h.Inputs != InputsDerived {
		return nil, fmt.Errorf("inputs %q, want %q or %q", h.Inputs, InputsPaper, InputsDerived)
	}
	if len(h.Locations) < 2 || len(h.Services) == 0 {
		return nil, fmt.Errorf("policy has %d locations and %d services: want at least 2 and 1", len(h.Locations), len(h.Services))
	}
	p := NewPolicy(h, rand.New(rand.NewPCG(0, 0)))
	if err := nn.Load(br, p.arch(), p.state()); err != nil {
		return nil, err
	}
	return p, nil
}

// Fitted is a service's trained model as a controller uses it.
type Fitted struct {
	Model    Model
	Standard []float64 // the standard processing times, ms
	MAE      float64   // the model's mean absolute error on its test split, ms
	// P95 is the model of the p95 and P95MAE its error (nil in files
	// without one).
	P95    Model
	P95MAE float64
	// Shift is the layout of the request shifts the model reads.
	Shift string
	// Alt is the service's model of the other kind (the SVR beside the
	// network, and the network beside the SVR): with Model, an ensemble
	// whose disagreement is their uncertainty (Options.Uncertainty).
	Alt Model
}

// Models returns fresh instances of the policy's models of kind "nn",
// "svr" or "chosen" (each service's Choice; Choose of its test accuracy
// in files without one), by service name.
func (p *Policy) Models(kind string) (map[string]Fitted, error) {
	out := map[string]Fitted{}
	for i, s := range p.Services {
		f := Fitted{Standard: s.Standard, Shift: p.Shift}
		kind := kind
		if kind == KindChosen {
			kind = cmp.Or(s.Choice, Choose(s.Test))
		}
		if kind != KindNN && kind != KindSVR {
			return nil, fmt.Errorf("unknown model kind %q (want nn, svr or chosen)", kind)
		}
		nn := Model(&NNModel{Scaler: s.NNScaler, Net: p.nets[i].clone()})
		m, err := svr.Load(s.SVR)
		switch {
		case err != nil && kind == KindSVR:
			return nil, fmt.Errorf("service %s: %w", s.Name, err)
		case err != nil: // a file of networks only: no ensemble
			f.Model = nn
		case kind == KindSVR:
			f.Model, f.Alt = &SVRModel{Scaler: s.SVRScaler, M: m}, nn
		default:
			f.Model, f.Alt = nn, &SVRModel{Scaler: s.SVRScaler, M: m}
		}
		f.MAE = s.Test[kind].MAE
		if a, ok := s.Test[KindP95]; ok {
			m, err := svr.Load(s.P95SVR)
			if err != nil {
				return nil, fmt.Errorf("service %s: p95 model: %w", s.Name, err)
			}
			f.P95, f.P95MAE = &SVRModel{Scaler: s.P95Scaler, M: m}, a.MAE
		}
		if p.Inputs == InputsDerived {
			f.Model = &derivedModel{m: f.Model, n: len(p.Locations), std: len(s.Standard)}
			if f.Alt != nil {
				f.Alt = &derivedModel{m: f.Alt, n: len(p.Locations), std: len(s.Standard)}
			}
		}
		if p.Inputs == InputsDerived && f.P95 != nil {
			f.P95 = &derivedModel{m: f.P95, n: len(p.Locations), std: len(s.Standard)}
		}
		out[s.Name] = f
	}
	return out, nil
}

// clone shares the weights but not the inference scratch.
func (n *Net) clone() *Net {
	return &Net{Hidden: n.Hidden, Norms: n.Norms, Out: n.Out}
}
