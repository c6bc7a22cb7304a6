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

// TrainRealPPO trains every agent's PPO in the real world, the upper
// bound of a policy learned offline (beyond the paper): the agents learn
// at once, each in its own PPO, acting together in the same worlds, which
// start at a random time of the given month day; steps environment steps
// per agent, episodes of horizon steps, MA-PPO's setting and no Eq. 8.
func TrainRealPPO(cfg edge.Config, day float64, steps, horizon int, seed uint64) (*edgesched.Policy, error) {
	began := time.Now()
	shape, err := edge.WikipediaShape()
	if err != nil {
		return nil, err
	}
	pc := PolicyConfig()
	worlds := make([]*jointWorld, pc.NumEnvs)
	for i := range worlds {
		worlds[i] = &jointWorld{cfg: cfg, shape: shape, day: day, horizon: horizon, rng: rand.New(rand.NewPCG(seed, 0x7265616c+uint64(i)))}
		worlds[i].cond = sync.NewCond(&worlds[i].mu)
	}
	nets := make([]*nn.MLP[float32], edge.Agents)
	errs := make([]error, edge.Agents)
	var wg sync.WaitGroup
	for a := range edge.Agents {
		rng := rand.New(rand.NewPCG(seed, uint64(a)))
		envs := make([]rl.Env, pc.NumEnvs)
		for i := range envs {
			envs[i] = &realAgentEnv{w: worlds[i], agent: a}
		}
		p, err := rl.NewPPO(envs[0].Spec(), pc, rng)
		if err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() { // every agent steps the shared worlds in the same order, so they meet at each step
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
	return newPolicy("ppo-real", nets, edgesched.OutputLinear, edgesched.Provenance{Seed: seed, Steps: steps, Horizon: horizon,
		WallSeconds: time.Since(began).Seconds()})
}

// jointWorld is one real world the agents act in together: each agent's
// reset or step waits until every agent has made it, and the last to
// arrive runs it for all.
type jointWorld struct {
	cfg     edge.Config
	shape   *edge.Shape
	day     float64
	horizon int
	rng     *rand.Rand

	mu      sync.Mutex
	cond    *sync.Cond
	arrived int
	round   int
	w       *edge.World
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
	if action == nil {
		j.reset()
	} else {
		j.step()
	}
	j.arrived = 0
	j.round++
	j.cond.Broadcast()
}

func (j *jointWorld) reset() {
	start := time.Duration((j.day + j.rng.Float64()) * 24 * float64(time.Hour))
	w, err := edge.New(j.cfg, j.shape, j.rng.Uint64(), start)
	if err != nil {
		j.err = err
		return
	}
	j.w, j.t = w, 0
	j.observe()
}

func (j *jointWorld) step() {
	if j.err != nil {
		return
	}
	st, err := j.w.Step(j.acts)
	if err != nil {
		j.err = err
		return
	}
	j.t++
	for a := range edge.Agents {
		j.rewards[a] = Reward(edge.OutcomeOf(st, a))
	}
	j.observe()
}

func (j *jointWorld) observe() {
	for a := range edge.Agents {
		j.obs[a] = j.w.Observe(a, j.obs[a])
	}
}

// realAgentEnv is one agent's view of a joint world.
type realAgentEnv struct {
	w     *jointWorld
	agent int
	obs   []float64
}

func (e *realAgentEnv) Spec() rl.Spec {
	return rl.Spec{ID: fmt.Sprintf("edge-real-%d", e.agent), Observation: rl.UniformBox(edge.ObsDim, -1e9, 1e9),
		Action: rl.UniformBox(edge.ActDim, 0, 1), MaxEpisodeSteps: e.w.horizon}
}

func (e *realAgentEnv) Reset(*rand.Rand) []float64 {
	e.w.meet(e.agent, nil)
	return e.read()
}

func (e *realAgentEnv) Step(action []float64) ([]float64, float64, bool, bool) {
	e.w.meet(e.agent, action)
	e.w.mu.Lock()
	r, trunc := e.w.rewards[e.agent], e.w.t >= e.w.horizon
	e.w.mu.Unlock()
	return e.read(), r, false, trunc
}

// read copies the agent's observation out of the world's, which the next
// round rewrites.
func (e *realAgentEnv) read() []float64 {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	e.obs = append(e.obs[:0], e.w.obs[e.agent]...)
	return e.obs
}
