package lb

import (
	"slices"
	"time"
)

// Load is what a server can say about itself: in a probe's answer
// (Prequal) or piggybacked on a response (C3).
type Load struct {
	// RIF is the number of requests in flight at the server (in service
	// or waiting for a slot), from every client.
	RIF int32
	// Latency is the server's estimate of a new request's latency at its
	// current RIF (a LatencyByRIF's median); 0 when it has no sample yet.
	Latency time.Duration
	// Service is the answered request's time at the server, from arrival
	// to answer (C3's service time: without a concurrency limit nothing
	// waits); 0 in a probe's answer.
	Service time.Duration
}

// The load protocol of `shoal backend` and `shoal proxy`: a probe is a GET
// of ProbePath, answered with the server's RIF and latency estimate in
// headers; every response carries the server's RIF after it and its time
// at the server.
const (
	ProbePath         = "/load"
	HeaderRIF         = "X-Shoal-RIF"          // requests in flight (an integer)
	HeaderLatency     = "X-Shoal-Latency"      // latency estimate, seconds
	HeaderServiceTime = "X-Shoal-Service-Time" // the response's time at the server, seconds
)

// Prober is a selector that probes servers: after each decision the data
// plane asks it which backends to probe, sends each a probe (a real
// message with its own delay and server cost), and hands the answers back.
type Prober interface {
	// ProbeTargets appends to dst the backends to probe after a decision
	// at now and returns it.
	ProbeTargets(now time.Duration, v *View, dst []int) []int
	// Probed delivers backend j's answer to a probe, arriving at now.
	Probed(now time.Duration, j int, l Load)
}

// Shared is a selector that must know how many LB points send to its
// backends (C3's n); the data plane tells it.
type Shared interface{ SetClients(n int) }

// LoadFeedback is a selector that reads the load servers piggyback on
// their responses. The data plane calls Reported before Feedback.Done.
type LoadFeedback interface {
	Reported(now time.Duration, j int, l Load)
}

// LatencyByRIF is a server's latency estimate as Prequal keeps it: each
// finished request's latency is recorded under the RIF it found on
// arrival, and the estimate at a RIF is the median of the most recent
// samples recorded under it (or under the nearest RIF that has samples).
// It is what a server can know, so the simulator's instances and
// `shoal backend` keep the same one. Not safe for concurrent use.
type LatencyByRIF struct {
	// Keep is the number of recent samples per RIF (default 16).
	Keep int
	// MaxRIF caps the RIF buckets: higher RIFs share the last (default 256).
	MaxRIF int

	rings   [][]time.Duration // per RIF: a ring of recent latencies
	next    []int             // per RIF: the ring's next write
	scratch []time.Duration
}

// Record adds a request that found rif requests in flight on arrival and
// took latency.
func (e *LatencyByRIF) Record(rif int32, latency time.Duration) {
	b := e.bucket(rif)
	for len(e.rings) <= b {
		e.rings = append(e.rings, nil)
		e.next = append(e.next, 0)
	}
	keep := e.Keep
	if keep <= 0 {
		keep = 16
	}
	if r := e.rings[b]; len(r) < keep {
		e.rings[b] = append(r, latency)
		return
	}
	e.rings[b][e.next[b]] = latency
	e.next[b] = (e.next[b] + 1) % keep
}

func (e *LatencyByRIF) bucket(rif int32) int {
	m := e.MaxRIF
	if m <= 0 {
		m = 256
	}
	return int(min(max(rif, 0), int32(m)))
}

// Estimate is the median latency recorded at rif, or at the nearest RIF
// with samples (the lower on a tie); 0 with no samples at all.
func (e *LatencyByRIF) Estimate(rif int32) time.Duration {
	b := e.bucket(rif)
	for d := 0; d < len(e.rings)+b; d++ {
		for _, k := range [2]int{b - d, b + d} {
			if k >= 0 && k < len(e.rings) && len(e.rings[k]) > 0 {
				return e.median(e.rings[k])
			}
		}
	}
	return 0
}

func (e *LatencyByRIF) median(r []time.Duration) time.Duration {
	e.scratch = append(e.scratch[:0], r...)
	slices.Sort(e.scratch)
	n := len(e.scratch)
	if n%2 == 1 {
		return e.scratch[n/2]
	}
	return (e.scratch[n/2-1] + e.scratch[n/2]) / 2
}
