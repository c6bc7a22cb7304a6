package autoscale

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
)

// KEDA is a KEDA ScaledObject with one request-rate trigger (a Prometheus
// scaler whose query is the service's requests per second, metricType
// AverageValue) for one service, ported from kedacore/keda:
//
//   - pkg/scaling/scale_handler.go (startScaleLoop, checkScalers): the
//     triggers are checked once when the ScaledObject is created and then
//     every PollingInterval;
//   - pkg/scalers/prometheus_scaler.go (GetMetricsAndActivity): the trigger
//     is active when the query value is above ActivationThreshold;
//   - pkg/scaling/executor/scale_scaledobjects.go (RequestScale,
//     scaleFromZeroOrIdle, scaleToZeroOrIdle): KEDA itself only moves the
//     service between 0 and its minimum: an active trigger at 0 replicas
//     scales to max(MinReplicaCount, 1), and with MinReplicaCount 0 an
//     inactive one scales to 0 once the last activity is more than
//     CooldownPeriod old (or, never active, once the ScaledObject is more
//     than InitialCooldownPeriod old); an inactive one below
//     MinReplicaCount is raised to it;
//   - controllers/keda/hpa.go (newHPAForScaledObject, getHPAMinReplicas,
//     getHPAMaxReplicas) and pkg/scalers/scaler.go (GetMetricTargetMili,
//     GenerateMetricInMili): between 1 and MaxReplicaCount the HPA that
//     KEDA creates scales, with minReplicas max(MinReplicaCount, 1),
//     maxReplicas MaxReplicaCount, the default behaviour, and one External
//     metric with an AverageValue target of Threshold, values in
//     milli-units.
//
// The HPA's External AverageValue rule is kubernetes/kubernetes
// pkg/controller/podautoscaler/replica_calculator.go
// GetExternalPerPodMetricReplicas: usageRatio = total / (target ×
// statusReplicas), and outside the tolerance desired = ceil(total /
// target). That is not the HPA port's MetricRPS (a Pods metric: the rate
// split over the ready pods, pending pods ignored and the result scaled by
// the pods counted, calcPlainMetricReplicas), so the rule is implemented
// here; the rest of the HPA (recommendation stabilisation, rate limits,
// scale events: horizontal.go normalizeDesiredReplicasWithBehaviors and
// storeScaleEvent) is the HPA port's own code, on an HPA value built with
// the default behaviour.
//
// The rate is measured as KEDA's HTTP add-on interceptor counts it: every
// request addressed to the service, including those the simulator refuses
// because no instance is ready (the interceptor would hold them while the
// service scales from zero). See kedaOffered.
//
// Left out or simplified: idleReplicaCount, fallback, pause annotations,
// scalingModifiers and a custom HPA behaviour (the HPA has the default
// one); the query is evaluated exactly over the last RateWindow of
// snapshots when KEDA or the HPA asks (no scrape interval, no
// extrapolation at the window's edges, no metric caching, as with
// useCachedMetrics false); when a poll and an HPA sync fall in the same
// period, KEDA acts first and the HPA sees the replicas it set.
type KEDA struct {
	cfg KEDAConfig
	svc serviceRef
	hpa *HPA // the HPA KEDA creates: only its behaviour is used

	started  bool
	created  time.Duration // the ScaledObject's creation
	nextPoll time.Duration
	nextSync time.Duration

	// LastActiveTime of the ScaledObject's status (updateLastActiveTime).
	everActive bool
	lastActive time.Duration

	rate countWindow // requests offered per period
	acts []control.Action
}

// KEDAConfig is one ScaledObject with a request-rate trigger. Zero fields
// take the defaults noted: KEDA's (keda.sh/docs ScaledObject
// specification, pkg/scaling/executor/scale_executor.go constants,
// controllers/keda/hpa.go) and the kube-controller-manager's for the HPA.
// A zero CooldownPeriod takes the default: use a nanosecond for
// "immediately".
type KEDAConfig struct {
	// Service is the service scaled.
	Service string `yaml:"-"`
	// MinReplicaCount (0) and MaxReplicaCount (100) bound the replicas;
	// MinReplicaCount 0 allows scale to zero.
	MinReplicaCount int `yaml:"-"`
	MaxReplicaCount int `yaml:"-"`
	// Threshold is the trigger's threshold: the target requests per
	// second per replica (required, > 0).
	Threshold float64 `yaml:"threshold"`
	// ActivationThreshold (0): the trigger is active while the rate, in
	// requests per second, is above it.
	ActivationThreshold float64 `yaml:"activation_threshold"`
	// PollingInterval (30s) is how often KEDA checks the trigger.
	PollingInterval time.Duration `yaml:"polling_interval"`
	// CooldownPeriod (300s) is how long after the trigger was last active
	// KEDA waits before scaling to zero.
	CooldownPeriod time.Duration `yaml:"cooldown_period"`
	// InitialCooldownPeriod (0) is how long after its creation a
	// ScaledObject whose trigger was never active waits before scaling to
	// zero.
	InitialCooldownPeriod time.Duration `yaml:"initial_cooldown_period"`
	// RateWindow (2m) is the range of the trigger's query,
	// sum(rate(requests[RateWindow])): the rate is the requests of the
	// last RateWindow over its length (or over the time since the start,
	// when shorter). 2m is the query of the KEDA Prometheus scaler's
	// documentation (keda.sh/docs/2.17/scalers/prometheus).
	RateWindow time.Duration `yaml:"rate_window"`
	// HPASyncPeriod is the HPA's --horizontal-pod-autoscaler-sync-period
	// (15s): how often the HPA asks KEDA's metrics server for the rate.
	HPASyncPeriod time.Duration `yaml:"hpa_sync_period"`
	// Tolerance is the HPA's (0.1): no change while |1 − usageRatio| ≤
	// Tolerance.
	Tolerance float64 `yaml:"tolerance"`
}

// KEDA defaults.
const (
	kedaDefaultPollingInterval = 30 * time.Second  // scale_handler.go defaultPollingInterval
	kedaDefaultCooldownPeriod  = 300 * time.Second // scale_executor.go defaultCooldownPeriod
	kedaDefaultMaxReplicas     = 100               // controllers/keda/hpa.go defaultHPAMaxReplicas
	kedaDefaultRateWindow      = 2 * time.Minute
)

var _ control.Controller = (*KEDA)(nil)

// NewKEDA returns a KEDA ScaledObject for cfg with its defaults applied.
func NewKEDA(cfg KEDAConfig) (*KEDA, error) {
	setDefault(&cfg.MaxReplicaCount, kedaDefaultMaxReplicas)
	setDefault(&cfg.PollingInterval, kedaDefaultPollingInterval)
	setDefault(&cfg.CooldownPeriod, kedaDefaultCooldownPeriod)
	setDefault(&cfg.RateWindow, kedaDefaultRateWindow)
	setDefault(&cfg.HPASyncPeriod, 15*time.Second)
	setDefault(&cfg.Tolerance, 0.1)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// getHPAMinReplicas: the HPA's minReplicas cannot be 0.
	hpa, err := NewHPA(HPAConfig{
		Service:     cfg.Service,
		MinReplicas: max(cfg.MinReplicaCount, 1),
		MaxReplicas: cfg.MaxReplicaCount,
		Metrics:     []HPAMetric{{Kind: MetricRPS, Target: cfg.Threshold}}, // not evaluated: see kedaReplicas
		Tolerance:   cfg.Tolerance,
		SyncPeriod:  cfg.HPASyncPeriod,
	})
	if err != nil {
		return nil, fmt.Errorf("new keda: hpa: %w", err)
	}
	return &KEDA{
		cfg:      cfg,
		svc:      serviceRef{name: cfg.Service},
		hpa:      hpa,
		nextSync: cfg.HPASyncPeriod,
		acts:     make([]control.Action, 0, 1),
	}, nil
}

// Validate reports every invalid field with its path. It expects the
// defaults applied (NewKEDA does that first).
func (c *KEDAConfig) Validate() error {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if c.Service == "" {
		bad("service", "required")
	}
	if c.MinReplicaCount < 0 {
		bad("min_replica_count", "must be >= 0, got %d", c.MinReplicaCount)
	}
	if c.MaxReplicaCount < 1 || c.MaxReplicaCount < c.MinReplicaCount {
		bad("max_replica_count", "must be >= 1 and >= min_replica_count (%d), got %d", c.MinReplicaCount, c.MaxReplicaCount)
	}
	// GetMetricTargetMili keeps milli-units: a threshold below 0.001 is 0.
	if !(c.Threshold >= 0.001) || !finite(c.Threshold) {
		bad("threshold", "must be >= 0.001 requests per second per replica, got %v", c.Threshold)
	}
	if !finite(c.ActivationThreshold) {
		bad("activation_threshold", "must be a finite number, got %v", c.ActivationThreshold)
	}
	for _, d := range []struct {
		path string
		v    time.Duration
	}{{"polling_interval", c.PollingInterval}, {"rate_window", c.RateWindow}, {"hpa_sync_period", c.HPASyncPeriod}} {
		if d.v <= 0 {
			bad(d.path, "must be > 0, got %v", d.v)
		}
	}
	for _, d := range []struct {
		path string
		v    time.Duration
	}{{"cooldown_period", c.CooldownPeriod}, {"initial_cooldown_period", c.InitialCooldownPeriod}} {
		if d.v < 0 {
			bad(d.path, "must be >= 0, got %v", d.v)
		}
	}
	if c.Tolerance < 0 || c.Tolerance >= 1 {
		bad("tolerance", "must be in [0, 1), got %v", c.Tolerance)
	}
	return errors.Join(errs...)
}

// Config returns the configuration with defaults applied.
func (k *KEDA) Config() KEDAConfig { return k.cfg }

// Decide implements control.Controller. Every call records the requests
// offered to the service in the period that ended at now. At every poll
// (the first call, then every PollingInterval) KEDA's scale executor runs
// on the trigger's activity; at every HPA sync (multiples of
// HPASyncPeriod) the HPA runs on the replicas KEDA left. It returns one
// SetReplicas when the result differs from the service's replicas, and
// allocates only then.
func (k *KEDA) Decide(now time.Duration, snap *metrics.Snapshot) []control.Action {
	k.acts = k.acts[:0]
	svc := k.svc.find(snap)
	if svc == nil {
		return k.acts
	}
	if !k.started {
		// The ScaledObject exists from the start of the first period
		// observed; its triggers are checked at once.
		k.started, k.created, k.nextPoll = true, now-snap.Period, now
	}
	if snap.Period > 0 {
		k.rate.add(now-snap.Period, now, kedaOffered(svc), k.cfg.RateWindow)
	}
	current := svc.Replicas
	want := current
	if now >= k.nextPoll {
		for k.nextPoll <= now {
			k.nextPoll += k.cfg.PollingInterval
		}
		want = k.requestScale(now, current, k.rate.rate(now, k.cfg.RateWindow))
	}
	if now >= k.nextSync {
		for k.nextSync <= now {
			k.nextSync += k.cfg.HPASyncPeriod
		}
		if d, ok := k.hpaReconcile(now, want); ok && d != want {
			k.hpa.storeScaleEvent(now, want, d)
			want = d
		}
	}
	if want != current {
		k.acts = append(k.acts, control.SetReplicas{Service: k.cfg.Service, Replicas: want})
	}
	return k.acts
}

// kedaOffered is the number of requests addressed to the service in the
// period: the calls that reached an instance (Arrivals) plus those refused
// because no instance was up to take them. The simulator counts a call
// refused at the load balancer (no instance up) only as NoCapacity, and
// one that reached an instance that was starting or restarting as both an
// arrival and NoCapacity; the second kind needs a call in transit across
// locations while its instance goes down, so Arrivals + NoCapacity counts
// it twice, a negligible excess. At zero ready instances every request is
// refused and the rate is the refused ones: what KEDA's HTTP add-on
// interceptor, which holds them, counts.
func kedaOffered(svc *metrics.ServiceStats) float64 {
	return float64(svc.Arrivals + svc.Failures.NoCapacity)
}

// requestScale is RequestScale for a ScaledObject with minReplicaCount set,
// no idleReplicaCount, no fallback and no pause annotations: the replicas
// KEDA's scale executor sets, from the current ones and the trigger's
// value.
func (k *KEDA) requestScale(now time.Duration, current int, rate float64) int {
	minReplicas := k.cfg.MinReplicaCount
	if rate > k.cfg.ActivationThreshold { // prometheus_scaler.go: val > activationThreshold
		// Active: scaleFromZeroOrIdle at zero, otherwise updateLastActiveTime.
		k.everActive, k.lastActive = true, now
		if current == 0 {
			return max(minReplicas, 1)
		}
		return current
	}
	switch {
	case current > 0 && minReplicas == 0:
		// scaleToZeroOrIdle: time.Before is strict, so the last activity
		// must be more than the cooldown old.
		if !k.everActive && k.created+k.cfg.InitialCooldownPeriod < now ||
			k.everActive && k.lastActive+k.cfg.CooldownPeriod < now {
			return 0
		}
	case current < minReplicas:
		return minReplicas
	}
	return current
}

// hpaReconcile is the HPA's reconcileAutoscaler for KEDA's HPA: its bounds,
// the External AverageValue proposal, then the HPA port's behaviour
// (stabilisation and rate limits); false when the HPA does not scale
// (no replicas: "ScalingDisabled").
func (k *KEDA) hpaReconcile(now time.Duration, current int) (int, bool) {
	h := k.hpa
	if h.recs == nil { // recordInitialRecommendation
		h.recs = append(h.recs, timestamped{now, current})
	}
	lo, hi := h.cfg.MinReplicas, h.cfg.MaxReplicas
	switch {
	case current == 0:
		return 0, false // minReplicas is at least 1
	case current > hi:
		return hi, true
	case current < lo:
		return lo, true
	}
	proposal := kedaReplicas(current, k.rate.rate(now, k.cfg.RateWindow), k.cfg.Threshold, k.cfg.Tolerance)
	return h.normalize(now, current, proposal), true
}

// kedaReplicas is GetExternalPerPodMetricReplicas with the metric and the
// target in milli-units as KEDA reports them (GenerateMetricInMili and
// GetMetricTargetMili truncate value × 1000): statusReplicas are the
// service's replicas, starting ones included.
func kedaReplicas(statusReplicas int, rate, threshold, tolerance float64) int {
	usage := float64(int64(rate * 1000))
	target := float64(int64(threshold * 1000))
	ratio := usage / (target * float64(statusReplicas))
	if math.Abs(1-ratio) > tolerance {
		return int(math.Ceil(usage / target))
	}
	return statusReplicas
}

// countWindow keeps per-period counts (or levels) of one quantity over the
// last few periods, for windowed rates and maxima as Prometheus computes
// them over a range. Adding reuses the slice: steady state allocates
// nothing.
type countWindow struct {
	s       []countSample
	started bool
	first   time.Duration // the start of the first period recorded
}

type countSample struct {
	start, end time.Duration
	v          float64
}

// add records v for the period [start, end) and drops samples that ended
// keep or more before end.
func (w *countWindow) add(start, end time.Duration, v float64, keep time.Duration) {
	if !w.started {
		w.started, w.first = true, start
	}
	w.s = append(w.s, countSample{start, end, v})
	i := 0
	for i < len(w.s)-1 && w.s[i].end <= end-keep {
		i++
	}
	if i > 0 {
		w.s = append(w.s[:0], w.s[i:]...)
	}
}

// rate is the count per second over the last win before now: the counts of
// the periods within it, a period that straddles its start counted in
// proportion, over win or the time since the first period when shorter.
func (w *countWindow) rate(now, win time.Duration) float64 {
	if !w.started {
		return 0
	}
	from := max(now-win, w.first)
	if now <= from {
		return 0
	}
	sum := 0.0
	for _, s := range w.s {
		lo, hi := max(s.start, from), min(s.end, now)
		if hi <= lo || s.end <= s.start {
			continue
		}
		sum += s.v * float64(hi-lo) / float64(s.end-s.start)
	}
	return sum / (now - from).Seconds()
}

// max is the largest value recorded at a period's end within the last win
// before now (max_over_time), the newest one always included (a gauge
// keeps its last value between scrapes).
func (w *countWindow) max(now, win time.Duration) float64 {
	if len(w.s) == 0 {
		return 0
	}
	m := w.s[len(w.s)-1].v
	for _, s := range w.s {
		if s.end > now-win && s.end <= now {
			m = math.Max(m, s.v)
		}
	}
	return m
}
