package edgeenv

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/shoal-project/shoal/edge"
	"github.com/shoal-project/shoal/learn/venv"
)

// Steps are a log's steps: every agent's observation and action.
type Steps struct {
	States, Actions [][edge.Agents][]float64
}

// StepsOf reads a log's steps (the agents' transitions of a step follow
// each other, as edge.Log writes them).
func StepsOf(log []edge.Transition) (Steps, error) {
	var s Steps
	if len(log) < edge.Agents {
		return s, fmt.Errorf("edgeenv: %d transitions: not one step of %d agents", len(log), edge.Agents)
	}
	for i := 0; i+edge.Agents <= len(log); i += edge.Agents {
		var st, act [edge.Agents][]float64
		for a := range edge.Agents {
			t := log[i+a]
			if t.Agent != a {
				return Steps{}, fmt.Errorf("edgeenv: transition %d is agent %d's, want agent %d's (a step's agents in order)", i+a, t.Agent, a)
			}
			if len(t.State) != edge.ObsDim || len(t.Action) != edge.ActDim {
				return Steps{}, fmt.Errorf("edgeenv: transition %d: state of %d and action of %d values, want %d and %d", i+a, len(t.State), len(t.Action), edge.ObsDim, edge.ActDim)
			}
			st[a], act[a] = t.State, t.Action
		}
		s.States, s.Actions = append(s.States, st), append(s.Actions, act)
	}
	return s, nil
}

// Virtual is a virtual edge environment learned from logs only: one
// transition model of the joint step (every agent's observation and
// action to every agent's next observation and outcome: tasks, mean
// time, offloading ratio, missed share), by learn/venv's MAIL-style
// training, and the logged steps (the starts of its episodes, and Eq. 8's
// S1). The model is joint because the agents share one state (section
// 3.1): a scene's outcome depends on the engine's shares and the other
// scenes' load, which a model of its own observation alone cannot see.
type Virtual struct {
	models *venv.Ensemble
	Steps
}

// outcomeVec is an outcome as the model sees it.
func outcomeVec(o edge.Outcome) []float64 {
	return []float64{float64(o.Tasks), o.MeanTime, o.Offloaded, o.Missed}
}

// outcomeOf reads the model's outcome vector (outcomeVec's layout),
// clamped to what an outcome can be.
func outcomeOf(o []float64) edge.Outcome {
	return edge.Outcome{Tasks: int64(math.Round(max(o[0], 0))), MeanTime: max(o[1], 0), Offloaded: min(max(o[2], 0), 1), Missed: min(max(o[3], 0), 1)}
}

const outcomeDim = 4

// Learn fits a virtual environment to logged transitions (the agents'
// transitions of a step follow each other, as edge.Log writes them).
func Learn(log []edge.Transition, cfg venv.Config) (*Virtual, error) {
	steps, err := StepsOf(log)
	if err != nil {
		return nil, err
	}
	data := make([]venv.Transition, len(steps.States))
	for i := range data {
		t := &data[i]
		for a, x := range log[i*edge.Agents : (i+1)*edge.Agents] {
			t.State = append(t.State, steps.States[i][a]...)
			t.Action = append(t.Action, steps.Actions[i][a]...)
			t.Next = append(t.Next, x.Next...)
			t.Outcome = append(t.Outcome, outcomeVec(x.Outcome)...)
		}
	}
	m, err := venv.TrainEnsemble(data, cfg)
	if err != nil {
		return nil, fmt.Errorf("edgeenv: %w", err)
	}
	return &Virtual{models: m, Steps: steps}, nil
}

// step samples the joint step from obs under acts, with the ensemble's
// disagreement on it.
func (v *Virtual) step(obs, acts [edge.Agents][]float64, rng *rand.Rand) (next [edge.Agents][]float64, outs [edge.Agents]edge.Outcome, disagreement float64) {
	var s, a []float64
	for i := range edge.Agents {
		s, a = append(s, obs[i]...), append(a, acts[i]...)
	}
	n, o, u := v.models.Step(s, a, rng)
	for i := range edge.Agents {
		next[i] = n[i*edge.ObsDim : (i+1)*edge.ObsDim]
		outs[i] = outcomeOf(o[i*outcomeDim : (i+1)*outcomeDim])
	}
	return next, outs, u
}

// Rollout runs policy in the virtual environment for steps from a logged
// start and returns each step's outcomes by agent.
func (v *Virtual) Rollout(policy edge.Policy, steps int, rng *rand.Rand) [][edge.Agents]edge.Outcome {
	obs := v.States[rng.IntN(len(v.States))]
	var act [edge.Agents][]float64
	var out [][edge.Agents]edge.Outcome
	for range steps {
		for a := range edge.Agents {
			act[a] = policy.Act(a, obs[a], act[a])
		}
		next, row, _ := v.step(obs, act, rng)
		out = append(out, row)
		obs = next
	}
	return out
}

// virtualWorld is a virtual environment as the agents train in it, every
// step charged penalty times the ensemble's disagreement.
type virtualWorld struct {
	v       *Virtual
	penalty float64
	obs     [edge.Agents][]float64
}

func (w *virtualWorld) reset(rng *rand.Rand) ([edge.Agents][]float64, error) {
	w.obs = w.v.States[rng.IntN(len(w.v.States))]
	return w.obs, nil
}

func (w *virtualWorld) step(acts [edge.Agents][]float64, rng *rand.Rand) ([edge.Agents][]float64, [edge.Agents]edge.Outcome, float64, error) {
	next, outs, u := w.v.step(w.obs, acts, rng)
	w.obs = next
	return next, outs, w.penalty * u, nil
}

// SliceRatio is one time slice's offloading ratio of one scene, in the
// real world's log and in the virtual environment learned from that slice
// alone, both under the random engine policy (Fig. 4).
type SliceRatio struct {
	Slice   int     `json:"slice"`
	Scene   int     `json:"scene"`
	Real    float64 `json:"real"`
	Virtual float64 `json:"virtual"`
}

// OffloadRatios splits a logged day into slices, learns a virtual
// environment from each slice's transitions alone, runs the random policy
// in it for as many steps, and compares each scene's offloading ratio with
// the log's (the paper's Fig. 4: 12 slices of a day).
func OffloadRatios(log []edge.Transition, slices int, cfg venv.Config, seed uint64) ([]SliceRatio, error) {
	steps := len(log) / edge.Agents / slices
	if steps < 2 {
		return nil, fmt.Errorf("edgeenv: %d transitions in %d slices: too few", len(log), slices)
	}
	var out []SliceRatio
	for k := range slices {
		part := log[k*steps*edge.Agents : (k+1)*steps*edge.Agents]
		v, err := Learn(part, cfg)
		if err != nil {
			return nil, fmt.Errorf("slice %d: %w", k, err)
		}
		rng := rand.New(rand.NewPCG(seed, uint64(k)))
		roll := v.Rollout(edge.RandomPolicy{Rand: rng}, steps, rng)
		for g := range edge.Scenes {
			var real, virt, nr, nv float64
			for i := g; i < len(part); i += edge.Agents {
				o := part[i].Outcome
				real += o.Offloaded * float64(o.Tasks)
				nr += float64(o.Tasks)
			}
			for _, row := range roll {
				virt += row[g].Offloaded * float64(row[g].Tasks)
				nv += float64(row[g].Tasks)
			}
			out = append(out, SliceRatio{Slice: k, Scene: g, Real: real / max(nr, 1), Virtual: virt / max(nv, 1)})
		}
	}
	return out, nil
}
