package faasconf

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-project/shoal/metrics"
)

// QoS is a workflow's target over a time window. The paper's (section
// 5.1.3: "average latency and throughput in one time window") is a mean
// end-to-end latency of at most Latency, with at least MinServed of the
// requests served (the rest, refused by a concurrency limit or failed,
// cost throughput). With Percentile set (e.g. 0.99) Latency bounds that
// percentile of the window's requests instead, refused and failed ones
// counted as over it: at least Percentile of the requests served within
// Latency, the measured form of Jolteon's chance constraint P(latency ≤
// SLO) ≥ 1 − δ (Zhang et al., NSDI '24, section 3) with δ = 1 − Percentile.
type QoS struct {
	Latency    time.Duration `json:"latency"`
	MinServed  float64       `json:"min_served"`
	Percentile float64       `json:"percentile,omitempty"`
	// Slack, with no Latency, asks for Latency to be set at Slack times
	// what the workflow's own configuration achieves (0: the default).
	Slack float64 `json:"-"`
}

// Validate reports a QoS that cannot be met or checked.
func (q QoS) Validate() error {
	switch {
	case q.Latency <= 0:
		return fmt.Errorf("latency %v: must be positive", q.Latency)
	case !(q.MinServed >= 0 && q.MinServed <= 1):
		return fmt.Errorf("min_served %v: must be in [0, 1]", q.MinServed)
	case !(q.Percentile >= 0 && q.Percentile < 1):
		return fmt.Errorf("percentile %v: must be in [0, 1) (0: the mean)", q.Percentile)
	}
	return nil
}

// String is the QoS as a user writes it (ParseQoS).
func (q QoS) String() string {
	s := q.Kind() + ":" + q.Latency.String()
	if q.MinServed != 0.99 {
		s += ",served:" + strconv.FormatFloat(100*q.MinServed, 'f', -1, 64) + "%"
	}
	return s
}

// Kind is the QoS without its latency: "mean" or "p99".
func (q QoS) Kind() string {
	if q.Percentile > 0 {
		return "p" + strconv.FormatFloat(100*q.Percentile, 'f', -1, 64)
	}
	return "mean"
}

// ParseQoS reads a QoS as a user writes it: "mean" or "mean:2.7s" (the
// paper's: the mean latency, with 99% of the requests served), or "p99",
// "p95:3s" (that percentile of the requests, unserved ones counted over
// it). A latency of "1.2x" sets Slack instead; without a latency or with
// one, Latency is 0, for the caller to set from the workflow's own
// configuration. ",served:99.5%" sets the share served (99% otherwise).
func ParseQoS(s string) (QoS, error) {
	head, served, hasServed := strings.Cut(s, ",served:")
	kind, lat, timed := strings.Cut(head, ":")
	q := QoS{MinServed: 0.99}
	if hasServed {
		pct, err := strconv.ParseFloat(strings.TrimSuffix(served, "%"), 64)
		if err != nil || !(pct > 0 && pct <= 100) {
			return QoS{}, fmt.Errorf("qos %q: the share served %q must be a percentage in (0, 100], as in served:99.5%%", s, served)
		}
		q.MinServed = pct / 100
	}
	switch {
	case kind == "mean":
	case strings.HasPrefix(kind, "p"):
		p, err := strconv.ParseFloat(kind[1:], 64)
		if err != nil || !(p > 0 && p < 100) {
			return QoS{}, fmt.Errorf("qos %q: the percentile %q must be a number in (0, 100), as in p99", s, kind[1:])
		}
		q.Percentile = p / 100
	default:
		return QoS{}, fmt.Errorf("qos %q: want mean or a percentile (p99, p95), optionally with a latency (p99:3s)", s)
	}
	if x, ok := strings.CutSuffix(lat, "x"); timed && ok {
		f, err := strconv.ParseFloat(x, 64)
		if err != nil || !(f > 0) {
			return QoS{}, fmt.Errorf("qos %q: the slack %q must be a positive multiple, as in 1.2x", s, lat)
		}
		q.Slack = f
	} else if timed {
		d, err := time.ParseDuration(lat)
		if err != nil || d <= 0 {
			return QoS{}, fmt.Errorf("qos %q: the latency %q must be a positive duration, as in 3s", s, lat)
		}
		q.Latency = d
	}
	return q, nil
}

// Measure is what the QoS bounds by Latency in a window, seconds: the
// served requests' mean latency, or the Percentile of all the requests
// with the unserved ones counted as +Inf (+Inf when none was served).
func (q QoS) Measure(w Window) float64 {
	if q.Percentile <= 0 {
		return w.MeanLatency()
	}
	if w.Requests == 0 {
		return 0
	}
	rank := math.Ceil(q.Percentile * float64(w.Requests) * (1 - 1e-15))
	if rank > float64(w.Served) {
		return math.Inf(1)
	}
	return w.Hist.Quantile(rank / float64(w.Served))
}

// Met reports whether the window met the target.
func (q QoS) Met(w Window) bool {
	return q.Measure(w) <= q.Latency.Seconds() && w.ServedShare() >= q.MinServed
}

// Window is what a time window showed of the workflow at its entrance:
// the requests that ended in it, served or failed (those still in
// progress at its end count in a later one).
type Window struct {
	Requests, Served int64
	LatencySum       float64             // seconds, over the served requests
	Hist             metrics.LatencyHist // the served requests' latencies
}

// WindowOf sums the snapshot's request classes.
func WindowOf(snap *metrics.Snapshot) Window {
	var w Window
	for i := range snap.Classes {
		c := &snap.Classes[i]
		w.Requests += c.Completions + c.Failures.Total()
		w.Served += c.Completions
		w.LatencySum += c.Latency.Sum
		w.Hist.Merge(&c.LatencyHist)
	}
	return w
}

// Add accumulates another window's counts.
func (w *Window) Add(o *Window) {
	w.Requests += o.Requests
	w.Served += o.Served
	w.LatencySum += o.LatencySum
	w.Hist.Merge(&o.Hist)
}

// MeanLatency is the mean end-to-end latency of the served requests,
// seconds (+Inf when none was served).
func (w Window) MeanLatency() float64 {
	if w.Served == 0 {
		return math.Inf(1)
	}
	return w.LatencySum / float64(w.Served)
}

// ServedShare is the share of the requests served (1 without requests).
func (w Window) ServedShare() float64 {
	if w.Requests == 0 {
		return 1
	}
	return math.Min(1, float64(w.Served)/float64(w.Requests))
}

// Features is the width of an agent's state (Table 2): resource
// utilisation (CPU, memory), function performance (tail latency),
// concurrent requests, load and refusals, the configuration (resource
// limits, instances, concurrency limit) and the workflow's QoS.
const Features = 12

// Observe writes function s's state over a period of the given length to
// dst: every entry is what OpenFaaS and Prometheus expose (cAdvisor, the
// gateway's and the watchdog's metrics), scaled to about [0, 1] where the
// target is met.
//
//	0 CPU utilisation of the ready instances
//	1 memory utilisation of the ready instances
//	2 the function's 95th percentile latency over the QoS latency
//	3 requests in progress or waiting per ready instance, over the limit
//	4 offered concurrency (rate x mean latency, Little's law) over the
//	  concurrency ready (instances x limit)
//	5 share of the calls that arrived and failed (429s included)
//	6-9 the configuration as its action in [-1, 1] (Space.Encode)
//	10 the workflow's QoS measure (its mean latency, or the QoS's
//	   percentile) over the QoS latency (capped at 10)
//	11 the share of the workflow's requests not served
func Observe(dst []float64, s *metrics.ServiceStats, period time.Duration, space Space, w Window, q QoS) {
	ready := float64(max(s.Ready, 1))
	limit := float64(max(s.Concurrency, 1))
	dst[0] = ratio(s.CPUUse, s.CPULimit*ready)
	dst[1] = ratio(s.MemoryUse, s.MemoryLimit*ready)
	// A function that completed nothing in the period has no latency: it
	// counts as saturated when calls arrived, idle when none did.
	none := 0.0
	if s.Arrivals > 0 {
		none = 10
	}
	dst[2] = finiteOr(ratio(s.P95, q.Latency.Seconds()), none)
	dst[3] = float64(s.InFlight+s.Queued) / ready / limit
	dst[4] = none
	if s.Latency.Count > 0 {
		dst[4] = ratio(float64(s.Arrivals)/period.Seconds()*s.Latency.Mean(), ready*limit)
	}
	dst[5] = ratio(float64(s.Failures.Total()), float64(s.Arrivals))
	space.Encode(dst[6:10], Config{CPU: s.CPULimit, MemoryMB: s.MemoryLimit, Instances: s.Replicas, Concurrency: s.Concurrency})
	dst[10] = math.Min(10, ratio(q.Measure(w), q.Latency.Seconds()))
	dst[11] = 1 - w.ServedShare()
}

// finiteOr is x, or y when x is NaN or infinite.
func finiteOr(x, y float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return y
	}
	return x
}

// ratio is a/b, 0 when b is not positive.
func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}
