package autoscale

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
)

// HPA is the Kubernetes Horizontal Pod Autoscaler (autoscaling/v2) for
// one service, ported from kubernetes/kubernetes
// pkg/controller/podautoscaler: horizontal.go (reconcileAutoscaler,
// computeReplicasForMetrics, normalizeDesiredReplicasWithBehaviors,
// stabilizeRecommendationWithBehaviors, convertDesiredReplicasWithBehaviorRate,
// calculateScaleUpLimitWithScalingRules, calculateScaleDownLimitWithBehaviors,
// storeScaleEvent) and replica_calculator.go (GetResourceReplicas,
// calcPlainMetricReplicas, groupPods). Every SyncPeriod it computes
// desired = ceil(current × metric / target) per metric over the ready
// pods, keeps the largest, and normalises it with the behaviour rules.
//
// The simulator's pods are its instances: a starting instance is a Pending
// pod, an instance restarting after OOM an unready one. Resource metrics
// average each pod's use over the last metric window (metrics-server's
// resolution), as kubelet does; the CPU request is the instance's CPU
// limit (requests equal limits, Guaranteed QoS).
type HPA struct {
	cfg HPAConfig

	svc        serviceRef
	next       time.Duration // the next sync
	pods       map[int]*podTrack
	rps        float64       // the service's arrivals per second in the last period
	recs       []timestamped // recommendations (stabilizeRecommendationWithBehaviors)
	upEvents   []timestamped // scale events (storeScaleEvent)
	downEvents []timestamped
	acts       []control.Action
	vals       []float64 // per-pod metric values of one calculation
}

// HPAConfig is one HorizontalPodAutoscaler. Zero fields take the upstream
// defaults noted (autoscaling/v2 defaults.go and the controller manager's
// flags).
type HPAConfig struct {
	Service     string `yaml:"-"`
	MinReplicas int    `yaml:"-"` // default 1
	MaxReplicas int    `yaml:"-"` // required
	// Metrics are the targets (default: CPU at 80% utilisation); the
	// largest proposal wins.
	Metrics []HPAMetric `yaml:"metrics"`
	// ScaleUp and ScaleDown are the behaviour (nil: the defaults, see
	// DefaultScaleUp and DefaultScaleDown).
	ScaleUp   *HPAScalingRules `yaml:"scale_up"`
	ScaleDown *HPAScalingRules `yaml:"scale_down"`
	// Tolerance: no scaling while |1 − metric/target| ≤ Tolerance (0.1).
	Tolerance float64 `yaml:"tolerance"`
	// SyncPeriod is --horizontal-pod-autoscaler-sync-period (15s).
	SyncPeriod time.Duration `yaml:"sync_period"`
	// MetricWindow is the window a pod's resource use is averaged over
	// (metrics-server's resolution, 15s).
	MetricWindow time.Duration `yaml:"metric_window"`
	// CPUInitializationPeriod (5m) and InitialReadinessDelay (30s) are
	// the controller's readiness rules for CPU samples (groupPods).
	CPUInitializationPeriod time.Duration `yaml:"cpu_initialization_period"`
	InitialReadinessDelay   time.Duration `yaml:"initial_readiness_delay"`
}

// HPAMetric is one metric target.
type HPAMetric struct {
	// Kind: MetricCPU or MetricMemory (resource utilisation, Target in
	// percent of the request), MetricConcurrency (a Pods metric: calls in
	// flight per pod) or MetricRPS (a Pods metric: arrivals per second per
	// pod, the service's rate split evenly over its ready pods as its load
	// balancer does).
	Kind   string  `yaml:"kind"`
	Target float64 `yaml:"target"`
}

// HPA metric kinds.
const (
	MetricCPU         = "cpu"
	MetricMemory      = "memory"
	MetricConcurrency = "concurrency"
	MetricRPS         = "rps"
)

// HPAScalingRules are the behaviour of one direction.
type HPAScalingRules struct {
	// StabilizationWindow: the most conservative recommendation of this
	// long is used (nil: 0 up, 300s down).
	StabilizationWindow *time.Duration `yaml:"stabilization_window"`
	// Select chooses among the policies: SelectMax (default), SelectMin or
	// SelectDisabled.
	Select   string             `yaml:"select_policy"`
	Policies []HPAScalingPolicy `yaml:"policies,omitempty"` // omitempty: nil takes the defaults after a YAML round trip
}

// Policy selection.
const (
	SelectMax      = "Max"
	SelectMin      = "Min"
	SelectDisabled = "Disabled"
)

// HPAScalingPolicy allows a change of Value pods (PolicyPods) or Value
// percent of the replicas at the start of the Period (PolicyPercent).
type HPAScalingPolicy struct {
	// Type is Pods or Percent.
	Type string `yaml:"type"`
	// Value is the pods, or the percent of the replicas, a change may add
	// or remove within Period.
	Value int `yaml:"value"`
	// Period is the window the change is counted over (periodSeconds).
	Period time.Duration `yaml:"period"`
}

// Policy types.
const (
	PolicyPods    = "Pods"
	PolicyPercent = "Percent"
)

// DefaultScaleUp is autoscaling/v2's default scale-up behaviour
// (GenerateHPAScaleUpRules): no stabilisation; add 4 pods or 100% per 15s,
// whichever is more.
func DefaultScaleUp() *HPAScalingRules {
	w := time.Duration(0)
	return &HPAScalingRules{StabilizationWindow: &w, Select: SelectMax, Policies: []HPAScalingPolicy{
		{Type: PolicyPods, Value: 4, Period: 15 * time.Second}, {Type: PolicyPercent, Value: 100, Period: 15 * time.Second}}}
}

// DefaultScaleDown is the default scale-down behaviour
// (GenerateHPAScaleDownRules and the 5-minute
// --horizontal-pod-autoscaler-downscale-stabilization): the highest
// recommendation of the last 300s; remove up to 100% per 15s.
func DefaultScaleDown() *HPAScalingRules {
	w := 300 * time.Second
	return &HPAScalingRules{StabilizationWindow: &w, Select: SelectMax, Policies: []HPAScalingPolicy{
		{Type: PolicyPercent, Value: 100, Period: 15 * time.Second}}}
}

// podTrack is what the HPA knows of one pod (instance).
type podTrack struct {
	seen       bool          // in the latest snapshot
	started    time.Duration // first seen
	readySince time.Duration // -1 while not ready
	everReady  bool
	cpu, mem   window // utilisation of the request, over the metric window
	inFlight   float64
}

// window keeps time-weighted samples of one quantity over the last
// MetricWindow: (end time, value, weight seconds).
type window struct{ s []sample }

type sample struct {
	end    time.Duration
	value  float64
	weight float64
}

func (w *window) add(end time.Duration, v, weight float64, keep time.Duration) {
	w.s = append(w.s, sample{end, v, weight})
	i := 0
	for i < len(w.s) && w.s[i].end <= end-keep {
		i++
	}
	if i > 0 {
		w.s = append(w.s[:0], w.s[i:]...)
	}
}

func (w *window) mean() float64 {
	var sum, weight float64
	for _, s := range w.s {
		sum += s.value * s.weight
		weight += s.weight
	}
	if weight == 0 {
		return 0
	}
	return sum / weight
}

type timestamped struct {
	at    time.Duration
	value int
}

// NewHPA returns an HPA for cfg with its defaults applied.
func NewHPA(cfg HPAConfig) (*HPA, error) {
	setDefault(&cfg.MinReplicas, 1)
	if len(cfg.Metrics) == 0 {
		cfg.Metrics = []HPAMetric{{Kind: MetricCPU, Target: 80}}
	}
	// Copy the rules before defaulting them: the caller's may be shared.
	cfg.ScaleUp, cfg.ScaleDown = copyRules(cfg.ScaleUp, DefaultScaleUp), copyRules(cfg.ScaleDown, DefaultScaleDown)
	if cfg.ScaleUp.StabilizationWindow == nil {
		w := time.Duration(0)
		cfg.ScaleUp.StabilizationWindow = &w
	}
	if cfg.ScaleDown.StabilizationWindow == nil {
		w := 300 * time.Second // maybeInitScaleDownStabilizationWindow
		cfg.ScaleDown.StabilizationWindow = &w
	}
	for _, r := range []*HPAScalingRules{cfg.ScaleUp, cfg.ScaleDown} {
		if r.Select == "" {
			r.Select = SelectMax
		}
	}
	setDefault(&cfg.Tolerance, 0.1)
	setDefault(&cfg.SyncPeriod, 15*time.Second)
	setDefault(&cfg.MetricWindow, 15*time.Second)
	setDefault(&cfg.CPUInitializationPeriod, 5*time.Minute)
	setDefault(&cfg.InitialReadinessDelay, 30*time.Second)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &HPA{cfg: cfg, svc: serviceRef{name: cfg.Service}, pods: map[int]*podTrack{}, next: cfg.SyncPeriod}, nil
}

// copyRules is the default rules with r's set fields copied over them, as
// autoscaling/v2 defaults.go (copyHPAScalingRules) fills a behaviour field
// by field; r, which may be shared, is not changed.
func copyRules(r *HPAScalingRules, def func() *HPAScalingRules) *HPAScalingRules {
	d := def()
	if r == nil {
		return d
	}
	if r.Select != "" {
		d.Select = r.Select
	}
	if r.StabilizationWindow != nil {
		w := *r.StabilizationWindow
		d.StabilizationWindow = &w
	}
	if r.Policies != nil {
		d.Policies = slices.Clone(r.Policies)
	}
	return d
}

// Validate reports every invalid field with its path.
func (c *HPAConfig) Validate() error {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	if c.Service == "" {
		bad("service", "required")
	}
	if c.MinReplicas < 0 {
		bad("min_replicas", "must be >= 0, got %d", c.MinReplicas)
	}
	if c.MaxReplicas < 1 || c.MaxReplicas < c.MinReplicas {
		bad("max_replicas", "must be >= 1 and >= min_replicas (%d), got %d", c.MinReplicas, c.MaxReplicas)
	}
	for i, m := range c.Metrics {
		switch m.Kind {
		case MetricCPU, MetricMemory, MetricConcurrency, MetricRPS:
		default:
			bad(fmt.Sprintf("metrics[%d].kind", i), "want cpu, memory, concurrency or rps, got %q", m.Kind)
		}
		if !(m.Target > 0) || math.IsInf(m.Target, 0) {
			bad(fmt.Sprintf("metrics[%d].target", i), "must be > 0, got %v", m.Target)
		}
	}
	for _, b := range []struct {
		name string
		r    *HPAScalingRules
	}{{"scale_up", c.ScaleUp}, {"scale_down", c.ScaleDown}} {
		name, r := b.name, b.r
		if r == nil {
			continue
		}
		if r.Select != SelectMax && r.Select != SelectMin && r.Select != SelectDisabled && r.Select != "" {
			bad(name+".select_policy", "want Max, Min or Disabled, got %q", r.Select)
		}
		if r.StabilizationWindow != nil && (*r.StabilizationWindow < 0 || *r.StabilizationWindow > time.Hour) {
			bad(name+".stabilization_window", "must be in [0, 1h], got %v", *r.StabilizationWindow)
		}
		if len(r.Policies) == 0 && r.Select != SelectDisabled {
			bad(name+".policies", "need at least one policy")
		}
		for i, p := range r.Policies {
			path := fmt.Sprintf("%s.policies[%d]", name, i)
			if p.Type != PolicyPods && p.Type != PolicyPercent {
				bad(path+".type", "want Pods or Percent, got %q", p.Type)
			}
			if p.Value < 1 {
				bad(path+".value", "must be >= 1, got %d", p.Value)
			}
			if p.Period <= 0 || p.Period > 30*time.Minute {
				bad(path+".period", "must be in (0, 30m], got %v", p.Period)
			}
		}
	}
	if c.Tolerance < 0 || c.Tolerance >= 1 {
		bad("tolerance", "must be in [0, 1), got %v", c.Tolerance)
	}
	for _, d := range []struct {
		path string
		v    time.Duration
	}{{"sync_period", c.SyncPeriod}, {"metric_window", c.MetricWindow}, {"cpu_initialization_period", c.CPUInitializationPeriod},
		{"initial_readiness_delay", c.InitialReadinessDelay}} {
		if d.v < 0 {
			bad(d.path, "must be >= 0, got %v", d.v)
		}
	}
	return errors.Join(errs...)
}

// Config returns the configuration with defaults applied.
func (h *HPA) Config() HPAConfig { return h.cfg }

// SetTarget changes metric k's target, as editing the
// HorizontalPodAutoscaler's spec does: the next sync computes with it.
func (h *HPA) SetTarget(k int, target float64) { h.cfg.Metrics[k].Target = target }

// Decide implements control.Controller: it records the period's samples
// and, at every sync, returns a SetReplicas if the desired count differs
// from the current one.
func (h *HPA) Decide(now time.Duration, snap *metrics.Snapshot) []control.Action {
	h.acts = h.acts[:0]
	svc := h.svc.find(snap)
	if svc == nil {
		return h.acts
	}
	h.observe(now, snap.Period, svc)
	if now < h.next {
		return h.acts
	}
	for h.next <= now {
		h.next += h.cfg.SyncPeriod
	}
	current := svc.Replicas
	desired, ok := h.reconcile(now, current, svc)
	if ok && desired != current {
		h.storeScaleEvent(now, current, desired)
		h.acts = append(h.acts, control.SetReplicas{Service: h.cfg.Service, Replicas: desired})
	}
	return h.acts
}

// serviceRef finds one service in snapshots, remembering where it was.
type serviceRef struct {
	name string
	hint int
}

// find returns the service's stats in snap, or nil.
func (r *serviceRef) find(snap *metrics.Snapshot) *metrics.ServiceStats {
	if r.hint < len(snap.Services) && snap.Services[r.hint].Name == r.name {
		return &snap.Services[r.hint]
	}
	for i := range snap.Services {
		if snap.Services[i].Name == r.name {
			r.hint = i
			return &snap.Services[i]
		}
	}
	return nil
}

// observe updates every pod's readiness and its use over the window.
func (h *HPA) observe(now, period time.Duration, svc *metrics.ServiceStats) {
	for _, p := range h.pods {
		p.seen = false
	}
	keep := h.cfg.MetricWindow
	for _, in := range svc.Instances {
		p := h.pods[in.ID]
		if p == nil {
			p = &podTrack{started: now - period, readySince: -1}
			h.pods[in.ID] = p
		}
		p.seen = true
		switch {
		case !in.Ready:
			p.readySince = -1
		case p.readySince < 0:
			p.readySince, p.everReady = now-period, true // ready at some point of the period
		}
		if in.Ready {
			p.cpu.add(now, in.Utilisation, period.Seconds(), keep)
			mem := 0.0
			if svc.MemoryLimit > 0 {
				mem = in.MemoryUse / svc.MemoryLimit
			}
			p.mem.add(now, mem, period.Seconds(), keep)
		}
		p.inFlight = float64(in.InFlight)
	}
	for id, p := range h.pods {
		if !p.seen {
			delete(h.pods, id)
		}
	}
	h.rps = float64(svc.Arrivals) / period.Seconds()
}

// reconcile is reconcileAutoscaler's decision: the desired replicas, or
// false when the HPA does not scale (disabled, or no valid metric).
func (h *HPA) reconcile(now time.Duration, current int, svc *metrics.ServiceStats) (int, bool) {
	c := &h.cfg
	if h.recs == nil { // recordInitialRecommendation
		h.recs = append(h.recs, timestamped{now, current})
	}
	switch {
	case current == 0 && c.MinReplicas != 0:
		return 0, false // scaling is disabled while the target has no replicas
	case current > c.MaxReplicas:
		return c.MaxReplicas, true
	case current < c.MinReplicas:
		return c.MinReplicas, true
	}
	proposal, ok := h.computeReplicasForMetrics(now, current)
	if !ok {
		return 0, false
	}
	return h.normalize(now, current, proposal), true
}

// computeReplicasForMetrics returns the largest proposal of the metrics;
// not ok if every metric is invalid, or some are and the rest would scale
// down (upstream since Kubernetes 1.24).
func (h *HPA) computeReplicasForMetrics(now time.Duration, current int) (int, bool) {
	replicas, invalid := 0, 0
	for _, m := range h.cfg.Metrics {
		var p int
		var ok bool
		switch m.Kind {
		case MetricCPU, MetricMemory:
			p, ok = h.resourceReplicas(now, current, m)
		default:
			p, ok = h.plainReplicas(now, current, m)
		}
		if !ok {
			invalid++
			continue
		}
		replicas = max(replicas, p)
	}
	if invalid >= len(h.cfg.Metrics) || invalid > 0 && replicas < current {
		return 0, false
	}
	return replicas, true
}

// podGroup is groupPods' result for one metric: the values of the pods
// counted, and how many pods were ignored (pending or, for CPU, unready)
// or had no metric.
type podGroup struct {
	vals             []float64
	ignored, missing int
}

// group sorts the pods for metric m as groupPods does. value gives a
// counted pod's metric.
func (h *HPA) group(now time.Duration, m HPAMetric, value func(*podTrack) float64) podGroup {
	g := podGroup{vals: h.vals[:0]}
	for _, p := range h.pods {
		ready := p.readySince >= 0
		switch {
		case !p.everReady:
			g.ignored++ // Pending: still starting
		case !ready:
			g.missing++ // restarting after an OOM kill: a container that is down has no metric
		case m.Kind == MetricCPU && h.cpuSampleIgnored(now, p):
			g.ignored++
		default:
			g.vals = append(g.vals, value(p))
		}
	}
	h.vals = g.vals
	return g
}

// cpuSampleIgnored is groupPods' readiness rule for the CPU sample of a
// ready pod: within the CPU initialisation period it counts only once the
// pod has been ready for a full metric window (its first samples include
// the start-up).
func (h *HPA) cpuSampleIgnored(now time.Duration, p *podTrack) bool {
	return now < p.started+h.cfg.CPUInitializationPeriod && now-p.readySince < h.cfg.MetricWindow
}

// resourceReplicas is GetResourceReplicas for a utilisation target in
// percent: every pod requests the same (its limit), so the usage ratio is
// the mean utilisation over the target.
func (h *HPA) resourceReplicas(now time.Duration, current int, m HPAMetric) (int, bool) {
	g := h.group(now, m, func(p *podTrack) float64 {
		if m.Kind == MetricCPU {
			return p.cpu.mean()
		}
		return p.mem.mean()
	})
	if len(g.vals) == 0 {
		return 0, false // "did not receive metrics for any ready pods"
	}
	return h.replicaCount(current, m.Target/100, g, 1, true), true
}

// plainReplicas is calcPlainMetricReplicas for a Pods metric averaged over
// the pods.
func (h *HPA) plainReplicas(now time.Duration, current int, m HPAMetric) (int, bool) {
	ready := 0
	for _, p := range h.pods {
		if p.readySince >= 0 {
			ready++
		}
	}
	g := h.group(now, m, func(p *podTrack) float64 {
		if m.Kind == MetricConcurrency {
			return p.inFlight
		}
		return h.rps / float64(max(ready, 1))
	})
	if len(g.vals) == 0 {
		return 0, false
	}
	return h.replicaCount(current, m.Target, g, m.Target, false), true
}

// replicaCount is the shared tail of GetResourceReplicas and
// calcPlainMetricReplicas for per-pod values against target: within the
// tolerance nothing changes; otherwise pods without a metric count at full
// (the request, or the target for plain metrics) on a scale-down and at 0
// on a scale-up, ignored pods at 0 on a scale-up, and nothing changes if
// that reverses the direction.
func (h *HPA) replicaCount(current int, target float64, g podGroup, full float64, resource bool) int {
	tol := h.cfg.Tolerance
	usage := mean(g.vals) / target
	rebalance := g.ignored > 0 && usage > 1
	if !rebalance && g.missing == 0 {
		if math.Abs(1-usage) <= tol {
			return current
		}
		return int(math.Ceil(usage * float64(len(g.vals))))
	}
	vals := g.vals
	// Resource metrics fill missing pods only when the ratio is off 1
	// (GetResourceReplicas); plain metrics treat exactly 1 as a scale-up.
	if g.missing > 0 && (usage != 1 || !resource) {
		fill := 0.0
		if usage < 1 {
			fill = full
		}
		for range g.missing {
			vals = append(vals, fill)
		}
	}
	if rebalance {
		for range g.ignored {
			vals = append(vals, 0)
		}
	}
	h.vals = vals
	newUsage := mean(vals) / target
	if math.Abs(1-newUsage) <= tol || usage < 1 && newUsage > 1 || usage > 1 && newUsage < 1 {
		return current
	}
	n := int(math.Ceil(newUsage * float64(len(vals))))
	if resource && (newUsage < 1 && n > current || newUsage > 1 && n < current) {
		return current
	}
	return n
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// normalize is normalizeDesiredReplicasWithBehaviors: stabilisation, then
// the rate limits and the bounds.
func (h *HPA) normalize(now time.Duration, current, desired int) int {
	return h.limitRate(now, current, h.stabilize(now, current, desired))
}

// stabilize is stabilizeRecommendationWithBehaviors: scaling up takes the
// lowest recommendation within the scale-up window, scaling down the
// highest within the scale-down window; the newest replaces one older than
// both windows.
func (h *HPA) stabilize(now time.Duration, current, desired int) int {
	up, down := *h.cfg.ScaleUp.StabilizationWindow, *h.cfg.ScaleDown.StabilizationWindow
	window, better := down, func(a, b int) int { return max(a, b) }
	if desired >= current {
		window, better = up, func(a, b int) int { return min(a, b) }
	}
	obsolete := now - max(up, down)
	cutoff := now - window
	rec, old := desired, -1
	for i, r := range h.recs {
		if r.at > cutoff {
			rec = better(r.value, rec)
		}
		if r.at < obsolete {
			old = i
		}
	}
	if old >= 0 {
		h.recs[old] = timestamped{now, desired}
	} else {
		h.recs = append(h.recs, timestamped{now, desired})
	}
	return rec
}

// limitRate is convertDesiredReplicasWithBehaviorRate.
func (h *HPA) limitRate(now time.Duration, current, desired int) int {
	c := &h.cfg
	switch {
	case desired > current:
		limit := max(scaleUpLimit(now, current, h.upEvents, c.ScaleUp), current)
		return min(desired, c.MaxReplicas, limit)
	case desired < current:
		limit := min(scaleDownLimit(now, current, h.downEvents, c.ScaleDown), current)
		return max(desired, c.MinReplicas, limit)
	}
	return desired
}

// scaleUpLimit is calculateScaleUpLimitWithScalingRules: the most pods the
// policies allow now, counting from the replicas at the start of each
// policy's period. A Min selection starts from the largest integer: the
// upstream version read for this port starts it at 0, which would block
// every scale-up under select Min.
func scaleUpLimit(now time.Duration, current int, events []timestamped, r *HPAScalingRules) int {
	if r.Select == SelectDisabled {
		return current
	}
	result, pick := 0, func(a, b int) int { return max(a, b) }
	if r.Select == SelectMin {
		result, pick = math.MaxInt, func(a, b int) int { return min(a, b) }
	}
	for _, p := range r.Policies {
		start := current - changeInPeriod(now, p.Period, events)
		proposed := start + p.Value
		if p.Type == PolicyPercent {
			proposed = int(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		result = pick(result, proposed)
	}
	return result
}

// scaleDownLimit is calculateScaleDownLimitWithBehaviors: the fewest pods
// the policies allow now.
func scaleDownLimit(now time.Duration, current int, events []timestamped, r *HPAScalingRules) int {
	if r.Select == SelectDisabled {
		return current
	}
	result, pick := math.MaxInt, func(a, b int) int { return min(a, b) }
	if r.Select == SelectMin {
		result, pick = math.MinInt, func(a, b int) int { return max(a, b) }
	}
	for _, p := range r.Policies {
		start := current + changeInPeriod(now, p.Period, events)
		proposed := start - p.Value
		if p.Type == PolicyPercent {
			proposed = int(float64(start) * (1 - float64(p.Value)/100))
		}
		result = pick(result, proposed)
	}
	return result
}

// changeInPeriod is getReplicasChangePerPeriod: the replicas added (or
// removed) by events within the last period.
func changeInPeriod(now, period time.Duration, events []timestamped) int {
	n := 0
	for _, e := range events {
		if e.at > now-period {
			n += e.value
		}
	}
	return n
}

// storeScaleEvent records a rescale from prev to next; events older than
// the direction's longest policy period are dropped (upstream reuses their
// slots).
func (h *HPA) storeScaleEvent(now time.Duration, prev, next int) {
	events, rules, change := &h.upEvents, h.cfg.ScaleUp, next-prev
	if next < prev {
		events, rules, change = &h.downEvents, h.cfg.ScaleDown, prev-next
	}
	var longest time.Duration
	for _, p := range rules.Policies {
		longest = max(longest, p.Period)
	}
	kept := (*events)[:0]
	for _, e := range *events {
		if e.at >= now-longest {
			kept = append(kept, e)
		}
	}
	*events = append(kept, timestamped{now, change})
}
