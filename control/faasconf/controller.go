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
	// Seed seeds the safe exploration's draws.
	Seed uint64
}

// Stats counts what a controller did.
type Stats struct {
	Decisions int // windows decided
	Replaced  int // configurations the safe exploration replaced
	Violated  int // configurations that ran and missed the QoS
}

// Agent is FaaSConf's decision, shared by the online controller and
// offline tuning sessions: the actors propose every function's next
// configuration from the observation, and the safe exploration strategy
// runs it if its price is inside the safe range of the workload level,
// else a safe one from history (section 4.3); the outcome of every
// configuration that ran is added to the history, so that the ranges adapt.
type Agent struct {
	pol     *Policy
	opt     Options
	ses     *SES
	rng     *rand.Rand
	configs []Config
	action  [][]float64
	stats   Stats
}

// NewAgent returns an agent for pol, its history that of the policy.
func NewAgent(pol *Policy, opt Options) *Agent {
	n := len(pol.Functions)
	a := &Agent{pol: pol, opt: opt, ses: NewSES(), rng: rand.New(rand.NewPCG(opt.Seed, 0x73657366)), // "sesf"
		configs: make([]Config, n), action: make([][]float64, n)}
	for j := range n {
		a.action[j] = make([]float64, ActionDim)
	}
	for _, r := range pol.History {
		a.ses.Add(r)
	}
	return a
}

// Stats returns the counts so far.
func (a *Agent) Stats() Stats { return a.stats }

// Record adds the outcome of the configurations last proposed, which ran
// at the workload level.
func (a *Agent) Record(level float64, met bool) {
	a.ses.Add(Record{Workload: level, Action: rl.CloneJoint(a.action), Price: Price(a.configs), Met: met})
	if !met {
		a.stats.Violated++
	}
}

// RecordRunning adds the outcome of configurations the agent did not
// propose (the ones running when it starts): every measurement joins the
// Data Store (section 3, step 7).
func (a *Agent) RecordRunning(level float64, cs []Config, met bool) {
	a.ses.Add(Record{Workload: level, Action: a.pol.Space.EncodeAll(cs), Price: Price(cs), Met: met})
}

// Propose returns every function's next configuration for the joint
// observation at the workload level (owned by a, valid until its next
// call).
func (a *Agent) Propose(level float64, obs [][]float64) []Config {
	for j, act := range a.pol.actors.Act(obs) {
		for k, v := range act {
			a.action[j][k] = float64(v)
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
	a.stats.Decisions++
	return a.configs
}

// Level is the workload level of a request rate: over the policy's base
// rate, rounded to the nearest level trained on.
func (p *Policy) Level(rate float64) float64 { return p.Nearest(rate / p.BaseRate) }

// Nearest is the level trained on nearest to x (the lower on a tie).
func (p *Policy) Nearest(x float64) float64 {
	best := x
	for i, l := range p.Levels {
		if i == 0 || math.Abs(l-x) < math.Abs(best-x) {
			best = l
		}
	}
	return best
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
	acts []control.Action
}

// NewController returns a controller serving pol.
func NewController(pol *Policy, opt Options) (*Controller, error) {
	n := len(pol.Functions)
	c := &Controller{Agent: NewAgent(pol, opt), obs: make([][]float64, n), idx: make([]int, n)}
	for j := range n {
		c.obs[j], c.idx[j] = make([]float64, Features), -1
	}
	return c, nil
}

// Level is the workload level of a window.
func (c *Controller) Level(snap *metrics.Snapshot) float64 {
	var arrivals int64
	for _, cl := range snap.Classes {
		arrivals += cl.Arrivals
	}
	return c.pol.Level(float64(arrivals) / snap.Period.Seconds())
}

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
		c.acts = Actions(c.acts, c.pol.Functions[j], &snap.Services[c.idx[j]], cfg)
	}
	c.ran = true
	return c.acts
}
