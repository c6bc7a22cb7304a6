// Package prom builds the telemetry contract, metrics.Snapshot, from a
// Prometheus server's PromQL, so that a controller trained in the
// simulator reads the same observation from a real cluster. Each field of
// a service's ServiceStats has one query (Queries), a text/template over
// the workload (.Namespace, .Name, .Container) and the window (.Period,
// as a PromQL duration: the control period, or the observer's minimum
// window if that is longer, since a window must hold several scrapes; the
// counts over a longer window are scaled to the period); DefaultQueries are those of a
// Kubernetes cluster with kube-state-metrics, cAdvisor (the kubelet's
// /metrics/cadvisor) and Istio's standard metrics. A snapshot from
// Prometheus has no LatencyHist: controllers read P50 and P95, which
// PromQL's histogram_quantile gives.
package prom

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"sort"
	"text/template"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/shoal-project/shoal/metrics"
	"sigs.k8s.io/yaml"
)

// Workload is one of Shoal's services as the cluster runs it.
type Workload struct {
	Service   string `json:"service"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`      // the Deployment's (or StatefulSet's) name
	Container string `json:"container"` // the serving container
}

// Queries are the PromQL templates of a service's fields. An empty query
// leaves its field zero.
type Queries struct {
	Replicas    string `json:"replicas"`     // instances that exist
	Ready       string `json:"ready"`        // instances ready
	CPULimit    string `json:"cpu_limit"`    // cores per instance
	MemoryLimit string `json:"memory_limit"` // MB per instance
	CPUUse      string `json:"cpu_use"`      // mean cores busy over the period, all instances
	MemoryUse   string `json:"memory_use"`   // MB in use, all instances
	Arrivals    string `json:"arrivals"`     // calls that reached it in the period
	Failures    string `json:"failures"`     // of those, failed (5xx and 429)
	LatencySum  string `json:"latency_sum"`  // seconds, of the calls completed in the period
	Completions string `json:"completions"`  // calls completed in the period
	// P50 and P95 are the response time's quantiles over the period,
	// seconds (histogram_quantile over the histogram's increase).
	P50 string `json:"p50"`
	P95 string `json:"p95"`
	// CFSPeriods and CFSThrottled are the CPU bandwidth periods of the
	// period that had work, and those throttled, all instances.
	CFSPeriods   string `json:"cfs_periods"`
	CFSThrottled string `json:"cfs_throttled"`
	// SampleTime is when the newest sample the observation reads was
	// scraped, Unix seconds (PromQL's timestamp()): the start of the
	// operator's action latency. Optional.
	SampleTime string `json:"sample_time"`
	// The instances (Instances), by their pod label: readiness (1 when
	// ready), mean cores busy over the period, MB in use. Without
	// PodReady a snapshot has no instances.
	PodReady     string `json:"pod_ready"`
	PodCPUUse    string `json:"pod_cpu_use"`
	PodMemoryUse string `json:"pod_memory_use"`
}

// The selectors of a workload's pods and containers.
const (
	podSel       = `namespace="{{.Namespace}}",pod=~"{{.Name}}-[a-z0-9]+(-[a-z0-9]+)?"`
	containerSel = podSel + `,container="{{.Container}}"`
	istioSel     = `reporter="destination",destination_workload_namespace="{{.Namespace}}",destination_workload="{{.Name}}"`
)

// DefaultQueries read kube-state-metrics (replicas, limits), cAdvisor
// (CPU and memory use) and Istio (istio_requests_total and
// istio_request_duration_milliseconds, reported by the destination).
func DefaultQueries() Queries {
	return Queries{
		Replicas:     `sum(kube_deployment_status_replicas{namespace="{{.Namespace}}",deployment="{{.Name}}"})`,
		Ready:        `sum(kube_deployment_status_replicas_ready{namespace="{{.Namespace}}",deployment="{{.Name}}"})`,
		CPULimit:     `max(kube_pod_container_resource_limits{` + containerSel + `,resource="cpu"})`,
		MemoryLimit:  `max(kube_pod_container_resource_limits{` + containerSel + `,resource="memory"}) / 1048576`,
		CPUUse:       `sum(rate(container_cpu_usage_seconds_total{` + containerSel + `}[{{.Period}}]))`,
		MemoryUse:    `sum(container_memory_working_set_bytes{` + containerSel + `}) / 1048576`,
		Arrivals:     `sum(increase(istio_requests_total{` + istioSel + `}[{{.Period}}]))`,
		Failures:     `sum(increase(istio_requests_total{` + istioSel + `,response_code=~"5..|429"}[{{.Period}}]))`,
		LatencySum:   `sum(increase(istio_request_duration_milliseconds_sum{` + istioSel + `}[{{.Period}}])) / 1000`,
		Completions:  `sum(increase(istio_request_duration_milliseconds_count{` + istioSel + `}[{{.Period}}]))`,
		P50:          `histogram_quantile(0.5, sum by (le) (increase(istio_request_duration_milliseconds_bucket{` + istioSel + `}[{{.Period}}]))) / 1000`,
		P95:          `histogram_quantile(0.95, sum by (le) (increase(istio_request_duration_milliseconds_bucket{` + istioSel + `}[{{.Period}}]))) / 1000`,
		CFSPeriods:   `sum(increase(container_cpu_cfs_periods_total{` + containerSel + `}[{{.Period}}]))`,
		CFSThrottled: `sum(increase(container_cpu_cfs_throttled_periods_total{` + containerSel + `}[{{.Period}}]))`,
		SampleTime:   `max(timestamp(kube_deployment_status_replicas{namespace="{{.Namespace}}",deployment="{{.Name}}"}))`,
		PodReady:     `max by (pod) (kube_pod_status_ready{` + podSel + `,condition="true"})`,
		PodCPUUse:    `sum by (pod) (rate(container_cpu_usage_seconds_total{` + containerSel + `}[{{.Period}}]))`,
		PodMemoryUse: `sum by (pod) (container_memory_working_set_bytes{` + containerSel + `}) / 1048576`,
	}
}

// proxySel selects the series of the shoal proxy in front of a workload:
// its scrape job labels them with the workload's namespace and name (as
// Kubernetes service discovery's relabelling does with a Service named
// after the Deployment).
const proxySel = `namespace="{{.Namespace}}",service="{{.Name}}"`

// ProxyQueries are DefaultQueries with the request fields read from the
// shoal proxy in front of the workload instead of Istio: requests
// answered (shoal_proxy_requests_total) and requests that got no answer
// (shoal_proxy_errors_total, a client gone excepted, less the attempts
// retried, shoal_proxy_retries_total) arrive; 5xx answers
// and unanswered attempts fail (the proxy counts status classes, so a 429
// is not told from other 4xx); the response time is
// shoal_proxy_request_duration_seconds.
func ProxyQueries() Queries {
	q := DefaultQueries()
	orZero := func(e string) string { return "(" + e + " or vector(0))" }
	answered := `sum(increase(shoal_proxy_requests_total{` + proxySel + `}[{{.Period}}]))`
	// An attempt that failed to connect and was retried on another
	// backend (shoal_proxy_retries_total) is not a request lost.
	unanswered := "(" + orZero(`sum(increase(shoal_proxy_errors_total{`+proxySel+`,kind!="client_gone"}[{{.Period}}]))`) + " - " +
		orZero(`sum(increase(shoal_proxy_retries_total{`+proxySel+`}[{{.Period}}]))`) + ")"
	q.Arrivals = orZero(answered) + " + " + unanswered
	q.Failures = orZero(`sum(increase(shoal_proxy_requests_total{`+proxySel+`,code="5xx"}[{{.Period}}]))`) + " + " + unanswered
	q.LatencySum = `sum(increase(shoal_proxy_request_duration_seconds_sum{` + proxySel + `}[{{.Period}}]))`
	q.Completions = `sum(increase(shoal_proxy_request_duration_seconds_count{` + proxySel + `}[{{.Period}}]))`
	q.P50 = `histogram_quantile(0.5, sum by (le) (increase(shoal_proxy_request_duration_seconds_bucket{` + proxySel + `}[{{.Period}}])))`
	q.P95 = `histogram_quantile(0.95, sum by (le) (increase(shoal_proxy_request_duration_seconds_bucket{` + proxySel + `}[{{.Period}}])))`
	return q
}

// ReadQueries returns the named query set (istio: DefaultQueries,
// shoal-proxy: ProxyQueries) or the one in a YAML or JSON file of
// Queries' fields (missing fields: DefaultQueries').
func ReadQueries(name string) (Queries, error) {
	switch name {
	case "", "istio":
		return DefaultQueries(), nil
	case "shoal-proxy":
		return ProxyQueries(), nil
	}
	raw, err := os.ReadFile(name)
	if err != nil {
		return Queries{}, fmt.Errorf("queries: %w (want istio, shoal-proxy or a file)", err)
	}
	q := DefaultQueries()
	if err := yaml.UnmarshalStrict(raw, &q); err != nil {
		return Queries{}, fmt.Errorf("queries %s: %w", name, err)
	}
	return q, nil
}

// Observer fills snapshots from Prometheus.
type Observer struct {
	api       promv1.API
	workloads []Workload
	period    time.Duration
	window    time.Duration // of the queries, at least period
	tmpl      [numFields]*template.Template
	ids       map[string]int // pod name -> its instance ID, stable over periods
	sampled   time.Time      // the oldest workload's newest sample, last Observe
}

// Sampled is when the newest sample of the last observation was scraped
// (of the workload whose newest is oldest); zero without a SampleTime
// query.
func (o *Observer) Sampled() time.Time { return o.sampled }

// The fields, in Queries order.
const (
	fReplicas = iota
	fReady
	fCPULimit
	fMemoryLimit
	fCPUUse
	fMemoryUse
	fArrivals
	fFailures
	fLatencySum
	fCompletions
	fP50
	fP95
	fCFSPeriods
	fCFSThrottled
	fSampleTime
	fPodReady
	fPodCPUUse
	fPodMemoryUse
	numFields
)

func (q Queries) list() [numFields]string {
	return [numFields]string{q.Replicas, q.Ready, q.CPULimit, q.MemoryLimit, q.CPUUse, q.MemoryUse, q.Arrivals, q.Failures, q.LatencySum, q.Completions, q.P50, q.P95, q.CFSPeriods, q.CFSThrottled, q.SampleTime, q.PodReady, q.PodCPUUse, q.PodMemoryUse}
}

var fieldNames = [numFields]string{"replicas", "ready", "cpu_limit", "memory_limit", "cpu_use", "memory_use", "arrivals", "failures", "latency_sum", "completions", "p50", "p95", "cfs_periods", "cfs_throttled", "sample_time", "pod_ready", "pod_cpu_use", "pod_memory_use"}

// New returns an observer of the Prometheus server at url for the
// workloads, over control periods of period.
func New(url string, period time.Duration, workloads []Workload, q Queries) (*Observer, error) {
	if period < time.Second {
		return nil, fmt.Errorf("prom: period %v: want at least 1s", period)
	}
	c, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		return nil, fmt.Errorf("prom: %w", err)
	}
	o := &Observer{api: promv1.NewAPI(c), workloads: workloads, period: period, window: period, ids: map[string]int{}}
	for i, w := range workloads {
		if w.Service == "" || w.Namespace == "" || w.Name == "" {
			return nil, fmt.Errorf("prom: workloads[%d]: service, namespace and name are required", i)
		}
	}
	for i, s := range q.list() {
		var err error
		if o.tmpl[i], err = parseQuery(fieldNames[i], s); err != nil {
			return nil, fmt.Errorf("prom: %w", err)
		}
	}
	if o.tmpl[fReplicas] == nil {
		return nil, fmt.Errorf("prom: query replicas is required (a service without it cannot be told from one without data)")
	}
	return o, nil
}

// SetMinWindow makes the queries' window at least w: Prometheus needs
// two scrapes in a window to give a rate (four is the usual advice), so
// a period shorter than that would read no traffic at all.
func (o *Observer) SetMinWindow(w time.Duration) {
	o.window = max(o.period, w)
}

// parseQuery parses one query template; none for an empty query.
func parseQuery(name, q string) (*template.Template, error) {
	if q == "" {
		return nil, nil
	}
	t, err := template.New(name).Option("missingkey=error").Parse(q)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", name, err)
	}
	return t, nil
}

// Query is one rendered query, for documentation and logs.
func (o *Observer) Query(w Workload, field int) string {
	s, _ := o.render(w, field)
	return s
}

func (o *Observer) render(w Workload, field int) (string, error) {
	var b bytes.Buffer
	err := o.tmpl[field].Execute(&b, struct {
		Workload
		Period string
	}{w, model.Duration(o.window).String()})
	return b.String(), err
}

// Observe fills snap with the period that ends at now. It fails, and
// leaves snap's services unset, when Prometheus cannot answer or has no
// replica count of a workload: a controller must not act on stale data.
// It is not safe for concurrent use.
func (o *Observer) Observe(ctx context.Context, now time.Time, snap *metrics.Snapshot) error {
	services := make([]metrics.ServiceStats, 0, len(o.workloads))
	var sampled time.Time
	for _, w := range o.workloads {
		s := metrics.ServiceStats{Name: w.Service}
		var vals [numFields]float64
		for f := range fPodReady {
			if o.tmpl[f] == nil {
				continue
			}
			q, err := o.render(w, f)
			if err != nil {
				return fmt.Errorf("prom: %s: %s: %w", w.Service, fieldNames[f], err)
			}
			v, ok, err := scalar(ctx, o.api, q, now)
			if err != nil {
				return fmt.Errorf("prom: %s: %s: %w", w.Service, fieldNames[f], err)
			}
			if !ok && f == fReplicas {
				return fmt.Errorf("prom: %s: no data for %s", w.Service, q)
			}
			vals[f] = v
		}
		s.Replicas, s.Ready = int(math.Round(vals[fReplicas])), int(math.Round(vals[fReady]))
		s.CPULimit, s.MemoryLimit = vals[fCPULimit], vals[fMemoryLimit]
		s.CPUUse, s.MemoryUse = vals[fCPUUse], vals[fMemoryUse]
		scale := o.period.Seconds() / o.window.Seconds() // window counts to period counts
		s.Arrivals, s.Completions = int64(math.Round(scale*vals[fArrivals])), int64(math.Round(scale*vals[fCompletions]))
		s.Failures.Rejected = int64(math.Round(scale * vals[fFailures]))
		s.Latency = metrics.LatencySum{Sum: scale * vals[fLatencySum], Count: s.Completions}
		s.P50, s.P95 = vals[fP50], vals[fP95]
		s.CFSPeriods, s.CFSThrottled = int64(math.Round(scale*vals[fCFSPeriods])), int64(math.Round(scale*vals[fCFSThrottled]))
		if t := vals[fSampleTime]; t > 0 {
			at := time.Unix(0, int64(t*1e9))
			if sampled.IsZero() || at.Before(sampled) {
				sampled = at
			}
		}
		if err := o.instances(ctx, w, now, &s); err != nil {
			return fmt.Errorf("prom: %s: %w", w.Service, err)
		}
		services = append(services, s)
	}
	o.sampled = sampled
	snap.At, snap.Period = time.Duration(now.UnixNano()), o.period
	snap.Services = services
	return nil
}

// scalar runs q at t and returns its single value (the sum of a vector's
// samples, NaN ones left out: a quantile of no requests); ok is false
// when there is none.
func scalar(ctx context.Context, api promv1.API, q string, t time.Time) (float64, bool, error) {
	res, _, _, err := api.Query(ctx, q, t)
	if err != nil {
		return 0, false, err
	}
	switch v := res.(type) {
	case model.Vector:
		sum := 0.0
		for _, s := range v {
			if x := float64(s.Value); !math.IsNaN(x) {
				sum += x
			}
		}
		return sum, len(v) > 0, nil
	case *model.Scalar:
		return float64(v.Value), true, nil
	}
	return 0, false, fmt.Errorf("result of type %s, want a vector", res.Type())
}

// instances fills s.Instances from the per-pod queries, in pod name
// order, each pod keeping its ID from one period to the next.
func (o *Observer) instances(ctx context.Context, w Workload, now time.Time, s *metrics.ServiceStats) error {
	if o.tmpl[fPodReady] == nil {
		return nil
	}
	var by [3]map[string]float64
	for i, f := range []int{fPodReady, fPodCPUUse, fPodMemoryUse} {
		if o.tmpl[f] == nil {
			continue
		}
		q, err := o.render(w, f)
		if err != nil {
			return fmt.Errorf("%s: %w", fieldNames[f], err)
		}
		if by[i], err = o.byPod(ctx, q, now); err != nil {
			return fmt.Errorf("%s: %w", fieldNames[f], err)
		}
	}
	pods := make([]string, 0, len(by[0]))
	for p := range by[0] {
		pods = append(pods, p)
	}
	sort.Strings(pods)
	for _, p := range pods {
		id, ok := o.ids[p]
		if !ok {
			id = len(o.ids)
			o.ids[p] = id
		}
		in := metrics.InstanceStats{ID: id, Ready: by[0][p] > 0, CPUUse: by[1][p], MemoryUse: by[2][p]}
		if s.CPULimit > 0 {
			in.Utilisation = in.CPUUse / s.CPULimit
		}
		s.Instances = append(s.Instances, in)
	}
	return nil
}

// byPod runs q at t and returns its samples by their pod label.
func (o *Observer) byPod(ctx context.Context, q string, t time.Time) (map[string]float64, error) {
	res, _, _, err := o.api.Query(ctx, q, t)
	if err != nil {
		return nil, err
	}
	vec, ok := res.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("result of type %s, want a vector by pod", res.Type())
	}
	out := make(map[string]float64, len(vec))
	for _, smp := range vec {
		out[string(smp.Metric["pod"])] = float64(smp.Value)
	}
	return out, nil
}
