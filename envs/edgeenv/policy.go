package edgeenv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/edge"
	"github.com/shoal-project/shoal/learn/nn"
	"github.com/shoal-project/shoal/learn/rl"
)

// Reward scores an agent's step from its outcome: minus the share of its
// tasks past their deadline, minus a tenth of their mean completion time
// in seconds.
func Reward(o edge.Outcome) float64 { return -o.Missed - 0.1*o.MeanTime }

// agentEnv is one agent's view of a virtual environment, a single-agent
// RL environment: the per-agent models decouple the agents, so MA-PPO's
// agents train each in its own (section 4.1: PPO per agent (scene)).
type agentEnv struct {
	v       *Virtual
	agent   int
	horizon int
	rng     *rand.Rand
	obs     []float64
	t       int
}

func (e *agentEnv) Spec() rl.Spec {
	return rl.Spec{ID: fmt.Sprintf("edge-virtual-%d", e.agent), Observation: rl.UniformBox(edge.ObsDim, -1e9, 1e9),
		Action: rl.UniformBox(edge.ActDim, 0, 1), MaxEpisodeSteps: e.horizon}
}

func (e *agentEnv) Reset(rng *rand.Rand) []float64 {
	e.rng, e.t = rng, 0
	e.obs = append(e.obs[:0], e.v.starts[rng.IntN(len(e.v.starts))][e.agent]...)
	return e.obs
}

func (e *agentEnv) Step(action []float64) ([]float64, float64, bool, bool) {
	next, o := e.v.models[e.agent].Step(e.obs, action, e.rng)
	e.obs, e.t = next, e.t+1
	return e.obs, Reward(outcomeOf(o)), false, e.t >= e.horizon
}

// outcomeOf reads a model's outcome vector (outcomeVec's layout), clamped
// to what an outcome can be.
func outcomeOf(o []float64) edge.Outcome {
	return edge.Outcome{Tasks: int64(math.Round(max(o[0], 0))), MeanTime: max(o[1], 0), Offloaded: min(max(o[2], 0), 1), Missed: min(max(o[3], 0), 1)}
}

// MAPPO is the agents' PPO policies.
type MAPPO struct {
	Agents [edge.Agents]*rl.PPO
}

// PolicyConfig is MA-PPO's setting: the paper's actor (two hidden layers
// of 32, ReLU), gamma 0.95; PPO's defaults elsewhere (the paper's RMSProp
// is Adam here, rl.PPO's optimiser).
func PolicyConfig() rl.PPOConfig {
	c := rl.DefaultPPOConfig()
	c.Hidden, c.Activation, c.Gamma = []int{32, 32}, nn.ReLU, 0.95
	c.NSteps, c.BatchSize, c.NEpochs, c.LogStdInit = 64, 256, 10, -1
	return c
}

// TrainMAPPO trains each agent's PPO in the virtual environment for steps
// environment steps, episodes of horizon steps.
func TrainMAPPO(v *Virtual, steps, horizon int, seed uint64) (*MAPPO, error) {
	cfg := PolicyConfig()
	m := &MAPPO{}
	for a := range edge.Agents {
		rng := rand.New(rand.NewPCG(seed, uint64(a)))
		envs := make([]rl.Env, cfg.NumEnvs)
		for i := range envs {
			envs[i] = &agentEnv{v: v, agent: a, horizon: horizon}
		}
		p, err := rl.NewPPO(envs[0].Spec(), cfg, rng)
		if err != nil {
			return nil, err
		}
		if _, err := p.Learn(envs, steps, rng); err != nil {
			return nil, err
		}
		m.Agents[a] = p
	}
	return m, nil
}

// Act implements edge.Policy: each agent's most likely action.
func (m *MAPPO) Act(agent int, obs, dst []float64) []float64 {
	return append(dst[:0], m.Agents[agent].Act(obs, true)...)
}

// Evaluation is a policy's outcome in the real world, by scene.
type Evaluation struct {
	Policy    string
	MeanTime  [edge.Scenes]float64
	Offloaded [edge.Scenes]float64
	Missed    [edge.Scenes]float64
}

// Evaluate runs policy (or, when policy is nil, heuristic h) in the real
// world from month time start for window, seeded, and sums each scene's
// outcomes.
func Evaluate(name string, cfg edge.Config, policy edge.Policy, h edge.Heuristic, start, window time.Duration, seed uint64) (Evaluation, error) {
	shape, err := edge.WikipediaShape()
	if err != nil {
		return Evaluation{}, err
	}
	w, err := edge.New(cfg, shape, seed, start)
	if err != nil {
		return Evaluation{}, err
	}
	if err := w.SetHeuristic(h); err != nil {
		return Evaluation{}, err
	}
	if policy == nil {
		policy = edge.RandomPolicy{Rand: rand.New(rand.NewPCG(seed, 0x65))}
	}
	var obs [edge.Agents][]float64
	var acts [edge.Agents][]float64
	var tot [edge.Scenes]edge.GroupStats
	for range int(window / cfg.Step) {
		for a := range edge.Agents {
			obs[a] = w.Observe(a, obs[a])
			acts[a] = policy.Act(a, obs[a], acts[a])
		}
		st, err := w.Step(acts)
		if err != nil {
			return Evaluation{}, err
		}
		for g := range edge.Scenes {
			x := st.Groups[g]
			tot[g].Tasks += x.Tasks
			tot[g].TimeSum += x.TimeSum
			tot[g].Missed += x.Missed
			for i := range x.Where {
				tot[g].Where[i] += x.Where[i]
			}
		}
	}
	e := Evaluation{Policy: name}
	for g := range edge.Scenes {
		e.MeanTime[g], e.Offloaded[g], e.Missed[g] = tot[g].MeanTime(), tot[g].Offloaded(), tot[g].MissRatio()
	}
	return e, nil
}

// BCPolicy is behaviour cloning on the logs (Eq. 7): per agent, a network
// of MA-PPO's actor's shape fitted by mean squared error to the logged
// actions of the logged observations.
type BCPolicy struct {
	Agents [edge.Agents]*rl.BC
}

// TrainBC fits every agent's behaviour cloning to the log.
func TrainBC(log []edge.Transition, seed uint64) (*BCPolicy, error) {
	cfg := rl.DefaultBCConfig()
	cfg.Hidden = []int{32, 32}
	var obs, act [edge.Agents][][]float64
	for _, t := range log {
		obs[t.Agent] = append(obs[t.Agent], t.State)
		act[t.Agent] = append(act[t.Agent], t.Action)
	}
	p := &BCPolicy{}
	for a := range edge.Agents {
		if len(obs[a]) == 0 {
			return nil, fmt.Errorf("edgeenv: no transition of agent %d in the log", a)
		}
		spec := rl.Spec{Observation: rl.UniformBox(edge.ObsDim, -1e9, 1e9), Action: rl.UniformBox(edge.ActDim, 0, 1)}
		b, err := rl.NewBC(spec, cfg, rand.New(rand.NewPCG(seed, uint64(a))))
		if err != nil {
			return nil, err
		}
		if _, err := b.Fit(obs[a], act[a]); err != nil {
			return nil, err
		}
		p.Agents[a] = b
	}
	return p, nil
}

// Act implements edge.Policy.
func (p *BCPolicy) Act(agent int, obs, dst []float64) []float64 {
	return append(dst[:0], p.Agents[agent].Act(obs, true)...)
}
