package firm

import (
	"math"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/callgraph"
	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/learn/nn"
	"github.com/shoal-project/shoal/metrics"
)

// drpc.Guard's action layout (control/drpc/actions.go): CPU, memory,
// replicas, brownout.
const (
	guardCPU      = 0
	guardReplicas = 2
	guardLen      = 4
)

// OneAction sets dst (drpc.Guard's four-number action) from the actor's
// output a: only the component with the larger magnitude is kept, so at
// most one resource of the culprit changes per period (DRPC section VI-B on
// FIRM). Ties go to the CPU limit, FIRM's first resource.
func OneAction(dst, a []float64) {
	clear(dst)
	if math.Abs(a[aCPU]) >= math.Abs(a[aReplicas]) {
		dst[guardCPU] = a[aCPU]
	} else {
		dst[guardReplicas] = a[aReplicas]
	}
}

// Stats counts what a controller did.
type Stats struct {
	Periods  int // periods observed
	Culprits int // periods with a culprit (one decision each)
	Clipped  int // decisions a guard rail changed
}

// Controller runs a FIRM policy. It implements control.Controller and
// allocates nothing per period in steady state (beyond the boxing of the
// at most two actions it returns when something changes).
type Controller struct {
	pol     *Policy
	det     *Detector
	pred    *nn.MLPPredictor[float32]
	state   []float64
	in, out []float32
	raw     []float64
	act     []float64
	acts    []control.Action
	stats   Stats
}

// NewController returns a controller running pol over call graph g.
func NewController(pol *Policy, g *callgraph.Graph) *Controller {
	return &Controller{pol: pol, det: NewDetector(g, pol.Deployments, pol.Ingress, time.Duration(pol.SLO), pol.Window),
		pred: pol.actor.NewPredictor(), state: make([]float64, StateDim), in: make([]float32, StateDim),
		out: make([]float32, ActionDim), raw: make([]float64, ActionDim), act: make([]float64, guardLen),
		acts: make([]control.Action, 0, 2)}
}

// Stats returns the counts so far.
func (c *Controller) Stats() Stats { return c.stats }

// Decide implements control.Controller.
func (c *Controller) Decide(_ time.Duration, snap *metrics.Snapshot) []control.Action {
	c.acts = c.acts[:0]
	if !c.det.Observe(snap) {
		return c.acts
	}
	c.stats.Periods++
	i := c.det.Culprit(&c.pol.Classifier)
	if i < 0 {
		return c.acts
	}
	c.stats.Culprits++
	c.det.State(c.state, snap, i)
	for k, v := range c.state {
		c.in[k] = float32(v)
	}
	c.pred.Predict(c.out, c.in)
	for k, v := range c.out {
		c.raw[k] = float64(v)
	}
	OneAction(c.act, c.raw)
	s := c.det.Service(snap, i)
	dep := &c.pol.Deployments[i]
	dec := drpc.Guard(dep, c.pol.Steps, s, s.Brownout, c.act)
	if dec.ClippedByRail {
		c.stats.Clipped++
	}
	return dec.Actions(c.acts, dep.Name, s)
}
