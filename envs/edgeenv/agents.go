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
