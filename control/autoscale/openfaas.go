package autoscale

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
)

// OpenFaaS is the OpenFaaS Pro autoscaler for one function (service), as
// documented; its source is not public. The rules and their sources:
//
//   - docs.openfaas.com/architecture/autoscaling ("How auto-scaling
//     works", "Scaling modes", "Smoothing out scaling down with a stable
//     window"; openfaas/docs docs/architecture/autoscaling.md): the labels
//     com.openfaas.scale.min, .max, .target, .target-proportion, .type,
//     .zero, .zero-duration and .down.window with their defaults; a query
//     run periodically gives the function's current load summed over its
//     replicas, and desired = ready pods × (mean load per pod / (target ×
//     target-proportion)), rounded up (the documented examples use ceil)
//     and bounded by min and max; with a scale-down window, scaling down
//     goes only to the highest recommendation recorded within it, while
//     scaling up and to zero are unaffected;
//   - openfaas/faas-netes chart/openfaas/templates/prometheus-pro-cfg.yaml
//     (recording rules job:function_current_load:sum): the load of type
//     rps is ceil(sum(rate(gateway_function_invocation_total[30s]))), the
//     responses of every status per second; of type capacity
//     ceil(sum(max_over_time(gateway_function_invocation_inflight[45s:5s]))),
//     the most requests in flight at the gateway over 45 s;
//   - docs.openfaas.com/openfaas-pro/scale-to-zero and the autoscaling
//     page's "Scaling to Zero": with com.openfaas.scale.zero a function
//     that received no request for zero-duration goes to zero replicas,
//     and the gateway (scale_from_zero, on by default) scales it back to
//     min replicas when a request arrives, holding the request.
//
// Choices where the documentation is silent or ambiguous:
//
//   - ready pods × mean load per pod is the load summed over the replicas,
//     so desired = ceil(load / (target × target-proportion)), also when no
//     pod is ready yet; a quotient within 1e-9 of an integer counts as
//     that integer, so that float rounding of target × target-proportion
//     cannot add a replica;
//   - the autoscaler's interval is not documented: PollingInterval
//     defaults to 15s, the evaluation interval of the recording rules it
//     reads (the load cannot change faster);
//   - the load is computed at the decision over the last RPSWindow or
//     CapacityWindow of snapshots, not read from a recording rule
//     evaluated up to 15 s earlier;
//   - the idle check runs with the scaler, every PollingInterval, and
//     counts a period with any request (as responses or refusals) as
//     activity up to its end; idleness counts from the first Decide;
//   - a service without an activator (cluster.Activator) refuses requests
//     when no instance is ready (NoCapacity) where the gateway would hold
//     them: the rps load counts them as responses, and the capacity load
//     counts those of a period that ends with no instance ready as in
//     flight at its end; a service with one holds them (Queued), and they
//     count as requests for the scale from zero;
//   - type cpu is not implemented.
type OpenFaaS struct {
	cfg OpenFaaSConfig
	svc serviceRef

	started     bool
	nextPoll    time.Duration
	lastRequest time.Duration // the end of the last period with a request

	load countWindow   // responses (rps) or requests in flight (capacity) per period
	recs []timestamped // recommendations within the scale-down window
	acts []control.Action
}

// OpenFaaSConfig is one function's scaling labels. Zero fields take the
// documented defaults noted (docs.openfaas.com/architecture/autoscaling).
type OpenFaaSConfig struct {
	// Service is the function scaled.
	Service string `yaml:"-"`
	// MinReplicas (com.openfaas.scale.min, 1, at least 1) and MaxReplicas
	// (com.openfaas.scale.max, 20) bound the replicas under load; only
	// Zero takes the function below MinReplicas.
	MinReplicas int `yaml:"-"`
	MaxReplicas int `yaml:"-"`
	// Type is com.openfaas.scale.type: OpenFaaSRPS (default) or
	// OpenFaaSCapacity.
	Type string `yaml:"type"`
	// Target is com.openfaas.scale.target (50): the load per replica, in
	// requests per second (rps) or requests in flight (capacity).
	Target float64 `yaml:"target"`
	// TargetProportion is com.openfaas.scale.target-proportion (0.90), in
	// (0, 1]: replicas are added when the load per replica reaches
	// Target × TargetProportion.
	TargetProportion float64 `yaml:"target_proportion"`
	// Zero is com.openfaas.scale.zero (false): scale to zero when idle.
	Zero bool `yaml:"zero"`
	// ZeroDuration is com.openfaas.scale.zero-duration (15m): how long
	// without a request before scaling to zero.
	ZeroDuration time.Duration `yaml:"zero_duration"`
	// ScaleDownWindow is com.openfaas.scale.down.window (0: off, at most
	// 5m): scaling down goes only to the highest recommendation of this
	// long.
	ScaleDownWindow time.Duration `yaml:"scale_down_window"`
	// PollingInterval (15s, not documented upstream) is how often the
	// autoscaler decides.
	PollingInterval time.Duration `yaml:"polling_interval"`
	// RPSWindow (30s) and CapacityWindow (45s) are the ranges of the rps
	// and capacity recording rules.
	RPSWindow      time.Duration `yaml:"rps_window"`
	CapacityWindow time.Duration `yaml:"capacity_window"`
}

// OpenFaaS scaling types (com.openfaas.scale.type).
const (
	OpenFaaSRPS      = "rps"
	OpenFaaSCapacity = "capacity"
)

var _ control.Controller = (*OpenFaaS)(nil)

// NewOpenFaaS returns an OpenFaaS autoscaler for cfg with its defaults
// applied.
func NewOpenFaaS(cfg OpenFaaSConfig) (*OpenFaaS, error) {
	setDefault(&cfg.MinReplicas, 1)
	setDefault(&cfg.MaxReplicas, 20)
	setDefault(&cfg.Type, OpenFaaSRPS)
	setDefault(&cfg.Target, 50)
	setDefault(&cfg.TargetProportion, 0.90)
	setDefault(&cfg.ZeroDuration, 15*time.Minute)
	setDefault(&cfg.PollingInterval, 15*time.Second)
	setDefault(&cfg.RPSWindow, 30*time.Second)
	setDefault(&cfg.CapacityWindow, 45*time.Second)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &OpenFaaS{cfg: cfg, svc: serviceRef{name: cfg.Service}, acts: make([]control.Action, 0, 1)}, nil
}

// Validate reports every invalid field with its path. It expects the
// defaults applied (NewOpenFaaS does that first).
func (c *OpenFaaSConfig) Validate() error {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	if c.Service == "" {
		bad("service", "required")
	}
	if c.MinReplicas < 1 {
		bad("min_replicas", "must be >= 1 (scale to zero is zero: true), got %d", c.MinReplicas)
	}
	if c.MaxReplicas < c.MinReplicas || c.MaxReplicas < 1 {
		bad("max_replicas", "must be >= min_replicas (%d), got %d", c.MinReplicas, c.MaxReplicas)
	}
	switch c.Type {
	case OpenFaaSRPS, OpenFaaSCapacity:
	case "cpu":
		bad("type", "cpu is not implemented: want rps or capacity")
	default:
		bad("type", "want rps or capacity, got %q", c.Type)
	}
	if !(c.Target > 0) || math.IsInf(c.Target, 0) {
		bad("target", "must be > 0, got %v", c.Target)
	}
	if !(c.TargetProportion > 0 && c.TargetProportion <= 1) {
		bad("target_proportion", "must be in (0, 1], got %v", c.TargetProportion)
	}
	if c.ZeroDuration <= 0 {
		bad("zero_duration", "must be > 0, got %v", c.ZeroDuration)
	}
	if c.ScaleDownWindow < 0 || c.ScaleDownWindow > 5*time.Minute {
		bad("scale_down_window", "must be in [0, 5m], got %v", c.ScaleDownWindow)
	}
	for _, d := range []struct {
		path string
		v    time.Duration
	}{{"polling_interval", c.PollingInterval}, {"rps_window", c.RPSWindow}, {"capacity_window", c.CapacityWindow}} {
		if d.v <= 0 {
			bad(d.path, "must be > 0, got %v", d.v)
		}
	}
	return errors.Join(errs...)
}

// Config returns the configuration with defaults applied.
func (o *OpenFaaS) Config() OpenFaaSConfig { return o.cfg }

// Decide implements control.Controller. Every call records the period that
// ended at now. A function at zero replicas that receives a request is
// scaled to MinReplicas at once (the gateway's scale from zero); otherwise,
// every PollingInterval from the first call, the autoscaler scales an idle
// function to zero (with Zero) or to the desired replicas. It returns one
// SetReplicas when they differ from the current ones, and allocates only
// then.
func (o *OpenFaaS) Decide(now time.Duration, snap *metrics.Snapshot) []control.Action {
	o.acts = o.acts[:0]
	svc := o.svc.find(snap)
	if svc == nil {
		return o.acts
	}
	if !o.started {
		o.started, o.nextPoll, o.lastRequest = true, now, now-snap.Period
	}
	requests := svc.Arrivals + svc.Failures.NoCapacity
	if svc.Ready == 0 { // held for want of an instance (cluster.Activator): the gateway's scale from zero sees them
		requests += int64(svc.Queued)
	}
	if requests > 0 {
		o.lastRequest = now
	}
	if snap.Period > 0 {
		o.load.add(now-snap.Period, now, openFaaSSample(o.cfg.Type, svc), max(o.cfg.RPSWindow, o.cfg.CapacityWindow))
	}
	poll := now >= o.nextPoll
	for o.nextPoll <= now {
		o.nextPoll += o.cfg.PollingInterval
	}
	current, want := svc.Replicas, svc.Replicas
	switch {
	case current == 0:
		// Idle at zero: the autoscaler leaves it; the gateway scales it
		// to min replicas when a request comes.
		if requests > 0 {
			want = o.cfg.MinReplicas
		}
	case poll:
		want = o.scale(now, current)
	}
	if want != current {
		o.acts = append(o.acts, control.SetReplicas{Service: o.cfg.Service, Replicas: want})
	}
	return o.acts
}

// openFaaSSample is what the period adds to the load's series: for rps the
// responses of every kind (gateway_function_invocation_total counts every
// status code): completions, 429s, OOM-killed calls and calls refused for
// lack of capacity, each counted once by the simulator; for capacity the
// requests in flight at the period's end (admitted or queued at the
// function), plus, with no instance ready, those refused in the period,
// which the gateway would hold.
func openFaaSSample(typ string, svc *metrics.ServiceStats) float64 {
	f := &svc.Failures
	if typ == OpenFaaSCapacity {
		c := svc.InFlight + svc.Queued
		if svc.Ready == 0 {
			c += int(f.NoCapacity)
		}
		return float64(c)
	}
	return float64(svc.Completions + f.Rejected + f.OOM + f.NoCapacity)
}

// scale is one turn of the autoscaler ([Idler] then [Scaler]) for a
// function with replicas.
func (o *OpenFaaS) scale(now time.Duration, current int) int {
	c := &o.cfg
	if c.Zero && now-o.lastRequest >= c.ZeroDuration {
		return 0
	}
	desired := ceilRatio(o.currentLoad(now), c.Target*c.TargetProportion)
	desired = min(max(desired, c.MinReplicas), c.MaxReplicas)
	if c.ScaleDownWindow <= 0 {
		return desired
	}
	// Record the recommendation; scale down only to the highest of the
	// window.
	i := 0
	for i < len(o.recs) && o.recs[i].at <= now-c.ScaleDownWindow {
		i++
	}
	o.recs = append(append(o.recs[:0], o.recs[i:]...), timestamped{now, desired})
	if desired >= current {
		return desired
	}
	highest := desired
	for _, r := range o.recs {
		highest = max(highest, r.value)
	}
	return min(highest, current)
}

// currentLoad is job:function_current_load:sum for the function's type.
func (o *OpenFaaS) currentLoad(now time.Duration) float64 {
	// ceil as the recording rules do, tolerant of float rounding in the
	// windowed sum.
	if o.cfg.Type == OpenFaaSCapacity {
		return float64(ceilRatio(o.load.max(now, o.cfg.CapacityWindow), 1))
	}
	return float64(ceilRatio(o.load.rate(now, o.cfg.RPSWindow), 1))
}

// ceilRatio is ceil(a/b), a quotient within 1e-9 (relative) of an integer
// taken as that integer.
func ceilRatio(a, b float64) int {
	q := a / b
	if r := math.Round(q); math.Abs(q-r) <= 1e-9*math.Max(1, math.Abs(q)) {
		return int(r)
	}
	return int(math.Ceil(q))
}
