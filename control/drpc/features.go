// Package drpc is the run-time side of DRPC (Bai et al., IEEE TSC 2024;
// docs/PAPERS.md): per-deployment student networks that scale replicas, CPU
// and memory and brown out optional services, each at its own period (paper
// section IV-C, Algorithm 1 stage 2), through guard rails; the retraining
// notifier (Algorithm 4); and a fallback to the scenario's HPA when the
// policy cannot be trusted. It reads only what a real cluster exposes
// (metrics.Snapshot: cAdvisor, kube-state-metrics and mesh request metrics)
// and imports nothing above control, so the same policy file drives the
// simulator and a real cluster. Training is in envs/drpcenv; the algorithms
// (TD3, behaviour cloning) in learn/rl.
//
// The usage loop, every control period:
//
//	ctl, err := drpc.NewController(policy, drpc.Options{Fallback: hpas})
//	for each period { for _, a := range ctl.Decide(now, &snap) { apply(a) } }
package drpc

import (
	"math"
	"time"

	"github.com/shoal-project/shoal/metrics"
)

// Deployment is one managed deployment and its guard rails.
type Deployment struct {
	Name        string  `json:"name"`
	MinReplicas int     `json:"min_replicas"`
	MaxReplicas int     `json:"max_replicas"`
	CPUMin      float64 `json:"cpu_min"`    // cores per replica
	CPUMax      float64 `json:"cpu_max"`    // cores per replica
	MemoryMin   float64 `json:"memory_min"` // MB per replica (0: no memory scaling)
	MemoryMax   float64 `json:"memory_max"` // MB per replica
	// Optional deployments may be browned out; only then may their
	// replicas go to 0 (Algorithm 2, lines 9-13).
	Optional bool `json:"optional"`
	// Period is how often this deployment's student decides, a multiple of
	// the control period (the paper's asynchronous, per-deployment
	// frequencies, section V-D).
	Period Duration `json:"period"`
	// RTMax is the deployment's own tolerated mean response time, the
	// RT_max of its local QoS term (see Reward.Local); 0: none.
	RTMax Duration `json:"rt_max"`
	// handover: Fit found the world's limits outside the rails, and the
	// fallback decides for the deployment throughout.
	handover bool
}

// Features per deployment. The local ones are what the deployment's own
// metrics give; Forecast is broadcast by the workload predictor; the global
// ones are the teacher's view of the whole application.
const (
	fReplicas     = iota // replicas / max replicas
	fStarting            // share of replicas not ready yet
	fCPULimit            // cores per replica
	fMemoryLimit         // GB per replica
	fCPUUtil             // busy cores / (ready replicas x limit)
	fMemoryUtil          // memory in use / (replicas x limit)
	fRate                // log1p(calls per second)
	fRatePerPod          // log1p(calls per second per ready replica)
	fLatency             // log1p(mean response time in ms)
	fErrors              // failed / arrived calls
	fTrend               // log of this period's rate over the last one's, clipped to ±2
	fBrownout            // 1 when browned out
	fForecast            // log of the forecast ingress rate over the current one, clipped to ±2
	fDemand              // demand utilisation: arriving calls x CPU per completed call / (replicas x limit), clipped to 4
	LocalFeatures        // the student's input length
)

// LocalFeatureNames name the local features, in input order (as policy
// files' Low and High bound them).
var LocalFeatureNames = [LocalFeatures]string{"replicas", "starting", "cpu_limit", "memory_limit", "cpu_util", "memory_util",
	"rate", "rate_per_pod", "latency", "errors", "trend", "brownout", "forecast", "demand"}

// The teacher's application-wide features.
const (
	gLatency       = iota // log1p(ingress mean response time in ms)
	gSLO                  // ingress response time / SLO, clipped to 10
	gErrors               // failed / arrived ingress calls
	gRate                 // log1p(ingress calls per second)
	gMeanCPU              // mean CPU utilisation of the deployments
	gMaxCPU               // largest CPU utilisation
	GlobalFeatures        // the teacher's extra input
)

// Observer turns snapshots into per-deployment features. It remembers the
// previous period's rates for the trend, and allocates nothing once sized.
type Observer struct {
	deps       []Deployment
	ingress    []string
	slo        time.Duration
	idx        []int // deployment -> index in the last snapshot's Services
	ingIdx     []int
	lastRate   []float64
	cpuPerCall []float64
	degraded   float64 // share of the ingress calls answered degraded
	ingMean    float64 // mean response time of the ingress calls completed, seconds
	ingRate    float64 // ingress calls per second
	local      [][]float64
	global     []float64
	brownout   []bool
}

// NewObserver returns an observer of deps; ingress names the services whose
// response time is the application's (the roots of the request classes).
func NewObserver(deps []Deployment, ingress []string, slo time.Duration) *Observer {
	o := &Observer{deps: deps, ingress: ingress, slo: slo, idx: make([]int, len(deps)), ingIdx: make([]int, len(ingress)),
		lastRate: make([]float64, len(deps)), cpuPerCall: make([]float64, len(deps)), local: make([][]float64, len(deps)), global: make([]float64, GlobalFeatures),
		brownout: make([]bool, len(deps))}
	for i := range o.local {
		o.local[i] = make([]float64, LocalFeatures)
		o.idx[i] = -1
	}
	for i := range o.ingIdx {
		o.ingIdx[i] = -1
	}
	return o
}

// Observe computes the features of every deployment from snap. fc, if not
// nil, is given the period's ingress rate and its forecast ratio (forecast
// rate / current) becomes the forecast feature (1 without fc). It returns
// false if a deployment or ingress service is missing.
func (o *Observer) Observe(snap *metrics.Snapshot, fc Forecaster) bool {
	p := snap.Period.Seconds()
	if p <= 0 {
		p = 1
	}
	var ingCount, ingFail, ingDeg, ingArr int64
	var ingSum float64
	for k, name := range o.ingress {
		o.ingIdx[k] = snap.ServiceIndex(name, o.ingIdx[k])
		if o.ingIdx[k] < 0 {
			return false
		}
		s := &snap.Services[o.ingIdx[k]]
		ingCount += s.Latency.Count
		ingSum += s.Latency.Sum
		ingFail += s.Failures.Total()
		ingDeg += s.Degraded
		ingArr += s.Arrivals
	}
	ratio := 1.0
	if fc != nil {
		ratio = fc.Next(float64(ingArr) / p)
	}
	fcast := clip(math.Log(math.Max(ratio, 1e-3)), -2, 2)
	var sumCPU, maxCPU float64
	for i, d := range o.deps {
		o.idx[i] = snap.ServiceIndex(d.Name, o.idx[i])
		if o.idx[i] < 0 {
			return false
		}
		s := &snap.Services[o.idx[i]]
		f := o.local[i]
		rate := float64(s.Arrivals) / p
		f[fReplicas] = float64(s.Replicas) / float64(max(d.MaxReplicas, 1))
		f[fStarting] = float64(s.Replicas-s.Ready) / float64(max(s.Replicas, 1))
		f[fCPULimit] = s.CPULimit
		f[fMemoryLimit] = s.MemoryLimit / 1000
		f[fCPUUtil] = 0
		if s.Ready > 0 && s.CPULimit > 0 {
			f[fCPUUtil] = clip(s.CPUUse/(float64(s.Ready)*s.CPULimit), 0, 2)
		}
		f[fMemoryUtil] = 0
		if s.Replicas > 0 && s.MemoryLimit > 0 {
			f[fMemoryUtil] = clip(s.MemoryUse/(float64(s.Replicas)*s.MemoryLimit), 0, 2)
		}
		f[fRate] = math.Log1p(rate)
		f[fRatePerPod] = math.Log1p(rate / float64(max(s.Ready, 1)))
		f[fLatency] = math.Log1p(1000 * s.Latency.Mean())
		f[fErrors] = float64(s.Failures.Total()) / float64(max(s.Arrivals, 1))
		f[fTrend] = clip(math.Log((rate+1)/(o.lastRate[i]+1)), -2, 2)
		f[fBrownout] = b2f(o.brownout[i])
		f[fForecast] = fcast
		f[fDemand] = o.demand(i, s, rate, p)
		o.lastRate[i] = rate
		sumCPU += f[fCPUUtil]
		maxCPU = math.Max(maxCPU, f[fCPUUtil])
	}
	mean := 0.0
	if ingCount > 0 {
		mean = ingSum / float64(ingCount)
	}
	o.ingMean, o.ingRate = mean, float64(ingArr)/p
	g := o.global
	g[gLatency] = math.Log1p(1000 * mean)
	g[gSLO] = 0
	if o.slo > 0 {
		g[gSLO] = clip(mean/o.slo.Seconds(), 0, 10)
	}
	g[gErrors] = float64(ingFail) / float64(max(ingArr, 1))
	o.degraded = float64(ingDeg) / float64(max(ingArr, 1))
	g[gRate] = math.Log1p(float64(ingArr) / p)
	g[gMeanCPU] = sumCPU / float64(max(len(o.deps), 1))
	g[gMaxCPU] = maxCPU
	return true
}

// demand is the utilisation deployment i's replicas (starting ones
// included) would have if they served every call that arrived: calls
// rejected or failed count too, so it exceeds 1 in overload, where the
// measured utilisation stops at 1. The CPU per call is the last period's
// with successful calls (a mesh counts calls by response code; cAdvisor
// the CPU).
func (o *Observer) demand(i int, s *metrics.ServiceStats, rate, p float64) float64 {
	if ok := s.Completions - s.Failures.Total(); ok > 0 && s.CPUUse > 0 {
		o.cpuPerCall[i] = s.CPUUse / (float64(ok) / p)
	}
	if s.Replicas == 0 || s.CPULimit == 0 {
		return 0
	}
	return clip(rate*o.cpuPerCall[i]/(float64(s.Replicas)*s.CPULimit), 0, 4)
}

// Local returns deployment i's features from the last Observe; the slice
// is the observer's and changes at the next Observe.
func (o *Observer) Local(i int) []float64 { return o.local[i] }

// Global returns the application-wide features from the last Observe.
func (o *Observer) Global() []float64 { return o.global }

// IngressRate is the last period's ingress calls per second.
func (o *Observer) IngressRate() float64 { return o.ingRate }

// AppQoS is equation 1 for the application in the last period: its
// ingress response time, with the calls lost to QoS (Lost) earning nothing.
func (o *Observer) AppQoS(r Reward) float64 { return r.QoS(o.ingMean, o.Lost(r)) }

// Lost is the share of the last period's ingress calls lost to QoS: the
// failed ones, and the degraded ones weighted by r.DegradedWeight.
func (o *Observer) Lost(r Reward) float64 {
	return o.global[gErrors] + r.DegradedWeight*o.degraded
}

// Service returns deployment i's entry in the last snapshot.
func (o *Observer) Service(snap *metrics.Snapshot, i int) *metrics.ServiceStats {
	return &snap.Services[o.idx[i]]
}

// SetBrownout records deployment i's brownout state, which no metric shows.
func (o *Observer) SetBrownout(i int, on bool) { o.brownout[i] = on }

func clip(x, lo, hi float64) float64 { return math.Min(math.Max(x, lo), hi) }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
