package drpcenv

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/learn/nn"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/scenario"
)

// job is one episode to simulate. Everything it reads is its own or is
// not written while it runs, so the jobs of a round run at once.
type job struct {
	phase string
	seed  uint64
	spec  Traffic
	// actor is the teacher's actor: it acts (teacher, validation,
	// imitation) and labels the states for the students (imitation,
	// dagger). In the teacher phase it is a copy taken as the round began.
	actor *nn.MLP[float32]
	// noise draws the exploration (teacher phase): uniform actions for the
	// first random periods (until the replay buffer would hold
	// LearningStarts transitions), Gaussian noise after.
	noise  *rand.Rand
	random int
}

// outcome is what an episode brings back.
type outcome struct {
	Episode
	// The teacher phase's transitions: every deployment's input at each
	// period (one more period than actions), its action, reward and cost
	// (its share of the budget, see takeIn).
	x    [][][]float64
	a    [][][]float64
	r, c [][]float64
	// Imitation and dagger: per deployment, the states visited and the
	// teacher's labels, and the range of every local feature seen.
	obs, lab  [][][]float64
	low, high []float64
	// The forecast phase's ingress rates, one row a period.
	rates [][]float64
}

// round runs k episodes of the phase at once, each on a world and arrivals
// drawn in turn from the trainer's random source, while the teacher makes
// the updates the earlier episodes earned; then it takes in their outcomes
// in order and calls after once the last is in.
func (t *trainer) round(phase string, k int, after ...func() error) error {
	jobs := make([]job, k)
	for i := range jobs {
		jobs[i] = t.job(phase, i)
	}
	var beside func()
	if phase == phaseTeacher {
		beside = t.update
	}
	outs, err := t.simulate(jobs, beside)
	if err != nil {
		return err
	}
	for i, o := range outs {
		var then []func() error
		if i == len(outs)-1 {
			then = after
		}
		if err := t.ended(t.takeIn(o), then); err != nil {
			return err
		}
	}
	return nil
}

// job draws the i-th episode of a round of the phase.
func (t *trainer) job(phase string, i int) job {
	j := job{phase: phase, seed: t.rng.Uint64() | 1<<63}
	j.spec = t.cfg.Arrivals(t.rng)
	switch phase {
	case phaseTeacher:
		j.noise = rand.New(rand.NewPCG(t.rng.Uint64(), t.rng.Uint64()))
		j.actor = t.actorCopy()
		n := len(t.pol.Deployments)
		stored := t.td3.Replay().Len() + i*t.periods()*n // by the earlier episodes of the round
		j.random = max(0, (t.cfg.TD3.LearningStarts-stored+n-1)/n)
	case phaseImitation, phaseDAgger, phaseValidation:
		j.actor = t.td3.Actor()
	}
	return j
}

func (t *trainer) periods() int { return int(t.cfg.EpisodeLength / t.cfg.Period) }

// simulate runs the jobs on goroutines of their own and beside, if set, on
// this one, and returns the outcomes in the jobs' order.
func (t *trainer) simulate(jobs []job, beside func()) ([]*outcome, error) {
	outs := make([]*outcome, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = t.run(&jobs[i])
		}()
	}
	if beside != nil {
		beside()
	}
	wg.Wait()
	return outs, errors.Join(errs...)
}

// update makes the teacher's updates owed so far.
func (t *trainer) update() {
	for ; t.pending > 0; t.pending-- {
		t.td3.Update()
	}
}

// takeIn adds an episode's outcome to the run: the teacher's transitions
// to the replay buffer (owing UpdatesPerStep updates for every period once
// it holds LearningStarts), the budget's multiplier, the students' data
// set, the recorded rates. It returns the episode's curve point.
func (t *trainer) takeIn(o *outcome) Episode {
	n := len(t.pol.Deployments)
	switch o.Phase {
	case phaseTeacher:
		rep := t.td3.Replay()
		for s := range o.r {
			for i := range n {
				rep.AddCost(o.x[s][i], o.a[s][i], o.r[s][i], o.c[s][i], o.x[s+1][i], false)
			}
			if rep.Len() >= t.cfg.TD3.LearningStarts {
				t.pending += t.cfg.UpdatesPerStep
			}
		}
		if b := t.cfg.Budget; b > 0 {
			t.lambda = max(0, t.lambda+t.cfg.BudgetLR*(o.Cost/b-1))
			rep.SetPenalty(t.lambda)
		}
	case phaseImitation, phaseDAgger:
		for i := range n {
			t.dataObs[i] = append(t.dataObs[i], o.obs[i]...)
			t.dataAct[i] = append(t.dataAct[i], o.lab[i]...)
		}
		for k := range t.low {
			t.low[k], t.high[k] = math.Min(t.low[k], o.low[k]), math.Max(t.high[k], o.high[k])
		}
	case phaseForecast:
		t.rates = append(t.rates, o.rates...)
	}
	if o.Phase != phaseValidation {
		t.steps += t.periods()
	}
	e := o.Episode
	e.Steps, e.Updates, e.Lambda = t.steps, t.td3.Updates, t.lambda
	return e
}

// run runs one episode of job j: the teacher explores (its transitions
// recorded), or (imitation, dagger) the teacher or the students act and
// the teacher labels the visited states for the students, or (validation)
// the teacher acts, or (forecast) the base rule acts and the ingress rate
// is recorded. It writes nothing of the trainer's.
func (t *trainer) run(j *job) (*outcome, error) {
	w, err := newWorld(t.sc, j.spec, j.seed, t.cfg)
	if err != nil {
		return nil, err
	}
	n := len(t.pol.Deployments)
	hpas, err := t.pol.NewHPAs()
	if err != nil {
		return nil, err
	}
	obs := drpc.NewObserver(t.pol.Deployments, t.pol.Ingress, time.Duration(t.cfg.Reward.RTMax))
	var fc drpc.Forecaster
	if f := t.pol.Forecaster(); f != nil {
		fc = drpc.NewRateForecast(f.Clone())
	}
	var actor *nn.MLPPredictor[float32]
	if j.actor != nil {
		actor = j.actor.NewPredictor()
	}
	var students []*nn.MLPPredictor[float32]
	if j.phase == phaseDAgger || j.phase == phaseStudents {
		for i := range n {
			students = append(students, t.pol.Student(i).NewPredictor())
		}
	}
	o := &outcome{Episode: Episode{Phase: j.phase}}
	labels := j.phase == phaseImitation || j.phase == phaseDAgger
	if labels {
		o.obs, o.lab = make([][][]float64, n), make([][][]float64, n)
		o.low, o.high = make([]float64, drpc.LocalFeatures), make([]float64, drpc.LocalFeatures)
		for k := range o.low {
			o.low[k], o.high[k] = math.Inf(1), math.Inf(-1)
		}
	}
	teacher := j.phase == phaseTeacher
	in32, out32 := make([]float32, drpc.TeacherInput(n)), make([]float32, drpc.ActionDim)
	brown := make([]bool, n)
	low := make([]int, n)
	var sumReward, sumCost float64
	periods := t.periods()
	var snap metrics.Snapshot
	w.cl.Observe(&snap) // the first period starts here
	w.cl.RunUntil(t.cfg.Period)
	w.cl.Observe(&snap)
	if !obs.Observe(&snap, fc) {
		return nil, errors.New("drpcenv: a deployment is missing from the snapshot")
	}
	x := t.inputs(obs)
	var buf []control.Action
	final := make([]float64, drpc.ActionDim)
	for step := 1; step <= periods; step++ {
		if err := t.ctx.Err(); err != nil {
			return nil, err
		}
		now := time.Duration(step) * t.cfg.Period
		buf = buf[:0]
		acts := make([][]float64, n)
		for i := range n {
			a := t.act(j, step-1, i, x[i], obs.Local(i), in32, out32, actor, students)
			acts[i] = a // what the network chose: the residual when there is a base
			switch j.phase {
			case phaseImitation: // the teacher acted: a is its label
				o.record(i, obs.Local(i), a)
			case phaseDAgger:
				o.record(i, obs.Local(i), t.label(x[i], in32, out32, actor))
			}
			if b := t.pol.Base; b != nil {
				low[i] = b.Below(low[i], obs.Local(i))
			}
			t.pol.Compose(final, a, obs.Local(i), i, low[i])
			if hpas != nil {
				hpas.Steer(i, final)
			}
			s := obs.Service(&snap, i)
			dec := drpc.Guard(&t.pol.Deployments[i], t.cfg.Steps, s, brown[i], final)
			brown[i] = dec.Brownout
			obs.SetBrownout(i, dec.Brownout)
			buf = dec.Actions(buf, t.pol.Deployments[i].Name, s)
		}
		if hpas != nil {
			buf = hpas.Decide(buf, now, &snap)
		}
		for _, a := range buf {
			if err := w.cl.Apply(now, a); err != nil {
				return nil, fmt.Errorf("drpcenv: %w", err)
			}
		}
		w.cl.RunUntil(now + t.cfg.Period)
		w.cl.Observe(&snap)
		if !obs.Observe(&snap, fc) {
			return nil, errors.New("drpcenv: a deployment is missing from the snapshot")
		}
		next := t.inputs(obs)
		if j.phase == phaseForecast {
			o.rates = append(o.rates, []float64{obs.IngressRate()})
		}
		qos := obs.AppQoS(t.cfg.Reward)
		rs, cs := make([]float64, n), make([]float64, n)
		for i := range n {
			rs[i] = obs.Reward(t.cfg.Reward, qos, &snap, i)
			sumReward += rs[i] / float64(n)
			c := drpc.Allocated(obs.Service(&snap, i), t.gbInCPU)
			sumCost += c
			if b := t.cfg.Budget; b > 0 {
				cs[i] = float64(n) * c / b // at the budget, the deployments' mean cost is 1
			}
		}
		if teacher {
			o.x, o.a, o.r, o.c = append(o.x, x), append(o.a, acts), append(o.r, rs), append(o.c, cs)
		}
		x = next
	}
	if teacher {
		o.x = append(o.x, x)
	}
	w.cl.Drain(time.Minute)
	o.Reward, o.Cost = sumReward/float64(periods), sumCost/float64(periods)
	o.SLOViolations = sloViolations(w.cl.Results())
	return o, nil
}

// act is deployment i's action at period step of job j: the teacher
// explores (uniform for the job's first random periods, Gaussian noise
// after), or acts deterministically (imitation, validation), or the
// student acts (dagger, students), or nothing is added to the base rule
// (forecast).
func (t *trainer) act(j *job, step, i int, x, local []float64, in32, out32 []float32, actor *nn.MLPPredictor[float32], students []*nn.MLPPredictor[float32]) []float64 {
	a := make([]float64, drpc.ActionDim)
	switch j.phase {
	case phaseForecast:
		return a // the base rule alone
	case phaseTeacher:
		if step < j.random {
			for k := range a {
				a[k] = 2*j.noise.Float64() - 1
			}
			return a
		}
		copy(a, t.label(x, in32, out32, actor))
		for k := range a {
			a[k] = math.Min(math.Max(a[k]+t.cfg.TD3.ActionNoise*j.noise.NormFloat64(), -1), 1)
		}
		return a
	case phaseDAgger, phaseStudents:
		for k, v := range local {
			in32[k] = float32(v)
		}
		students[i].Predict(out32, in32[:drpc.LocalFeatures])
		for k, v := range out32 {
			a[k] = float64(v)
		}
		return a
	}
	copy(a, t.label(x, in32, out32, actor))
	return a
}

// label is the teacher's deterministic action for input x (a buffer that
// the next call overwrites).
func (t *trainer) label(x []float64, in32, out32 []float32, actor *nn.MLPPredictor[float32]) []float64 {
	for k, v := range x {
		in32[k] = float32(v)
	}
	actor.Predict(out32, in32)
	lab := make([]float64, len(out32))
	for k, v := range out32 {
		lab[k] = float64(v)
	}
	return lab
}

// record adds deployment i's local features, labelled with the teacher's
// action, to the episode's data set and widens its feature range.
func (o *outcome) record(i int, local, label []float64) {
	o.obs[i] = append(o.obs[i], slices.Clone(local))
	o.lab[i] = append(o.lab[i], label)
	for k, v := range local {
		o.low[k], o.high[k] = math.Min(o.low[k], v), math.Max(o.high[k], v)
	}
}

// inputs are the teacher's inputs of every deployment, from the observer.
func (t *trainer) inputs(obs *drpc.Observer) [][]float64 {
	n := len(t.pol.Deployments)
	in32 := make([]float32, drpc.TeacherInput(n))
	x := make([][]float64, n)
	for i := range x {
		drpc.TeacherInputOf(in32, obs.Local(i), obs.Global(), i)
		x[i] = make([]float64, len(in32))
		for k, v := range in32 {
			x[i][k] = float64(v)
		}
	}
	return x
}

// world is one episode's simulated cluster.
type world struct{ cl *cluster.Cluster }

func newWorld(sc *scenario.Scenario, spec Traffic, seed uint64, cfg Config) (*world, error) {
	cl, err := EpisodeCluster(sc, spec, seed, cfg.EpisodeLength+cfg.Period)
	if err != nil {
		return nil, err
	}
	return &world{cl: cl}, nil
}

// EpisodeCluster is one training episode's simulated system, for every
// autoscaler's training: the scenario with the traffic's arrivals, the
// classical selectors and 10 s samples, up to horizon.
func EpisodeCluster(sc *scenario.Scenario, tr Traffic, seed uint64, horizon time.Duration) (*cluster.Cluster, error) {
	cp := *sc
	cp.Sources = slices.Clone(sc.Sources)
	if err := tr.apply(&cp); err != nil {
		return nil, fmt.Errorf("training arrivals: %w", err)
	}
	cl, err := cluster.New(&cp.Config, cluster.Options{Seed: seed, Selectors: lb.Classical(), Traces: sc.Traces(),
		Horizon: horizon, SamplePeriod: 10 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("training cluster: %w", err)
	}
	return cl, nil
}
