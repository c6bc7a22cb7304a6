package edge

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"
)

// Policy chooses an agent's action (ActDim values) from its observation.
type Policy interface {
	Act(agent int, obs, dst []float64) []float64
}

// RandomPolicy is the paper's logging engine policy (section 4.1: "we
// implement the random engine strategy in the real environment and
// collect the corresponding trajectories"): every step each agent's
// weights are uniform in [0, 1).
type RandomPolicy struct{ Rand *rand.Rand }

// Act implements Policy.
func (p RandomPolicy) Act(agent int, _, dst []float64) []float64 {
	dst = slices.Grow(dst[:0], ActDim)[:ActDim]
	clear(dst)
	n := Targets
	if agent == Engine {
		n = Scenes
	}
	for i := range n {
		dst[i] = p.Rand.Float64()
	}
	return dst
}

// Transition is one agent's step in a log: what it observed, what it did,
// what it observed next, and the outcome of the step for its scene (the
// engine's: all scenes together).
type Transition struct {
	Day     float64   `json:"day"` // where in the month the step began, days
	Agent   int       `json:"agent"`
	State   []float64 `json:"s"`
	Action  []float64 `json:"a"`
	Next    []float64 `json:"s2"`
	Outcome Outcome   `json:"o"`
}

// Outcome is what a step's finished tasks did.
type Outcome struct {
	Tasks     int64   `json:"tasks"`
	MeanTime  float64 `json:"mean_time_s"`
	Offloaded float64 `json:"offloaded"`
	Missed    float64 `json:"missed"`
}

// OutcomeOf is agent's outcome of a step: its scene's tasks, or all of
// them for the engine.
func OutcomeOf(st StepStats, agent int) Outcome {
	var g GroupStats
	if agent == Engine {
		for _, s := range st.Groups {
			g.Add(s)
		}
	} else {
		g = st.Groups[agent]
	}
	return Outcome{Tasks: g.Tasks, MeanTime: g.MeanTime(), Offloaded: g.Offloaded(), Missed: g.MissRatio()}
}

// Log runs the world for steps under policy and writes every agent's
// transitions as JSON lines to out; the learners see only such files.
func Log(out io.Writer, w *World, steps int, policy Policy) error {
	bw := bufio.NewWriter(out)
	enc := json.NewEncoder(bw)
	var obs, next [Agents][]float64
	var acts [Agents][]float64
	for a := range Agents {
		obs[a] = w.Observe(a, nil)
	}
	for range steps {
		day := float64(w.MonthTime()) / float64(24*time.Hour)
		for a := range Agents {
			acts[a] = policy.Act(a, obs[a], acts[a])
		}
		st, err := w.Step(acts)
		if err != nil {
			return err
		}
		for a := range Agents {
			next[a] = w.Observe(a, next[a])
			if err := enc.Encode(Transition{Day: day, Agent: a, State: obs[a], Action: acts[a], Next: next[a], Outcome: OutcomeOf(st, a)}); err != nil {
				return err
			}
			obs[a], next[a] = next[a], obs[a]
		}
	}
	return bw.Flush()
}

// ReadLog reads the transitions of a log, refusing unknown fields and
// transitions of the wrong size.
func ReadLog(r io.Reader) ([]Transition, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var out []Transition
	for n := 1; ; n++ {
		var t Transition
		err := dec.Decode(&t)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("edge log: transition %d: %w", n, err)
		}
		if t.Agent < 0 || t.Agent >= Agents || len(t.State) != ObsDim || len(t.Next) != ObsDim || len(t.Action) != ActDim {
			return nil, fmt.Errorf("edge log: transition %d: agent %d with state, action, next of %d, %d, %d values, want an agent in [0, %d) and %d, %d, %d",
				n, t.Agent, len(t.State), len(t.Action), len(t.Next), Agents, ObsDim, ActDim, ObsDim)
		}
		out = append(out, t)
	}
}

// DeviceRecord is one device's (a virtual agent's) features over a run:
// its scene and Table 1's measures, and beyond them the spread of its
// task times, the share of its tasks past their deadline and their mean
// input size (the richer features GAN-SMMSG is measured on).
type DeviceRecord struct {
	Scene       int     `json:"scene"`
	Tasks       int64   `json:"tasks"`
	MeanTime    float64 `json:"mean_time_s"`
	Convergence float64 `json:"convergence_s"`
	Offloaded   float64 `json:"offloaded"`
	P10         float64 `json:"p10_s"`
	P50         float64 `json:"p50_s"`
	P90         float64 `json:"p90_s"`
	Missed      float64 `json:"missed"`
	SizeMB      float64 `json:"size_mb"`
}

// DeviceRecords returns the devices that finished a task.
func (w *World) DeviceRecords() []DeviceRecord {
	var out []DeviceRecord
	for g := range Scenes {
		for i := range w.devices[g] {
			d := &w.devices[g][i]
			if d.Tasks == 0 {
				continue
			}
			n := float64(d.Tasks)
			out = append(out, DeviceRecord{Scene: g, Tasks: d.Tasks, MeanTime: d.Mean(), Convergence: d.Convergence().Seconds(),
				Offloaded: float64(d.Offloaded) / n, P10: d.Quantile(0.1), P50: d.Quantile(0.5), P90: d.Quantile(0.9),
				Missed: float64(d.Missed) / n, SizeMB: d.SizeSum / n})
		}
	}
	return out
}
