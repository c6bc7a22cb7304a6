package edgeenv

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/shoal-project/shoal/control/edgesched"
	"github.com/shoal-project/shoal/edge"
	"github.com/shoal-project/shoal/learn/nn"
	"github.com/shoal-project/shoal/learn/rl"
)

// world is what the agents act in together: the real world or a virtual
// environment.
type world interface {
	// reset starts an episode and returns every agent's observation.
	reset(rng *rand.Rand) ([edge.Agents][]float64, error)
	// step applies the agents' actions and returns what follows, with a
	// charge every agent's reward pays for the step (a virtual
	// environment's uncertainty).
	step(acts [edge.Agents][]float64, rng *rand.Rand) ([edge.Agents][]float64, [edge.Agents]edge.Outcome, float64, error)
}

// trainJoint trains one PPO per agent, MA-PPO's setting, the agents acting
// together in PolicyConfig().NumEnvs worlds made by newWorld, each agent's
// PPO learning in its own goroutine; regularize, when set, gives an
// agent's PPO a loss term.
func trainJoint(newWorld func() world, steps, horizon int, seed uint64,
	regularize func(agent int, rng *rand.Rand) func(*nn.Tape[float32], *nn.MLP[float32], *nn.Node[float32]) *nn.Node[float32]) ([]*nn.MLP[float32], error) {
	pc := PolicyConfig()
	worlds := make([]*jointWorld, pc.NumEnvs)
	for i := range worlds {
		worlds[i] = &jointWorld{w: newWorld(), horizon: horizon, rng: rand.New(rand.NewPCG(seed, 0x6a6f696e+uint64(i)))}
		worlds[i].cond = sync.NewCond(&worlds[i].mu)
	}
	nets := make([]*nn.MLP[float32], edge.Agents)
	errs := make([]error, edge.Agents)
	var wg sync.WaitGroup
	for a := range edge.Agents {
		rng := rand.New(rand.NewPCG(seed, uint64(a)))
		envs := make([]rl.Env, pc.NumEnvs)
		for i := range envs {
			envs[i] = &agentEnv{w: worlds[i], agent: a}
		}
		p, err := rl.NewPPO(envs[0].Spec(), pc, rng)
		if err != nil {
			return nil, err
		}
		if regularize != nil {
			p.Regularize = regularize(a, rand.New(rand.NewPCG(seed, 0x72656775+uint64(a))))
		}
		wg.Add(1)
		// Every agent steps the worlds in the same order and none leaves a
		// world before its round is run, so rounds never overlap: the
		// worlds may share what is not safe for concurrent use (a model).
		go func() {
			defer wg.Done()
			_, errs[a] = p.Learn(envs, steps, rng)
			nets[a] = p.Policy()
		}()
	}
	wg.Wait()
	for a, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("edgeenv: agent %d: %w", a, err)
		}
	}
	for _, w := range worlds {
		if w.err != nil {
			return nil, w.err
		}
	}
	return nets, nil
}

// jointWorld is one world the agents act in together: each agent's reset
// or step waits until every agent has made it, and the last to arrive
// runs it for all.
type jointWorld struct {
	w       world
	horizon int
	rng     *rand.Rand

	mu      sync.Mutex
	cond    *sync.Cond
	arrived int
	round   int
	t       int
	acts    [edge.Agents][]float64
	obs     [edge.Agents][]float64
	rewards [edge.Agents]float64
	err     error
}

// meet records agent's action (nil for a reset) and waits for the round's
// last agent, which runs it.
func (j *jointWorld) meet(agent int, action []float64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if action != nil {
		j.acts[agent] = append(j.acts[agent][:0], action...)
	}
	j.arrived++
	if j.arrived < edge.Agents {
		for r := j.round; r == j.round; {
			j.cond.Wait()
		}
		return
	}
	if j.err == nil {
		j.run(action == nil)
	}
	j.arrived = 0
	j.round++
	j.cond.Broadcast()
}

func (j *jointWorld) run(reset bool) {
	if reset {
		j.obs, j.err = j.w.reset(j.rng)
		j.t = 0
		return
	}
	obs, outs, charge, err := j.w.step(j.acts, j.rng)
	if err != nil {
		j.err = err
		return
	}
	j.obs, j.t = obs, j.t+1
	for a, o := range outs {
		j.rewards[a] = Reward(o) - charge
	}
}

// agentEnv is one agent's view of a joint world, a single-agent RL
// environment.
type agentEnv struct {
	w     *jointWorld
	agent int
	obs   []float64
}

func (e *agentEnv) Spec() rl.Spec {
	return rl.Spec{ID: fmt.Sprintf("edge-agent-%d", e.agent), Observation: rl.UniformBox(edge.ObsDim, -1e9, 1e9),
		Action: rl.UniformBox(edge.ActDim, 0, 1), MaxEpisodeSteps: e.w.horizon}
}

func (e *agentEnv) Reset(*rand.Rand) []float64 {
	e.w.meet(e.agent, nil)
	o, _, _ := e.read()
	return o
}

func (e *agentEnv) Step(action []float64) ([]float64, float64, bool, bool) {
	e.w.meet(e.agent, action)
	o, r, t := e.read()
	return o, r, false, t >= e.w.horizon
}

// read copies the agent's observation out of the world's, which the next
// round rewrites, with its reward and the episode's step.
func (e *agentEnv) read() ([]float64, float64, int) {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	e.obs = ignore(append(e.obs[:0], e.w.obs[e.agent]...))
	return e.obs, e.w.rewards[e.agent], e.w.t
}

// realWorld is the real world from a random time of a month day.
type realWorld struct {
	cfg   edge.Config
	rule  edge.Heuristic // the offloading rule the agents' weights act through ("" the weights themselves)
	shape *edge.Shape
	day   float64
	w     *edge.World
	obs   [edge.Agents][]float64
}

func (r *realWorld) reset(rng *rand.Rand) ([edge.Agents][]float64, error) {
	start := time.Duration((r.day + rng.Float64()) * 24 * float64(time.Hour))
	w, err := edge.New(r.cfg, r.shape, rng.Uint64(), start)
	if err != nil {
		return r.obs, err
	}
	if err := w.SetHeuristic(r.rule); err != nil {
		return r.obs, err
	}
	r.w = w
	return r.observe(), nil
}

func (r *realWorld) step(acts [edge.Agents][]float64, _ *rand.Rand) ([edge.Agents][]float64, [edge.Agents]edge.Outcome, float64, error) {
	var outs [edge.Agents]edge.Outcome
	st, err := r.w.Step(acts)
	if err != nil {
		return r.obs, outs, 0, err
	}
	for a := range edge.Agents {
		outs[a] = edge.OutcomeOf(st, a)
	}
	return r.observe(), outs, 0, nil
}

func (r *realWorld) observe() [edge.Agents][]float64 {
	for a := range edge.Agents {
		r.obs[a] = r.w.Observe(a, r.obs[a])
	}
	return r.obs
}

// TrainRealPPO trains every agent's PPO in the real world under the
// offloading rule, the upper bound of a policy learned offline (beyond
// the paper): MA-PPO's setting and no Eq. 8, the agents acting together
// in worlds that start at a random time of the given month day; steps
// environment steps per agent, episodes of horizon steps.
func TrainRealPPO(cfg edge.Config, rule edge.Heuristic, day float64, steps, horizon int, seed uint64) (*edgesched.Policy, error) {
	began := time.Now()
	shape, err := edge.WikipediaShape()
	if err != nil {
		return nil, err
	}
	nets, err := trainJoint(func() world { return &realWorld{cfg: cfg, shape: shape, day: day, rule: rule} }, steps, horizon, seed, nil)
	if err != nil {
		return nil, err
	}
	p, err := newPolicy("ppo-real", nets, edgesched.OutputLinear, edgesched.Provenance{Seed: seed, Steps: steps, Horizon: horizon,
		WallSeconds: time.Since(began).Seconds()})
	if err == nil && rule != "" {
		p.Rule = string(rule)
	}
	return p, err
}
