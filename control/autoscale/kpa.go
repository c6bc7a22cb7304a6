package autoscale

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
)

// KPA is the Knative Pod Autoscaler for one service, ported from
// knative/serving:
//
//   - pkg/autoscaler/scaling/autoscaler.go (newAutoscaler, Scale): stable
//     and panic desired pod counts, the scale-up and scale-down rate
//     limits, entering, extending and leaving panic mode;
//   - pkg/autoscaler/aggregation/bucketing.go (TimedFloat64Buckets Record
//     and WindowAverage, WeightedFloat64Buckets WindowAverage and
//     computeSmoothingCoeff): the windowed averages over 1 s buckets;
//   - pkg/autoscaler/metrics/collector.go (collection.record,
//     stableAndPanicConcurrency) and pkg/autoscaler/scaling/multiscaler.go
//     (runScalerTicker, Poke): one concurrency record per period, a
//     decision every tick and at once when scaled to zero and a request
//     arrives;
//   - pkg/reconciler/autoscaling/kpa/scaler.go (applyBounds,
//     handleScaleToZero, Scale) and kpa.go (computeActiveCondition): min
//     and max scale, and scale to zero only after the service has been
//     idle for the stable window and then inactive (the activator in the
//     path) for longer than the grace period;
//   - pkg/autoscaler/config/config.go (defaultConfig, validate),
//     pkg/reconciler/autoscaling/resources/target.go (ResolveMetricTarget)
//     and metric.go (MakeMetric): defaults, limits, the per-pod target and
//     the panic window.
//
// The metric is concurrency (the default); every rule of Scale is kept
// except the excess burst capacity and activation scale, which only steer
// the activator. The observed concurrency of a period is estimated from
// the snapshot as documented at kpaConcurrency.
type KPA struct {
	cfg    KPAConfig
	target float64 // the per-pod concurrency aimed at (DeciderSpec.TargetValue)
	win    kpaBuckets
	// smoothing coefficients of the weighted average, stable and panic
	alphaStable, alphaPanic float64

	started bool
	next    time.Duration // the next tick
	svc     serviceRef

	// Panic state of the autoscaler (scaling/autoscaler.go).
	panicking    bool
	panicTime    time.Duration // the last tick the panic condition held
	maxPanicPods int
	// latest is the autoscaler's last desired pod count, -1 before the
	// first valid one (the scaler runner's latestScale).
	latest int

	// The PodAutoscaler's Active condition and when it last changed
	// (kpa.go computeActiveCondition).
	activity kpaActivity
	since    time.Duration

	acts []control.Action
}

// KPAConfig configures the KPA of one service. Zero fields take the
// upstream defaults noted (config-autoscaler, pkg/autoscaler/config).
type KPAConfig struct {
	// Service is the service scaled.
	Service string `yaml:"-"`
	// TargetConcurrency is the per-pod concurrency the target is a
	// fraction of, in requests: the service's containerConcurrency, or
	// container-concurrency-target-default (100) when that is unlimited.
	TargetConcurrency float64 `yaml:"target_concurrency"`
	// TargetUtilization is container-concurrency-target-percentage as a
	// fraction in (0, 1] (0.7). The autoscaler aims at
	// TargetConcurrency × TargetUtilization requests per pod (at least
	// 0.01, ResolveMetricTarget).
	TargetUtilization float64 `yaml:"target_utilization"`
	// StableWindow is stable-window (60s), in whole seconds in [6s, 1h].
	StableWindow time.Duration `yaml:"stable_window"`
	// PanicWindow is the panic window, in whole seconds in [1s,
	// StableWindow]; 0 derives it as upstream does from
	// panic-window-percentage (10%) of the stable window rounded to the
	// second (6s for 60s).
	PanicWindow time.Duration `yaml:"panic_window"`
	// PanicThreshold is panic-threshold-percentage as a ratio (2.0 = 200%),
	// in [1.1, 10]: panic mode starts when the panic-window desired pod
	// count is at least PanicThreshold × ready pods.
	PanicThreshold float64 `yaml:"panic_threshold"`
	// MaxScaleUpRate (1000) and MaxScaleDownRate (2), both > 1: one tick
	// goes from N ready pods to at most ceil(MaxScaleUpRate × N) and at
	// least floor(N / MaxScaleDownRate).
	MaxScaleUpRate   float64 `yaml:"max_scale_up_rate"`
	MaxScaleDownRate float64 `yaml:"max_scale_down_rate"`
	// MinScale and MaxScale bound the replicas (minScale and maxScale
	// annotations; MaxScale 0: no bound). MinScale >= 1 disables scale to
	// zero.
	MinScale int `yaml:"-"`
	MaxScale int `yaml:"-"`
	// ScaleToZeroGracePeriod (30s, at least 6s) is how long the service
	// stays inactive, the activator in its path, before its last pod goes.
	ScaleToZeroGracePeriod time.Duration `yaml:"scale_to_zero_grace_period"`
	// TickInterval is how often the autoscaler decides (tick-interval, 2s).
	TickInterval time.Duration `yaml:"tick_interval"`
	// WeightedAverage selects the weighted exponential window average
	// (metric-aggregation-algorithm: weightedExponential) instead of the
	// default linear one.
	WeightedAverage bool `yaml:"weighted_average"`
}

// Upstream constants.
const (
	// kpaBucketSize is the aggregation granularity (config.BucketSize).
	kpaBucketSize = time.Second
	// kpaTargetMin is autoscaling.TargetMin, the smallest per-pod target.
	kpaTargetMin = 0.01
	// kpaActivationTimeout is how long the reconciler waits for an
	// activating service before scaling it back to zero: the deployment's
	// progress deadline (600s) plus a 10s buffer (kpa/scaler.go).
	kpaActivationTimeout = 610 * time.Second
	// Weighted average: the sum of the weights over a window is at least
	// kpaWeightPrecision, and the decay coefficient at least kpaMinExponent.
	kpaWeightPrecision = 0.9999
	kpaMinExponent     = 0.2
)

var _ control.Controller = (*KPA)(nil)

// kpaActivity is the PodAutoscaler's Active condition.
type kpaActivity uint8

const (
	kpaActivating kpaActivity = iota // Unknown: waiting for ready pods
	kpaActive                        // True
	kpaInactive                      // False: scaled to zero or about to be, activator in path
)

// NewKPA returns a KPA for cfg with its defaults applied.
func NewKPA(cfg KPAConfig) (*KPA, error) {
	setDefault(&cfg.TargetConcurrency, 100)
	setDefault(&cfg.TargetUtilization, 0.7)
	setDefault(&cfg.StableWindow, 60*time.Second)
	// resources/metric.go MakeMetric: panic window = stable window ×
	// panic-window-percentage (10%), rounded to the second, at least one
	// bucket.
	setDefault(&cfg.PanicWindow, max(kpaBucketSize, (cfg.StableWindow/10).Round(time.Second)))
	setDefault(&cfg.PanicThreshold, 2)
	setDefault(&cfg.MaxScaleUpRate, 1000)
	setDefault(&cfg.MaxScaleDownRate, 2)
	setDefault(&cfg.ScaleToZeroGracePeriod, 30*time.Second)
	setDefault(&cfg.TickInterval, 2*time.Second)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	nStable := int64(cfg.StableWindow / kpaBucketSize)
	nPanic := int64(cfg.PanicWindow / kpaBucketSize)
	k := &KPA{
		cfg:         cfg,
		svc:         serviceRef{name: cfg.Service},
		target:      math.Max(kpaTargetMin, cfg.TargetConcurrency*cfg.TargetUtilization),
		win:         newKPABuckets(nStable, nPanic),
		alphaStable: kpaSmoothing(nStable),
		alphaPanic:  kpaSmoothing(nPanic),
		latest:      -1,
		acts:        make([]control.Action, 0, 1),
	}
	return k, nil
}

// Validate reports every invalid field with its path. It expects the
// defaults applied (NewKPA does that first).
func (c *KPAConfig) Validate() error {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if c.Service == "" {
		bad("service", "required")
	}
	if !(c.TargetConcurrency > 0) || !finite(c.TargetConcurrency) {
		bad("target_concurrency", "must be > 0, got %v", c.TargetConcurrency)
	}
	if !(c.TargetUtilization > 0 && c.TargetUtilization <= 1) {
		bad("target_utilization", "must be in (0, 1], got %v", c.TargetUtilization)
	}
	if c.StableWindow < 6*time.Second || c.StableWindow > time.Hour || c.StableWindow%time.Second != 0 {
		bad("stable_window", "must be whole seconds in [6s, 1h], got %v", c.StableWindow)
	}
	if c.PanicWindow < kpaBucketSize || c.PanicWindow > c.StableWindow || c.PanicWindow%time.Second != 0 {
		bad("panic_window", "must be whole seconds in [1s, stable_window (%v)], got %v", c.StableWindow, c.PanicWindow)
	}
	if !(c.PanicThreshold >= 1.1 && c.PanicThreshold <= 10) {
		bad("panic_threshold", "must be in [1.1, 10] (110%% to 1000%%), got %v", c.PanicThreshold)
	}
	if !(c.MaxScaleUpRate > 1) || !finite(c.MaxScaleUpRate) {
		bad("max_scale_up_rate", "must be > 1, got %v", c.MaxScaleUpRate)
	}
	if !(c.MaxScaleDownRate > 1) || !finite(c.MaxScaleDownRate) {
		bad("max_scale_down_rate", "must be > 1, got %v", c.MaxScaleDownRate)
	}
	if c.MinScale < 0 {
		bad("min_scale", "must be >= 0, got %d", c.MinScale)
	}
	if c.MaxScale < 0 {
		bad("max_scale", "must be >= 0 (0: no bound), got %d", c.MaxScale)
	} else if c.MaxScale > 0 && c.MinScale > c.MaxScale {
		bad("max_scale", "must be >= min_scale (%d) or 0, got %d", c.MinScale, c.MaxScale)
	}
	if c.ScaleToZeroGracePeriod < 6*time.Second {
		bad("scale_to_zero_grace_period", "must be >= 6s, got %v", c.ScaleToZeroGracePeriod)
	}
	if c.TickInterval <= 0 {
		bad("tick_interval", "must be > 0, got %v", c.TickInterval)
	}
	return errors.Join(errs...)
}

// Config returns the configuration with defaults applied.
func (k *KPA) Config() KPAConfig { return k.cfg }

// Panicking reports whether the autoscaler is in panic mode.
func (k *KPA) Panicking() bool { return k.panicking }

// Decide implements control.Controller. Every call records the service's
// concurrency over the period [now − snap.Period, now); every TickInterval
// (and at once when the last decision was zero pods and requests arrive,
// multiscaler.Poke) it computes the desired pods and returns a
// SetReplicas when they differ from the service's current replicas. It
// allocates only when it returns an action.
func (k *KPA) Decide(now time.Duration, snap *metrics.Snapshot) []control.Action {
	k.acts = k.acts[:0]
	svc := k.svc.find(snap)
	if svc == nil {
		return k.acts
	}
	if !k.started {
		k.start(now, svc)
	}
	c, reported := kpaConcurrency(snap.Period, svc)
	if reported {
		k.win.record(now-snap.Period, now, c)
	}
	poke := k.latest == 0 && c > 0
	if now < k.next && !poke {
		return k.acts
	}
	if now >= k.next {
		t := k.cfg.TickInterval
		k.next = (now/t + 1) * t
	}
	desired, ok := k.scale(now, svc.Ready)
	if !ok {
		return k.acts
	}
	k.latest = desired
	want, apply := k.reconcile(now, desired, svc.Ready)
	if apply && want != svc.Replicas {
		k.acts = append(k.acts, control.SetReplicas{Service: k.cfg.Service, Replicas: want})
	}
	return k.acts
}

// start is newAutoscaler: an autoscaler created over more than one ready
// pod starts in panic mode at the current scale, so that it does not scale
// down before it has a window of data. The PodAutoscaler starts Activating
// (InitializeConditions).
func (k *KPA) start(now time.Duration, svc *metrics.ServiceStats) {
	k.started = true
	if svc.Ready > 1 {
		k.panicking, k.panicTime, k.maxPanicPods = true, now, svc.Ready
	}
	k.activity, k.since = kpaActivating, now
}

// kpaConcurrency estimates the service's mean number of requests in the
// system (admitted or waiting for a concurrency slot, as Knative's
// queue-proxy counts them) over the period, in requests, and whether
// anything reported it.
//
// Knative's queue-proxy averages concurrency over time; a snapshot has a
// count at the period's end (InFlight + Queued) and the latencies of the
// calls completed in it. When those calls took at most a period on average,
// the estimate is Little's law over the period, Latency.Sum / Period (the
// mean number in the system is the time spent in it per unit of time): an
// average, not a sample, and exact in the long run. When they took longer,
// or none completed, the count at the period's end is used: with calls
// longer than the period the count changes little within it, and a
// service so slow that nothing completes is overloaded, which a latency
// sum would hide. Little's law lags a sudden burst by about one latency;
// that is below a period in the case where it is used.
//
// With no ready pod Knative's activator holds the requests and reports them
// (collector.record of the activator's stat). A service with an activator
// (cluster.Activator) shows them as Queued; one without refuses them, so
// the requests refused for lack of capacity in the period count as held at
// its end too. With no ready pod and no request nothing reports, as no pod
// can be scraped, and nothing is recorded.
func kpaConcurrency(period time.Duration, svc *metrics.ServiceStats) (float64, bool) {
	p := period.Seconds()
	var c float64
	if l := svc.Latency; l.Count > 0 && p > 0 && l.Mean() <= p {
		c = l.Sum / p
	} else {
		c = float64(svc.InFlight + svc.Queued)
	}
	if svc.Ready == 0 {
		c += float64(svc.Failures.NoCapacity)
		return c, c > 0
	}
	return c, true
}

// scale is autoscaler.Scale: the desired pod count from the stable and
// panic window averages of the service's total concurrency, and false
// when there is no data (metrics.ErrNoData).
func (k *KPA) scale(now time.Duration, ready int) (int, bool) {
	if k.win.empty(now) {
		return 0, false
	}
	var stable, panicked float64
	if k.cfg.WeightedAverage {
		stable = k.win.weighted(now, k.win.nStable, k.win.firstStable, k.alphaStable)
		panicked = k.win.weighted(now, k.win.nPanic, k.win.firstPanic, k.alphaPanic)
	} else {
		stable = k.win.linear(now, k.win.nStable, k.win.firstStable)
		panicked = k.win.linear(now, k.win.nPanic, k.win.firstPanic)
	}
	// Zero ready pods count as one.
	readyPods := math.Max(1, float64(ready))
	// At least one more pod when scaling up and one fewer when scaling
	// down (the ceil and floor); the service is taken as reachable.
	maxUp := math.Ceil(k.cfg.MaxScaleUpRate * readyPods)
	maxDown := math.Floor(readyPods / k.cfg.MaxScaleDownRate)
	dspc := math.Ceil(stable / k.target)
	dppc := math.Ceil(panicked / k.target)
	desiredStable := int(math.Min(math.Max(dspc, maxDown), maxUp))
	desiredPanic := int(math.Min(math.Max(dppc, maxDown), maxUp))

	over := dppc/readyPods >= k.cfg.PanicThreshold
	switch {
	case over:
		// Enter panic, or extend it while the condition holds.
		k.panicking, k.panicTime = true, now
	case k.panicking && now > k.panicTime+k.cfg.StableWindow:
		// A full stable window without the condition: the surge has
		// reached the stable average.
		k.panicking, k.maxPanicPods = false, 0
	}
	desired := desiredStable
	if k.panicking {
		// Provision for the larger of the two, and never scale down in
		// panic mode.
		desired = max(desired, desiredPanic)
		k.maxPanicPods = max(k.maxPanicPods, desired)
		desired = k.maxPanicPods
	}
	return desired, true
}

// reconcile is the KPA reconciler's scaler.Scale and computeActiveCondition:
// it bounds the desired scale, holds scale to zero until it is allowed, and
// returns the scale to apply and whether to apply it.
func (k *KPA) reconcile(now time.Duration, desired, ready int) (int, bool) {
	want := kpaApplyBounds(k.cfg.MinScale, k.cfg.MaxScale, desired)
	want, apply := k.handleScaleToZero(now, want)
	k.computeActiveCondition(now, want, ready)
	return want, apply
}

// kpaApplyBounds is scaler.go applyBounds (max 0: no bound).
func kpaApplyBounds(lo, hi, x int) int {
	if x < lo {
		return lo
	}
	if hi != 0 && x > hi {
		return hi
	}
	return x
}

// handleScaleToZero is scaler.go handleScaleToZero with the activator
// always reachable: the activator is taken to be in the path from the
// moment the service goes inactive (the SKS switches to proxy mode in the
// same reconcile). It returns -1 for an unknown scale.
func (k *KPA) handleScaleToZero(now time.Duration, want int) (int, bool) {
	if want != 0 {
		return want, true
	}
	switch k.activity {
	case kpaActivating:
		// Stuck activating past the progress deadline: give up.
		if now-k.since > kpaActivationTimeout {
			return 0, true
		}
		return -1, false
	case kpaActive:
		// Idle for the stable window: mark inactive (the activator takes
		// the traffic) but keep the pods; otherwise keep one pod.
		if now-k.since >= k.cfg.StableWindow {
			return 0, false
		}
		return 1, true
	default:
		// Inactive for longer than the grace period (CanScaleToZero).
		return 0, now-k.since > k.cfg.ScaleToZeroGracePeriod
	}
}

// computeActiveCondition is kpa.go computeActiveCondition: want 0 makes the
// service inactive; otherwise it is active when enough pods are ready and
// activating when not, except that an unknown want (-1) leaves an inactive
// service inactive.
func (k *KPA) computeActiveCondition(now time.Duration, want, ready int) {
	minReady := max(1, k.cfg.MinScale)
	switch {
	case want == 0:
		k.mark(now, kpaInactive)
	case want < 0 && k.activity == kpaInactive:
	case ready < minReady:
		k.mark(now, kpaActivating)
	default:
		k.mark(now, kpaActive)
	}
}

// mark sets the Active condition; its transition time changes only when
// the condition does.
func (k *KPA) mark(now time.Duration, a kpaActivity) {
	if k.activity != a {
		k.activity, k.since = a, now
	}
}

// kpaSmoothing is computeSmoothingCoeff: the decay α of the weighted
// average over n buckets, such that the weights α(1−α)^i of the window sum
// to at least kpaWeightPrecision, and at least kpaMinExponent.
func kpaSmoothing(n int64) float64 {
	return math.Max(1-math.Pow(1-kpaWeightPrecision, 1/float64(n)), kpaMinExponent)
}

// kpaBuckets is the collector's concurrency buckets (aggregation
// TimedFloat64Buckets) for both windows at once: a ring of 1 s buckets as
// long as the stable window, the panic window being its newest part. A
// bucket holds the time-weighted mean of the records that overlap it, so
// that periods shorter or longer than a second weigh as their share of it
// (upstream records one scrape per bucket).
type kpaBuckets struct {
	b       []kpaBucket
	written bool
	last    int64 // the newest bucket written
	// The first bucket of the current run of data of each window: reset
	// when a window passes without data, so that the average is over a
	// partial window until it fills again.
	firstStable, firstPanic int64
	nStable, nPanic         int64 // window lengths, buckets
}

// kpaBucket is one second of data.
type kpaBucket struct {
	at    int64   // the bucket: seconds since the start of the run
	sum   float64 // concurrency × seconds recorded in it
	cover float64 // seconds of it recorded
}

func newKPABuckets(nStable, nPanic int64) kpaBuckets {
	b := make([]kpaBucket, nStable)
	for i := range b {
		b[i].at = -1
	}
	return kpaBuckets{b: b, nStable: nStable, nPanic: nPanic}
}

// record adds concurrency v over [start, end) (TimedFloat64Buckets.Record).
func (w *kpaBuckets) record(start, end time.Duration, v float64) {
	start = max(start, 0)
	if end <= start {
		return
	}
	lo, hi := int64(start/kpaBucketSize), int64((end-1)/kpaBucketSize)
	if n := int64(len(w.b)); hi-lo >= n {
		lo = hi - n + 1
		start = time.Duration(lo) * kpaBucketSize
	}
	for i := lo; i <= hi; i++ {
		bk := w.touch(i)
		if bk == nil {
			continue
		}
		s := max(start, time.Duration(i)*kpaBucketSize)
		e := min(end, time.Duration(i+1)*kpaBucketSize)
		ov := (e - s).Seconds()
		bk.sum += v * ov
		bk.cover += ov
	}
}

// touch returns bucket i for writing, advancing the newest bucket and
// resetting a window's first bucket after a window without data; nil if i
// is older than the window.
func (w *kpaBuckets) touch(i int64) *kpaBucket {
	switch {
	case !w.written:
		w.written, w.last, w.firstStable, w.firstPanic = true, i, i, i
	case i > w.last:
		gap := i - w.last
		if gap >= w.nStable {
			w.firstStable = i
		}
		if gap >= w.nPanic {
			w.firstPanic = i
		}
		w.last = i
	case i <= w.last-int64(len(w.b)):
		return nil
	}
	bk := &w.b[i%int64(len(w.b))]
	if bk.at != i {
		*bk = kpaBucket{at: i}
	}
	return bk
}

// value is bucket i's concurrency; a bucket without data counts 0.
func (w *kpaBuckets) value(i int64) float64 {
	bk := &w.b[i%int64(len(w.b))]
	if bk.at != i || bk.cover == 0 {
		return 0
	}
	return bk.sum / bk.cover
}

// nowBucket is the bucket of the instant just before now: the newest one
// a period ending at now writes.
func kpaNowBucket(now time.Duration) int64 {
	if now <= 0 {
		return 0
	}
	return int64((now - 1) / kpaBucketSize)
}

// empty reports whether no data was recorded in the stable window
// (IsEmpty).
func (w *kpaBuckets) empty(now time.Duration) bool {
	return !w.written || kpaNowBucket(now)-w.last > w.nStable
}

// linear is TimedFloat64Buckets.WindowAverage over the last n buckets: the
// mean of the buckets from the first of the current run of data (or the
// window's start) to the newest written, gaps counting 0, floored to six
// decimals.
func (w *kpaBuckets) linear(now time.Duration, n, first int64) float64 {
	e := kpaNowBucket(now)
	if !w.written || e-w.last >= n {
		return 0
	}
	lo := max(first, e-n+1)
	if lo > w.last {
		return 0
	}
	total := 0.0
	for i := lo; i <= w.last; i++ {
		total += w.value(i)
	}
	return math.Floor(total/float64(w.last-lo+1)*1e6) / 1e6
}

// weighted is WeightedFloat64Buckets.WindowAverage over the last n
// buckets: Σ α(1−α)^j × bucket, j counted back from the bucket of now, so
// buckets without data since the newest written still take their weight.
func (w *kpaBuckets) weighted(now time.Duration, n, first int64, alpha float64) float64 {
	e := kpaNowBucket(now)
	if !w.written || e-w.last > n {
		return 0
	}
	mult, numB := alpha, n
	if d := e - w.last; d > 0 {
		mult *= math.Pow(1-alpha, float64(d))
		numB -= d
	}
	ret := 0.0
	for j := int64(0); j < numB && w.last-j >= first; j++ {
		ret += w.value(w.last-j) * mult
		mult *= 1 - alpha
	}
	return ret
}
