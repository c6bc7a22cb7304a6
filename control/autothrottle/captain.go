// Package autothrottle is an Autothrottle-like autoscaler, reimplemented
// from Wang et al., "Autothrottle: A Practical Bi-Level Approach to
// Resource Management for SLO-Targeted Microservices", NSDI '24: per
// service, a Captain holds a CPU throttle ratio at a target by resizing the
// service's CPU limit; for the application, a Tower picks the targets.
//
// The paper's body could not be read where this was written; its abstract
// and the authors' release (github.com/microsoft/autothrottle, commit
// d237d7f: Captain in worker-daemon.py, Tower in utils.py) are followed,
// and every rule below cites the release. Departures for the simulator:
// a service's replicas share one limit (SetResources), so a Captain reads
// the throttled periods of all of them and the busiest one's use; its
// samples are the control periods (the release samples every 100 ms),
// with the windows kept in time; and the limit starts at the service's,
// not at the node's 32 cores, and stays within [MinLimit, MaxLimit].
package autothrottle

import (
	"cmp"
	"math"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
)

// CaptainConfig are a Captain's constants (worker-daemon.py's, none of
// them an operator's knob). Zero fields take DefaultCaptain's.
type CaptainConfig struct {
	Decision       time.Duration // between decisions (self.period = 1 s)
	ThrottleWindow time.Duration // the throttle ratio's window (10 slots of 100 ms)
	UsageWindow    time.Duration // the usage window (50 slots of 100 ms)
	Margin         float64       // the initial margin on the usage's deviation (3)
	Band           float64       // scale up (and roll back) above Band times the target (3)
	Saving         float64       // scale down only to at most Saving times the limit (0.9)
	MaxCut         float64       // and to at least MaxCut times it (0.5)
	MinLimit       float64       // cores (0.01)
	MaxLimit       float64       // cores (none in the release; 16 here, a node)
}

// DefaultCaptain is the release's Captain.
func DefaultCaptain() CaptainConfig {
	return CaptainConfig{Decision: time.Second, ThrottleWindow: time.Second, UsageWindow: 5 * time.Second,
		Margin: 3, Band: 3, Saving: 0.9, MaxCut: 0.5, MinLimit: 0.01, MaxLimit: 16}
}

// Captain holds one service's throttle ratio at Target.
type Captain struct {
	Service string
	// Target is the throttle ratio to hold, set by the Tower.
	Target float64
	cfg    CaptainConfig

	limit, prev float64 // the limit, and the one before the last decision
	margin      float64
	lastDown    bool // the last decision scaled down (a rollback may undo it)
	next        time.Duration
	thr         []sample // throttled periods per sample since the window's reset
	use         []sample // the busiest instance's cores per sample
	hint        int
}

type sample struct {
	at time.Duration
	x  float64
}

// NewCaptain returns the Captain of service, whose limit starts at limit
// cores. The usage window starts full of zeros, as the release's.
func NewCaptain(service string, limit float64, cfg CaptainConfig) *Captain {
	d := DefaultCaptain()
	cfg.Decision = cmp.Or(cfg.Decision, d.Decision)
	cfg.ThrottleWindow = cmp.Or(cfg.ThrottleWindow, d.ThrottleWindow)
	cfg.UsageWindow = cmp.Or(cfg.UsageWindow, d.UsageWindow)
	cfg.Margin, cfg.Band, cfg.Saving = cmp.Or(cfg.Margin, d.Margin), cmp.Or(cfg.Band, d.Band), cmp.Or(cfg.Saving, d.Saving)
	cfg.MaxCut, cfg.MinLimit, cfg.MaxLimit = cmp.Or(cfg.MaxCut, d.MaxCut), cmp.Or(cfg.MinLimit, d.MinLimit), cmp.Or(cfg.MaxLimit, d.MaxLimit)
	return &Captain{Service: service, cfg: cfg, limit: limit, prev: limit, margin: cfg.Margin, next: cfg.Decision, hint: -1}
}

// Limit is the CPU limit the Captain holds, cores.
func (c *Captain) Limit() float64 { return c.limit }

// Decide reads the service's period and returns the limit to set, if it
// changed: the rollback check every period, a decision every Decision.
func (c *Captain) Decide(now time.Duration, snap *metrics.Snapshot) []control.Action {
	c.hint = snap.ServiceIndex(c.Service, c.hint)
	if c.hint < 0 {
		return nil
	}
	st := &snap.Services[c.hint]
	busiest := 0.0
	for _, in := range st.Instances {
		busiest = max(busiest, in.CPUUse)
	}
	c.thr = append(c.thr, sample{now, float64(st.CFSThrottled)})
	c.use = append(c.use, sample{now, busiest})
	c.use = trim(c.use, now-c.cfg.UsageWindow)
	c.thr = trim(c.thr, now-c.cfg.ThrottleWindow)
	r := c.ratio(len(st.Instances))
	before := c.limit
	switch {
	case now >= c.next:
		c.decide(r, snap.Period)
		c.next = now + c.cfg.Decision
	case c.lastDown && r > c.cfg.Band*c.Target: // worker-daemon.py: the rollback, checked every sample
		c.limit = 2*c.prev - c.limit
		c.margin += r - c.Target
		c.thr, c.lastDown = c.thr[:0], false
	}
	c.limit = min(max(c.limit, c.cfg.MinLimit), c.cfg.MaxLimit)
	if math.Abs(c.limit-before) < 1e-5 {
		return nil
	}
	return []control.Action{control.SetResources{Service: c.Service, CPU: c.limit}}
}

// ratio is the throttled periods in the window over the window's wall
// periods (10 for one instance): a window reset at a decision fills up
// from zero, as the release's slots do.
func (c *Captain) ratio(instances int) float64 {
	if instances == 0 {
		return 0
	}
	var n float64
	for _, s := range c.thr {
		n += s.x
	}
	return n / (float64(instances) * float64(c.cfg.ThrottleWindow/metrics.CFSPeriod))
}

// decide is worker-daemon.py's scaler: the margin integrates the error;
// above Band times the target the limit grows by the excess; otherwise it
// falls to the usage's peak plus margin deviations if that saves at least
// 1 − Saving, by at most 1 − MaxCut.
func (c *Captain) decide(r float64, period time.Duration) {
	c.prev = c.limit
	peak, sd := peakAndDeviation(c.use, int(c.cfg.UsageWindow/max(period, time.Millisecond)))
	c.margin = max(0, c.margin+r-c.Target)
	c.lastDown = false
	if r > c.cfg.Band*c.Target {
		c.limit *= 1 + r - c.cfg.Band*c.Target
	} else if u := peak + c.margin*sd; u <= c.cfg.Saving*c.limit {
		c.limit, c.lastDown = max(c.cfg.MaxCut*c.limit, u), true
	}
	c.thr = c.thr[:0]
}

// peakAndDeviation are the largest value and the sample standard
// deviation of the window's slots, those not yet filled counting as zero.
func peakAndDeviation(s []sample, slots int) (peak, sd float64) {
	n := max(slots, len(s))
	var sum, sq float64
	for _, x := range s {
		peak = max(peak, x.x)
		sum += x.x
		sq += x.x * x.x
	}
	if n < 2 {
		return peak, 0
	}
	mean := sum / float64(n)
	return peak, math.Sqrt(max(0, (sq-float64(n)*mean*mean)/float64(n-1)))
}

// trim drops the samples at or before from.
func trim(s []sample, from time.Duration) []sample {
	i := 0
	for i < len(s) && s[i].at <= from {
		i++
	}
	return append(s[:0], s[i:]...)
}
