package prom

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/shoal-project/shoal/metrics"
)

// RouteQueries are the PromQL templates of the route telemetry a
// multi-location router reads (control/multicloud): per call-graph edge
// and pair of locations, the calls and their response time as the caller
// measures them (metrics.Snapshot.Routes); per service and location, its
// replicas (Services, as NAME@LOCATION); per pair of locations, the RTT
// probes measured, and per location the CPU its nodes and the managed
// pods used (Locations).
//
// The edge queries (Calls, Failures, LatencySum, Completions, Bytes) are vectors
// over the whole namespace (.Namespace, .Period), one sample per edge and
// pair, told apart by the label names below. Replicas and Ready are
// scalars of one service's workload in one location (.Namespace,
// .Workload, .Location, .Period). RTT is a vector by FromLabel and
// ToLabel (.Period); Cores, NodeCPU and PodCPU scalars of one location
// (.Namespace, .Location, .Period). Bytes, RTT, Cores, NodeCPU and PodCPU
// are optional.
type RouteQueries struct {
	Calls       string `json:"calls"`       // calls sent in the period
	Failures    string `json:"failures"`    // of those, failed (5xx and 429)
	LatencySum  string `json:"latency_sum"` // seconds, of the calls completed in the period
	Completions string `json:"completions"` // calls completed in the period
	Bytes       string `json:"bytes"`       // bytes of the calls and their answers
	Replicas    string `json:"replicas"`    // instances that exist
	Ready       string `json:"ready"`       // instances ready
	RTT         string `json:"rtt"`         // seconds, from FromLabel's location to ToLabel's
	Cores       string `json:"cores"`       // the location's nodes' cores
	NodeCPU     string `json:"node_cpu"`    // cores the location's nodes used
	PodCPU      string `json:"pod_cpu"`     // cores the namespace's pods used there, sidecars included
	// The labels of the edge queries' samples: the calling workload and
	// its namespace, the called service, and the caller's and the
	// callee's location (RTT's samples carry FromLabel and ToLabel).
	CallerLabel, CallerNamespaceLabel, ServiceLabel, FromLabel, ToLabel string
}

// The grouping and selection of Istio's request metrics by edge and pair
// of clusters, reported by the caller's sidecar (so that the response time
// includes the network, as Snapshot.Routes has it).
const (
	routeBy  = `source_workload_namespace, source_workload, destination_service_name, source_cluster, destination_cluster`
	routeSel = `reporter="source",destination_service_namespace="{{.Namespace}}"`
	pairBy   = `source_cluster, destination_cluster`
)

// DefaultRouteQueries read Istio's standard metrics and kube-state-metrics
// of a multi-cluster mesh whose locations are Istio's cluster IDs
// (topology.istio.io/cluster, the source_cluster and destination_cluster
// labels of Istio's metrics):
//
//   - Calls: sum by (source_workload_namespace, source_workload,
//     destination_service_name, source_cluster, destination_cluster) of
//     increase(istio_requests_total{reporter="source",
//     destination_service_namespace=NS}[W]): the calls each workload
//     sent to each service of the namespace, by the caller's and the
//     callee's cluster, as the caller's sidecar counted them.
//   - Failures: the same with response_code=~"5..|429".
//   - LatencySum and Completions: the same grouping of
//     istio_request_duration_milliseconds_sum (/1000: seconds) and
//     _count, reporter="source": the response time the caller saw,
//     network included.
//   - Bytes: the same grouping of istio_request_bytes_sum plus
//     istio_response_bytes_sum: what the calls sent both ways, which
//     an egress budget counts.
//   - Replicas and Ready: sum of kube_deployment_status_replicas and
//     kube_deployment_status_replicas_ready{namespace=NS,
//     deployment=WORKLOAD,cluster=LOCATION}. These need one Prometheus
//     that sees every cluster's kube-state-metrics with a cluster label
//     holding Istio's cluster ID (federation, or Thanos or Mimir with an
//     external label cluster), as Istio's multi-cluster monitoring guide
//     sets up.
//   - RTT: avg by (source_cluster, destination_cluster) of
//     avg_over_time(probe_duration_seconds{source_cluster!="",
//     destination_cluster!=""}[W]): the Prometheus blackbox exporter's
//     probes from each cluster to every other one (a tcp_connect module
//     aimed at each cluster's east-west gateway). The scrape config of
//     each cluster's prober labels its samples source_cluster (the
//     prober's Istio cluster ID) and destination_cluster (the target's),
//     by relabelling.
//   - Cores: count(node_cpu_seconds_total{mode="idle",cluster=L}),
//     node_exporter's CPUs of the location's nodes.
//   - NodeCPU: sum(rate(node_cpu_seconds_total{mode!="idle",
//     cluster=L}[W])): the cores the nodes used, whoever used them.
//   - PodCPU: sum(rate(container_cpu_usage_seconds_total{namespace=NS,
//     cluster=L,container!="",container!="POD"}[W])): cAdvisor's CPU of
//     every container of the namespace's pods, the istio-proxy sidecars
//     included, which node_exporter counts too. NodeCPU less PodCPU over
//     Cores is the CPU others took (metrics.LocationStats.Background).
func DefaultRouteQueries() RouteQueries {
	edge := func(metric, extra string) string {
		return `sum by (` + routeBy + `) (increase(` + metric + `{` + routeSel + extra + `}[{{.Period}}]))`
	}
	deploy := `{namespace="{{.Namespace}}",deployment="{{.Workload}}",cluster="{{.Location}}"}`
	return RouteQueries{
		Calls:       edge("istio_requests_total", ""),
		Failures:    edge("istio_requests_total", `,response_code=~"5..|429"`),
		LatencySum:  edge("istio_request_duration_milliseconds_sum", "") + ` / 1000`,
		Completions: edge("istio_request_duration_milliseconds_count", ""),
		Bytes:       edge("istio_request_bytes_sum", "") + ` + ` + edge("istio_response_bytes_sum", ""),
		Replicas:    `sum(kube_deployment_status_replicas` + deploy + `)`,
		Ready:       `sum(kube_deployment_status_replicas_ready` + deploy + `)`,
		RTT:         `avg by (` + pairBy + `) (avg_over_time(probe_duration_seconds{source_cluster!="",destination_cluster!=""}[{{.Period}}]))`,
		Cores:       `count(node_cpu_seconds_total{mode="idle",cluster="{{.Location}}"})`,
		NodeCPU:     `sum(rate(node_cpu_seconds_total{mode!="idle",cluster="{{.Location}}"}[{{.Period}}]))`,
		PodCPU:      `sum(rate(container_cpu_usage_seconds_total{namespace="{{.Namespace}}",cluster="{{.Location}}",container!="",container!="POD"}[{{.Period}}]))`,

		CallerLabel: "source_workload", CallerNamespaceLabel: "source_workload_namespace", ServiceLabel: "destination_service_name",
		FromLabel: "source_cluster", ToLabel: "destination_cluster",
	}
}

// RouteService is a routed service: its name (the Kubernetes Service's,
// which Istio's destination_service_name carries, and Shoal's) and the
// Deployment that serves it in every location (default: the name), which
// Istio's source_workload names when it calls.
type RouteService struct {
	Name     string
	Workload string
}

// RouteObserver fills snapshots of a namespace's routed services from
// Prometheus: Routes, Locations, and the services as NAME@LOCATION (their
// replicas, and the calls that reached them as their callers measured
// them).
type RouteObserver struct {
	api       promv1.API
	q         RouteQueries
	namespace string
	services  []RouteService
	locations []string
	period    time.Duration
	window    time.Duration
	tmpl      [numRouteFields]*template.Template
	rtt       [][]time.Duration // the last RTT measured of each pair
}

const (
	rCalls = iota
	rFailures
	rLatencySum
	rCompletions
	rBytes
	rReplicas
	rReady
	rRTT
	rCores
	rNodeCPU
	rPodCPU
	numRouteFields
)

var routeFieldNames = [numRouteFields]string{"calls", "failures", "latency_sum", "completions", "bytes", "replicas", "ready", "rtt", "cores", "node_cpu", "pod_cpu"}

func (q RouteQueries) list() [numRouteFields]string {
	return [numRouteFields]string{q.Calls, q.Failures, q.LatencySum, q.Completions, q.Bytes, q.Replicas, q.Ready, q.RTT, q.Cores, q.NodeCPU, q.PodCPU}
}

// NewRouteObserver returns an observer of the Prometheus server at url
// for the services of namespace, placed in locations, over control
// periods of period.
func NewRouteObserver(url string, period time.Duration, namespace string, services []RouteService, locations []string, q RouteQueries) (*RouteObserver, error) {
	if period < time.Second {
		return nil, fmt.Errorf("prom: period %v: want at least 1s", period)
	}
	switch {
	case namespace == "":
		return nil, fmt.Errorf("prom: routes: a namespace is required")
	case len(services) == 0:
		return nil, fmt.Errorf("prom: routes: no services")
	case len(locations) < 2:
		return nil, fmt.Errorf("prom: routes: %d location(s), want at least 2", len(locations))
	case q.Calls == "" || q.Replicas == "" || q.Ready == "":
		return nil, fmt.Errorf("prom: routes: the calls, replicas and ready queries are required")
	case q.CallerLabel == "" || q.CallerNamespaceLabel == "" || q.ServiceLabel == "" || q.FromLabel == "" || q.ToLabel == "":
		return nil, fmt.Errorf("prom: routes: the caller, caller namespace, service, from and to labels are required")
	}
	seen := map[string]bool{}
	for _, l := range locations {
		if l == "" || seen[l] {
			return nil, fmt.Errorf("prom: routes: location %q empty or twice", l)
		}
		seen[l] = true
	}
	c, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		return nil, fmt.Errorf("prom: %w", err)
	}
	o := &RouteObserver{api: promv1.NewAPI(c), q: q, namespace: namespace, locations: slices.Clone(locations), period: period, window: period}
	names := map[string]bool{}
	for i, s := range services {
		if s.Name == "" || names[s.Name] {
			return nil, fmt.Errorf("prom: routes: services[%d]: name %q empty or twice", i, s.Name)
		}
		names[s.Name] = true
		if s.Workload == "" {
			s.Workload = s.Name
		}
		o.services = append(o.services, s)
	}
	for i, s := range q.list() {
		var err error
		if o.tmpl[i], err = parseQuery(routeFieldNames[i], s); err != nil {
			return nil, fmt.Errorf("prom: routes: %w", err)
		}
	}
	o.rtt = make([][]time.Duration, len(locations))
	for i := range o.rtt {
		o.rtt[i] = make([]time.Duration, len(locations))
	}
	return o, nil
}

// SetMinWindow makes the queries' window at least w (as
// Observer.SetMinWindow).
func (o *RouteObserver) SetMinWindow(w time.Duration) { o.window = max(o.period, w) }

// routeVars are the templates' fields.
type routeVars struct {
	Namespace, Workload, Location, Period string
}

// Query is one rendered query (a field's index in RouteQueries order,
// with workload and location where it has them), for documentation and
// logs.
func (o *RouteObserver) Query(field int, workload, location string) string {
	s, _ := o.render(field, workload, location)
	return s
}

func (o *RouteObserver) render(field int, workload, location string) (string, error) {
	var b bytes.Buffer
	err := o.tmpl[field].Execute(&b, routeVars{o.namespace, workload, location, model.Duration(o.window).String()})
	return b.String(), err
}

// Observe fills snap's Routes, Locations and Services with the period
// that ends at now.
//
//   - Routes: every edge into a service of the namespace between two of
//     the locations. A caller that is one of the services' workloads (in
//     the namespace) is that service; any other (an ingress gateway, a
//     service not routed here) is "", a client of the routed system.
//   - Services: each service in each location, as NAME@LOCATION, in the
//     services' order then the locations' (the same every period, as
//     control/multicloud's topology needs): its replicas and ready
//     replicas (0 where the location has none, or no data), and the
//     calls that reached it, completed and their response time as the
//     callers measured them. A service with no replica data in any
//     location is an error.
//   - Locations: the locations in order; the RTT from each to each other
//     (a pair with no probe this period keeps the last one measured, 0
//     before any); Cores, NodeCPU and PodCPU (0 without their queries).
//
// Counts over a window longer than the period are scaled to the period.
// It fails, leaving snap as it was, when Prometheus cannot answer.
func (o *RouteObserver) Observe(ctx context.Context, now time.Time, snap *metrics.Snapshot) error {
	scale := o.period.Seconds() / o.window.Seconds()
	loc := func(name string) int { return slices.Index(o.locations, name) }
	callers := map[string]string{} // workload -> service
	for _, s := range o.services {
		callers[s.Workload] = s.Name
	}
	type edge struct{ caller, service, from, to string }
	byEdge := map[edge]*metrics.RouteStats{}
	for _, f := range []int{rCalls, rFailures, rLatencySum, rCompletions, rBytes} {
		if o.tmpl[f] == nil {
			continue
		}
		vec, err := o.vector(ctx, f, "", "", now)
		if err != nil {
			return err
		}
		for _, smp := range vec {
			v := float64(smp.Value)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			m := smp.Metric
			e := edge{service: string(m[model.LabelName(o.q.ServiceLabel)]), from: string(m[model.LabelName(o.q.FromLabel)]), to: string(m[model.LabelName(o.q.ToLabel)])}
			if e.service == "" || loc(e.from) < 0 || loc(e.to) < 0 {
				continue
			}
			if string(m[model.LabelName(o.q.CallerNamespaceLabel)]) == o.namespace {
				e.caller = callers[string(m[model.LabelName(o.q.CallerLabel)])]
			}
			r := byEdge[e]
			if r == nil {
				r = &metrics.RouteStats{Caller: e.caller, Service: e.service, From: e.from, To: e.to}
				byEdge[e] = r
			}
			switch f {
			case rCalls:
				r.Calls += int64(math.Round(scale * v))
			case rFailures:
				r.Failures += int64(math.Round(scale * v))
			case rLatencySum:
				r.Latency.Sum += scale * v
			case rCompletions:
				r.Latency.Count += int64(math.Round(scale * v))
			case rBytes:
				r.Bytes += scale * v
			}
		}
	}
	routes := make([]metrics.RouteStats, 0, len(byEdge))
	for _, r := range byEdge {
		routes = append(routes, *r)
	}
	slices.SortFunc(routes, func(a, b metrics.RouteStats) int {
		return strings.Compare(a.Caller+"\x00"+a.Service+"\x00"+a.From+"\x00"+a.To, b.Caller+"\x00"+b.Service+"\x00"+b.From+"\x00"+b.To)
	})

	services := make([]metrics.ServiceStats, 0, len(o.services)*len(o.locations))
	for _, s := range o.services {
		found := false
		for _, l := range o.locations {
			st := metrics.ServiceStats{Name: s.Name + "@" + l}
			for _, f := range []int{rReplicas, rReady} {
				v, ok, err := o.scalar(ctx, f, s.Workload, l, now)
				if err != nil {
					return err
				}
				found = found || ok
				if f == rReplicas {
					st.Replicas = int(math.Round(v))
				} else {
					st.Ready = int(math.Round(v))
				}
			}
			for _, r := range routes {
				if r.Service == s.Name && r.To == l {
					st.Arrivals += r.Calls
					st.Completions += r.Latency.Count
					st.Latency.Count += r.Latency.Count
					st.Latency.Sum += r.Latency.Sum
				}
			}
			services = append(services, st)
		}
		if !found {
			return fmt.Errorf("prom: routes: %s: no replicas of %s in any location: %s", s.Name, s.Workload, o.Query(rReplicas, s.Workload, o.locations[0]))
		}
	}

	if o.tmpl[rRTT] != nil {
		vec, err := o.vector(ctx, rRTT, "", "", now)
		if err != nil {
			return err
		}
		for _, smp := range vec {
			v := float64(smp.Value)
			i, j := loc(string(smp.Metric[model.LabelName(o.q.FromLabel)])), loc(string(smp.Metric[model.LabelName(o.q.ToLabel)]))
			if i < 0 || j < 0 || i == j || math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			o.rtt[i][j] = time.Duration(max(v, 0) * float64(time.Second))
		}
	}
	locations := make([]metrics.LocationStats, 0, len(o.locations))
	for i, l := range o.locations {
		ls := metrics.LocationStats{Name: l, RTT: slices.Clone(o.rtt[i])}
		for _, m := range []struct {
			field int
			dst   *float64
		}{{rCores, &ls.Cores}, {rNodeCPU, &ls.NodeCPU}, {rPodCPU, &ls.PodCPU}} {
			if o.tmpl[m.field] == nil {
				continue
			}
			v, _, err := o.scalar(ctx, m.field, "", l, now)
			if err != nil {
				return err
			}
			*m.dst = max(v, 0)
		}
		locations = append(locations, ls)
	}

	snap.At, snap.Period = time.Duration(now.UnixNano()), o.period
	snap.Routes, snap.Services, snap.Locations = routes, services, locations
	return nil
}

// vector runs a field's query at t.
func (o *RouteObserver) vector(ctx context.Context, field int, workload, location string, t time.Time) (model.Vector, error) {
	q, err := o.render(field, workload, location)
	if err != nil {
		return nil, fmt.Errorf("prom: routes: %s: %w", routeFieldNames[field], err)
	}
	res, _, _, err := o.api.Query(ctx, q, t)
	if err != nil {
		return nil, fmt.Errorf("prom: routes: %s: %w", routeFieldNames[field], err)
	}
	vec, ok := res.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("prom: routes: %s: result of type %s, want a vector", routeFieldNames[field], res.Type())
	}
	return vec, nil
}

// scalar runs a field's query at t and returns the sum of its samples
// (NaN ones left out); ok is false when there is none.
func (o *RouteObserver) scalar(ctx context.Context, field int, workload, location string, t time.Time) (float64, bool, error) {
	q, err := o.render(field, workload, location)
	if err != nil {
		return 0, false, fmt.Errorf("prom: routes: %s: %w", routeFieldNames[field], err)
	}
	v, ok, err := scalar(ctx, o.api, q, t)
	if err != nil {
		return 0, false, fmt.Errorf("prom: routes: %s of %s in %s: %w", routeFieldNames[field], workload, location, err)
	}
	return v, ok, nil
}
