package drpc

import (
	"fmt"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/learn/nn"
	"github.com/shoal-project/shoal/metrics"
)

// Forecaster predicts the ingress request rate: Next records the rate of
// the period that ended and returns the forecast rate over the current
// one (1: no change expected).
type Forecaster interface {
	Next(rate float64) (ratio float64)
}

// Options are what a controller is built with besides its policy.
type Options struct {
	// Fallback are the controllers that take over a deployment when the
	// policy cannot be trusted with it (inputs outside the trained range):
	// the scenario's HPA, one per deployment. They are called every period
	// so that their own history stays current; only the actions for
	// deployments in fallback are applied. Without them such a deployment
	// is left as it is.
	Fallback []control.Controller
	// Forecast, if set, is the workload predictor whose forecast the
	// students read (default: the policy's own, if it has one; else none).
	Forecast Forecaster
	// Teacher makes the central teacher act for every deployment at every
	// period instead of the students (Algorithm 1, stage 1, without
	// exploration): the teacher-alone comparison of the paper's Fig. 3d.
	Teacher bool
	// Retrain, if > 0, is how many periods the teacher takes over when the
	// notifier fires (Algorithm 1, line 14 then lines 3-9): it acts for
	// every deployment and, if the policy holds its critics
	// (Policy.FineTune), explores and learns as in training; every
	// deployment records its states, and then each student is refreshed
	// by imitation of the teacher on them. 0: the notifier only counts.
	Retrain int
	// RetrainNoise, if > 0, is the teacher's exploration noise while it
	// retrains (default: the noise it was trained with).
	RetrainNoise float64
	// Seed seeds the teacher's exploration and the students' refresh.
	Seed uint64
}

// Stats counts what a controller did.
type Stats struct {
	Decisions int // deployment decisions made by the policy
	Fallbacks int // deployment decisions left to the fallback
	Clipped   int // decisions a guard rail changed
	Notified  int // times the retraining notifier fired (a run of periods below TH counts once)
	Retrained int // retraining rounds completed (students refreshed)
	// RewardBefore is the mean reward of the notifier's window when it
	// last fired, RewardAfter that of the first full window after the
	// students were refreshed (0 until then): whether retraining helped.
	RewardBefore, RewardAfter float64
	// Reward is the mean system reward of the periods observed (equation
	// 2 averaged over the deployments, the notifier's input): how well the
	// policy did by its own measure.
	Reward  float64
	periods int
}

// Controller runs a DRPC policy: every period it observes, lets each
// deployment's student decide when its own period is due, and passes every
// decision through the guard rails. It implements control.Controller and
// allocates nothing per decision in steady state.
type Controller struct {
	pol      *Policy
	opt      Options
	obs      *Observer
	notifier *Notifier
	preds    []*nn.MLPPredictor[float32]
	teacher  *nn.MLPPredictor[float32]
	in, out  []float32
	raw, act []float64 // the network's output; the action after the base rule
	low      []int     // per deployment: periods in a row below the base rule's Low
	fallback []bool
	hpas     *HPAs // the HPAs the policy acts over, if it does
	acts     []control.Action
	stats    Stats
	reward   float64
	firing   bool // the notifier fired in the last period
	// Retraining: periods left with the teacher in charge.
	teaching int
	retrain  *retrainer
}

// NewController returns a controller running pol.
func NewController(pol *Policy, opt Options) (*Controller, error) {
	for i, d := range pol.Deployments {
		if d.Period <= 0 || time.Duration(d.Period)%time.Duration(pol.Period) != 0 {
			return nil, fmt.Errorf("deployments[%d].period: %v is not a multiple of the control period %v", i, time.Duration(d.Period), time.Duration(pol.Period))
		}
	}
	if opt.Forecast == nil && pol.fc != nil {
		opt.Forecast = NewRateForecast(pol.fc)
	}
	c := &Controller{pol: pol, opt: opt, obs: NewObserver(pol.Deployments, pol.Ingress, time.Duration(pol.Reward.RTMax)),
		notifier: NewNotifier(pol.Notifier.NPR, pol.Notifier.TH, pol.Notifier.Relative), preds: make([]*nn.MLPPredictor[float32], len(pol.Deployments)),
		teacher: pol.teacher.NewPredictor(), in: make([]float32, TeacherInput(len(pol.Deployments))),
		out: make([]float32, ActionDim), act: make([]float64, ActionDim), raw: make([]float64, ActionDim), low: make([]int, len(pol.Deployments)),
		fallback: make([]bool, len(pol.Deployments))}
	for i := range c.preds {
		c.preds[i] = pol.students[i].NewPredictor()
	}
	var err error
	if c.hpas, err = pol.NewHPAs(); err != nil {
		return nil, err
	}
	if opt.Retrain > 0 {
		if c.retrain, err = newRetrainer(pol, opt); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Stats returns the counts so far.
func (c *Controller) Stats() Stats { return c.stats }

// Fallback reports whether the fallback controller acted for the named
// deployment in the last period (its inputs were outside the trained
// range, or the snapshot lacked a service).
func (c *Controller) Fallback(name string) bool {
	i := c.deployment(name)
	return i >= 0 && c.fallback[i]
}

// OutOfRange says which of the named deployment's inputs lies outside
// the trained range, and where ("" when none, or no range is recorded).
func (c *Controller) OutOfRange(name string) string {
	i := c.deployment(name)
	if i < 0 || c.pol.Low == nil {
		return ""
	}
	for k, v := range c.obs.Local(i) {
		if v < c.pol.Low[k] || v > c.pol.High[k] {
			return fmt.Sprintf("%s %.3g outside [%.3g, %.3g]", LocalFeatureNames[k], v, c.pol.Low[k], c.pol.High[k])
		}
	}
	return ""
}

// Reward is the application's reward of the last period (equation 3,
// averaged over the deployments), the notifier's input.
func (c *Controller) Reward() float64 { return c.reward }

// Decide implements control.Controller.
func (c *Controller) Decide(now time.Duration, snap *metrics.Snapshot) []control.Action {
	c.acts = c.acts[:0]
	ok := c.obs.Observe(snap, c.opt.Forecast)
	for i := range c.fallback {
		c.fallback[i] = !ok
		if !ok && c.hpas != nil {
			c.hpas.AtTarget(i)
		}
	}
	if ok {
		if b := c.pol.Base; b != nil {
			for i := range c.low {
				c.low[i] = b.Below(c.low[i], c.obs.Local(i))
			}
		}
		c.reward = SystemReward(c.pol.Reward, c.obs, snap)
		c.stats.periods++
		c.stats.Reward += (c.reward - c.stats.Reward) / float64(c.stats.periods)
		fired := c.notifier.Add(c.reward)
		if c.stats.Retrained > 0 && c.notifier.iter == len(c.notifier.history) {
			c.stats.RewardAfter = c.notifier.Average()
		}
		if fired && !c.firing {
			c.stats.Notified++
			c.stats.RewardBefore = c.notifier.Average()
			if c.opt.Retrain > 0 && c.teaching == 0 {
				c.teaching = c.opt.Retrain
			}
		}
		c.firing = fired
		if c.teaching > 0 {
			c.retrain.learn(c.pol, c.obs, snap)
		}
		c.decideAll(now, snap)
		if c.teaching > 0 {
			if c.teaching--; c.teaching == 0 {
				c.retrain.refresh(c.pol, c.teacher)
				c.notifier.Reset()
				c.stats.Retrained++
			}
		}
	}
	return c.applyFallback(now, snap)
}

// decideAll lets every deployment whose period is due decide.
func (c *Controller) decideAll(now time.Duration, snap *metrics.Snapshot) {
	for i := range c.pol.Deployments {
		d := &c.pol.Deployments[i]
		if d.handover { // Fit left it to the fallback, every period
			c.fallBack(i)
			continue
		}
		teacher := c.opt.Teacher || c.teaching > 0
		if !teacher && now%time.Duration(d.Period) != 0 {
			continue
		}
		if !c.inRange(i) {
			c.fallBack(i)
			continue
		}
		c.policyAction(i, teacher)
		if c.hpas != nil {
			c.hpas.Steer(i, c.act)
		}
		s := c.obs.Service(snap, i)
		dec := Guard(d, c.pol.Steps, s, c.obs.brownout[i], c.act)
		c.stats.Decisions++
		if dec.ClippedByRail {
			c.stats.Clipped++
		}
		c.obs.SetBrownout(i, dec.Brownout)
		c.acts = dec.Actions(c.acts, d.Name, s)
	}
}

// fallBack leaves deployment i to the fallback: the scenario's HPA, or
// the HPA the policy acts over, at its own target.
func (c *Controller) fallBack(i int) {
	c.fallback[i] = true
	c.stats.Fallbacks++
	if c.hpas != nil {
		c.hpas.AtTarget(i)
	}
}

// policyAction sets c.act to deployment i's action from its student, or
// from the teacher.
func (c *Controller) policyAction(i int, teacher bool) {
	local := c.obs.Local(i)
	if teacher {
		TeacherInputOf(c.in, local, c.obs.Global(), i)
		if c.teaching > 0 {
			c.retrain.act(c.out, i, local, c.in, c.teacher)
		} else {
			c.teacher.Predict(c.out, c.in)
		}
	} else {
		for k, v := range local {
			c.in[k] = float32(v)
		}
		c.preds[i].Predict(c.out, c.in[:LocalFeatures])
	}
	for k, v := range c.out {
		c.raw[k] = float64(v)
	}
	c.pol.Compose(c.act, c.raw, local, i, c.low[i])
}

// inRange reports whether deployment i's inputs are inside what the policy
// was trained on.
func (c *Controller) inRange(i int) bool {
	lo, hi := c.pol.Low, c.pol.High
	if lo == nil {
		return true
	}
	for k, v := range c.obs.Local(i) {
		if v < lo[k] || v > hi[k] {
			return false
		}
	}
	return true
}

// applyFallback runs the fallback controllers and keeps their actions for
// the deployments in fallback; a policy over the HPA runs its HPAs, which
// scale every deployment.
func (c *Controller) applyFallback(now time.Duration, snap *metrics.Snapshot) []control.Action {
	if c.hpas != nil {
		return c.hpas.Decide(c.acts, now, snap)
	}
	for _, f := range c.opt.Fallback {
		for _, a := range f.Decide(now, snap) {
			if i := c.deployment(serviceOf(a)); i >= 0 && c.fallback[i] {
				c.acts = append(c.acts, a)
			}
		}
	}
	return c.acts
}

func (c *Controller) deployment(name string) int {
	for i := range c.pol.Deployments {
		if c.pol.Deployments[i].Name == name {
			return i
		}
	}
	return -1
}

// serviceOf is the service an autoscaling action is about.
func serviceOf(a control.Action) string {
	switch a := a.(type) {
	case control.SetReplicas:
		return a.Service
	case control.SetResources:
		return a.Service
	case control.SetBrownout:
		return a.Service
	case control.SetConcurrency:
		return a.Service
	}
	return ""
}

// TeacherInputOf fills dst (float32, TeacherInput(n) long) with deployment
// i's local features, the global ones and the one-hot identity.
func TeacherInputOf(dst []float32, local, global []float64, i int) {
	for k, v := range local {
		dst[k] = float32(v)
	}
	for k, v := range global {
		dst[LocalFeatures+k] = float32(v)
	}
	id := dst[LocalFeatures+GlobalFeatures:]
	clear(id)
	id[i] = 1
}

// SystemReward is equation 3 for the application: the QoS term of the
// ingress response time over each deployment's utilisation term, averaged
// over the deployments.
func SystemReward(r Reward, o *Observer, snap *metrics.Snapshot) float64 {
	qos := o.AppQoS(r)
	sum := 0.0
	for i := range o.deps {
		sum += o.Reward(r, qos, snap, i)
	}
	return sum / float64(max(len(o.deps), 1))
}

// Reward is equation 3 for deployment i with the application's QoS term.
// Its utilisation is of the CPU allocated, starting replicas included: a
// replica costs from the moment it is requested, so the cost of a scale-up
// is seen at once, not a cold start later.
func (o *Observer) Reward(r Reward, qosApp float64, snap *metrics.Snapshot, i int) float64 {
	s := o.Service(snap, i)
	cpu := 0.0
	if s.Replicas > 0 && s.CPULimit > 0 {
		cpu = clip(s.CPUUse/(float64(s.Replicas)*s.CPULimit), 0, 2)
	}
	return r.Deployment(qosApp, &o.deps[i], s, cpu, o.local[i][fMemoryUtil])
}
