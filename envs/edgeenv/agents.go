package edgeenv

import (
	"fmt"

	"github.com/shoal-project/shoal/edge"
	"github.com/shoal-project/shoal/learn/gan"
)

// Measures are Table 1's columns, in the order KL returns them.
var Measures = []string{"average task time", "convergence time", "offloading ratio", "agent"}

// Methods are Table 1's rows.
var Methods = []string{"gan-smmsg", "gmm", "gan", "wgan"}

// table turns device records into a table: the three measures, and the
// scene as the class.
func table(recs []edge.DeviceRecord) gan.Data {
	d := gan.Data{Classes: edge.Scenes}
	for _, r := range recs {
		d.Cont = append(d.Cont, []float64{r.MeanTime, r.Convergence, r.Offloaded})
		d.Class = append(d.Class, r.Scene)
	}
	return d
}

// AgentKL is one method's KL between generated and real agents per measure.
type AgentKL struct {
	Method string    `json:"method"`
	KL     []float64 `json:"kl"` // by Measures
	Agents int       `json:"agents"`
}

// Agents fits every method to the real devices' records, generates n
// virtual agents with each, and measures the KL of each measure (Table 1).
// The GMM has 10 components (the paper's choice); the GANs train for
// steps generator updates.
func Agents(real []edge.DeviceRecord, n, steps int, seed uint64) ([]AgentKL, error) {
	if len(real) < 20 {
		return nil, fmt.Errorf("edgeenv: %d device records: too few to learn agents from", len(real))
	}
	data := table(real)
	var out []AgentKL
	for _, m := range Methods {
		var gen gan.Data
		switch m {
		case "gmm":
			mix, err := gan.FitMixture(data, 10, 200, seed)
			if err != nil {
				return nil, err
			}
			gen = mix.Generate(n)
		default:
			kind := map[string]gan.Kind{"gan-smmsg": gan.SMMSG, "gan": gan.GAN, "wgan": gan.WGAN}[m]
			cfg := gan.DefaultConfig(kind)
			cfg.Steps, cfg.Seed = steps, seed
			model, err := gan.Train(data, cfg)
			if err != nil {
				return nil, err
			}
			gen = model.Generate(n)
		}
		out = append(out, AgentKL{Method: m, KL: gan.KL(data, gen, 20), Agents: n})
	}
	return out, nil
}

// RichMeasures are the richer device features beyond Table 1: the three
// continuous measures, then the spread of a device's task times, the
// share it missed and its tasks' mean input size.
var RichMeasures = []string{"average task time", "convergence time", "offloading ratio", "p10 task time", "median task time",
	"p90 task time", "missed", "input size"}

// richTable is the devices' records as RichMeasures, the scene the class.
func richTable(recs []edge.DeviceRecord) gan.Data {
	d := gan.Data{Classes: edge.Scenes}
	for _, r := range recs {
		d.Cont = append(d.Cont, []float64{r.MeanTime, r.Convergence, r.Offloaded, r.P10, r.P50, r.P90, r.Missed, r.SizeMB})
		d.Class = append(d.Class, r.Scene)
	}
	return d
}

// RichKL is one method's fit of the richer features: the KL per measure
// (RichMeasures, then the agent), and the mean KL of every pair of
// measures' joint histogram (gan.PairKL).
type RichKL struct {
	Method string    `json:"method"`
	KL     []float64 `json:"kl"`
	Pairs  float64   `json:"pairs"`
}

// RichAgents fits the GMM (10 components) and GAN-SMMSG (steps generator
// updates) to the richer features and measures n generated agents of each.
func RichAgents(real []edge.DeviceRecord, n, steps int, seed uint64) ([]RichKL, error) {
	if len(real) < 20 {
		return nil, fmt.Errorf("edgeenv: %d device records: too few to learn agents from", len(real))
	}
	data := richTable(real)
	mix, err := gan.FitMixture(data, 10, 200, seed)
	if err != nil {
		return nil, err
	}
	cfg := gan.DefaultConfig(gan.SMMSG)
	cfg.Steps, cfg.Seed = steps, seed
	model, err := gan.Train(data, cfg)
	if err != nil {
		return nil, err
	}
	var out []RichKL
	for _, m := range []struct {
		name string
		gen  gan.Data
	}{{"gmm", mix.Generate(n)}, {"gan-smmsg", model.Generate(n)}} {
		out = append(out, RichKL{Method: m.name, KL: gan.KL(data, m.gen, 20), Pairs: gan.PairKL(data, m.gen, 10)})
	}
	return out, nil
}
