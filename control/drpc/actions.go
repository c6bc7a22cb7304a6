package drpc

import (
	"math"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
)

// An action per deployment is four numbers in [-1, 1] (the actor's tanh):
// CPU, memory and horizontal scaling, and brownout.
const (
	aCPU = iota
	aMemory
	aReplicas
	aBrownout
	ActionDim
)

// Steps are the sizes of one scaling action (Algorithm 2's Cpu_step and
// Memory_step; the paper adds [Horizontal_Scaling], i.e. ±1 replica).
type Steps struct {
	CPU      float64 `json:"cpu"`      // cores per replica per action
	Memory   float64 `json:"memory"`   // MB per replica per action
	Replicas int     `json:"replicas"` // replicas per action at |a| = 1
}

// Base is a reactive demand rule whose action the networks' outputs are
// added to when a policy is residual (residual policy learning, Johannink
// et al. 2019; not in the DRPC paper): add replicas while the demand
// utilisation (every arriving call's CPU over all replicas, starting ones
// included) is above High; remove one after Stabilize periods below Low. An untrained network
// then scales like a threshold autoscaler, and training learns what to
// change about it (earlier scale-ups on a trend, CPU and memory sizes,
// brownout) instead of learning autoscaling from nothing.
type Base struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	// Stabilize is how many periods in a row the utilisation must stay
	// below Low before a replica goes (as the HPA's scale-down
	// stabilisation window: an empty or quiet period removes nothing).
	Stabilize int `json:"stabilize"`
}

// Action sets dst to the rule's action for a deployment with features
// local that has been below Low for the last low periods, this one
// included (see Below).
func (b *Base) Action(dst, local []float64, low int) {
	clear(dst)
	switch {
	case local[fDemand] > b.High:
		dst[aReplicas] = 1
	case low >= b.Stabilize && local[fStarting] == 0:
		dst[aReplicas] = -1
	}
}

// Below updates a deployment's count of periods in a row below Low.
func (b *Base) Below(low int, local []float64) int {
	if local[fDemand] < b.Low {
		return low + 1
	}
	return 0
}

// Compose sets dst to deployment i's action from the network's output
// raw, given its features local and its periods in a row below the base
// rule's Low (see Base.Below): the base rule's action plus raw when the
// policy is residual, then the hold. The run-time controller and training
// both act through it.
func (p *Policy) Compose(dst, raw, local []float64, i, low int) {
	copy(dst, raw)
	if b := p.Base; b != nil {
		b.Action(dst, local, low)
		Residual(dst, raw)
	}
	if h := p.Hold; h != nil {
		h.Apply(dst, local, &p.Deployments[i])
	}
}

// Residual adds the network's output out to the base action in dst,
// clipped to [-1, 1].
func Residual(dst, out []float64) {
	for k := range dst {
		dst[k] = clip(dst[k]+out[k], -1, 1)
	}
}

// Hold is the quiet-service guard (not in the DRPC paper): a deployment
// that shows no reason to grow may not be given more. A reason is demand
// or CPU utilisation above High, failed calls, a mean response time above
// the deployment's RT_max, or a forecast rise of the ingress rate by more
// than a tenth. Without one, the replicas, CPU and memory components of
// its action may only hold or shrink. A policy that scales up a service
// whose load has not changed pays for nothing, and on a steady load the
// learned residual did (2.2x the HPA's vCPU-seconds at 200 req/s). Training
// acts under the same guard, so the policy learns what it leaves.
type Hold struct {
	High float64 `json:"high"`
}

// forecastRise is the forecast feature (a log ratio) above which the
// ingress rate is expected to grow by more than a tenth.
var forecastRise = math.Log(1.1)

// Apply clips the growth out of action a of deployment d, whose features
// are local, when the deployment is calm.
func (h *Hold) Apply(a, local []float64, d *Deployment) {
	if h.reason(local, d) {
		return
	}
	for _, k := range [...]int{aCPU, aMemory, aReplicas} {
		a[k] = math.Min(a[k], 0)
	}
}

// reason reports whether the deployment shows a reason to grow.
func (h *Hold) reason(local []float64, d *Deployment) bool {
	slow := d.RTMax > 0 && math.Expm1(local[fLatency]) > float64(time.Duration(d.RTMax))/float64(time.Millisecond)
	return local[fDemand] > h.High || local[fCPUUtil] > h.High || local[fErrors] > 0 || slow || local[fForecast] > forecastRise
}

// threshold is Algorithm 2's: a component acts only when |a| > 0.5.
const threshold = 0.5

// memoryHeadroom keeps a memory limit above the memory in use by the
// fullest replica, so that a scale-down does not OOM-kill what runs (a
// guard rail the paper leaves to the operator).
const memoryHeadroom = 1.25

// oomBump is the VPA recommender's factor after an OOM kill.
const oomBump = 1.2

// Decision is one deployment's target after the guard rails.
type Decision struct {
	Replicas      int
	CPU, Memory   float64
	Brownout      bool
	changedScale  bool
	changedSize   bool
	changedBrown  bool
	ClippedByRail bool // a rail changed what the action asked for
}

// Guard turns action a of deployment d, whose state is s and brownout
// state brown, into a guarded decision (Algorithm 2 with the guard rails:
// min/max replicas and resources, step limits, no scale to 0 unless
// browned out, no leaving brownout without a ready replica, memory above
// what is in use). Training and the run-time
// controller both use it, so a policy learns under the rails it runs with.
func Guard(d *Deployment, st Steps, s *metrics.ServiceStats, brown bool, a []float64) Decision {
	dec := Decision{Replicas: s.Replicas, CPU: s.CPULimit, Memory: s.MemoryLimit, Brownout: brown}
	if d.Optional && math.Abs(a[aBrownout]) > threshold {
		dec.Brownout = a[aBrownout] > 0
		if brown && !dec.Brownout && s.Ready == 0 {
			// Leave brownout only with a replica ready: calls would
			// otherwise fail for a cold start. Start one and wait.
			dec.Brownout, dec.ClippedByRail = true, true
			dec.Replicas = max(dec.Replicas, d.MinReplicas, 1)
		}
		dec.changedBrown = dec.Brownout != brown
	}
	if x := a[aCPU]; math.Abs(x) > threshold && st.CPU > 0 {
		want := s.CPULimit + clip(x, -1, 1)*st.CPU
		dec.CPU = clip(want, d.CPUMin, d.CPUMax)
		dec.ClippedByRail = dec.ClippedByRail || dec.CPU != want
	}
	if s.Failures.OOM > 0 && d.MemoryMax > 0 && s.MemoryLimit > 0 {
		// An OOM kill in the period: raise the limit by 20% whatever the
		// action (the VPA recommender's oom-bump-up-ratio, as
		// control/autoscale/vpa.go ports it), so a shrinking policy
		// cannot keep killing.
		dec.Memory = math.Min(oomBump*s.MemoryLimit, d.MemoryMax)
		dec.ClippedByRail = true
	} else if x := a[aMemory]; math.Abs(x) > threshold && st.Memory > 0 && d.MemoryMax > 0 {
		want := s.MemoryLimit + clip(x, -1, 1)*st.Memory
		floor := math.Max(d.MemoryMin, memoryHeadroom*peakMemory(s))
		dec.Memory = clip(want, math.Min(floor, d.MemoryMax), d.MemoryMax)
		dec.ClippedByRail = dec.ClippedByRail || dec.Memory != want
	}
	if x := a[aReplicas]; math.Abs(x) > threshold && !(brown && dec.Brownout && dec.Replicas > s.Replicas) {
		want := s.Replicas + int(math.Round(clip(x, -1, 1)*float64(max(st.Replicas, 1))))
		lo := max(d.MinReplicas, 1)
		if dec.Brownout {
			lo = 0
		}
		dec.Replicas = min(max(want, lo), d.MaxReplicas)
		dec.ClippedByRail = dec.ClippedByRail || dec.Replicas != want
	}
	dec.changedScale = dec.Replicas != s.Replicas
	dec.changedSize = dec.CPU != s.CPULimit || dec.Memory != s.MemoryLimit
	return dec
}

// peakMemory is the memory in use by the fullest replica (cAdvisor's
// container_memory_working_set_bytes per pod), or the mean when per-replica
// figures are missing.
func peakMemory(s *metrics.ServiceStats) float64 {
	peak := 0.0
	for i := range s.Instances {
		peak = math.Max(peak, s.Instances[i].MemoryUse)
	}
	if peak == 0 && s.Replicas > 0 {
		peak = s.MemoryUse / float64(s.Replicas)
	}
	return peak
}

// Actions appends the control actions that carry out dec for deployment
// name to dst.
func (dec *Decision) Actions(dst []control.Action, name string, s *metrics.ServiceStats) []control.Action {
	if dec.changedBrown {
		dst = append(dst, control.SetBrownout{Service: name, On: dec.Brownout})
	}
	if dec.changedSize {
		var cpu, mem float64
		if dec.CPU != s.CPULimit {
			cpu = dec.CPU
		}
		if dec.Memory != s.MemoryLimit {
			mem = dec.Memory
		}
		dst = append(dst, control.SetResources{Service: name, CPU: cpu, MemoryMB: mem})
	}
	if dec.changedScale {
		dst = append(dst, control.SetReplicas{Service: name, Replicas: dec.Replicas})
	}
	return dst
}
