// Package firm is the run-time side of a FIRM-like baseline (Qiu et al.,
// "FIRM: An Intelligent Fine-grained Resource Management Framework for
// SLO-Oriented Microservices", OSDI 2020), the comparison of the DRPC
// paper (sections II and VI-B). Every control period it
//  1. extracts the critical path of every request class (FIRM section 3.2,
//     Algorithm 1) from the static call graph given at construction and the
//     per-service response times of the snapshot;
//  2. scores the managed services on those paths with a linear support
//     vector classifier on FIRM's features (section 3.3) and picks the one
//     culprit with the highest positive score;
//  3. lets a DDPG actor (section 3.4) choose the culprit's CPU limit or
//     replica change, and applies only the larger of the two: ONE resource
//     action per period, the limitation the DRPC paper measures FIRM by
//     ("FIRM can only scale one resource type per step", section VI-B).
//
// Actions go through DRPC's guard rails (drpc.Guard), so both learners are
// bounded alike. It reads only metrics.Snapshot; training is in
// envs/firmenv, DDPG in learn/rl.
//
// Simplifications against the paper, each because the telemetry contract
// (metrics.Snapshot) has per-service, per-period figures, not traces:
//   - The critical path is taken on the static call graph with each
//     service's mean response time of the period, not per request trace; of
//     parallel or alternative calls the one with the largest expected time
//     (probability x mean) is on the path.
//   - Culprits are services (deployments), not instances: actions scale a
//     deployment.
//   - Relative importance (RI) is the Pearson correlation, over the last
//     Window periods, of the service's mean response time with the
//     application's (the ingress services' mean), not with the critical path
//     latency of individual requests. Congestion intensity (CI) uses the p95
//     over the p50 (the snapshot has no p99). CPU utilisation of the ready
//     replicas is a third feature.
//   - The classifier is a linear epsilon-SVR (learn/bo/svr) fitted to ±1
//     labels, used by its sign: an SVM in spirit, trained offline once
//     instead of incrementally.
//   - The actions are the deployment's CPU limit and replicas (the simulator
//     has no LLC, memory bandwidth, disk or network partitioning), and one
//     DDPG agent is shared by all services instead of one per service
//     initialised by transfer learning.
package firm

import (
	"math"
	"time"

	"github.com/shoal-project/shoal/control/callgraph"
	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/metrics"
)

// Culprit features (FIRM section 3.3).
const (
	FeatRI          = iota // relative importance: corr(service RT, application RT) over the window
	FeatCI                 // congestion intensity: p95 / p50 of the service's response time, clipped to 10
	FeatCPU                // CPU utilisation of the ready replicas, clipped to 2
	CulpritFeatures        // the classifier's input length
)

// DDPG state of the culprit (FIRM section 3.4, Table 3 without request
// composition, which the snapshot does not break down per service).
const (
	sSM       = iota // SLO maintenance ratio: SLO / application p95, clipped to 2
	sWC              // workload change: log of the service's rate over the last period's, clipped to ±2
	sCPU             // CPU utilisation of the ready replicas
	sMemory          // memory utilisation
	sReplicas        // replicas / max replicas
	sLimit           // CPU limit / the rail's maximum
	StateDim         // the actor's input length
)

// The actor's two outputs in [-1, 1].
const (
	aCPU = iota
	aReplicas
	ActionDim
)

// Classifier is a linear culprit classifier: a service is a culprit when
// W·x + B > 0.
type Classifier struct {
	W []float64 `json:"w"`
	B float64   `json:"b"`
}

// Score is W·x + B.
func (c *Classifier) Score(x []float64) float64 {
	s := c.B
	for k, w := range c.W {
		s += w * x[k]
	}
	return s
}

// Detector turns snapshots into critical paths, culprit features and the
// culprit's state. It allocates nothing once sized.
type Detector struct {
	comp    *callgraph.Compiled
	deps    []drpc.Deployment
	ingress []string
	slo     time.Duration
	window  int

	gIdx   []int // graph service -> snapshot index (hint)
	depOf  []int // graph service -> deployment, -1 if unmanaged
	dIdx   []int // deployment -> snapshot index
	ingIdx []int
	lat    []float64 // per graph service, this period
	path   []int
	onPath []bool // per deployment

	hist     [][]float64 // per deployment, the last window response times
	app      []float64   // the application's, same ring
	pos, n   int
	feat     [][]float64
	rate     []float64 // per deployment, this period's
	lastRate []float64
	appP95   float64
}

// NewDetector returns a detector over graph g for the managed deployments
// deps; ingress are the services requests enter, slo the response-time
// target, window the periods of the RI correlation.
func NewDetector(g *callgraph.Graph, deps []drpc.Deployment, ingress []string, slo time.Duration, window int) *Detector {
	comp := g.Compile()
	n := len(deps)
	d := &Detector{comp: comp, deps: deps, ingress: ingress, slo: slo, window: max(window, 2),
		gIdx: make([]int, len(comp.Services())), depOf: make([]int, len(comp.Services())), dIdx: make([]int, n),
		ingIdx: make([]int, len(ingress)), lat: make([]float64, len(comp.Services())), path: make([]int, 0, comp.Nodes()),
		onPath: make([]bool, n), hist: make([][]float64, n), feat: make([][]float64, n),
		rate: make([]float64, n), lastRate: make([]float64, n)}
	d.app = make([]float64, d.window)
	for k, name := range comp.Services() {
		d.gIdx[k], d.depOf[k] = -1, -1
		for i := range deps {
			if deps[i].Name == name {
				d.depOf[k] = i
			}
		}
	}
	for i := range deps {
		d.dIdx[i] = -1
		d.hist[i] = make([]float64, d.window)
		d.feat[i] = make([]float64, CulpritFeatures)
	}
	for k := range d.ingIdx {
		d.ingIdx[k] = -1
	}
	return d
}

// Observe reads one period: critical paths, features and rates. It returns
// false if a deployment or ingress service is missing from snap.
func (d *Detector) Observe(snap *metrics.Snapshot) bool {
	var cnt int64
	var sum float64
	d.appP95 = 0
	for k, name := range d.ingress {
		if d.ingIdx[k] = snap.ServiceIndex(name, d.ingIdx[k]); d.ingIdx[k] < 0 {
			return false
		}
		s := &snap.Services[d.ingIdx[k]]
		cnt += s.Latency.Count
		sum += s.Latency.Sum
		d.appP95 = math.Max(d.appP95, s.P95)
	}
	for i := range d.deps {
		if d.dIdx[i] = snap.ServiceIndex(d.deps[i].Name, d.dIdx[i]); d.dIdx[i] < 0 {
			return false
		}
	}
	for k, name := range d.comp.Services() {
		d.gIdx[k] = snap.ServiceIndex(name, d.gIdx[k])
		d.lat[k] = 0
		if d.gIdx[k] >= 0 {
			d.lat[k] = snap.Services[d.gIdx[k]].Latency.Mean()
		}
	}
	clear(d.onPath)
	for r := range d.comp.Roots() {
		d.path = d.comp.CriticalPath(d.path[:0], r, d.lat)
		for _, k := range d.path {
			if i := d.depOf[k]; i >= 0 {
				d.onPath[i] = true
			}
		}
	}
	app := 0.0
	if cnt > 0 {
		app = sum / float64(cnt)
	}
	d.app[d.pos] = app
	p := snap.Period.Seconds()
	if p <= 0 {
		p = 1
	}
	for i := range d.deps {
		s := &snap.Services[d.dIdx[i]]
		d.hist[i][d.pos] = s.Latency.Mean()
		d.lastRate[i], d.rate[i] = d.rate[i], float64(s.Arrivals)/p
	}
	d.pos = (d.pos + 1) % d.window
	d.n = min(d.n+1, d.window)
	for i := range d.deps {
		f := d.feat[i]
		s := &snap.Services[d.dIdx[i]]
		f[FeatRI] = pearson(d.hist[i][:d.n], d.app[:d.n])
		f[FeatCI] = 1
		if s.P50 > 0 {
			f[FeatCI] = clip(s.P95/s.P50, 1, 10)
		}
		f[FeatCPU] = util(s)
	}
	return true
}

// OnPath reports whether deployment i is on a critical path this period.
func (d *Detector) OnPath(i int) bool { return d.onPath[i] }

// Features returns deployment i's culprit features from the last Observe.
func (d *Detector) Features(i int) []float64 { return d.feat[i] }

// Culprit returns the deployment on a critical path with the highest
// positive score, or -1.
func (d *Detector) Culprit(c *Classifier) int {
	best, bestS := -1, 0.0
	for i := range d.deps {
		if !d.onPath[i] {
			continue
		}
		if s := c.Score(d.feat[i]); s > bestS {
			best, bestS = i, s
		}
	}
	return best
}

// Service returns deployment i's entry in snap (as of the last Observe).
func (d *Detector) Service(snap *metrics.Snapshot, i int) *metrics.ServiceStats {
	return &snap.Services[d.dIdx[i]]
}

// SM is the SLO maintenance ratio: the SLO over the worst ingress p95 (1
// when nothing completed).
func (d *Detector) SM() float64 {
	if d.appP95 <= 0 || d.slo <= 0 {
		return 1
	}
	return d.slo.Seconds() / d.appP95
}

// State fills dst (StateDim long) with deployment i's DDPG state.
func (d *Detector) State(dst []float64, snap *metrics.Snapshot, i int) {
	s := d.Service(snap, i)
	dep := &d.deps[i]
	dst[sSM] = clip(d.SM(), 0, 2)
	dst[sWC] = clip(math.Log((d.rate[i]+1)/(d.lastRate[i]+1)), -2, 2)
	dst[sCPU] = util(s)
	dst[sMemory] = 0
	if s.Replicas > 0 && s.MemoryLimit > 0 {
		dst[sMemory] = clip(s.MemoryUse/(float64(s.Replicas)*s.MemoryLimit), 0, 2)
	}
	dst[sReplicas] = float64(s.Replicas) / float64(max(dep.MaxReplicas, 1))
	dst[sLimit] = 0
	if dep.CPUMax > 0 {
		dst[sLimit] = s.CPULimit / dep.CPUMax
	}
}

// Reward is FIRM's reward (section 3.4) for deployment i:
// α·SM·|R| + (1−α)·Σ_{r∈R} RU_r/RLT_r over R = {CPU, memory}, with SM
// clipped to 1 (meeting the SLO with room to spare earns nothing more, so
// the utilisation term can pay for giving resources back) and the CPU's
// utilisation of what is allocated, starting replicas included.
func (d *Detector) Reward(alpha float64, snap *metrics.Snapshot, i int) float64 {
	s := d.Service(snap, i)
	cpu, mem := 0.0, 0.0
	if s.Replicas > 0 && s.CPULimit > 0 {
		cpu = clip(s.CPUUse/(float64(s.Replicas)*s.CPULimit), 0, 1)
	}
	if s.Replicas > 0 && s.MemoryLimit > 0 {
		mem = clip(s.MemoryUse/(float64(s.Replicas)*s.MemoryLimit), 0, 1)
	}
	return alpha*math.Min(d.SM(), 1)*2 + (1-alpha)*(cpu+mem)
}

// util is the CPU utilisation of the ready replicas, clipped to 2.
func util(s *metrics.ServiceStats) float64 {
	if s.Ready == 0 || s.CPULimit == 0 {
		return 0
	}
	return clip(s.CPUUse/(float64(s.Ready)*s.CPULimit), 0, 2)
}

// pearson is the correlation of x and y (0 when either is constant).
func pearson(x, y []float64) float64 {
	n := float64(len(x))
	if n < 2 {
		return 0
	}
	var mx, my float64
	for k := range x {
		mx += x[k]
		my += y[k]
	}
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for k := range x {
		dx, dy := x[k]-mx, y[k]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

func clip(x, lo, hi float64) float64 { return math.Min(math.Max(x, lo), hi) }
