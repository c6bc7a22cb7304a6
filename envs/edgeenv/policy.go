package edgeenv

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/shoal-project/shoal/control/edgesched"
	"github.com/shoal-project/shoal/edge"
	"github.com/shoal-project/shoal/learn/nn"
	"github.com/shoal-project/shoal/learn/rl"
)

// Reward scores an agent's step from its outcome: minus the share of its
// tasks past their deadline, minus a tenth of their mean completion time
// in seconds.
func Reward(o edge.Outcome) float64 { return -o.Missed - 0.1*o.MeanTime }

// PolicyConfig is MA-PPO's setting: the paper's actor (two hidden layers
// of 32, ReLU), gamma 0.95; PPO's defaults elsewhere (the paper's RMSProp
// is Adam here, rl.PPO's optimiser).
func PolicyConfig() rl.PPOConfig {
	c := rl.DefaultPPOConfig()
	c.Hidden, c.Activation, c.Gamma = []int{32, 32}, nn.ReLU, 0.95
	c.NSteps, c.BatchSize, c.NEpochs, c.LogStdInit = 64, 256, 10, -1
	return c
}

// Ignore are the observation indices every policy learned here reads as 0
// (edgesched.Policy.Ignore): the week's phase and the month's share
// (edge.World.Observe's time features 2-4). A day of logs holds them
// nearly constant, so a network can only extrapolate on them a week or a
// month later, where it is deployed; the day's phase it sees whole.
var Ignore = []int{2, 3, 4}

// ignore zeroes Ignore's indices of obs in place.
func ignore(obs []float64) []float64 {
	for _, i := range Ignore {
		obs[i] = 0
	}
	return obs
}

// Lambda is Eq. 8's weight of the actions' magnitude (section 4.2.2).
const Lambda = 0.4

// MAPPOConfig configures MA-PPO in a virtual environment.
type MAPPOConfig struct {
	// Steps are environment steps per agent, in episodes of Horizon steps.
	Steps, Horizon int
	// Anchor weighs Eq. 8 beside PPO's loss (1: the paper's).
	Anchor float64
	// Penalty is MOPO's lambda: every step's reward pays Penalty times
	// the ensemble's disagreement on it (venv.Ensemble.Step).
	Penalty float64
	Seed    uint64
}

// DefaultMAPPO is the paper's MA-PPO: 200,000 steps per agent in episodes
// of 60, Eq. 8 at full weight, no uncertainty penalty.
func DefaultMAPPO() MAPPOConfig {
	return MAPPOConfig{Steps: 200000, Horizon: 60, Anchor: 1, Seed: 1}
}

// OperatorModels and OperatorMAPPO are the operator's pipeline, learned
// from edge.DefaultMix's logs: an ensemble of four models, Eq. 8 at 0.3
// and the models' disagreement charged at 0.1, chosen on validation
// windows (docs/results/edge.md).
const OperatorModels = 4

// OperatorMAPPO is MA-PPO of the operator's pipeline (OperatorModels).
func OperatorMAPPO() MAPPOConfig {
	c := DefaultMAPPO()
	c.Anchor, c.Penalty = 0.3, 0.1
	return c
}

// TrainMAPPO trains each agent's PPO in the virtual environment, the
// agents acting together. Every update also minimises Anchor times Eq. 8,
// the MAIL-MMSG policy's loss: the squared distance of the policy's
// actions to the logged ones on logged states (S1), plus lambda times
// their squared magnitude on the virtual environment's states (S), which
// keeps the policy where the learned model was fitted; and every step's
// reward pays Penalty times the models' disagreement (MOPO), which keeps
// it where the models agree.
func TrainMAPPO(v *Virtual, cfg MAPPOConfig) (*edgesched.Policy, error) {
	began := time.Now()
	var anchor func(int, *rand.Rand) func(*nn.Tape[float32], *nn.MLP[float32], *nn.Node[float32]) *nn.Node[float32]
	if cfg.Anchor > 0 {
		anchor = func(agent int, rng *rand.Rand) func(*nn.Tape[float32], *nn.MLP[float32], *nn.Node[float32]) *nn.Node[float32] {
			eq8 := v.eq8(agent, PolicyConfig().BatchSize, rng)
			return func(tp *nn.Tape[float32], pi *nn.MLP[float32], out *nn.Node[float32]) *nn.Node[float32] {
				return tp.Scale(eq8(tp, pi, out), float32(cfg.Anchor))
			}
		}
	}
	nets, err := trainJoint(func() world { return &virtualWorld{v: v, penalty: cfg.Penalty} }, cfg.Steps, cfg.Horizon, cfg.Seed, anchor)
	if err != nil {
		return nil, err
	}
	return newPolicy("mappo", nets, edgesched.OutputLinear, edgesched.Provenance{Seed: cfg.Seed, Steps: cfg.Steps, Horizon: cfg.Horizon,
		Lambda: Lambda, Anchor: cfg.Anchor, Penalty: cfg.Penalty, WallSeconds: time.Since(began).Seconds()})
}

// newPolicy is a policy file of method's networks, one per agent, with
// MA-PPO's actor's hidden layers.
func newPolicy(method string, nets []*nn.MLP[float32], output string, prov edgesched.Provenance) (*edgesched.Policy, error) {
	return edgesched.New(edgesched.Policy{Method: method, Agents: edge.Agents, ObsDim: edge.ObsDim, ActDim: edge.ActDim,
		Hidden: PolicyConfig().Hidden, Output: output, Ignore: slices.Clone(Ignore), Provenance: prov}, nets)
}

// eq8 is Eq. 8 for agent's policy, on rows logged transitions drawn per
// update and the update's virtual states.
func (v *Virtual) eq8(agent, rows int, rng *rand.Rand) func(*nn.Tape[float32], *nn.MLP[float32], *nn.Node[float32]) *nn.Node[float32] {
	return func(tp *nn.Tape[float32], pi *nn.MLP[float32], out *nn.Node[float32]) *nn.Node[float32] {
		obs, act := tp.Input(rows, edge.ObsDim), tp.Input(rows, edge.ActDim)
		for r := range rows {
			i := rng.IntN(len(v.States))
			for j, x := range v.States[i][agent] {
				obs.Value.Data[r*edge.ObsDim+j] = float32(x)
			}
			for _, j := range Ignore {
				obs.Value.Data[r*edge.ObsDim+j] = 0
			}
			for j, x := range v.Actions[i][agent] {
				act.Value.Data[r*edge.ActDim+j] = float32(x)
			}
		}
		d := tp.Sub(pi.Forward(tp, obs), act)
		return tp.Add(tp.Mean(tp.RowSum(tp.Mul(d, d))), tp.Scale(tp.Mean(tp.RowSum(tp.Mul(out, out))), Lambda))
	}
}

// Evaluation is a policy's tasks in the real world, by scene and in all.
type Evaluation struct {
	Policy string
	Scenes [edge.Scenes]edge.GroupStats
	All    edge.GroupStats
}

// Contender is what runs in an evaluation: a policy file, a per-task
// heuristic (with Policy nil, equal CPU shares), a mix of logging engines
// (edge.Mix, which reads the world it runs in), or, when all are unset,
// the random engine.
type Contender struct {
	Name      string
	Policy    edge.Policy
	Heuristic edge.Heuristic
	Engine    []edge.Stretch
	// Temperature is Softmin's (0: its default).
	Temperature float64
	// Task, when set, chooses every task's target (a per-task rule).
	Task edge.TaskPolicy
}

// policyFor returns the contender's policy in world w.
func (c Contender) policyFor(w *edge.World, seed uint64) (edge.Policy, error) {
	switch {
	case c.Policy != nil:
		return c.Policy, nil
	case c.Engine != nil:
		return edge.NewMix(w, rand.New(rand.NewPCG(seed, 0x6d6978)), c.Engine)
	case c.Heuristic != "" || c.Task != nil:
		return edge.EvenWeights{}, nil // equal shares: the rule decides
	}
	return edge.RandomPolicy{Rand: rand.New(rand.NewPCG(seed, 0x65))}, nil
}

// Evaluate runs c in the real world from month time start for window,
// seeded, and sums each scene's outcomes.
func Evaluate(c Contender, cfg edge.Config, start, window time.Duration, seed uint64) (Evaluation, error) {
	shape, err := edge.WikipediaShape()
	if err != nil {
		return Evaluation{}, err
	}
	w, err := edge.New(cfg, shape, seed, start)
	if err != nil {
		return Evaluation{}, err
	}
	if err := w.SetHeuristic(c.Heuristic); err != nil {
		return Evaluation{}, err
	}
	if c.Temperature > 0 {
		if err := w.SetTemperature(c.Temperature); err != nil {
			return Evaluation{}, err
		}
	}
	if c.Task != nil {
		w.SetTaskPolicy(c.Task)
	}
	policy, err := c.policyFor(w, seed)
	if err != nil {
		return Evaluation{}, err
	}
	var obs, acts [edge.Agents][]float64
	e := Evaluation{Policy: c.Name}
	for range int(window / cfg.Step) {
		for a := range edge.Agents {
			obs[a] = w.Observe(a, obs[a])
			acts[a] = policy.Act(a, obs[a], acts[a])
		}
		st, err := w.Step(acts)
		if err != nil {
			return Evaluation{}, err
		}
		for g, x := range st.Groups {
			e.Scenes[g].Add(x)
			e.All.Add(x)
		}
	}
	return e, nil
}

// EvaluateWindows runs c (as Evaluate) in windows of the given length from
// each hour of a month day, window k seeded seed+k, and sums their
// outcomes.
func EvaluateWindows(c Contender, cfg edge.Config, day float64, hours []float64, window time.Duration, seed uint64) (Evaluation, error) {
	e := Evaluation{Policy: c.Name}
	for k, hour := range hours {
		start := time.Duration((day*24 + hour) * float64(time.Hour))
		w, err := Evaluate(c, cfg, start, window, seed+uint64(k))
		if err != nil {
			return e, err
		}
		for g := range edge.Scenes {
			e.Scenes[g].Add(w.Scenes[g])
		}
		e.All.Add(w.All)
	}
	return e, nil
}

// TrainBC is behaviour cloning on the logged steps (Eq. 7): per agent, a
// network of MA-PPO's actor's shape fitted by mean squared error to the
// logged actions of the logged observations.
func TrainBC(steps Steps, seed uint64) (*edgesched.Policy, error) {
	began := time.Now()
	cfg := rl.DefaultBCConfig()
	cfg.Hidden = PolicyConfig().Hidden
	var obs, act [edge.Agents][][]float64
	for i := range steps.States {
		for a := range edge.Agents {
			obs[a] = append(obs[a], ignore(slices.Clone(steps.States[i][a])))
			act[a] = append(act[a], steps.Actions[i][a])
		}
	}
	var nets []*nn.MLP[float32]
	for a := range edge.Agents {
		spec := rl.Spec{Observation: rl.UniformBox(edge.ObsDim, -1e9, 1e9), Action: rl.UniformBox(edge.ActDim, 0, 1)}
		b, err := rl.NewBC(spec, cfg, rand.New(rand.NewPCG(seed, uint64(a))))
		if err != nil {
			return nil, err
		}
		if _, err := b.Fit(obs[a], act[a]); err != nil {
			return nil, err
		}
		nets = append(nets, b.Net())
	}
	return newPolicy("bc", nets, edgesched.OutputTanh, edgesched.Provenance{Seed: seed, WallSeconds: time.Since(began).Seconds()})
}
