// Package coscal is the run-time side of a CoScal-like baseline (Xu,
// Buyya et al., "CoScal: Multi-faceted Scaling of Microservices with
// Reinforcement Learning", IEEE TNSM 2022), a comparison of the DRPC paper
// (sections II and VI-B: "divides resource usage into quarterlies, applies
// an approximated Q-learning algorithm ... supports horizontal, vertical
// scaling, and brownout. Using the GRU unit for workload prediction ...
// consulting a trained table to guide pod-level scaling actions").
//
// Every control period each deployment's state is its CPU utilisation
// quarter (below 25%, 50%, 75%, above), the forecast trend of the ingress
// rate (down, flat, up: the GRU's forecast Horizon periods ahead against
// its forecast one period ahead, ±TrendBand) and whether the application misses its
// SLO; the deployment takes the greedy action of the trained linear
// Q-function over those 24 one-hot states, one table that every deployment
// consults ("consulting a trained table to guide pod-level scaling
// actions"): nothing, more or fewer replicas, more or less CPU, or brownout
// on or off where the deployment is optional.
// Actions pass DRPC's guard rails (drpc.Guard), so all learners are bounded
// alike. It reads only metrics.Snapshot; training is in envs/coscalenv, the
// Q-learning in learn/rl (LinearQ), the GRU in learn/forecast.
//
// Simplifications: the Q-function's features are the one-hot state (the
// approximation is the coarse state itself, as the DRPC paper reads it);
// the table is shared because its state says nothing about which
// deployment it is, and a table per deployment (tried first) sees each of
// its top-quarter states only a handful of times in four minutes of
// training;
// the SLO flag is added so that the table can tell a quarter under
// violation from one that is not; the forecaster predicts the application's
// ingress rate, one series, not per-service workloads; decisions are made
// every period for every deployment, with DRPC's action sizes.
package coscal

import (
	"math"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/learn/forecast"
	"github.com/shoal-project/shoal/learn/rl"
	"github.com/shoal-project/shoal/metrics"
)

// Actions of a deployment.
const (
	ActNone = iota
	ActReplicasUp
	ActReplicasDown
	ActCPUUp
	ActCPUDown
	ActBrownoutOn
	ActBrownoutOff
	Actions
)

// The state: utilisation quarter x trend x SLO missed.
const (
	Levels   = 4
	Trends   = 3
	States   = Levels * Trends * 2
	trendDn  = 0
	trendFlt = 1
	trendUp  = 2
)

// drpc.Guard's action layout (control/drpc/actions.go).
const (
	guardCPU      = 0
	guardReplicas = 2
	guardBrownout = 3
	guardLen      = 4
)

// Level is the utilisation quarter of u: 0 below 25%, ..., 3 from 75%.
func Level(u float64) int { return min(max(int(u*Levels), 0), Levels-1) }

// Trend classifies a forecast ratio (forecast rate / current) with band b.
func Trend(ratio, b float64) int {
	switch {
	case ratio > 1+b:
		return trendUp
	case ratio < 1-b:
		return trendDn
	}
	return trendFlt
}

// State is the state number of a level, trend and SLO flag.
func State(level, trend int, missed bool) int {
	s := (level*Trends + trend) * 2
	if missed {
		s++
	}
	return s
}

// Allowed is the action mask of a deployment: brownout only where it is
// optional, on only when off and off only when on.
func Allowed(d *drpc.Deployment, brown bool) uint64 {
	m := rl.AllActions(ActBrownoutOn)
	if d.Optional {
		if brown {
			m |= 1 << ActBrownoutOff
		} else {
			m |= 1 << ActBrownoutOn
		}
	}
	return m
}

// GuardAction sets dst (drpc.Guard's four numbers) for action a.
func GuardAction(dst []float64, a int) {
	clear(dst)
	switch a {
	case ActReplicasUp:
		dst[guardReplicas] = 1
	case ActReplicasDown:
		dst[guardReplicas] = -1
	case ActCPUUp:
		dst[guardCPU] = 1
	case ActCPUDown:
		dst[guardCPU] = -1
	case ActBrownoutOn:
		dst[guardBrownout] = 1
	case ActBrownoutOff:
		dst[guardBrownout] = -1
	}
}

// Observer turns snapshots into every deployment's state. It keeps the
// ingress rate history the forecaster reads and allocates nothing once
// sized.
type Observer struct {
	deps    []drpc.Deployment
	ingress []string
	slo     time.Duration
	band    float64
	fc      forecast.Forecaster
	hist    [][]float64 // the last Window ingress rates, oldest first
	filled  int
	pred    []float64
	last    float64
	idx     []int
	ingIdx  []int
	state   []int
	missed  bool
	viol    float64
	ratio   float64
	rate    float64
}

// NewObserver returns an observer of deps. fc, if not nil, forecasts the
// ingress rate (one series); without it the trend is this period's rate
// over the last one's.
func NewObserver(deps []drpc.Deployment, ingress []string, slo time.Duration, band float64, fc forecast.Forecaster) *Observer {
	o := &Observer{deps: deps, ingress: ingress, slo: slo, band: band, fc: fc, idx: make([]int, len(deps)),
		ingIdx: make([]int, len(ingress)), state: make([]int, len(deps))}
	if fc != nil {
		o.hist = make([][]float64, fc.Window())
		for k := range o.hist {
			o.hist[k] = make([]float64, 1)
		}
		o.pred = make([]float64, fc.Horizon()*fc.Dims())
	}
	for i := range o.idx {
		o.idx[i] = -1
	}
	for i := range o.ingIdx {
		o.ingIdx[i] = -1
	}
	return o
}

// Observe reads one period; it returns false when a service is missing.
func (o *Observer) Observe(snap *metrics.Snapshot) bool {
	p := snap.Period.Seconds()
	if p <= 0 {
		p = 1
	}
	var arr, fail int64
	p95 := 0.0
	for k, name := range o.ingress {
		if o.ingIdx[k] = snap.ServiceIndex(name, o.ingIdx[k]); o.ingIdx[k] < 0 {
			return false
		}
		s := &snap.Services[o.ingIdx[k]]
		arr += s.Arrivals
		fail += s.Failures.Total()
		p95 = math.Max(p95, s.P95)
	}
	o.missed = o.slo > 0 && p95 > o.slo.Seconds()
	o.viol = float64(fail) / float64(max(arr, 1))
	if o.slo > 0 {
		o.viol += math.Min(math.Max(p95/o.slo.Seconds()-1, 0), 2)
	}
	// The workload is the requests arriving at the ingress gateway, every
	// class's route; an ingress service's own count would add the calls it
	// gets from other services.
	var req int64
	for k := range snap.Classes {
		req += snap.Classes[k].Arrivals
	}
	o.rate = float64(req) / p
	o.ratio = o.forecastRatio()
	trend := Trend(o.ratio, o.band)
	for i := range o.deps {
		if o.idx[i] = snap.ServiceIndex(o.deps[i].Name, o.idx[i]); o.idx[i] < 0 {
			return false
		}
		o.state[i] = State(Level(Util(&snap.Services[o.idx[i]])), trend, o.missed)
	}
	return true
}

// forecastRatio records the current rate and returns the forecast trend
// (1 until the forecaster's window is full, or with no rate).
func (o *Observer) forecastRatio() float64 {
	last := o.last
	o.last = o.rate
	if o.fc == nil {
		if last <= 0 {
			return 1
		}
		return o.rate / last
	}
	first := o.hist[0]
	copy(o.hist, o.hist[1:])
	o.hist[len(o.hist)-1] = first
	first[0] = o.rate
	o.filled = min(o.filled+1, len(o.hist))
	if o.filled < len(o.hist) || o.rate <= 0 {
		return 1
	}
	o.fc.Predict(o.pred, o.hist)
	// The forecast's own slope, Horizon periods ahead over one ahead: a
	// bias of the forecast's level cancels out.
	if o.pred[0] <= 0 {
		return 1
	}
	return math.Max(o.pred[len(o.pred)-1], 0) / o.pred[0]
}

// State is deployment i's state from the last Observe.
func (o *Observer) State(i int) int { return o.state[i] }

// Violation is how badly the application missed its SLO in the last
// period: the ingress p95 over the SLO minus 1, clipped to [0, 2], plus the
// share of ingress calls that failed.
func (o *Observer) Violation() float64 { return o.viol }

// Service returns deployment i's entry in snap (as of the last Observe).
func (o *Observer) Service(snap *metrics.Snapshot, i int) *metrics.ServiceStats {
	return &snap.Services[o.idx[i]]
}

// Util is the CPU utilisation of the ready replicas.
func Util(s *metrics.ServiceStats) float64 {
	if s.Ready == 0 || s.CPULimit == 0 {
		return 0
	}
	return s.CPUUse / (float64(s.Ready) * s.CPULimit)
}

// Stats counts what a controller did.
type Stats struct {
	Decisions int // deployment decisions
	Actions   int // decisions that changed something
	Clipped   int // decisions a guard rail changed
}

// Controller runs a CoScal policy; it implements control.Controller and
// allocates nothing per period in steady state (beyond boxing the actions
// it returns when something changes).
type Controller struct {
	pol   *Policy
	obs   *Observer
	q     *rl.LinearQ
	phi   []float64
	guard []float64
	brown []bool
	acts  []control.Action
	stats Stats
}

// NewController returns a controller running pol.
func NewController(pol *Policy) *Controller {
	c := &Controller{pol: pol, obs: NewObserver(pol.Deployments, pol.Ingress, time.Duration(pol.SLO), pol.TrendBand, pol.forecaster()),
		q: pol.Q(), phi: make([]float64, States), guard: make([]float64, guardLen), brown: make([]bool, len(pol.Deployments))}
	return c
}

// Stats returns the counts so far.
func (c *Controller) Stats() Stats { return c.stats }

// Decide implements control.Controller.
func (c *Controller) Decide(_ time.Duration, snap *metrics.Snapshot) []control.Action {
	c.acts = c.acts[:0]
	if !c.obs.Observe(snap) {
		return c.acts
	}
	for i := range c.pol.Deployments {
		d := &c.pol.Deployments[i]
		s := c.obs.Service(snap, i)
		OneHot(c.phi, c.obs.State(i))
		a, _ := c.q.Greedy(c.phi, Allowed(d, c.brown[i]))
		GuardAction(c.guard, a)
		dec := drpc.Guard(d, c.pol.Steps, s, c.brown[i], c.guard)
		c.brown[i] = dec.Brownout
		c.stats.Decisions++
		if dec.ClippedByRail {
			c.stats.Clipped++
		}
		n := len(c.acts)
		c.acts = dec.Actions(c.acts, d.Name, s)
		if len(c.acts) > n {
			c.stats.Actions++
		}
	}
	return c.acts
}

// OneHot sets phi to the indicator of state s.
func OneHot(phi []float64, s int) {
	clear(phi)
	phi[s] = 1
}
