package autoscale

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
)

// VPA is a Vertical Pod Autoscaler for one service's per-instance CPU and
// memory, ported from kubernetes/autoscaler vertical-pod-autoscaler:
//
//   - the recommender, pkg/recommender: util/histogram.go (histogram
//     AddSample, SubtractSample, Percentile, IsEmpty, scale,
//     updateMinAndMaxBucket), util/decaying_histogram.go (decayFactor,
//     shiftReferenceTimestamp), util/histogram_options.go
//     (NewExponentialHistogramOptions, FindBucket, GetBucketStart),
//     model/aggregations_config.go (the bucket schemes, half-lives, memory
//     aggregation interval, OOM bump), model/aggregate_container_state.go
//     (addCPUSample: samples weighted by the CPU request),
//     model/container.go (addCPUSample, addMemorySample: one memory peak
//     per container and aggregation interval; RecordOOM),
//     model/types.go (ResourceAmount: integer millicores and bytes,
//     resourceAmountFromFloat, ScaleResource), logic/estimator.go
//     (percentile, margin, confidence multiplier, getConfidence, minimum
//     resource estimators) and logic/recommender.go
//     (CreatePodResourceRecommender, GetRecommendedPodResources: the
//     estimator chains and their flag defaults);
//   - the policy caps, pkg/utils/vpa/capping.go (minAllowed and maxAllowed
//     applied to target, lower and upper bound);
//   - the updater, pkg/updater/priority: priority_processor.go
//     (GetUpdatePriority: outside the recommended range, resource diff)
//     and update_priority_calculator.go (AddPod: the 10% threshold, the
//     12h pod lifetime and the quick-OOM rules).
//
// Every SampleInterval (the recommender loop, 1 min upstream) each ready
// instance gives one CPU sample, its use averaged over the snapshots since
// the last sample, and one memory sample, its use at the latest of them
// (the working set metrics-server reports at its scrape); an OOM kill
// gives a memory sample at once. After the samples the recommendation is
// computed: target from the 90th percentiles of CPU use and of memory
// peaks, lower bound from the 50th, upper bound from the 95th, each plus a
// 15% safety margin, the bounds widened by the confidence multipliers while
// the history is short, at least 25 millicores and 250 MB, then capped to
// the allowed range.
//
// In VPAModeAuto, every UpdateInterval (the updater loop, 1 min) and once the
// aggregate holds MinSamples CPU samples, it returns a
// control.SetResources with the target when some instance is admitted for
// update as upstream's AddPod admits a pod: the service's limit of either
// resource lies outside [lower bound, upper bound] (or memory is
// unlimited); or the instance OOM-killed within EvictAfterOOMThreshold of
// its container's start and the target differs; or the instance has run
// undisrupted for PodLifetimeThreshold and the summed relative difference
// of CPU and memory from the target is at least UpdateThreshold.
//
// The simulator's SetResources resizes every instance in place, like
// Kubernetes InPlacePodVerticalScaling under VPA's InPlaceOrRecreate mode,
// so no eviction is modelled: no eviction tolerance, PodDisruptionBudget or
// CanEvict check, and one action updates all instances. As AEP-4016 states
// for in-place updates, a successful update counts as a disruption: the
// lifetime clock of every instance restarts and a quick-OOM mark is
// cleared (upstream the recreated pod starts with a fresh status).
// Requests equal limits (Guaranteed QoS): the service's limits are the
// requests the updater compares and the CPU samples are weighted by.
//
// Memory is in MB of 2^20 bytes, as upstream's pod-recommendation-min-memory-mb
// and OOM bump are.
//
// Departures from upstream, all for the simulator's telemetry:
//   - A memory peak of zero is replaced by a larger sample in the same
//     interval; upstream (addMemorySample) replaces a peak only when it is
//     non-zero, harmless on Kubernetes where a running container's working
//     set is never zero but which would pin the simulator's idle instances
//     (memory_base_mb defaults to 0) at a zero peak for a day.
//   - OOM kills are inferred from the snapshot (see observe); upstream
//     reads the container's termination reason.
//   - MinSamples is a gate upstream does not have (its confidence
//     multipliers keep the bounds at [0, ∞) until history accumulates).
//   - Aggregates are not garbage-collected and no checkpoints are kept.
type VPA struct {
	cfg VPAConfig
	svc serviceRef

	cpuOpt, memOpt vpaBuckets
	agg            vpaAggregate
	pods           map[int]*vpaPod

	// Resource amounts of the configuration, in millicores and bytes.
	minCPU, minMem               int64 // pod minimums
	minAllowedCPU, maxAllowedCPU int64 // 0: no bound
	minAllowedMem, maxAllowedMem int64
	oomMinBump                   int64

	nextSample, nextUpdate time.Duration
	rec                    vpaRec
	hasRec                 bool

	acts []control.Action
}

// VPAConfig configures the VPA of one service. Zero fields take the
// upstream defaults noted (the recommender's and updater's flags and
// model/aggregations_config.go), so a margin, minimum or threshold of
// exactly zero cannot be asked for.
type VPAConfig struct {
	// Service is the service whose per-instance resources are managed.
	Service string `yaml:"-"`
	// Mode is the update mode: VPAModeOff (recommend only) or VPAModeAuto
	// (apply, the default).
	Mode string `yaml:"mode"`

	// Percentiles in (0, 1] of the CPU-use and memory-peak distributions
	// behind the target (0.9), the lower bound (0.5) and the upper bound
	// (0.95): target-cpu-percentile,
	// recommendation-lower-bound-cpu-percentile and so on.
	TargetCPUPercentile        float64 `yaml:"target_cpu_percentile"`
	LowerBoundCPUPercentile    float64 `yaml:"lower_bound_cpu_percentile"`    // see target_cpu_percentile
	UpperBoundCPUPercentile    float64 `yaml:"upper_bound_cpu_percentile"`    // see target_cpu_percentile
	TargetMemoryPercentile     float64 `yaml:"target_memory_percentile"`      // see target_cpu_percentile
	LowerBoundMemoryPercentile float64 `yaml:"lower_bound_memory_percentile"` // see target_cpu_percentile
	UpperBoundMemoryPercentile float64 `yaml:"upper_bound_memory_percentile"` // see target_cpu_percentile
	// SafetyMarginFraction is added to every estimate
	// (recommendation-margin-fraction, 0.15).
	SafetyMarginFraction float64 `yaml:"safety_margin_fraction"`
	// PodMinCPUMillicores (25) and PodMinMemoryMB (250) are the least
	// recommended (pod-recommendation-min-cpu-millicores and
	// pod-recommendation-min-memory-mb).
	PodMinCPUMillicores float64 `yaml:"pod_min_cpu_millicores"`
	PodMinMemoryMB      float64 `yaml:"pod_min_memory_mb"`
	// MinAllowedCPU and MaxAllowedCPU (cores), MinAllowedMemoryMB and
	// MaxAllowedMemoryMB bound every recommendation, as the resource
	// policy's minAllowed and maxAllowed do (0: no bound).
	MinAllowedCPU      float64 `yaml:"min_allowed_cpu"`
	MaxAllowedCPU      float64 `yaml:"max_allowed_cpu"`
	MinAllowedMemoryMB float64 `yaml:"min_allowed_memory_mb"`
	MaxAllowedMemoryMB float64 `yaml:"max_allowed_memory_mb"`

	// CPUHistogramDecayHalfLife and MemoryHistogramDecayHalfLife: a sample
	// loses half its weight in this time (24h each).
	CPUHistogramDecayHalfLife    time.Duration `yaml:"cpu_histogram_decay_half_life"`
	MemoryHistogramDecayHalfLife time.Duration `yaml:"memory_histogram_decay_half_life"`
	// MemoryAggregationInterval is the interval each instance contributes
	// one memory peak for (memory-aggregation-interval, 24h).
	MemoryAggregationInterval time.Duration `yaml:"memory_aggregation_interval"`
	// After an OOM kill the instance's memory is taken as
	// max(used × OOMBumpUpRatio, used + OOMMinBumpUpMB), used being the
	// larger of its limit and its peak (oom-bump-up-ratio 1.2,
	// oom-min-bump-up-bytes 100 MB).
	OOMBumpUpRatio float64 `yaml:"oom_bump_up_ratio"`
	OOMMinBumpUpMB float64 `yaml:"oom_min_bump_up_mb"`

	// SampleInterval is how often usage is sampled and the recommendation
	// computed (recommender-interval, 1m).
	SampleInterval time.Duration `yaml:"sample_interval"`
	// UpdateInterval is how often the updater decides (updater-interval,
	// 1m); it is also the least time between two updates.
	UpdateInterval time.Duration `yaml:"update_interval"`
	// MinSamples is how many CPU samples (one per ready instance and
	// sample, all instances counted, as getConfidence counts them) the
	// recommender must hold before the updater acts (default 1: act on the
	// first recommendation, as upstream does).
	MinSamples int `yaml:"min_samples"`
	// UpdateThreshold is the least summed relative difference of the
	// requests from the target that updates an instance inside the bounds
	// (pod-update-threshold, 0.1).
	UpdateThreshold float64 `yaml:"update_threshold"`
	// PodLifetimeThreshold is how long an instance must run undisrupted
	// before it is updated inside the bounds
	// (in-recommendation-bounds-eviction-lifetime-threshold, 12h).
	PodLifetimeThreshold time.Duration `yaml:"pod_lifetime_threshold"`
	// EvictAfterOOMThreshold: an instance OOM-killed less than this long
	// after its container started is updated whenever the target differs
	// (evict-after-oom-threshold, 10m).
	EvictAfterOOMThreshold time.Duration `yaml:"evict_after_oom_threshold"`
}

// VPA update modes (UpdateMode).
const (
	// VPAModeOff computes recommendations and never acts.
	VPAModeOff = "Off"
	// VPAModeAuto applies them (in place, see VPA).
	VPAModeAuto = "Auto"
)

// Upstream constants.
const (
	vpaMB = 1 << 20 // bytes in an MB
	// vpaMaxAmount is model.MaxResourceAmount (millicores or bytes).
	vpaMaxAmount = 1e14
	// vpaMinSampleWeight is the least weight of a CPU sample, cores
	// (aggregations_config.go minSampleWeight); vpaEpsilon the least
	// weight of a non-empty bucket.
	vpaMinSampleWeight = 0.1
	vpaEpsilon         = 0.001 * vpaMinSampleWeight
	// vpaBucketGrowth is DefaultHistogramBucketSizeGrowth: each bucket is
	// 5% wider than the one before.
	vpaBucketGrowth = 0.05
	// vpaMaxDecayExponent: the decaying histogram renormalises once the
	// decay factor passes 2^vpaMaxDecayExponent.
	vpaMaxDecayExponent = 100
	// Confidence multipliers of the bounds (CreatePodResourceRecommender):
	// upper × (1 + 1/confidence)^1, lower × (1 + 0.001/confidence)^-2.
	vpaUpperMultiplier, vpaUpperExponent = 1.0, 1.0
	vpaLowerMultiplier, vpaLowerExponent = 0.001, -2.0
)

var _ control.Controller = (*VPA)(nil)

// VPAResources is one instance's resources: CPU in cores, memory in MB.
type VPAResources struct {
	CPU      float64
	MemoryMB float64
}

// VPARecommendation is the recommender's output for every instance of the
// service (RecommendedContainerResources).
type VPARecommendation struct {
	Target, LowerBound, UpperBound VPAResources
	// UncappedTarget is the target before MinAllowed and MaxAllowed.
	UncappedTarget VPAResources
}

// vpaRec is a recommendation in resource amounts: millicores and bytes.
type vpaRec struct {
	target, lower, upper, uncapped vpaAmounts
}

type vpaAmounts struct{ cpu, mem int64 }

func (a vpaAmounts) resources() VPAResources {
	return VPAResources{CPU: float64(a.cpu) / 1000, MemoryMB: float64(a.mem) / vpaMB}
}

// vpaPod is what the VPA knows of one instance: its container's state
// (model.ContainerState) and what the updater reads of its status.
type vpaPod struct {
	seen     bool
	wasReady bool    // ready in the previous snapshot
	prevMem  float64 // memory use in the previous snapshot, MB

	// Use since the last sample, while ready.
	coreSec, readySec float64
	mem               float64 // MB, the latest
	hasMem            bool

	// ContainerState.
	hasCPUSample  bool
	lastCPUSample time.Duration
	hasMemSample  bool
	lastMemSample time.Duration
	hasWindow     bool
	windowEnd     time.Duration // end of the current memory aggregation interval
	memoryPeak    int64         // bytes, from usage samples in the interval
	oomPeak       int64         // bytes, from an OOM in the interval

	// Status read by the updater.
	restarting     bool          // OOM-killed, not ready again yet
	containerStart time.Duration // start of the running container
	undisrupted    time.Duration // running undisrupted since (started or last updated)
	quickOOM       bool          // the last OOM came within EvictAfterOOMThreshold of the container's start
}

// NewVPA returns a VPA for cfg with its defaults applied.
func NewVPA(cfg VPAConfig) (*VPA, error) {
	setDefault(&cfg.Mode, VPAModeAuto)
	setDefault(&cfg.TargetCPUPercentile, 0.9)
	setDefault(&cfg.LowerBoundCPUPercentile, 0.5)
	setDefault(&cfg.UpperBoundCPUPercentile, 0.95)
	setDefault(&cfg.TargetMemoryPercentile, 0.9)
	setDefault(&cfg.LowerBoundMemoryPercentile, 0.5)
	setDefault(&cfg.UpperBoundMemoryPercentile, 0.95)
	setDefault(&cfg.SafetyMarginFraction, 0.15)
	setDefault(&cfg.PodMinCPUMillicores, 25)
	setDefault(&cfg.PodMinMemoryMB, 250)
	setDefault(&cfg.CPUHistogramDecayHalfLife, 24*time.Hour)
	setDefault(&cfg.MemoryHistogramDecayHalfLife, 24*time.Hour)
	setDefault(&cfg.MemoryAggregationInterval, 24*time.Hour)
	setDefault(&cfg.OOMBumpUpRatio, 1.2)
	setDefault(&cfg.OOMMinBumpUpMB, 100)
	setDefault(&cfg.SampleInterval, time.Minute)
	setDefault(&cfg.UpdateInterval, time.Minute)
	setDefault(&cfg.MinSamples, 1)
	setDefault(&cfg.UpdateThreshold, 0.1)
	setDefault(&cfg.PodLifetimeThreshold, 12*time.Hour)
	setDefault(&cfg.EvictAfterOOMThreshold, 10*time.Minute)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	v := &VPA{
		cfg: cfg,
		svc: serviceRef{name: cfg.Service},
		// CPU: first bucket 0.01 cores, up to 1000 cores; memory: first
		// bucket 1e7 bytes, up to 1e12 bytes (cpuHistogramOptions,
		// memoryHistogramOptions).
		cpuOpt:        newVPABuckets(1000, 0.01, 1+vpaBucketGrowth, vpaEpsilon),
		memOpt:        newVPABuckets(1e12, 1e7, 1+vpaBucketGrowth, vpaEpsilon),
		pods:          map[int]*vpaPod{},
		minCPU:        vpaAmount(cfg.PodMinCPUMillicores),
		minMem:        vpaAmount(cfg.PodMinMemoryMB * vpaMB),
		minAllowedCPU: vpaCPUQuantity(cfg.MinAllowedCPU),
		maxAllowedCPU: vpaCPUQuantity(cfg.MaxAllowedCPU),
		minAllowedMem: vpaMemQuantity(cfg.MinAllowedMemoryMB),
		maxAllowedMem: vpaMemQuantity(cfg.MaxAllowedMemoryMB),
		oomMinBump:    vpaAmount(cfg.OOMMinBumpUpMB * vpaMB),
		nextSample:    cfg.SampleInterval,
		nextUpdate:    cfg.UpdateInterval,
		acts:          make([]control.Action, 0, 1),
	}
	v.agg.cpu = newVPAHistogram(&v.cpuOpt, cfg.CPUHistogramDecayHalfLife)
	v.agg.mem = newVPAHistogram(&v.memOpt, cfg.MemoryHistogramDecayHalfLife)
	return v, nil
}

// Validate reports every invalid field with its path. It expects the
// defaults applied (NewVPA does that first).
func (c *VPAConfig) Validate() error {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if c.Service == "" {
		bad("service", "required")
	}
	if c.Mode != VPAModeOff && c.Mode != VPAModeAuto {
		bad("mode", "want Off or Auto, got %q", c.Mode)
	}
	for _, p := range []struct {
		path string
		v    float64
	}{{"target_cpu_percentile", c.TargetCPUPercentile}, {"lower_bound_cpu_percentile", c.LowerBoundCPUPercentile},
		{"upper_bound_cpu_percentile", c.UpperBoundCPUPercentile}, {"target_memory_percentile", c.TargetMemoryPercentile},
		{"lower_bound_memory_percentile", c.LowerBoundMemoryPercentile}, {"upper_bound_memory_percentile", c.UpperBoundMemoryPercentile}} {
		if !(p.v > 0 && p.v <= 1) {
			bad(p.path, "must be in (0, 1], got %v", p.v)
		}
	}
	for _, p := range []struct {
		path string
		v    float64
	}{{"safety_margin_fraction", c.SafetyMarginFraction}, {"pod_min_cpu_millicores", c.PodMinCPUMillicores},
		{"pod_min_memory_mb", c.PodMinMemoryMB}, {"min_allowed_cpu", c.MinAllowedCPU}, {"max_allowed_cpu", c.MaxAllowedCPU},
		{"min_allowed_memory_mb", c.MinAllowedMemoryMB}, {"max_allowed_memory_mb", c.MaxAllowedMemoryMB},
		{"oom_min_bump_up_mb", c.OOMMinBumpUpMB}, {"update_threshold", c.UpdateThreshold}} {
		if !(p.v >= 0) || !finite(p.v) {
			bad(p.path, "must be >= 0, got %v", p.v)
		}
	}
	if c.MaxAllowedCPU > 0 && c.MinAllowedCPU > c.MaxAllowedCPU {
		bad("max_allowed_cpu", "must be >= min_allowed_cpu (%v) or 0, got %v", c.MinAllowedCPU, c.MaxAllowedCPU)
	}
	if c.MaxAllowedMemoryMB > 0 && c.MinAllowedMemoryMB > c.MaxAllowedMemoryMB {
		bad("max_allowed_memory_mb", "must be >= min_allowed_memory_mb (%v) or 0, got %v", c.MinAllowedMemoryMB, c.MaxAllowedMemoryMB)
	}
	if !(c.OOMBumpUpRatio >= 1) || !finite(c.OOMBumpUpRatio) {
		bad("oom_bump_up_ratio", "must be >= 1, got %v", c.OOMBumpUpRatio)
	}
	for _, d := range []struct {
		path string
		v    time.Duration
	}{{"cpu_histogram_decay_half_life", c.CPUHistogramDecayHalfLife}, {"memory_histogram_decay_half_life", c.MemoryHistogramDecayHalfLife},
		{"memory_aggregation_interval", c.MemoryAggregationInterval}, {"sample_interval", c.SampleInterval},
		{"update_interval", c.UpdateInterval}} {
		if d.v <= 0 {
			bad(d.path, "must be > 0, got %v", d.v)
		}
	}
	if c.MinSamples < 1 {
		bad("min_samples", "must be >= 1, got %d", c.MinSamples)
	}
	if c.PodLifetimeThreshold < 0 {
		bad("pod_lifetime_threshold", "must be >= 0, got %v", c.PodLifetimeThreshold)
	}
	if c.EvictAfterOOMThreshold < 0 {
		bad("evict_after_oom_threshold", "must be >= 0, got %v", c.EvictAfterOOMThreshold)
	}
	return errors.Join(errs...)
}

// Config returns the configuration with defaults applied.
func (v *VPA) Config() VPAConfig { return v.cfg }

// Recommendation returns the latest recommendation, and false before the
// first sample of the service.
func (v *VPA) Recommendation() (VPARecommendation, bool) {
	r := &v.rec
	return VPARecommendation{
		Target: r.target.resources(), LowerBound: r.lower.resources(), UpperBound: r.upper.resources(),
		UncappedTarget: r.uncapped.resources(),
	}, v.hasRec
}

// Samples is the number of CPU samples aggregated so far.
func (v *VPA) Samples() int { return v.agg.count }

// Decide implements control.Controller: it records the period's use and
// OOM kills, samples and recommends every SampleInterval and, in VPAModeAuto,
// every UpdateInterval returns a SetResources with the target when the
// updater's rules admit an instance (see VPA). It allocates only when a new
// instance appears or it returns an action.
func (v *VPA) Decide(now time.Duration, snap *metrics.Snapshot) []control.Action {
	v.acts = v.acts[:0]
	svc := v.svc.find(snap)
	if svc == nil {
		return v.acts
	}
	v.observe(now, snap.Period, svc)
	if now >= v.nextSample {
		for v.nextSample <= now {
			v.nextSample += v.cfg.SampleInterval
		}
		v.sample(now, svc)
		v.recommend()
	}
	if now < v.nextUpdate {
		return v.acts
	}
	for v.nextUpdate <= now {
		v.nextUpdate += v.cfg.UpdateInterval
	}
	if v.cfg.Mode != VPAModeAuto || !v.hasRec || v.agg.count < v.cfg.MinSamples {
		return v.acts
	}
	if v.shouldUpdate(now, svc) {
		t := v.rec.target
		v.acts = append(v.acts, control.SetResources{Service: v.cfg.Service, CPU: float64(t.cpu) / 1000, MemoryMB: float64(t.mem) / vpaMB})
		for _, p := range v.pods {
			p.undisrupted, p.quickOOM = now, false
		}
	}
	return v.acts
}

// observe accumulates each instance's use over the period and records OOM
// kills, as the OOM observer feeds them to the model (RecordOOM).
//
// The snapshot does not say why an instance stopped. An instance that was
// ready and is now down with no memory in use, in a period in which calls
// failed by OOM, is taken as OOM-killed and restarting (the simulator's
// only other way down, draining, keeps its memory until the instance is
// gone). An instance restarted within the period shows no such change:
// when calls failed by OOM and no instance went down, the one whose memory
// fell the most is taken as killed. An OOM kill with no call in flight
// (a limit lowered below the idle memory) goes unseen.
func (v *VPA) observe(now, period time.Duration, svc *metrics.ServiceStats) {
	for _, p := range v.pods {
		p.seen = false
	}
	secs := period.Seconds()
	start := now - period
	killed := 0
	var fellMost *vpaPod
	fell := 0.0
	for i := range svc.Instances {
		in := &svc.Instances[i]
		p := v.pods[in.ID]
		if p == nil {
			p = &vpaPod{containerStart: start, undisrupted: start, prevMem: in.MemoryUse}
			v.pods[in.ID] = p
		}
		p.seen = true
		switch {
		case in.Ready:
			if p.restarting {
				p.restarting, p.containerStart = false, start
			}
			p.coreSec += in.CPUUse * secs
			p.readySec += secs
			p.mem, p.hasMem = in.MemoryUse, true
			if d := p.prevMem - in.MemoryUse; p.wasReady && d > fell {
				fellMost, fell = p, d
			}
		case p.wasReady && in.MemoryUse == 0 && svc.Failures.OOM > 0:
			v.recordOOM(now, p, svc.MemoryLimit)
			p.restarting = true
			killed++
		}
		p.wasReady, p.prevMem = in.Ready, in.MemoryUse
	}
	if killed == 0 && svc.Failures.OOM > 0 && fellMost != nil {
		v.recordOOM(now, fellMost, svc.MemoryLimit)
		fellMost.containerStart = now
	}
	for id, p := range v.pods {
		if !p.seen {
			delete(v.pods, id)
		}
	}
}

// recordOOM is ContainerState.RecordOOM with the instance's memory limit
// (its request) in MB: a memory sample of max(used + OOMMinBumpUp,
// used × OOMBumpUpRatio), used = max(request, the interval's usage peak),
// both capped at MaxAllowedMemoryMB (the container's MaxMemory).
func (v *VPA) recordOOM(now time.Duration, p *vpaPod, requestMB float64) {
	p.quickOOM = now-p.containerStart < v.cfg.EvictAfterOOMThreshold
	if p.hasWindow && now < p.windowEnd-v.cfg.MemoryAggregationInterval {
		return // too old
	}
	used := max(vpaMemQuantity(requestMB), p.memoryPeak)
	if v.maxAllowedMem > 0 {
		used = min(used, v.maxAllowedMem)
	}
	needed := max(used+v.oomMinBump, vpaScale(used, v.cfg.OOMBumpUpRatio))
	if v.maxAllowedMem > 0 {
		needed = min(needed, v.maxAllowedMem)
	}
	v.addMemorySample(p, now, needed, true)
}

// sample takes one CPU and one memory sample of every instance that was
// ready since the last sample.
func (v *VPA) sample(now time.Duration, svc *metrics.ServiceStats) {
	// The CPU request (the limit) weighs the samples
	// (AggregateContainerState.addCPUSample).
	weight := math.Max(float64(vpaCPUQuantity(svc.CPULimit))/1000, vpaMinSampleWeight)
	for i := range svc.Instances {
		p := v.pods[svc.Instances[i].ID]
		if p.readySec > 0 {
			cores := float64(vpaAmount(p.coreSec/p.readySec*1000)) / 1000
			// ContainerState.addCPUSample: drop duplicate or out-of-order samples.
			if !p.hasCPUSample || now > p.lastCPUSample {
				p.hasCPUSample, p.lastCPUSample = true, now
				v.agg.addCPU(cores, weight, now)
			}
		}
		if p.hasMem {
			v.addMemorySample(p, now, vpaAmount(p.mem*vpaMB), false)
		}
		p.coreSec, p.readySec, p.hasMem = 0, 0, false
	}
}

// addMemorySample is ContainerState.addMemorySample: each instance
// contributes one peak per MemoryAggregationInterval, stamped with the
// interval's end; a larger sample in the interval replaces the peak. An OOM
// sample is always taken and kept apart from the usage peak.
func (v *VPA) addMemorySample(p *vpaPod, ts time.Duration, usage int64, oom bool) {
	if !oom && p.hasMemSample && ts < p.lastMemSample {
		return
	}
	p.hasMemSample, p.lastMemSample = true, ts
	if !p.hasWindow {
		p.hasWindow, p.windowEnd = true, ts
	}
	add := false
	if ts < p.windowEnd {
		// Upstream also requires the old peak to be non-zero (see VPA).
		if old := max(p.memoryPeak, p.oomPeak); usage > old {
			v.agg.mem.subtract(float64(old), 1, p.windowEnd)
			add = true
		}
	} else {
		iv := v.cfg.MemoryAggregationInterval
		p.windowEnd += (ts - p.windowEnd).Truncate(iv) + iv
		p.memoryPeak, p.oomPeak = 0, 0
		add = true
	}
	if add {
		v.agg.mem.add(float64(usage), 1, p.windowEnd)
		if oom {
			p.oomPeak = usage
		} else {
			p.memoryPeak = usage
		}
	}
}

// recommend is podResourceRecommender.estimateContainerResources for one
// container per pod, then the policy caps (getCappedRecommendation).
func (v *VPA) recommend() {
	c := &v.cfg
	conf := v.agg.confidence()
	cpu := func(p, mult, exp float64) int64 {
		a := v.margin(vpaAmount(v.agg.cpu.percentile(p) * 1000))
		if mult != 0 {
			a = vpaScale(a, math.Pow(1+mult/conf, exp))
		}
		return max(a, v.minCPU)
	}
	mem := func(p, mult, exp float64) int64 {
		a := v.margin(vpaAmount(v.agg.mem.percentile(p)))
		if mult != 0 {
			a = vpaScale(a, math.Pow(1+mult/conf, exp))
		}
		return max(a, v.minMem)
	}
	r := &v.rec
	r.uncapped = vpaAmounts{cpu(c.TargetCPUPercentile, 0, 0), mem(c.TargetMemoryPercentile, 0, 0)}
	r.target = v.capped(r.uncapped)
	r.lower = v.capped(vpaAmounts{cpu(c.LowerBoundCPUPercentile, vpaLowerMultiplier, vpaLowerExponent),
		mem(c.LowerBoundMemoryPercentile, vpaLowerMultiplier, vpaLowerExponent)})
	r.upper = v.capped(vpaAmounts{cpu(c.UpperBoundCPUPercentile, vpaUpperMultiplier, vpaUpperExponent),
		mem(c.UpperBoundMemoryPercentile, vpaUpperMultiplier, vpaUpperExponent)})
	v.hasRec = true
}

// margin is the margin estimator: a + a × SafetyMarginFraction.
func (v *VPA) margin(a int64) int64 { return a + vpaScale(a, v.cfg.SafetyMarginFraction) }

// capped applies minAllowed, then maxAllowed (capping.go
// applyVPAPolicyForContainer).
func (v *VPA) capped(a vpaAmounts) vpaAmounts {
	if v.minAllowedCPU > 0 {
		a.cpu = max(a.cpu, v.minAllowedCPU)
	}
	if v.maxAllowedCPU > 0 {
		a.cpu = min(a.cpu, v.maxAllowedCPU)
	}
	if v.minAllowedMem > 0 {
		a.mem = max(a.mem, v.minAllowedMem)
	}
	if v.maxAllowedMem > 0 {
		a.mem = min(a.mem, v.maxAllowedMem)
	}
	return a
}

// shouldUpdate is the updater's decision for the service's instances, all
// with the same requests (the service's limits): GetUpdatePriority, then
// UpdatePriorityCalculator.AddPod per instance; one admitted instance is
// enough, as one SetResources resizes them all.
func (v *VPA) shouldUpdate(now time.Duration, svc *metrics.ServiceStats) bool {
	r := &v.rec
	reqCPU, reqMem := vpaCPUQuantity(svc.CPULimit), vpaMemQuantity(svc.MemoryLimit)
	// A resource without a request is outside the range.
	outside := reqCPU <= 0 || reqMem <= 0 ||
		reqCPU < r.lower.cpu || reqCPU > r.upper.cpu || reqMem < r.lower.mem || reqMem > r.upper.mem
	diff := math.Abs(float64(reqCPU-r.target.cpu))/math.Max(float64(reqCPU), 1) +
		math.Abs(float64(reqMem-r.target.mem))/math.Max(float64(reqMem), 1)
	for i := range svc.Instances {
		p := v.pods[svc.Instances[i].ID]
		if !outside && !p.quickOOM {
			if now < p.undisrupted+v.cfg.PodLifetimeThreshold || diff < v.cfg.UpdateThreshold {
				continue
			}
		}
		if p.quickOOM && diff == 0 {
			continue
		}
		return true
	}
	return false
}

// vpaAggregate is AggregateContainerState: the decaying histograms of CPU
// use (cores) and memory peaks (bytes) of all the service's instances, and
// the span and count of the CPU samples.
type vpaAggregate struct {
	cpu, mem    vpaHistogram
	first, last time.Duration
	count       int
}

// addCPU is addCPUSample: a sample weighted by the request.
func (a *vpaAggregate) addCPU(cores, weight float64, t time.Duration) {
	a.cpu.add(cores, weight, t)
	if a.count == 0 || t < a.first {
		a.first = t
	}
	if a.count == 0 || t > a.last {
		a.last = t
	}
	a.count++
}

// confidence is getConfidence: the history in days, the lesser of the
// span of the samples and their count at one a minute.
func (a *vpaAggregate) confidence() float64 {
	days := float64(a.last-a.first) / float64(24*time.Hour)
	return math.Min(days, float64(a.count)/(60*24))
}

// vpaBuckets is exponentialHistogramOptions: bucket 0 is [0, first),
// bucket n ≥ 1 starts at first × (ratio^n − 1)/(ratio − 1), and the last
// bucket starts at or above the maximum value.
type vpaBuckets struct {
	n            int
	first, ratio float64
	epsilon      float64
}

func newVPABuckets(maxValue, first, ratio, epsilon float64) vpaBuckets {
	n := int(math.Ceil(vpaLog(ratio, maxValue*(ratio-1)/first+1))) + 1
	return vpaBuckets{n: n, first: first, ratio: ratio, epsilon: epsilon}
}

// find is FindBucket: the bucket of value, clamped to the range.
func (o *vpaBuckets) find(value float64) int {
	if value < o.first {
		return 0
	}
	return min(int(vpaLog(o.ratio, value*(o.ratio-1)/o.first+1)), o.n-1)
}

// start is GetBucketStart.
func (o *vpaBuckets) start(b int) float64 {
	if b == 0 {
		return 0
	}
	return o.first * (math.Pow(o.ratio, float64(b)) - 1) / (o.ratio - 1)
}

func vpaLog(base, x float64) float64 { return math.Log(x) / math.Log(base) }

// vpaHistogram is decayingHistogram: a bucket histogram whose samples
// weigh 2^((t − ref)/halfLife), so a sample loses half its weight every
// half-life relative to newer ones; ref moves forward (and the weights
// shrink) before the exponent grows too large.
type vpaHistogram struct {
	o          *vpaBuckets
	w          []float64
	total      float64
	minB, maxB int // first and last non-empty buckets (minB = n−1, maxB = 0 when empty)
	halfLife   time.Duration
	ref        time.Duration
}

func newVPAHistogram(o *vpaBuckets, halfLife time.Duration) vpaHistogram {
	return vpaHistogram{o: o, w: make([]float64, o.n), minB: o.n - 1, halfLife: halfLife}
}

func (h *vpaHistogram) add(value, weight float64, t time.Duration) {
	weight *= h.decay(t)
	b := h.o.find(value)
	h.w[b] += weight
	h.total += weight
	if b < h.minB && h.w[b] >= h.o.epsilon {
		h.minB = b
	}
	if b > h.maxB && h.w[b] >= h.o.epsilon {
		h.maxB = b
	}
}

func (h *vpaHistogram) subtract(value, weight float64, t time.Duration) {
	weight *= h.decay(t)
	b := h.o.find(value)
	if weight > h.w[b]-h.o.epsilon {
		weight = h.w[b]
	}
	h.total -= weight
	h.w[b] -= weight
	h.updateMinMax()
}

// percentile is Percentile: the end of the bucket where the cumulative
// weight reaches p of the total (the start of the last bucket, which has no
// end); 0 when empty.
func (h *vpaHistogram) percentile(p float64) float64 {
	if h.empty() {
		return 0
	}
	sum, threshold := 0.0, p*h.total
	b := h.minB
	for ; b < h.maxB; b++ {
		sum += h.w[b]
		if sum >= threshold {
			break
		}
	}
	if b < h.o.n-1 {
		return h.o.start(b + 1)
	}
	return h.o.start(b)
}

func (h *vpaHistogram) empty() bool { return h.w[h.minB] < h.o.epsilon }

func (h *vpaHistogram) updateMinMax() {
	for h.w[h.minB] < h.o.epsilon && h.minB < h.o.n-1 {
		h.minB++
	}
	for h.w[h.maxB] < h.o.epsilon && h.maxB > 0 {
		h.maxB--
	}
}

// decay is decayFactor.
func (h *vpaHistogram) decay(t time.Duration) float64 {
	hl := float64(h.halfLife)
	if float64(t-h.ref) > hl*vpaMaxDecayExponent {
		h.shift(t)
	}
	return math.Exp2(float64(t-h.ref) / hl)
}

// shift is shiftReferenceTimestamp: ref moves to t rounded to a multiple
// of the half-life, and every weight is scaled by 2^(old − new)/halfLife.
func (h *vpaHistogram) shift(t time.Duration) {
	ref := t.Round(h.halfLife)
	exp := math.Floor(float64(h.ref-ref)/float64(h.halfLife) + 0.5)
	f := math.Ldexp(1, int(exp))
	for b := h.minB; b <= h.maxB; b++ {
		h.w[b] *= f
	}
	h.total *= f
	h.updateMinMax()
	h.ref = ref
}

// vpaAmount is resourceAmountFromFloat: truncated to an integer amount in
// [0, MaxResourceAmount] (NaN counts 0).
func vpaAmount(x float64) int64 {
	switch {
	case x > vpaMaxAmount:
		return vpaMaxAmount
	case !(x >= 0):
		return 0
	}
	return int64(x)
}

// vpaScale is ScaleResource.
func vpaScale(a int64, f float64) int64 { return vpaAmount(float64(a) * f) }

// vpaCPUQuantity and vpaMemQuantity read a limit as a Kubernetes quantity
// does (MilliValue, Value: rounded up), forgiving the float noise of
// values that are whole millicores or bytes.
func vpaCPUQuantity(cores float64) int64 { return vpaAmount(math.Ceil(cores*1000 - 1e-6)) }

func vpaMemQuantity(mb float64) int64 { return vpaAmount(math.Ceil(mb*vpaMB - 1e-6)) }
