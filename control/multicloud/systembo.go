package multicloud

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/learn/bo"
	"github.com/shoal-project/shoal/metrics"
)

// SystemBO is the paper's BO baseline (III-D): the same layer-by-layer
// balancing and variation check as the Controller, but each BO step
// measures the system itself: a service's request shift is applied for one
// control period and its measured mean response time is the objective, so
// a step costs a period, and a layer Steps periods.
type SystemBO struct {
	opt Options
	rng *rand.Rand

	topo    *Topology
	checked []float64
	next    time.Duration
	layer   int // the layer being balanced; -1 when balanced
	began   time.Duration
	opts    []*search // the layer's searches, by position in the layer
	st      State
	stats   Stats
}

// search is one service's BO on the system.
type search struct {
	svc   *Service
	bo    *bo.BayesOpt
	asked []float64 // the shift in force, to be scored
	steps int
}

// NewSystemBO returns the BO-on-the-system baseline.
func NewSystemBO(opt Options) *SystemBO {
	def := DefaultOptions()
	opt.Cycle, opt.Steps, opt.Threshold = cmp.Or(opt.Cycle, def.Cycle), cmp.Or(opt.Steps, def.Steps), cmp.Or(opt.Threshold, def.Threshold)
	return &SystemBO{opt: opt, rng: rand.New(rand.NewPCG(opt.Seed, 0x737973)), layer: -1}
}

// Stats returns the counters so far.
func (c *SystemBO) Stats() Stats { return c.stats }

// Decide implements control.Controller.
func (c *SystemBO) Decide(now time.Duration, s *metrics.Snapshot) []control.Action {
	if c.topo == nil {
		t, err := ReadTopology(s)
		if err != nil {
			return nil
		}
		c.topo, c.next = t, now+c.opt.Cycle
		c.checked = environment(nil, t, s)
		c.start(now)
	} else if c.layer < 0 && now >= c.next {
		c.next = now + c.opt.Cycle
		c.stats.Checks++
		env := environment(nil, c.topo, s)
		if changed(env, c.checked, c.opt.Threshold) {
			c.start(now)
		}
		c.checked = env
	}
	if c.layer < 0 {
		return nil
	}
	t0 := time.Now()
	defer func() { c.stats.Compute += time.Since(t0) }()
	var out []control.Action
	done := true
	for _, sr := range c.opts {
		if sr.asked != nil { // score the shift of the last period
			c.topo.Observe(&c.st, s, sr.svc)
			y := c.st.SelfTime
			if math.IsNaN(y) {
				y = 0 // nothing called it: any route is as good
			}
			if err := sr.bo.Tell(sr.asked, y, nil); err != nil {
				panic(fmt.Sprintf("multicloud: system BO: %v", err)) // the shift came from Ask
			}
			sr.asked = nil
		}
		if sr.steps == c.opt.Steps {
			continue
		}
		done = false
		x, err := sr.bo.Ask()
		if err != nil {
			continue
		}
		sr.asked, sr.steps = x, sr.steps+1
		out = c.topo.Actions(out, sr.svc, Weights(nil, x, sr.svc))
	}
	if !done {
		return out
	}
	for _, sr := range c.opts { // the layer is done: its best routes
		if best, ok := sr.bo.Best(); ok {
			out = c.topo.Actions(out, sr.svc, Weights(nil, best.X, sr.svc))
			c.stats.Optimised++
		}
	}
	c.layer++
	if c.layer == len(c.topo.Layers) {
		c.layer = -1
		c.stats.Span += now - c.began
		c.stats.Finished++
		return out
	}
	c.begin()
	return out
}

// start begins balancing from the first layer.
func (c *SystemBO) start(now time.Duration) {
	c.stats.Rebalances++
	c.layer, c.began = 0, now
	c.begin()
}

// begin makes the searches of the current layer.
func (c *SystemBO) begin() {
	c.opts = c.opts[:0]
	for _, i := range c.topo.Layers[c.layer] {
		svc := &c.topo.Services[i]
		b, err := bo.NewBayesOpt(boConfig(len(c.topo.Locations), c.opt.Steps), c.rng)
		if err != nil {
			panic(fmt.Sprintf("multicloud: system BO: %v", err)) // a fixed, valid space
		}
		c.opts = append(c.opts, &search{svc: svc, bo: b})
	}
}
