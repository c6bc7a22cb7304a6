// Package drpcenv trains DRPC (Bai et al., IEEE TSC 2024; docs/PAPERS.md)
// in the simulator: the central TD3 teacher explores the whole application
// with actions for every deployment at once (Algorithm 1 stage 1,
// Algorithm 3), then one student per deployment imitates it (section V-D,
// equation 9). The run-time controller is control/drpc; the algorithms are
// learn/rl's TD3 and behaviour cloning.
//
// The teacher is one actor shared by all deployments (parameter sharing):
// its input is a deployment's own features, the application-wide ones and
// the deployment's one-hot identity, its output that deployment's action,
// and every deployment's transition, rewarded by equation 3 with the
// application's QoS term over the deployment's utilisation term, trains it.
// This keeps the action space per decision at four numbers while the
// teacher still acts on all deployments in every step (the paper's point
// against FIRM's one action per step) and still sees the global state.
package drpcenv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/learn/forecast"
	"github.com/shoal-project/shoal/learn/nn"
	"github.com/shoal-project/shoal/learn/rl"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/scenario"
)

// Config sets a training run. Zero fields take the defaults of
// DefaultConfig.
type Config struct {
	// Seed seeds the networks, the exploration and every episode's system
	// seed (training systems have the top bit set, so they never coincide
	// with evaluation seeds).
	Seed uint64
	// Episodes bounds the teacher's episodes; Deadline, if set (with Now),
	// stops them earlier. With a deadline the number of episodes depends on
	// the machine's speed; it is recorded in the policy's provenance.
	Episodes int
	Deadline time.Time
	Now      func() time.Time
	// EpisodeLength is the simulated time of an episode.
	EpisodeLength time.Duration
	// Period is the decision period of teacher and students.
	Period time.Duration
	// Arrivals draws each episode's arrival process (every source's, keeping
	// the scenario's mix); default: Surges.
	Arrivals func(rng *rand.Rand) Traffic
	// ValidateEvery, if > 0, runs the deterministic teacher on
	// ValidationEpisodes episodes drawn from Arrivals with seeds of their
	// own (the same ones every time, never a training or evaluation seed)
	// after every ValidateEvery teacher episodes, and the students imitate
	// the teacher that earned the most there: where an episode count or a
	// budget stops TD3 is otherwise luck. With a base rule, the base rule
	// alone is validated first, and a teacher must beat it to be kept.
	ValidateEvery, ValidationEpisodes int
	// TD3 configures the teacher.
	TD3 rl.TD3Config
	// UpdatesPerStep is the teacher's gradient updates per decision period.
	UpdatesPerStep int
	// StudentHidden are the students' hidden widths.
	StudentHidden []int
	// ImitationEpisodes are the final episodes whose states (visited by the
	// teacher, then by the students, labelled by the teacher: DAgger) train
	// the students.
	ImitationEpisodes int
	// ForecastEpisodes run the base rule alone first and record the ingress
	// rate; the workload predictor (Forecast) is fitted on it, then every
	// later episode and the policy read its forecast. 0: no predictor.
	ForecastEpisodes int
	Forecast         forecast.Config
	// Steps are the sizes of one scaling action.
	Steps drpc.Steps
	// Reward sets equations 1-3 (default: drpc.DefaultReward(the scenario's SLO)).
	Reward drpc.Reward
	// Base, if set, makes the policy residual over this rule (drpc.Base).
	Base *drpc.Base
	// OverHPA, if set instead, makes the policy act over an HPA per
	// deployment, its replicas action moving the HPA's target
	// (drpc.OverHPA).
	OverHPA *drpc.OverHPA
	// Hold, if set, keeps the policy from growing a calm deployment
	// (drpc.Hold), in training as at run time.
	Hold *drpc.Hold
	// AddOnly keeps a policy over the HPA from taking away what the HPA
	// and the scenario give: the HPA's target may only fall (OverHPA.Cap
	// at its target) and no CPU limit goes below the scenario's.
	AddOnly bool
	// Budget, if > 0, constrains the teacher's cost: the mean resources a
	// training episode allocates, in vCPUs with memory at its price
	// (drpc.Budget). A Lagrange multiplier on the cost is raised while the
	// episodes spend more and lowered while they spend less (BudgetLR per
	// episode, relative to the budget); the replay buffer charges every
	// stored transition at the current multiplier.
	Budget   float64
	BudgetLR float64
	// Workers is how many episodes run at once (default 2). The teacher's
	// episodes run in rounds of Workers, each acting with the actor as the
	// round began, while the updates the previous round earned run beside
	// them; a run is deterministic for a given seed and number of workers.
	Workers int
	// Init, if set, makes the run a fine-tuning of a trained policy (for
	// example on a request mix it was not trained for): the teacher and
	// its critics start from Init's, which must have critics; the
	// deployments (their RT_max), the input ranges seen, the base rule,
	// hold, steps, reward and workload predictor are Init's, so
	// ForecastEpisodes is ignored. Init's teacher is validated after the
	// base rule, so a fine-tuned teacher is kept only if it beats it.
	Init *drpc.Policy
	// Progress, if set, is called after every episode.
	Progress func(Episode)
	// Checkpoint, if set, is where the run saves its state after every
	// episode; with Resume it first continues from the file, if there is
	// one, and calls Resumed with the episodes done before.
	Checkpoint string
	Resume     bool
	Resumed    func([]Episode)
}

// DefaultConfig returns the defaults: 10-minute episodes decided every 5 s
// (a pod starts in up to 60 s, so a decision's effect is 12 steps away at
// most), a 128-128 teacher updated 4 times per period after 2,000 random
// transitions (50 periods of the 40 TrainTicket deployments), 16-16
// students (the paper's student has 643 parameters; this one 564) fitted
// on six imitation episodes, action steps of up to three replicas
// (round(3a): two at |a| in (0.5, 0.83)), 0.1 core and 64 MB, and a
// residual policy over a rule that adds replicas above 75% demand
// utilisation and removes them after a minute below 30% (drpc.Base). No
// workload predictor by default; with one (ForecastEpisodes 4: a 16-unit
// GRU reading the last minute of ingress rates, forecasting 30 s ahead)
// the policies of one training seed pre-provisioned for DRPC's surge and
// beat the HPA's frontier there, and those of another did worse than
// without (docs/results/drpc.md, "At equal cost"): the frontier study
// trains with it and keeps the seed that does best on validation.
func DefaultConfig() Config {
	td3 := rl.DefaultTD3Config()
	td3.Hidden = []int{128, 128}
	td3.LearningStarts = 2000
	td3.BufferSize = 200_000
	td3.Gamma = 0.8
	td3.LR = 3e-4
	// Algorithm 2 acts only where |a| > 0.5: with the usual 0.1 the noise
	// around a policy near 0 would almost never show the critic an action.
	td3.ActionNoise = 0.3
	return Config{Episodes: 120, EpisodeLength: 10 * time.Minute, Period: 5 * time.Second, TD3: td3,
		ValidateEvery: 20, ValidationEpisodes: 4, Workers: 2, BudgetLR: 0.2,
		UpdatesPerStep: 4, StudentHidden: []int{16, 16}, ImitationEpisodes: 6,
		Steps: drpc.Steps{CPU: 0.1, Memory: 64, Replicas: 3}, Base: &drpc.Base{Low: 0.3, High: 0.75, Stabilize: 12}, Hold: &drpc.Hold{High: 0.75},
		Forecast: forecast.Config{Window: 12, Hidden: 16, Horizon: 6, Epochs: 10, EpochWindows: 2000, Log: true}}
}

// Episode is one training episode's learning-curve point.
type Episode struct {
	Index  int    // 1-based
	Phase  string // "forecast" (the base rule alone, rates recorded), "teacher", "imitation" (teacher acts, states recorded) or "dagger" (students act)
	Reward float64
	// SLOViolations is the share of the episode's requests that failed or
	// took longer than the SLO.
	SLOViolations float64
	// Cost is the mean resources allocated, in vCPUs with memory at its
	// price (drpc.Allocated), and Lambda the budget's multiplier after the
	// episode (0 without a budget).
	Cost, Lambda float64
	Steps        int // decision periods so far
	Updates      int // teacher updates so far
}

// Trained is the outcome of a training run.
type Trained struct {
	Policy *drpc.Policy
	Curve  []Episode
	// Elapsed is the run's wall time, every sitting's when it resumed.
	Elapsed time.Duration
}

// Train learns a DRPC policy for the scenario's autoscaled services. With
// cfg.Checkpoint set it saves its state after every episode and, when
// cfg.Resume is set and the file exists, continues from it.
func Train(ctx context.Context, sc *scenario.Scenario, cfg Config) (*Trained, error) {
	cfg = withDefaults(cfg, sc)
	t, err := newTrainer(ctx, sc, cfg)
	if err != nil {
		return nil, err
	}
	begin, before := cfg.Now(), time.Duration(0)
	if cfg.Checkpoint != "" && cfg.Resume {
		var resumed bool
		if before, resumed, err = t.restore(); err != nil {
			return nil, err
		}
		if resumed && cfg.Resumed != nil {
			cfg.Resumed(t.curve)
		}
	}
	deadline := cfg.Deadline.Add(-before) // the budget spans every sitting
	done := func() error {                // after every episode
		if cfg.Checkpoint == "" {
			return nil
		}
		return t.save(before + cfg.Now().Sub(begin))
	}
	for n := t.count(phaseForecast); n < cfg.ForecastEpisodes; n = t.count(phaseForecast) {
		if err := t.round(phaseForecast, min(cfg.Workers, cfg.ForecastEpisodes-n), done); err != nil {
			return nil, err
		}
	}
	if err := t.fitForecaster(); err != nil {
		return nil, err
	}
	for t.count(phaseImitation) == 0 {
		n := t.count(phaseTeacher)
		if (t.pol.Base != nil || t.pol.OverHPA != nil) && cfg.ValidateEvery > 0 && t.count(phaseValidation) == 0 {
			if err := t.validateBase(done); err != nil {
				return nil, err
			}
			continue
		}
		if cfg.Init != nil && n == 0 && t.count(phaseValidation) == 1 {
			if err := t.validate(done); err != nil { // Init's teacher, untouched
				return nil, err
			}
			continue
		}
		if t.validationDue(n) { // after every ValidateEvery teacher episodes (also when resuming between the two)
			if err := t.validate(done); err != nil {
				return nil, err
			}
			continue
		}
		if n >= cfg.Episodes || (n > 0 && !cfg.Deadline.IsZero() && cfg.Now().After(deadline)) {
			break
		}
		k := min(cfg.Workers, cfg.Episodes-n)
		if every := cfg.ValidateEvery; every > 0 {
			k = min(k, every-n%every) // a round never spans a validation
		}
		if err := t.round(phaseTeacher, k, done); err != nil {
			return nil, err
		}
	}
	t.update()
	if t.best != nil { // the students imitate the best teacher on validation
		nn.HardCopy(t.td3.Actor().Params(), t.best.Params())
	}
	for k := t.count(phaseImitation) + t.count(phaseDAgger); k < cfg.ImitationEpisodes; k++ {
		phase := phaseImitation
		if k > 0 {
			phase = phaseDAgger
		}
		if err := t.round(phase, 1, t.fitStudents, done); err != nil {
			return nil, err
		}
	}
	if err := t.finish(); err != nil {
		return nil, err
	}
	return &Trained{Policy: t.pol, Curve: t.curve, Elapsed: before + cfg.Now().Sub(begin)}, nil
}

// count is the number of episodes of the phase done so far.
func (t *trainer) count(phase string) int {
	n := 0
	for _, e := range t.curve {
		if e.Phase == phase {
			n++
		}
	}
	return n
}

func withDefaults(cfg Config, sc *scenario.Scenario) Config {
	def := DefaultConfig()
	if cfg.Episodes <= 0 {
		cfg.Episodes = def.Episodes
	}
	if cfg.EpisodeLength <= 0 {
		cfg.EpisodeLength = def.EpisodeLength
	}
	if cfg.Period <= 0 {
		cfg.Period = def.Period
	}
	if len(cfg.TD3.Hidden) == 0 {
		cfg.TD3 = def.TD3
	}
	if cfg.UpdatesPerStep <= 0 {
		cfg.UpdatesPerStep = def.UpdatesPerStep
	}
	if len(cfg.StudentHidden) == 0 {
		cfg.StudentHidden = def.StudentHidden
	}
	if cfg.ImitationEpisodes <= 0 {
		cfg.ImitationEpisodes = def.ImitationEpisodes
	}
	if cfg.Steps == (drpc.Steps{}) {
		cfg.Steps = def.Steps
	}
	if cfg.Reward == (drpc.Reward{}) {
		cfg.Reward = drpc.DefaultReward(sc.SLO)
	}
	if cfg.Arrivals == nil {
		cfg.Arrivals = Training(sc, cfg.EpisodeLength, 0, 0)
	}
	if cfg.ValidationEpisodes <= 0 {
		cfg.ValidationEpisodes = def.ValidationEpisodes
	}
	if cfg.Workers <= 0 {
		cfg.Workers = def.Workers
	}
	if cfg.BudgetLR <= 0 {
		cfg.BudgetLR = def.BudgetLR
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if in := cfg.Init; in != nil {
		cfg.ForecastEpisodes, cfg.Base, cfg.OverHPA, cfg.Hold, cfg.Steps, cfg.Reward = 0, in.Base, in.OverHPA, in.Hold, in.Steps, in.Reward
		cfg.TD3.Hidden = in.TeacherHidden
		if in.FineTune != nil {
			cfg.TD3.Critics = in.FineTune.Critics
		}
	}
	return cfg
}

const (
	phaseTeacher   = "teacher"
	phaseImitation = "imitation"
	phaseDAgger    = "dagger"
	phaseForecast  = "forecast"
	// phaseValidation is a round of validation episodes (one curve point).
	phaseValidation = "validation"
	// phaseStudents is an episode of a trained policy's students, as
	// deployed, on the selection episodes (Validate).
	phaseStudents = "students"
)

// selectionSeed roots the selection episodes' seeds: the same for every
// training seed, so that policies trained with different seeds are judged
// on the same episodes. Their system seeds have the top bit set, as
// training's do (evaluation seeds never have it), from a stream of their
// own.
const selectionSeed = 0x73656c656374 // "select"

// selectionEpisode is the k-th selection episode's system seed and
// arrivals.
func selectionEpisode(cfg Config, k int) (uint64, Traffic) {
	rng := rand.New(rand.NewPCG(selectionSeed, uint64(k)))
	seed := rng.Uint64() | 1<<63
	return seed, cfg.Arrivals(rng)
}

// Validate runs a trained policy's students, as deployed (deterministic,
// over its base rule and hold), on cfg.ValidationEpisodes episodes drawn
// from cfg.Arrivals with seeds of their own, the same whatever the
// training seed, and returns their mean reward, cost and SLO violations:
// to choose among policies trained with different seeds without looking at
// an evaluation seed. A budget is for Beats to judge by; cfg.Budget is
// not read.
func Validate(ctx context.Context, sc *scenario.Scenario, pol *drpc.Policy, cfg Config) (Episode, error) {
	cfg = withDefaults(cfg, sc)
	// The policy's own period, steps and reward; its students, rails, base
	// rule and hold act. No teacher is needed: nothing learns.
	cfg.Period, cfg.Steps, cfg.Reward = time.Duration(pol.Period), pol.Steps, pol.Reward
	t := &trainer{ctx: ctx, sc: sc, cfg: cfg, pol: pol, gbInCPU: gbInCPU(sc)}
	jobs := make([]job, cfg.ValidationEpisodes)
	for k := range jobs {
		jobs[k] = job{phase: phaseStudents}
		jobs[k].seed, jobs[k].spec = selectionEpisode(cfg, k)
	}
	v, err := t.meanOf(jobs, nil)
	v.Phase = phaseStudents
	return v, err
}

// trainer holds a training run's state.
type trainer struct {
	ctx   context.Context
	sc    *scenario.Scenario
	cfg   Config
	src   *rand.PCG // rng's source, saved in checkpoints
	rng   *rand.Rand
	pol   *drpc.Policy
	td3   *rl.TD3
	steps int
	curve []Episode
	// low and high track the range of every local feature seen.
	low, high []float64
	// The students' data set: per deployment, local features and the
	// teacher's deterministic action.
	dataObs, dataAct [][][]float64
	// rates are the ingress rates of the forecast episodes, one row a period.
	rates [][]float64
	// best is the teacher's actor that did best on validation, with its
	// mean reward and cost there.
	best                *nn.MLP[float32]
	bestScore, bestCost float64
	bestViolations      float64
	// keepBudget is the budget validation judges by (Beats): the larger
	// of the budget and the base rule's cost on the validation episodes.
	keepBudget float64
	// pending are the teacher's updates owed by the episodes taken in;
	// lambda is the budget's Lagrange multiplier.
	pending int
	lambda  float64
	// gbInCPU is the price of a GB of memory in vCPUs (the scenario's
	// prices).
	gbInCPU float64
}

func newTrainer(ctx context.Context, sc *scenario.Scenario, cfg Config) (*trainer, error) {
	deps, err := Deployments(sc, cfg.Period)
	if err != nil {
		return nil, err
	}
	if cfg.AddOnly && cfg.Init == nil {
		if cfg.OverHPA == nil {
			return nil, errors.New("drpcenv: AddOnly needs a policy over the HPA (OverHPA)")
		}
		over := *cfg.OverHPA
		over.Cap, cfg.OverHPA = over.Target, &over
		for i := range deps {
			deps[i].CPUMin = deps[i].CPUMax / 2 // the scenario's limit (Deployments' rails are half and twice it)
		}
	}
	if cfg.Init != nil {
		err = keepDeployments(deps, cfg.Init)
	} else {
		err = setLocalRTMax(sc, deps, cfg)
	}
	if err != nil {
		return nil, err
	}
	src := rand.NewPCG(cfg.Seed, 0x6472706365) // "drpce"
	rng := rand.New(src)
	pol, err := drpc.NewPolicy(drpc.Policy{Period: drpc.Duration(cfg.Period), Deployments: deps, Ingress: Ingress(sc),
		Steps: cfg.Steps, Reward: cfg.Reward, StudentHidden: cfg.StudentHidden, TeacherHidden: cfg.TD3.Hidden,
		Notifier: drpc.NotifierConfig{NPR: 60, Relative: 0.9}, Base: cfg.Base, OverHPA: cfg.OverHPA, Hold: cfg.Hold, // Algorithm 4: see drpc.Notifier
		Provenance: drpc.Provenance{Scenario: sc.Name, Seed: cfg.Seed}}, rng)
	if err != nil {
		return nil, fmt.Errorf("drpcenv: %w", err)
	}
	n := len(deps)
	spec := rl.Spec{ID: "drpc/" + sc.Name, Observation: rl.UniformBox(drpc.TeacherInput(n), -10, 10),
		Action: rl.UniformBox(drpc.ActionDim, -1, 1)}
	var td3 *rl.TD3
	if in := cfg.Init; in != nil {
		critics := make([]*nn.MLP[float32], len(in.Critics()))
		for i, c := range in.Critics() {
			critics[i] = copyOf(c, fmt.Sprintf("q%d", i+1))
		}
		td3, err = rl.NewTD3On(spec, cfg.TD3, copyOf(in.Teacher(), "actor"), critics, rng)
		pol.SetForecaster(in.Forecaster())
	} else {
		td3, err = rl.NewTD3(spec, cfg.TD3, rng)
	}
	if err != nil {
		return nil, fmt.Errorf("drpcenv: %w", err)
	}
	t := &trainer{ctx: ctx, sc: sc, cfg: cfg, src: src, rng: rng, pol: pol, td3: td3, gbInCPU: gbInCPU(sc),
		low: make([]float64, drpc.LocalFeatures), high: make([]float64, drpc.LocalFeatures),
		dataObs: make([][][]float64, n), dataAct: make([][][]float64, n)}
	for k := range t.low {
		t.low[k], t.high[k] = math.Inf(1), math.Inf(-1)
	}
	if in := cfg.Init; in != nil {
		copy(t.low, in.Low)
		copy(t.high, in.High)
		if in.Budget != nil && cfg.Budget > 0 {
			t.lambda = in.Budget.Lambda
		}
	}
	return t, nil
}

// Deployments are the scenario's autoscaled services with their guard
// rails: the service's min/max replicas, CPU from half to twice its limit,
// memory up to twice its limit and down to what a replica needs at its
// concurrency limit (idle use plus every admitted call's); a service whose
// memory grows with its calls but admits any number keeps its configured
// limit as the floor, and one whose memory does not grow may go down to
// idle use plus 10%. Services the scenario marks optional may be browned
// out. The memory floor is what an operator knows of a service (its heap
// at full thread count): with only idle use plus 10%, policies learned at
// a calm load shrank memory to it and were OOM-killed in a loop when a
// surge came (a budget-trained policy: 5.8% of requests OOM-killed and 84%
// with no ready replica under DRPC's surge; with the concurrency floor
// alone, up to 19.6% with no ready replica, the unbounded ingress among
// the services shrunk).
func Deployments(sc *scenario.Scenario, period time.Duration) ([]drpc.Deployment, error) {
	var deps []drpc.Deployment
	for _, name := range sc.ManagedServices() {
		i := slices.IndexFunc(sc.Services, func(s cluster.Service) bool { return s.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("drpcenv: autoscaled service %q is not in the scenario", name)
		}
		s := sc.Services[i]
		cpu := s.CPU
		if cpu == 0 {
			cpu = 1
		}
		d := drpc.Deployment{Name: name, MinReplicas: s.MinReplicas, MaxReplicas: s.MaxReplicas,
			CPUMin: cpu / 2, CPUMax: 2 * cpu, Period: drpc.Duration(period), Optional: s.Optional}
		if s.MemoryMB > 0 {
			floor := 1.1 * s.MemoryBaseMB
			switch {
			case s.Concurrency > 0:
				floor = s.MemoryBaseMB + s.MemoryPerCallMB*float64(s.Concurrency)
			case s.MemoryPerCallMB > 0:
				floor = s.MemoryMB // no bound on the calls, so none on their memory
			}
			d.MemoryMin, d.MemoryMax = math.Min(floor, s.MemoryMB), 2*s.MemoryMB
		}
		deps = append(deps, d)
	}
	if len(deps) == 0 {
		return nil, errors.New("drpcenv: the scenario autoscales no service (set max_replicas)")
	}
	return deps, nil
}

// gbInCPU is the price of a GB of memory in vCPUs at the scenario's
// prices (the defaults where it sets none).
func gbInCPU(sc *scenario.Scenario) float64 {
	prices := sc.Prices
	if prices == (cluster.Prices{}) {
		prices = cluster.DefaultPrices()
	}
	return prices.GBSecond / prices.VCPUSecond
}

// keepDeployments checks that a policy to fine-tune manages the scenario's
// deployments, in order, and gives them its guard rails and RT_max, so
// the reward is the one it was trained on.
func keepDeployments(deps []drpc.Deployment, init *drpc.Policy) error {
	if init.FineTune == nil {
		return errors.New("drpcenv: the policy to fine-tune has no critics (fine_tune); train it again with this version")
	}
	if len(init.Deployments) != len(deps) {
		return fmt.Errorf("drpcenv: the policy to fine-tune manages %d deployments, the scenario autoscales %d", len(init.Deployments), len(deps))
	}
	for i, d := range init.Deployments {
		if d.Name != deps[i].Name {
			return fmt.Errorf("drpcenv: the policy to fine-tune manages %q where the scenario autoscales %q", d.Name, deps[i].Name)
		}
		deps[i] = d
	}
	return nil
}

// LocalSlack is how many times its mean response time in the scenario as
// configured (at its own rates, its own replicas and limits) a deployment
// may take before its local QoS term falls (Reward.Local).
const LocalSlack = 3

// setLocalRTMax sets every deployment's RT_max to LocalSlack times its mean
// response time over the second and third minute of the scenario as
// configured (a system seed of its own; at least 5 ms).
func setLocalRTMax(sc *scenario.Scenario, deps []drpc.Deployment, cfg Config) error {
	cl, err := cluster.New(&sc.Config, cluster.Options{Seed: 1<<63 | 0x62617365, Selectors: lb.Classical(), // "base"
		Traces: sc.Traces(), Horizon: 3 * time.Minute})
	if err != nil {
		return fmt.Errorf("drpcenv: %w", err)
	}
	var snap metrics.Snapshot
	cl.RunUntil(time.Minute)
	cl.Observe(&snap)
	cl.RunUntil(3 * time.Minute)
	cl.Observe(&snap)
	for i := range deps {
		for _, s := range snap.Services {
			if s.Name == deps[i].Name {
				deps[i].RTMax = drpc.Duration(max(time.Duration(LocalSlack*s.Latency.Mean()*1e9), 5*time.Millisecond))
			}
		}
	}
	return nil
}

// Ingress are the services the scenario's requests enter: the roots of
// its classes.
func Ingress(sc *scenario.Scenario) []string {
	var names []string
	for _, c := range sc.Classes {
		if !slices.Contains(names, c.Call.Service) {
			names = append(names, c.Call.Service)
		}
	}
	return names
}

// ended appends an episode to the curve, calls what comes after it, and
// reports it.
func (t *trainer) ended(e Episode, after []func() error) error {
	e.Index = len(t.curve) + 1
	t.curve = append(t.curve, e)
	for _, f := range after {
		if err := f(); err != nil {
			return err
		}
	}
	if t.cfg.Progress != nil {
		t.cfg.Progress(e)
	}
	return nil
}

// validationDue reports whether the teacher is to be validated now, its
// n-th episode being the last one run: every ValidateEvery episodes, once
// it learns.
func (t *trainer) validationDue(n int) bool {
	every := t.cfg.ValidateEvery
	perEpisode := t.periods() * len(t.pol.Deployments)
	return every > 0 && n > 0 && n%every == 0 && n*perEpisode >= t.cfg.TD3.LearningStarts &&
		t.curve[len(t.curve)-1].Phase == phaseTeacher
}

// validate runs the deterministic teacher, as the last round left it, on
// the validation episodes (Workers at a time) while the updates owed are
// made beside the first of them, and keeps that teacher if it did best so
// far.
func (t *trainer) validate(after func() error) error {
	return t.validateActor(t.actorCopy(), false, after)
}

// actorCopy is a copy of the teacher's actor as it is now.
func (t *trainer) actorCopy() *nn.MLP[float32] {
	return copyOf(t.td3.Actor(), "actor")
}

// validateBase validates the base rule alone (an actor whose every weight
// is zero adds nothing to it) before any teacher: a teacher must beat it
// on validation to be kept, so an unlucky training run ends with the base
// rule, not with a policy worse than it.
func (t *trainer) validateBase(after func() error) error {
	zero := shaped(t.td3.Actor(), "actor")
	for _, p := range zero.Params() {
		clear(p.Value.Data)
	}
	return t.validateActor(zero, true, after)
}

// validateActor runs actor (the base rule alone, if base) on the
// validation episodes and keeps it if it did best so far.
func (t *trainer) validateActor(actor *nn.MLP[float32], base bool, after func() error) error {
	jobs := make([]job, t.cfg.ValidationEpisodes)
	for k := range jobs {
		rng := rand.New(rand.NewPCG(t.cfg.Seed, 0x76616c69+uint64(k))) // "vali"
		jobs[k] = job{phase: phaseValidation, seed: rng.Uint64() | 1<<63, spec: t.cfg.Arrivals(rng), actor: actor}
	}
	v, err := t.meanOf(jobs, t.update)
	if err != nil {
		return err
	}
	v.Phase, v.Steps, v.Updates, v.Lambda = phaseValidation, t.steps, t.td3.Updates, t.lambda
	if base && t.cfg.Budget > 0 {
		// The base rule alone comes first: a teacher is judged within
		// the budget or the base rule's cost, whichever is higher, so
		// that one cheaper than a base over the budget, but worse, does
		// not replace it.
		t.keepBudget = max(t.cfg.Budget, v.Cost)
	}
	if t.better(v) {
		t.best = actor
		t.bestScore, t.bestCost, t.bestViolations = v.Reward, v.Cost, v.SLOViolations
	}
	return t.ended(v, []func() error{after})
}

// meanOf runs the jobs Workers at a time, beside (if set) on this
// goroutine during the first round, and returns their mean reward, SLO
// violations and cost.
func (t *trainer) meanOf(jobs []job, beside func()) (Episode, error) {
	var v Episode
	n := float64(len(jobs))
	for len(jobs) > 0 {
		k := min(t.cfg.Workers, len(jobs))
		outs, err := t.simulate(jobs[:k], beside)
		if err != nil {
			return Episode{}, err
		}
		jobs, beside = jobs[k:], nil
		for _, o := range outs {
			v.Reward += o.Reward / n
			v.SLOViolations += o.SLOViolations / n
			v.Cost += o.Cost / n
		}
	}
	return v, nil
}

// better reports whether validation v beats the best so far: under a
// budget a teacher within it beats one over it, and of two over it the
// cheaper wins; otherwise the higher reward wins.
func (t *trainer) better(v Episode) bool {
	budget := cmp.Or(t.keepBudget, t.cfg.Budget)
	return t.best == nil || Beats(v, Episode{Reward: t.bestScore, Cost: t.bestCost, SLOViolations: t.bestViolations}, budget)
}

// Beats reports whether validation v beats validation best: under a budget
// (> 0) one within it beats one over it, of two over it the cheaper wins,
// and of two within it the one with fewer SLO violations (what a budget's
// user asks for: the fewest violations at the bill; at a tie, the higher
// reward); without a budget, the higher mean reward.
func Beats(v, best Episode, budget float64) bool {
	if budget > 0 {
		in, bestIn := v.Cost <= budget, best.Cost <= budget
		switch {
		case in != bestIn:
			return in
		case !in:
			return v.Cost < best.Cost
		case v.SLOViolations != best.SLOViolations:
			return v.SLOViolations < best.SLOViolations
		}
	}
	return v.Reward > best.Reward
}

// shaped returns a network of m's shape whose parameters are named
// name.0.W, ... (TD3 names its actor "actor", its critics "q1" and "q2").
func shaped(m *nn.MLP[float32], name string) *nn.MLP[float32] {
	sizes := []int{m.In()}
	for _, l := range m.Layers {
		sizes = append(sizes, l.Out())
	}
	return nn.NewMLP[float32](rand.New(rand.NewPCG(0, 0)), name, sizes, m.Hidden, m.Output)
}

// copyOf returns a copy of m whose parameters are named name.0.W, ...
func copyOf(m *nn.MLP[float32], name string) *nn.MLP[float32] {
	c := shaped(m, name)
	nn.HardCopy(c.Params(), m.Params())
	return c
}

// fitStudents trains every deployment's student on its data set
// (equation 9: the mean squared error between the teacher's and the
// student's outputs), Workers at a time, each from a seed drawn in turn.
func (t *trainer) fitStudents() error {
	bc := rl.DefaultBCConfig()
	bc.Hidden, bc.Epochs = t.cfg.StudentHidden, 100
	spec := rl.Spec{Observation: rl.UniformBox(drpc.LocalFeatures, -10, 10), Action: rl.UniformBox(drpc.ActionDim, -1, 1)}
	n := len(t.pol.Deployments)
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = t.rng.Uint64()
	}
	losses, errs := make([]float64, n), make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range t.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				b, err := rl.NewBC(spec, bc, rand.New(rand.NewPCG(seeds[i], 0x73747564))) // "stud"
				if err == nil {
					losses[i], err = b.Fit(t.dataObs[i], t.dataAct[i])
				}
				if err != nil {
					errs[i] = fmt.Errorf("drpcenv: student %s: %w", t.pol.Deployments[i].Name, err)
					continue
				}
				nn.HardCopy(t.pol.Student(i).Params(), b.Net().Params())
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	sum := 0.0
	for _, l := range losses {
		sum += l
	}
	t.pol.Provenance.ImitationMSE = sum / float64(n)
	return nil
}

// finish copies the teacher and its critics into the policy and records the trained range
// (widened by a quarter of its width) and the provenance.
func (t *trainer) finish() error {
	if err := t.pol.SetTeacher(t.td3.Actor()); err != nil {
		return err
	}
	if err := t.pol.SetCritics(t.td3.Critics(), drpc.NewFineTune(t.cfg.TD3, t.cfg.UpdatesPerStep)); err != nil {
		return err
	}
	if t.cfg.Budget > 0 {
		t.pol.Budget = &drpc.Budget{CPU: t.cfg.Budget, GBInCPU: t.gbInCPU, Lambda: t.lambda}
	}
	t.pol.Low = make([]float64, drpc.LocalFeatures)
	t.pol.High = make([]float64, drpc.LocalFeatures)
	for k := range t.low {
		m := 0.25*(t.high[k]-t.low[k]) + 0.05
		t.pol.Low[k], t.pol.High[k] = t.low[k]-m, t.high[k]+m
	}
	pr := &t.pol.Provenance
	pr.Episodes, pr.EnvSteps, pr.Updates = len(t.curve), t.steps, t.td3.Updates
	for _, e := range t.curve {
		switch e.Phase {
		case phaseImitation:
			pr.TeacherScore = e.Reward
		case phaseDAgger:
			pr.StudentScore = e.Reward
		}
	}
	return nil
}

// fitForecaster fits the workload predictor on the ingress rate the
// forecast episodes recorded, unless it is fitted already (DRPC section V-B: a GRU
// trained on the system's own request history).
func (t *trainer) fitForecaster() error {
	if t.cfg.ForecastEpisodes <= 0 || t.pol.Forecaster() != nil {
		return nil
	}
	fc, err := forecast.Fit(t.rates, t.cfg.Forecast, t.rng)
	if err != nil {
		return fmt.Errorf("drpcenv: forecaster: %w", err)
	}
	t.pol.SetForecaster(fc)
	return nil
}

// sloViolations is the share of requests that failed or missed their SLO.
func sloViolations(r *cluster.Results) float64 {
	if n := r.SLOArrivals(); n > 0 {
		return float64(r.SLOViolations()) / float64(n)
	}
	return 0
}
