package multicloud

import (
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
	cycle
	rng      *rand.Rand
	searches []*search // the layer's, by position in the layer
	st       State
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
	return &SystemBO{cycle: newCycle(opt), rng: rand.New(rand.NewPCG(opt.Seed, 0x737973))}
}

// Decide implements control.Controller.
func (c *SystemBO) Decide(now time.Duration, s *metrics.Snapshot) []control.Action {
	if c.due(now, s, false) {
		c.searchLayer()
	}
	if c.layer < 0 {
		return nil
	}
	t0 := time.Now()
	defer func() { c.stats.Compute += time.Since(t0) }()
	var out []control.Action
	done := true
	for _, sr := range c.searches {
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
	for _, sr := range c.searches { // the layer is done: its best routes
		if best, ok := sr.bo.Best(); ok {
			out = c.topo.Actions(out, sr.svc, Weights(nil, best.X, sr.svc))
			c.stats.Optimised++
		}
	}
	if !c.layerDone(now) {
		c.searchLayer()
	}
	return out
}

// searchLayer makes the searches of the current layer.
func (c *SystemBO) searchLayer() {
	c.searches = c.searches[:0]
	for _, i := range c.topo.Layers[c.layer] {
		svc := &c.topo.Services[i]
		b, err := bo.NewBayesOpt(boConfig(len(c.topo.Locations), ShiftOneWay, c.opt.Steps), c.rng)
		if err != nil {
			panic(fmt.Sprintf("multicloud: system BO: %v", err)) // a fixed, valid space
		}
		c.searches = append(c.searches, &search{svc: svc, bo: b})
	}
}
