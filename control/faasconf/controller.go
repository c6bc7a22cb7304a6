package faasconf

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/learn/rl"
	"github.com/shoal-project/shoal/metrics"
)

// Options are what a controller is built with besides its policy.
type Options struct {
	// NoSES turns the safe exploration strategy off (the ablation of
	// Fig. 14): the actors' configurations run as they are.
	NoSES bool
	// Restless explores every window, as a tuning session does (section
	// 5.2.1: 15 rounds to find the cheapest configuration). Without it the
	// exploration settles (Agent).
	Restless bool
	// Frozen keeps the actors as trained: no fine-tuning while serving and
	// no exploration noise (see Agent).
	Frozen bool
	// Seed seeds the safe exploration's draws.
	Seed uint64
}

// Stats counts what a controller did.
type Stats struct {
	Decisions int // windows decided
	Explored  int // windows whose configuration the actors proposed
	Replaced  int // configurations the safe exploration replaced
	Violated  int // configurations that ran and missed the QoS
	FineTunes int // times the actors were fine-tuned while serving
}

// Agent is FaaSConf's decision, shared by the online controller and
// offline tuning sessions: the actors propose every function's next
// configuration from the observation, and the safe exploration strategy
// runs it if its price is inside the safe range of the workload level,
// else a safe one from history (section 4.3); the outcome of every
// configuration that ran is added to the history, so that the ranges adapt.
// Every configuration is made safe before it runs: memory that holds the
// calls its concurrency limit admits, and instances that fit the nodes
// (Policy.Footprint).
//
// Unless Restless, the exploration settles: at a workload level where
// configurations met the QoS, the agent holds the cheapest it trusts
// (ladder) and lets the actors propose only after gap windows in a row met
// it; gap starts at 4 and doubles (up to 64) each time a proposal misses
// the QoS or is no cheaper, so a stable load is explored less and less. A
// level change runs the new level's held configuration, a violation falls
// back to it (or to the next dearer one, when the held one lost the
// agent's trust); a level with none is explored. A level starts with the
// configurations training verified there (the policy's history), and the
// configuration running when the agent starts counts as one that met the
// QoS if it did.
//
// Unless Frozen, the actors learn while the agent serves (the paper's Fig.
// 4, step 7): they propose with Gaussian exploration noise, and whenever
// the configuration the agent holds at a level changes, a copy of the
// actors of the agent's own is fine-tuned by behaviour cloning toward
// every level's held configuration on the observations seen there
// (rl.Cloner), so that they propose what proved cheap and safe and explore
// around it.
type Agent struct {
	pol     *Policy
	opt     Options
	ses     *SES
	fit     *Fitter
	rng     *rand.Rand
	configs []Config
	action  [][]float64
	stats   Stats

	// Fine-tuning while serving: the observations seen at each level (a
	// ring each), and the cloner of the agent's own actors.
	seen   map[float64]*ring
	cloner *rl.Cloner

	// The settling exploration's state.
	levels   map[float64]*ladder
	last     float64 // the level of the last proposal
	proposed bool    // the actors proposed the last configuration
	changed  bool    // the last proposal changed the configuration
	started  bool
}

// NewAgent returns an agent for pol, its history that of the policy.
func NewAgent(pol *Policy, opt Options) *Agent {
	n := len(pol.Functions)
	if !opt.Frozen {
		pol = pol.Copy()
	}
	a := &Agent{pol: pol, opt: opt, ses: NewSES(), fit: NewFitter(pol.Footprint, pol.Space), seen: map[float64]*ring{},
		rng:     rand.New(rand.NewPCG(opt.Seed, 0x73657366)), // "sesf"
		configs: make([]Config, n), action: make([][]float64, n), levels: map[float64]*ladder{}}
	for j := range n {
		a.action[j] = make([]float64, ActionDim)
	}
	for _, r := range pol.History {
		a.ses.Add(r)
		if r.Met {
			a.ladder(r.Workload).verified(r.Action, r.Price)
		}
	}
	return a
}

// Stats returns the counts so far.
func (a *Agent) Stats() Stats { return a.stats }

// SES returns the agent's safe exploration (its history and ranges).
func (a *Agent) SES() *SES { return a.ses }

// Record adds the outcome of the configurations last proposed, which ran
// at the workload level.
func (a *Agent) Record(level float64, met bool) {
	price := Price(a.configs)
	a.ses.Add(Record{Workload: level, Action: rl.CloneJoint(a.action), Price: price, Met: met})
	if !met {
		a.stats.Violated++
	}
	a.settle(level, price, met)
}

// settle counts the outcome of the configuration last proposed at the
// level, and schedules the next proposal of the actors: each one that
// missed the QoS, or met it no cheaper than the held configuration,
// doubles the gap.
func (a *Agent) settle(level, price float64, met bool) {
	l := a.ladder(level)
	// The held price is taken before record, which may shift the ladder
	// in place under a pointer into it.
	heldPrice, held := l.heldPrice()
	l.record(a.action, price, met, a.changed)
	if after, ok := l.heldPrice(); !a.opt.Frozen && ok && (!held || after != heldPrice) {
		a.fineTune()
	}
	switch {
	case a.proposed && (!met || (held && price >= heldPrice)):
		l.calm, l.gap = 0, min(lastGap, 2*l.gap)
	case met:
		l.calm++
	default:
		l.calm = 0
	}
}

func (a *Agent) ladder(level float64) *ladder {
	l := a.levels[level]
	if l == nil {
		l = &ladder{gap: firstGap}
		a.levels[level] = l
	}
	return l
}

// RecordRunning adds the outcome of configurations the agent did not
// propose (the ones running when it starts): every measurement joins the
// Data Store (section 3, step 7), and one that met the QoS is held.
func (a *Agent) RecordRunning(level float64, cs []Config, met bool) {
	r := Record{Workload: level, Action: a.pol.Space.EncodeAll(cs), Price: Price(cs), Met: met}
	a.ses.Add(r)
	a.ladder(level).record(r.Action, r.Price, met, true)
}

// Propose returns every function's next configuration for the joint
// observation at the workload level (owned by a, valid until its next
// call).
func (a *Agent) Propose(level float64, obs [][]float64) []Config {
	a.stats.Decisions++
	if !a.opt.Frozen {
		a.observed(level, obs)
	}
	l := a.ladder(level)
	h := l.held()
	settled := !a.opt.Restless && h != nil && (!a.started || a.last != level || l.calm < l.gap)
	a.started, a.last, a.proposed = true, level, !settled
	if settled {
		a.changed = !equalJoint(a.action, h.action)
		for j := range a.action {
			copy(a.action[j], h.action[j])
			a.configs[j] = a.pol.Space.Decode(a.action[j])
		}
		return a.configs
	}
	a.changed = true
	l.calm = 0
	a.stats.Explored++
	for j, act := range a.pol.actors.Act(obs) {
		for k, v := range act {
			a.action[j][k] = float64(v)
			if !a.opt.Frozen {
				a.action[j][k] = math.Max(-1, math.Min(1, a.action[j][k]+exploreNoise*a.rng.NormFloat64()))
			}
		}
		a.configs[j] = a.pol.Space.Decode(a.action[j])
	}
	if !a.opt.NoSES {
		if safe, replaced := a.ses.Filter(level, a.action, Price(a.configs), a.rng); replaced {
			a.stats.Replaced++
			for j := range safe {
				copy(a.action[j], safe[j])
				a.configs[j] = a.pol.Space.Decode(a.action[j])
			}
		}
	}
	a.fit.Safe(a.configs)
	for j, c := range a.configs {
		a.pol.Space.Encode(a.action[j], c)
	}
	return a.configs
}

// Level is the workload level of a request rate: over the policy's base
// rate, rounded up to the lowest level trained on at or above it (the
// highest beyond them), so that a configuration found for a level holds
// the rates below it.
func (p *Policy) Level(rate float64) float64 { return Ceil(p.Levels, rate/p.BaseRate) }

// Ceil is the lowest of the levels (in increasing order) at or above x,
// the highest when x is beyond them.
func Ceil(levels []float64, x float64) float64 {
	for _, l := range levels {
		if l >= x-1e-9 {
			return l
		}
	}
	return levels[len(levels)-1]
}

// levelSlack is how far over its level a window's rate may be before the
// controller moves up a level: Poisson arrivals alone vary a 5 requests/s
// window of 30 s by 8% (one standard deviation), and every level change
// reconfigures.
const levelSlack = 0.15

// Leveller is the workload level of successive windows, with hysteresis:
// the level stays while the rate is at most levelSlack over it and above
// the level below; else it is the rate's level (Ceil) with the same slack.
type Leveller struct {
	Levels   []float64 // in increasing order, multiples of BaseRate
	BaseRate float64   // requests per second at level 1
	level    float64   // the last window's (0: none yet)
}

// Of is the level of a window of the snapshot's length.
func (l *Leveller) Of(snap *metrics.Snapshot) float64 {
	var arrivals int64
	for _, cl := range snap.Classes {
		arrivals += cl.Arrivals
	}
	x := float64(arrivals) / snap.Period.Seconds() / l.BaseRate
	if l.level > 0 && x <= l.level*(1+levelSlack) && Ceil(l.Levels, x) >= l.level {
		return l.level
	}
	l.level = Ceil(l.Levels, x/(1+levelSlack))
	return l.level
}

// Policy is the agent's policy.
func (a *Agent) Policy() *Policy { return a.pol }

// Controller serves a FaaSConf policy online through an Agent: at the end
// of every time window it records how the configuration that ran did,
// observes every function (Table 2) and configures them. It implements
// control.Controller; call it once per window (Policy.Window).
type Controller struct {
	*Agent
	obs  [][]float64
	idx  []int
	ran  bool // the agent's configurations ran in the window that just ended
	lev  Leveller
	acts []control.Action
}

// NewController returns a controller serving pol.
func NewController(pol *Policy, opt Options) (*Controller, error) {
	n := len(pol.Functions)
	c := &Controller{Agent: NewAgent(pol, opt), obs: make([][]float64, n), idx: make([]int, n), lev: Leveller{Levels: pol.Levels, BaseRate: pol.BaseRate}}
	for j := range n {
		c.obs[j], c.idx[j] = make([]float64, Features), -1
	}
	return c, nil
}

// Level is the workload level of a window (Leveller).
func (c *Controller) Level(snap *metrics.Snapshot) float64 { return c.lev.Of(snap) }

// Decide implements control.Controller.
func (c *Controller) Decide(_ time.Duration, snap *metrics.Snapshot) []control.Action {
	c.acts = c.acts[:0]
	if snap.Period <= 0 { // no window has ended yet
		return nil
	}
	w := WindowOf(snap)
	level := c.Level(snap)
	for j, f := range c.pol.Functions {
		c.idx[j] = snap.ServiceIndex(f, c.idx[j])
		if c.idx[j] < 0 {
			panic(fmt.Sprintf("faasconf: function %q is not in the snapshot", f))
		}
		Observe(c.obs[j], &snap.Services[c.idx[j]], snap.Period, c.pol.Space, w, c.pol.QoS)
	}
	switch {
	case c.ran:
		c.Record(level, c.pol.QoS.Met(w))
	case w.Requests > 0: // the platform's own configuration ran
		cs := make([]Config, len(c.idx))
		for j, i := range c.idx {
			s := &snap.Services[i]
			cs[j] = Config{CPU: s.CPULimit, MemoryMB: s.MemoryLimit, Instances: s.Replicas, Concurrency: s.Concurrency}
		}
		c.RecordRunning(level, cs, c.pol.QoS.Met(w))
	}
	for j, cfg := range c.Propose(level, c.obs) {
		s := &snap.Services[c.idx[j]]
		if m := c.pol.Footprint.Memory; len(m) > j && s.Concurrency > cfg.Concurrency {
			// The calls the running limit admitted are still there: lower
			// the memory once the new limit holds.
			cfg.MemoryMB = max(cfg.MemoryMB, min(c.pol.Space.MemoryMB[1], m[j].Floor(s.Concurrency)))
		}
		c.acts = Actions(c.acts, c.pol.Functions[j], s, cfg)
	}
	c.ran = true
	return c.acts
}
