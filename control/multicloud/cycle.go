package multicloud

import (
	"cmp"
	"time"

	"github.com/shoal-project/shoal/metrics"
)

// cycle is what the learned controller and BO on the system share (II-C):
// the topology, the metrics variation check every Cycle, and the layer
// being balanced.
type cycle struct {
	opt     Options
	topo    *Topology
	checked []float64 // the environment metrics at the last check
	next    time.Duration
	layer   int // the layer being balanced; -1 when balanced
	began   time.Duration
	stats   Stats
}

func newCycle(opt Options) cycle {
	def := DefaultOptions()
	opt.Cycle, opt.Steps, opt.Threshold = cmp.Or(opt.Cycle, def.Cycle), cmp.Or(opt.Steps, def.Steps), cmp.Or(opt.Threshold, def.Threshold)
	return cycle{opt: opt, layer: -1}
}

// Stats returns the counters so far.
func (c *cycle) Stats() Stats { return c.stats }

// due reads the topology at the first call and, while balanced, checks the
// environment metrics every cycle; it reports whether a rebalance starts
// now (at the first call, on a change beyond the threshold, or at once
// while balanced when hot: a tail signal, Options.Trigger).
func (c *cycle) due(now time.Duration, s *metrics.Snapshot, hot bool) bool {
	if c.topo == nil {
		t, err := ReadTopology(s)
		if err != nil {
			return false
		}
		c.topo, c.next, c.checked = t, now+c.opt.Cycle, environment(nil, t, s)
		c.begin(now)
		return true
	}
	if c.layer >= 0 {
		return false
	}
	if hot {
		c.stats.Triggered++
		c.next = now + c.opt.Cycle
		c.begin(now)
		return true
	}
	if now < c.next {
		return false
	}
	c.next = now + c.opt.Cycle
	c.stats.Checks++
	env := environment(nil, c.topo, s)
	start := changed(env, c.checked, c.opt.Threshold)
	c.checked = env
	if start {
		c.begin(now)
	}
	return start
}

func (c *cycle) begin(now time.Duration) {
	c.layer, c.began = 0, now
	c.stats.Rebalances++
}

// layerDone moves to the next layer and reports whether the rebalance is
// over.
func (c *cycle) layerDone(now time.Duration) bool {
	if c.layer++; c.layer < len(c.topo.Layers) {
		return false
	}
	c.layer = -1
	c.stats.Span += now - c.began
	c.stats.Finished++
	return true
}
