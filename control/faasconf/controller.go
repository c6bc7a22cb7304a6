package faasconf

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/control"
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
	Violated  int // windows that missed the QoS
}

// Controller serves a FaaSConf policy online: at the end of every time
// window it records how the configuration that ran did (the safe
// exploration's history and bounds adapt to it), observes every function,
// lets the actors propose the next configuration, and runs it if its price
// is inside the safe range of the workload seen, else a safe one from
// history (section 4.3). It implements control.Controller; call it once
// per window (Policy.Window).
type Controller struct {
	pol     *Policy
	opt     Options
	ses     *SES
	rng     *rand.Rand
	obs     [][]float64
	idx     []int
	configs []Config
	action  [][]float64
	ran     bool // configs ran in the window that just ended
	acts    []control.Action
	stats   Stats
}

// NewController returns a controller serving pol.
func NewController(pol *Policy, opt Options) (*Controller, error) {
	n := len(pol.Functions)
	c := &Controller{pol: pol, opt: opt, ses: NewSES(), rng: rand.New(rand.NewPCG(opt.Seed, 0x73657366)), // "sesf"
		obs: make([][]float64, n), idx: make([]int, n), configs: make([]Config, n), action: make([][]float64, n)}
	for j := range n {
		c.obs[j], c.action[j], c.idx[j] = make([]float64, Features), make([]float64, ActionDim), -1
	}
	for _, r := range pol.History {
		c.ses.Add(r)
	}
	return c, nil
}

// Stats returns the counts so far.
func (c *Controller) Stats() Stats { return c.stats }

// Level is the workload level of a window: its request rate over the
// policy's base rate, rounded to the nearest level trained on.
func (c *Controller) Level(snap *metrics.Snapshot) float64 {
	var arrivals int64
	for _, cl := range snap.Classes {
		arrivals += cl.Arrivals
	}
	x := float64(arrivals) / snap.Period.Seconds() / c.pol.BaseRate
	best := x
	for i, l := range c.pol.Levels {
		if i == 0 || math.Abs(l-x) < math.Abs(best-x) {
			best = l
		}
	}
	return best
}

// Decide implements control.Controller.
func (c *Controller) Decide(_ time.Duration, snap *metrics.Snapshot) []control.Action {
	c.acts = c.acts[:0]
	if snap.Period <= 0 { // no window has ended yet
		return nil
	}
	w := WindowOf(snap)
	level := c.Level(snap)
	met := c.pol.QoS.Met(w)
	if c.ran {
		c.ses.Add(Record{Workload: level, Action: cloneRows(c.action), Price: Price(c.configs), Met: met})
	}
	if !met {
		c.stats.Violated++
	}
	for j, f := range c.pol.Functions {
		c.idx[j] = snap.ServiceIndex(f, c.idx[j])
		if c.idx[j] < 0 {
			panic(fmt.Sprintf("faasconf: function %q is not in the snapshot", f))
		}
		Observe(c.obs[j], &snap.Services[c.idx[j]], snap.Period, c.pol.Space, w, c.pol.QoS)
	}
	for j, a := range c.pol.actors.Act(c.obs) {
		for k, v := range a {
			c.action[j][k] = float64(v)
		}
		c.configs[j] = c.pol.Space.Decode(c.action[j])
	}
	if !c.opt.NoSES {
		if safe, replaced := c.ses.Filter(level, c.action, Price(c.configs), c.rng); replaced {
			c.stats.Replaced++
			for j := range safe {
				copy(c.action[j], safe[j])
				c.configs[j] = c.pol.Space.Decode(c.action[j])
			}
		}
	}
	for j, f := range c.pol.Functions {
		c.acts = Actions(c.acts, f, &snap.Services[c.idx[j]], c.configs[j])
	}
	c.ran = true
	c.stats.Decisions++
	return c.acts
}

func cloneRows(x [][]float64) [][]float64 {
	out := make([][]float64, len(x))
	for i, r := range x {
		out[i] = append([]float64(nil), r...)
	}
	return out
}
