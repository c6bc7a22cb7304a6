// Package firmenv trains the FIRM-like baseline (control/firm; Qiu et al.,
// OSDI 2020) in the simulator, in FIRM's two steps:
//  1. the culprit classifier (section 3.3) is fitted on labelled periods
//     gathered under the performance-anomaly injector (section 3.6): while
//     the scenario's HPA runs, every InjectEvery one managed service's CPU
//     limit is cut to InjectShare of its own for InjectEvery (CPU
//     contention, in the simulator's terms). A service on a critical path is
//     labelled a culprit in a period when it is under injection or its ready
//     replicas are saturated (CPU utilisation at least Saturated), which is
//     the ground truth the injector gives FIRM; every other service on a
//     critical path is labelled not a culprit. The classifier is a linear
//     epsilon-SVR (learn/bo/svr) on ±1 labels, classes balanced by
//     subsampling;
//  2. a DDPG agent (section 3.4; learn/rl) acts on the one culprit per
//     period, rewarded by FIRM's reward, on the same generated workloads as
//     DRPC's teacher (drpcenv.Surges).
package firmenv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/callgraph"
	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/control/firm"
	"github.com/shoal-project/shoal/envs/drpcenv"
	"github.com/shoal-project/shoal/learn/bo/svr"
	"github.com/shoal-project/shoal/learn/rl"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/workload"
)

// Config sets a training run. Zero fields take the defaults of
// DefaultConfig.
type Config struct {
	// Seed seeds the networks, the exploration, the injector and every
	// episode's system seed (with the top bit set, never an evaluation seed).
	Seed uint64
	// LabelEpisodes gather the classifier's data; Episodes bound DDPG's.
	// Deadline, if set (with Now), stops DDPG's episodes earlier; the number
	// run is recorded in the policy's provenance.
	LabelEpisodes int
	Episodes      int
	Deadline      time.Time
	Now           func() time.Time
	EpisodeLength time.Duration
	Period        time.Duration
	// Arrivals draws each episode's arrival process (default drpcenv.Surges).
	Arrivals func(rng *rand.Rand) workload.ProcessSpec
	// InjectEvery and InjectShare set the anomaly injector.
	InjectEvery time.Duration
	InjectShare float64
	// Saturated is the CPU utilisation of ready replicas labelled a culprit.
	Saturated float64
	// MaxSamples bounds each class of the classifier's data.
	MaxSamples int
	Window     int
	Alpha      float64
	Steps      drpc.Steps
	DDPG       rl.DDPGConfig
	// UpdatesPerStep is DDPG's gradient updates per period with a culprit.
	UpdatesPerStep int
	Progress       func(Episode)
}

// DefaultConfig returns the defaults: 10-minute episodes decided every 5 s
// (DRPC's period), three labelling episodes with an injection every minute
// at a quarter of the limit, saturation at 90%, 500 samples per class, a
// 12-period RI window, α = 0.5, DRPC's action steps, and a 64-64 DDPG with
// noise 0.3 (drpc.Guard acts only where |a| > 0.5), γ 0.9, two updates per
// decision after 500 random ones; at most 150 episodes (a 4-minute
// deadline ran 68 of TrainTicket on two cores).
func DefaultConfig() Config {
	d := rl.DefaultDDPGConfig()
	d.Hidden, d.LearningStarts, d.BufferSize, d.BatchSize = []int{64, 64}, 500, 100_000, 128
	d.Gamma, d.LR, d.ActionNoise = 0.9, 1e-3, 0.3
	return Config{LabelEpisodes: 3, Episodes: 150, EpisodeLength: 10 * time.Minute, Period: 5 * time.Second,
		InjectEvery: time.Minute, InjectShare: 0.25, Saturated: 0.9, MaxSamples: 500, Window: 12, Alpha: 0.5,
		Steps: drpc.Steps{CPU: 0.1, Memory: 64, Replicas: 3}, DDPG: d, UpdatesPerStep: 2}
}

func withDefaults(cfg Config, sc *scenario.Scenario) Config {
	def := DefaultConfig()
	setDefault(&cfg.LabelEpisodes, def.LabelEpisodes)
	setDefault(&cfg.Episodes, def.Episodes)
	setDefault(&cfg.EpisodeLength, def.EpisodeLength)
	setDefault(&cfg.Period, def.Period)
	setDefault(&cfg.InjectEvery, def.InjectEvery)
	setDefault(&cfg.InjectShare, def.InjectShare)
	setDefault(&cfg.Saturated, def.Saturated)
	setDefault(&cfg.MaxSamples, def.MaxSamples)
	setDefault(&cfg.Window, def.Window)
	setDefault(&cfg.Alpha, def.Alpha)
	setDefault(&cfg.UpdatesPerStep, def.UpdatesPerStep)
	if cfg.Steps == (drpc.Steps{}) {
		cfg.Steps = def.Steps
	}
	if len(cfg.DDPG.Hidden) == 0 {
		cfg.DDPG = def.DDPG
	}
	if cfg.Arrivals == nil {
		cfg.Arrivals = drpcenv.Surges(sc)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg
}

func setDefault[T int | float64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Episode is one training episode's learning-curve point.
type Episode struct {
	Index         int
	Phase         string // "label" or "ddpg"
	Reward        float64
	SLOViolations float64
	Culprits      int // periods with a culprit
}

// Trained is the outcome of a training run.
type Trained struct {
	Policy *firm.Policy
	Curve  []Episode
}

// CallGraph is the scenario's call graph: one root per request class.
func CallGraph(sc *scenario.Scenario) *callgraph.Graph {
	g := &callgraph.Graph{}
	for _, c := range sc.Classes {
		g.Roots = append(g.Roots, call(c.Call))
	}
	return g
}

func call(c cluster.Call) callgraph.Call {
	out := callgraph.Call{Service: c.Service, Prob: c.Prob}
	for _, st := range c.Stages {
		s := callgraph.Stage{Choice: st.Choice}
		for _, ch := range st.Calls {
			s.Calls = append(s.Calls, call(ch))
		}
		out.Stages = append(out.Stages, s)
	}
	return out
}

// Train learns a FIRM-like policy for the scenario's autoscaled services.
func Train(ctx context.Context, sc *scenario.Scenario, cfg Config) (*Trained, error) {
	cfg = withDefaults(cfg, sc)
	deps, err := drpcenv.Deployments(sc, cfg.Period)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6669726d)) // "firm"
	pol, err := firm.NewPolicy(firm.Policy{Period: drpc.Duration(cfg.Period), Deployments: deps, Ingress: drpcenv.Ingress(sc),
		SLO: drpc.Duration(sc.SLO), Steps: cfg.Steps, Window: cfg.Window, Alpha: cfg.Alpha, Hidden: cfg.DDPG.Hidden,
		Classifier: firm.Classifier{W: make([]float64, firm.CulpritFeatures)},
		Provenance: firm.Provenance{Scenario: sc.Name, Seed: cfg.Seed, LabelEpisodes: cfg.LabelEpisodes}}, rng)
	if err != nil {
		return nil, fmt.Errorf("firmenv: %w", err)
	}
	t := &trainer{ctx: ctx, sc: sc, cfg: cfg, rng: rng, pol: pol, graph: CallGraph(sc)}
	var pos, neg [][]float64
	for ep := 1; ep <= cfg.LabelEpisodes; ep++ {
		if pos, neg, err = t.label(ep, pos, neg); err != nil {
			return nil, err
		}
	}
	if err := t.fitClassifier(pos, neg); err != nil {
		return nil, err
	}
	spec := rl.Spec{ID: "firm/" + sc.Name, Observation: rl.UniformBox(firm.StateDim, -10, 10), Action: rl.UniformBox(firm.ActionDim, -1, 1)}
	if t.ddpg, err = rl.NewDDPG(spec, cfg.DDPG, rng); err != nil {
		return nil, fmt.Errorf("firmenv: %w", err)
	}
	for ep := 1; ep <= cfg.Episodes; ep++ {
		if !cfg.Deadline.IsZero() && ep > 1 && cfg.Now().After(cfg.Deadline) {
			break
		}
		if err := t.episode(cfg.LabelEpisodes + ep); err != nil {
			return nil, err
		}
	}
	if err := pol.SetActor(t.ddpg.Actor()); err != nil {
		return nil, err
	}
	pr := &pol.Provenance
	pr.Updates = t.ddpg.Updates
	if n := len(t.curve); n > 0 {
		pr.Score, pr.SLOViolations = t.curve[n-1].Reward, t.curve[n-1].SLOViolations
	}
	return &Trained{Policy: pol, Curve: t.curve}, nil
}

type trainer struct {
	ctx   context.Context
	sc    *scenario.Scenario
	cfg   Config
	rng   *rand.Rand
	pol   *firm.Policy
	graph *callgraph.Graph
	ddpg  *rl.TD3
	curve []Episode
}

// newCluster builds one episode's system on a drawn workload.
func (t *trainer) newCluster() (*cluster.Cluster, error) {
	seed := t.rng.Uint64() | 1<<63
	cl, err := drpcenv.EpisodeCluster(t.sc, drpcenv.Traffic{Total: t.cfg.Arrivals(t.rng)}, seed, t.cfg.EpisodeLength+t.cfg.Period)
	if err != nil {
		return nil, fmt.Errorf("firmenv: %w", err)
	}
	return cl, nil
}

// label runs one labelling episode: the scenario's HPA scales, the injector
// cuts one service's CPU limit at a time, and every critical-path service's
// features are labelled each period.
func (t *trainer) label(index int, pos, neg [][]float64) ([][]float64, [][]float64, error) {
	cl, err := t.newCluster()
	if err != nil {
		return nil, nil, err
	}
	hpa, err := t.sc.Autoscalers("hpa")
	if err != nil {
		return nil, nil, fmt.Errorf("firmenv: %w", err)
	}
	deps := t.pol.Deployments
	det := firm.NewDetector(t.graph, deps, t.pol.Ingress, time.Duration(t.pol.SLO), t.pol.Window)
	var snap metrics.Snapshot
	injected, until := -1, time.Duration(0)
	var saved float64
	culprits := 0
	for now := time.Duration(0); now <= t.cfg.EpisodeLength; now += t.cfg.Period {
		if err := t.ctx.Err(); err != nil {
			return nil, nil, err
		}
		cl.RunUntil(now)
		cl.Observe(&snap)
		if now > 0 && det.Observe(&snap) {
			for i := range deps {
				if !det.OnPath(i) {
					continue
				}
				x := slices.Clone(det.Features(i))
				if i == injected || x[firm.FeatCPU] >= t.cfg.Saturated {
					pos = append(pos, x)
					culprits++
				} else {
					neg = append(neg, x)
				}
			}
		}
		var acts []control.Action
		for _, h := range hpa {
			acts = append(acts, h.Decide(now, &snap)...)
		}
		if now >= until {
			if injected >= 0 { // the contention ends
				acts = append(acts, control.SetResources{Service: deps[injected].Name, CPU: saved})
			}
			injected = t.rng.IntN(len(deps))
			until = now + t.cfg.InjectEvery
			for k := range snap.Services {
				if snap.Services[k].Name == deps[injected].Name {
					saved = snap.Services[k].CPULimit
				}
			}
			if saved > 0 {
				acts = append(acts, control.SetResources{Service: deps[injected].Name, CPU: t.cfg.InjectShare * saved})
			}
		}
		for _, a := range acts {
			if err := cl.Apply(now, a); err != nil {
				return nil, nil, fmt.Errorf("firmenv: %w", err)
			}
		}
	}
	cl.Drain(time.Minute)
	t.progress(Episode{Index: index, Phase: "label", SLOViolations: sloViolations(cl.Results()), Culprits: culprits})
	return pos, neg, nil
}

// fitClassifier fits the linear culprit classifier on balanced samples and
// records its accuracy on them.
func (t *trainer) fitClassifier(pos, neg [][]float64) error {
	if len(pos) == 0 || len(neg) == 0 {
		return fmt.Errorf("firmenv: no %s samples to fit the culprit classifier on", map[bool]string{true: "culprit", false: "non-culprit"}[len(pos) == 0])
	}
	n := min(len(pos), len(neg), t.cfg.MaxSamples)
	var x [][]float64
	var z []float64
	for _, set := range []struct {
		s [][]float64
		y float64
	}{{pos, 1}, {neg, -1}} {
		for _, k := range t.rng.Perm(len(set.s))[:n] {
			x, z = append(x, set.s[k]), append(z, set.y)
		}
	}
	m, err := svr.Fit(x, z, svr.Config{Kernel: svr.Linear, C: 1, Epsilon: 0.1})
	if err != nil {
		return fmt.Errorf("firmenv: classifier: %w", err)
	}
	// A linear SVR's weights are Σ (α_i − α*_i) x_i.
	a, as := m.Dual()
	c := &t.pol.Classifier
	clear(c.W)
	for i := range x {
		for k, v := range x[i] {
			c.W[k] += (a[i] - as[i]) * v
		}
	}
	c.B = m.Bias()
	right := 0
	for i := range x {
		if (c.Score(x[i]) > 0) == (z[i] > 0) {
			right++
		}
	}
	t.pol.Provenance.Samples, t.pol.Provenance.Accuracy = len(x), float64(right)/float64(len(x))
	return nil
}

// episode runs one DDPG episode: each period the culprit (if any) gets
// one action, and the next period's reward and state of that service make
// its transition.
func (t *trainer) episode(index int) error {
	cl, err := t.newCluster()
	if err != nil {
		return err
	}
	deps := t.pol.Deployments
	det := firm.NewDetector(t.graph, deps, t.pol.Ingress, time.Duration(t.pol.SLO), t.pol.Window)
	var snap metrics.Snapshot
	state, next := make([]float64, firm.StateDim), make([]float64, firm.StateDim)
	act, guard := make([]float64, firm.ActionDim), make([]float64, 4)
	prev := -1
	var sum float64
	var n, culprits int
	var buf []control.Action
	for now := time.Duration(0); now <= t.cfg.EpisodeLength; now += t.cfg.Period {
		if err := t.ctx.Err(); err != nil {
			return err
		}
		cl.RunUntil(now)
		cl.Observe(&snap)
		if now == 0 || !det.Observe(&snap) {
			continue
		}
		if prev >= 0 {
			r := det.Reward(t.pol.Alpha, &snap, prev)
			det.State(next, &snap, prev)
			t.ddpg.Replay().Add(state, act, r, next, false)
			sum += r
			n++
			if t.ddpg.Replay().Len() >= t.cfg.DDPG.LearningStarts {
				for range t.cfg.UpdatesPerStep {
					t.ddpg.Update()
				}
			}
		}
		prev = det.Culprit(&t.pol.Classifier)
		if prev < 0 {
			continue
		}
		culprits++
		t.pol.Provenance.EnvSteps++
		det.State(state, &snap, prev)
		if t.ddpg.Replay().Len() < t.cfg.DDPG.LearningStarts {
			for k := range act {
				act[k] = 2*t.rng.Float64() - 1
			}
		} else {
			copy(act, t.ddpg.Act(state, false))
		}
		firm.OneAction(guard, act)
		s := det.Service(&snap, prev)
		dec := drpc.Guard(&deps[prev], t.cfg.Steps, s, s.Brownout, guard)
		buf = dec.Actions(buf[:0], deps[prev].Name, s)
		for _, a := range buf {
			if err := cl.Apply(now, a); err != nil {
				return fmt.Errorf("firmenv: %w", err)
			}
		}
	}
	cl.Drain(time.Minute)
	e := Episode{Index: index, Phase: "ddpg", SLOViolations: sloViolations(cl.Results()), Culprits: culprits}
	if n > 0 {
		e.Reward = sum / float64(n)
	}
	t.pol.Provenance.Episodes++
	t.progress(e)
	return nil
}

func (t *trainer) progress(e Episode) {
	t.curve = append(t.curve, e)
	if t.cfg.Progress != nil {
		t.cfg.Progress(e)
	}
}

// sloViolations is the share of requests that failed or missed their SLO.
func sloViolations(r *cluster.Results) float64 {
	if n := r.SLOArrivals(); n > 0 {
		return float64(r.SLOViolations()) / float64(n)
	}
	return 0
}
