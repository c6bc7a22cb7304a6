package edgeenv

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/edge"
	"github.com/shoal-project/shoal/learn/gan"
)

// StepMeasures are the measures of a scene's step that an environment's
// fidelity is judged on, in the order FidelityOf returns their KL (the
// scene comes last).
var StepMeasures = []string{"tasks", "mean time", "offloaded", "missed"}

// Fidelity is an environment's match to a held-out log: the KL of each
// step measure's histogram and of the scenes' shares (gan.KL), and the
// mean KL of every pair of measures' joint histogram (gan.PairKL).
type Fidelity struct {
	Env   string    `json:"env"`
	KL    []float64 `json:"kl"` // by StepMeasures, then the scene
	Pairs float64   `json:"pairs"`
	Steps int       `json:"steps"`
}

// FidelityOf compares an environment's scene outcomes with the log's,
// step by step.
func FidelityOf(env string, real, got [][edge.Scenes]edge.Outcome) Fidelity {
	r, g := outcomeTable(real), outcomeTable(got)
	return Fidelity{Env: env, KL: gan.KL(r, g, 20), Pairs: gan.PairKL(r, g, 10), Steps: len(got)}
}

// outcomeTable is every scene's step outcome as a row, the scene its class.
func outcomeTable(steps [][edge.Scenes]edge.Outcome) gan.Data {
	d := gan.Data{Classes: edge.Scenes}
	for _, row := range steps {
		for s, o := range row {
			if o.Tasks == 0 {
				continue
			}
			d.Cont = append(d.Cont, []float64{float64(o.Tasks), o.MeanTime, o.Offloaded, o.Missed})
			d.Class = append(d.Class, s)
		}
	}
	return d
}

// LoggedOutcomes are a log's scene outcomes, step by step.
func LoggedOutcomes(log []edge.Transition) ([][edge.Scenes]edge.Outcome, error) {
	if _, err := StepsOf(log); err != nil {
		return nil, err
	}
	out := make([][edge.Scenes]edge.Outcome, len(log)/edge.Agents)
	for i := range out {
		for s := range edge.Scenes {
			out[i][s] = log[i*edge.Agents+s].Outcome
		}
	}
	return out, nil
}

// Replay is the black-box environment's outcome of each step of a
// held-out log, predicted from the step's logged observations and
// actions.
func (v *Virtual) Replay(log []edge.Transition, seed uint64) ([][edge.Scenes]edge.Outcome, error) {
	steps, err := StepsOf(log)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x7265706c)) // "repl"
	out := make([][edge.Scenes]edge.Outcome, len(steps.States))
	for i := range out {
		_, outs, _ := v.step(steps.States[i], steps.Actions[i], rng)
		copy(out[i][:], outs[:edge.Scenes])
	}
	return out, nil
}

// Replay runs a held-out log's logged actions, step by step under rule,
// in each member's world from the log's start (its first step's time),
// and returns every member's outcomes, one member after another. The
// log must be one window of consecutive steps.
func (g *GreyBox) Replay(log []edge.Transition, rule edge.Heuristic, seed uint64) ([][edge.Scenes]edge.Outcome, error) {
	steps, err := StepsOf(log)
	if err != nil {
		return nil, err
	}
	start := time.Duration(log[0].Day * float64(24*time.Hour)).Round(time.Second)
	var out [][edge.Scenes]edge.Outcome
	for m := range g.Members {
		w, err := g.World(m, seed+uint64(m), start)
		if err != nil {
			return nil, err
		}
		if err := w.SetHeuristic(rule); err != nil {
			return nil, err
		}
		for i, acts := range steps.Actions {
			st, err := w.Step(acts)
			if err != nil {
				return nil, fmt.Errorf("edgeenv: replaying step %d: %w", i, err)
			}
			var row [edge.Scenes]edge.Outcome
			for s := range edge.Scenes {
				row[s] = edge.OutcomeOf(st, s)
			}
			out = append(out, row)
		}
	}
	return out, nil
}
