package metrics

import "time"

// Snapshot is the telemetry contract between a system (the simulator's
// cluster, or a real one through proxy, kube and prom) and its controllers:
// what happened during the last control period. Filling a Snapshot reuses its
// slices, so a zero value sizes itself and periodic observation allocates
// nothing in steady state.
type Snapshot struct {
	At       time.Duration // end of the period, since the start of the run
	Period   time.Duration // length of the period
	Services []ServiceStats
	// Classes are the request classes as the ingress sees them: each
	// route's requests, in the order of the system's classes.
	Classes []ClassStats
	LBs     []LBStats
	// Routes are the calls along each edge of the call graph by the
	// caller's and the callee's location, as a mesh's request metrics give
	// them (Istio's istio_requests_total and request_duration sums by
	// source_workload, destination_service, source_cluster and
	// destination_cluster). The simulator fills only their Calls when the
	// cluster has one location.
	Routes []RouteStats
	// Locations are the sites and what a monitor measures of them.
	Locations []LocationStats
}

// RouteStats is the traffic of one call-graph edge between two locations
// over the period, measured at the caller (network time included).
type RouteStats struct {
	// Caller is the calling service's name ("" for clients outside the
	// system); Service the called one. A service deployed in several
	// locations appears under its own name here, and as NAME@LOCATION in
	// Services.
	Caller, Service string
	From, To        string // the caller's and the instance's location
	Calls           int64  // attempts sent during the period
	Failures        int64  // of those answered, failed ones
	Latency         LatencySum
	// Hist is the distribution of those response times (Istio's
	// istio_request_duration_milliseconds, reporter="source"). The
	// simulator fills it, for training targets; prom's route observer
	// leaves it empty, as no controller reads it.
	Hist LatencyHist
	// Bytes are the bytes of the period's calls and their answers
	// (Istio's istio_request_bytes and istio_response_bytes): what a call
	// between locations pays as egress.
	Bytes float64
}

// LocationStats is one location as a monitor sees it: measured series, as
// a cluster's exporters give them, never the simulator's true values.
type LocationStats struct {
	Name string
	// RTT is the round-trip time to each location, in Snapshot.Locations
	// order, as probes measured it over the period: the mean of the
	// Prometheus blackbox exporter's probe_duration_seconds from this
	// location to each (0 to itself, or with no probe).
	RTT []time.Duration
	// Cores are the location's nodes' cores; NodeCPU the cores they used
	// over the period, whoever used them (node_exporter's
	// node_cpu_seconds_total); PodCPU the cores the managed pods'
	// containers used, their mesh sidecars included (cAdvisor's
	// container_cpu_usage_seconds_total).
	Cores, NodeCPU, PodCPU float64
}

// Background is the share of the location's cores that others used over
// the period, (NodeCPU - PodCPU) / Cores within [0, 1]; 0 without cores.
func (l LocationStats) Background() float64 {
	if !(l.Cores > 0) {
		return 0
	}
	return min(max((l.NodeCPU-l.PodCPU)/l.Cores, 0), 1)
}

// Failures counts requests that failed, by kind.
type Failures struct {
	Timeout    int64 // the client gave up (request timeout)
	Rejected   int64 // concurrency limit and queue full: HTTP 429
	OOM        int64 // in flight on an instance that was OOM-killed
	NoCapacity int64 // no instance was up to take the request
	// Shed counts requests an LB point's admission turned away (a proxy's
	// 503): every backend at its cap and the queue full, or the queue
	// timeout passed (lb.Admission).
	Shed int64
}

// Total is the number of failures of all kinds.
func (f Failures) Total() int64 { return f.Timeout + f.Rejected + f.OOM + f.NoCapacity + f.Shed }

// Add accumulates o into f.
func (f *Failures) Add(o Failures) {
	f.Timeout += o.Timeout
	f.Rejected += o.Rejected
	f.OOM += o.OOM
	f.NoCapacity += o.NoCapacity
	f.Shed += o.Shed
}

// ServiceStats is one service's telemetry over the period.
type ServiceStats struct {
	Name        string
	Replicas    int     // instances that exist (starting or ready)
	Ready       int     // instances ready to serve
	CPULimit    float64 // per instance, cores
	MemoryLimit float64 // per instance, MB (0 = unlimited)
	// Concurrency is the per-instance limit on calls in progress (OpenFaaS
	// max_inflight, Knative containerConcurrency; 0 = none).
	Concurrency int
	Arrivals    int64 // calls that reached the service
	Completions int64 // calls the service answered
	Failures    Failures
	InFlight    int     // calls in progress at the end of the period (admitted)
	Queued      int     // calls waiting for a concurrency slot at the end of the period
	CPUUse      float64 // mean cores busy over the period, all instances
	// CFSPeriods and CFSThrottled sum the instances' (those gone during
	// the period included).
	CFSPeriods, CFSThrottled int64
	MemoryUse                float64    // memory in use at the end of the period, MB, all instances
	Cost                     float64    // price of the resources allocated during the period
	Latency                  LatencySum // response time of the calls completed in the period, seconds
	// LatencyHist is the distribution of those response times (Istio's
	// istio_request_duration_milliseconds per destination service), and
	// P50 and P95 are its quantiles, seconds (0 when none completed).
	LatencyHist LatencyHist
	P50, P95    float64
	// Retries counts the attempts its callers sent again after a failed or
	// timed-out one (Envoy's upstream_rq_retry).
	Retries int64
	// Degraded counts the calls it answered successfully without some of
	// their optional calls (browned out, or failed).
	Degraded int64
	// Skipped counts the calls its callers did not make because it is
	// browned out; Brownout is whether it is at the end of the period.
	Skipped   int64
	Brownout  bool
	Instances []InstanceStats
}

// ClassStats is one request class's telemetry over the period, as the
// ingress gateway sees its route: what a workload forecaster needs.
type ClassStats struct {
	Name     string
	Arrivals int64 // requests that arrived
	// Completions counts the requests completed successfully, degraded
	// ones included; Degraded counts those missing an optional part.
	Completions int64
	Degraded    int64
	Failures    Failures   // requests that failed (a timeout when the client gave up)
	Latency     LatencySum // response time of the completions, seconds
	LatencyHist LatencyHist
	P50, P95    float64 // quantiles of LatencyHist, seconds (0 when none completed)
}

// LatencySum is a cheap latency summary: count, sum and maximum, seconds.
type LatencySum struct {
	Count int64
	Sum   float64
	Max   float64
}

// Mean is the mean latency in seconds (0 when empty).
func (l LatencySum) Mean() float64 {
	if l.Count == 0 {
		return 0
	}
	return l.Sum / float64(l.Count)
}

// Add records one latency in seconds.
func (l *LatencySum) Add(v float64) {
	l.Count++
	l.Sum += v
	if v > l.Max {
		l.Max = v
	}
}

// InstanceStats is one instance's telemetry over the period.
type InstanceStats struct {
	ID          int     // stable instance id within the service
	Ready       bool    // serving (not starting, not restarting after OOM)
	InFlight    int     // admitted calls at the end of the period
	Queued      int     // calls waiting for a slot at the end of the period
	CPUUse      float64 // mean cores busy over the period
	Utilisation float64 // CPUUse / CPU limit
	MemoryUse   float64 // MB at the end of the period
	Remaining   float64 // seconds to finish the work in progress at true speed, if nothing else arrived
	// CFSPeriods are the 100 ms CPU bandwidth periods of the period that
	// had work, and CFSThrottled those in which its threads wanted more
	// than the CPU limit (cAdvisor's container_cpu_cfs_periods_total and
	// container_cpu_cfs_throttled_periods_total, increased over the period).
	CFSPeriods, CFSThrottled int64
}

// LBStats is what one load-balancing point saw of its own traffic over the
// period: a scoped view, as a real load balancer has.
type LBStats struct {
	Name     string
	Backends []BackendStats
	// Shed counts the requests its admission turned away during the period
	// (lb.Admission): they reached no backend, so no backend counts them.
	Shed int64
}

// BackendStats is one backend as seen by one LB point.
type BackendStats struct {
	InFlight    int        // this LB's requests in progress at the end of the period
	Sent        int64      // requests this LB sent there during the period
	Completions int64      // of this LB's requests, answered during the period
	Latency     LatencySum // their completion time, seconds
	Weight      float64    // the weight in force at the end of the period
}

// CFSPeriod is the CPU bandwidth period the CFS counters count in: the
// kernel's default cpu.cfs_period_us (100 ms), cAdvisor's periods.
const CFSPeriod = 100 * time.Millisecond

// ServiceIndex returns the index of service name in s.Services, trying hint
// (the index it had last period) first, or -1 when it is missing.
func (s *Snapshot) ServiceIndex(name string, hint int) int {
	if hint >= 0 && hint < len(s.Services) && s.Services[hint].Name == name {
		return hint
	}
	for i := range s.Services {
		if s.Services[i].Name == name {
			return i
		}
	}
	return -1
}
