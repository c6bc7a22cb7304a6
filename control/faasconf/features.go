package faasconf

import (
	"math"
	"time"

	"github.com/shoal-project/shoal/metrics"
)

// QoS is a workflow's target over a time window (section 5.1.3: "average
// latency and throughput in one time window"): a mean end-to-end latency
// of at most Latency, with at least MinServed of the requests served (the
// rest, refused by a concurrency limit or failed, cost throughput).
type QoS struct {
	Latency   time.Duration `json:"latency"`
	MinServed float64       `json:"min_served"`
}

// Window is what a time window showed of the workflow at its entrance:
// the requests that ended in it, served or failed (those still in
// progress at its end count in a later one).
type Window struct {
	Requests, Served int64
	LatencySum       float64 // seconds, over the served requests
}

// WindowOf sums the snapshot's request classes.
func WindowOf(snap *metrics.Snapshot) Window {
	var w Window
	for _, c := range snap.Classes {
		w.Requests += c.Completions + c.Failures.Total()
		w.Served += c.Completions
		w.LatencySum += c.Latency.Sum
	}
	return w
}

// Add accumulates another window's counts.
func (w *Window) Add(o Window) {
	w.Requests += o.Requests
	w.Served += o.Served
	w.LatencySum += o.LatencySum
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

// Met reports whether the window met the target.
func (q QoS) Met(w Window) bool {
	return w.MeanLatency() <= q.Latency.Seconds() && w.ServedShare() >= q.MinServed
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
//	10 the workflow's mean latency over the QoS latency (capped at 10)
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
	dst[10] = math.Min(10, ratio(w.MeanLatency(), q.Latency.Seconds()))
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
