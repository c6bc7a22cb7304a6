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
// replicas (Services, as NAME@LOCATION); per pair of locations, the RTT,
// and per location the CPU other tenants take (Locations).
//
// The edge queries (Calls, Failures, LatencySum, Completions) are vectors
// over the whole namespace (.Namespace, .Period), one sample per edge and
// pair, told apart by the label names below. Replicas and Ready are
// scalars of one service's workload in one location (.Namespace,
// .Workload, .Location, .Period). RTT is a vector by FromLabel and
// ToLabel (.Period); Background a scalar of one location (.Location,
// .Period). RTT and Background are optional.
type RouteQueries struct {
	Calls       string `json:"calls"`       // calls sent in the period
	Failures    string `json:"failures"`    // of those, failed (5xx and 429)
	LatencySum  string `json:"latency_sum"` // seconds, of the calls completed in the period
	Completions string `json:"completions"` // calls completed in the period
	Replicas    string `json:"replicas"`    // instances that exist
	Ready       string `json:"ready"`       // instances ready
	RTT         string `json:"rtt"`         // seconds
	Background  string `json:"background"`  // share of the location's CPU, 0 to 1
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
//   - Replicas and Ready: sum of kube_deployment_status_replicas and
//     kube_deployment_status_replicas_ready{namespace=NS,
//     deployment=WORKLOAD,cluster=LOCATION}. These need one Prometheus
//     that sees every cluster's kube-state-metrics with a cluster label
//     holding Istio's cluster ID (federation, or Thanos or Mimir with an
//     external label cluster), as Istio's multi-cluster monitoring guide
//     sets up.
//   - RTT: by (source_cluster, destination_cluster), the mean response
//     time the callers' sidecars saw (reporter="source") less the mean
//     the callees' sidecars saw of the same calls (reporter="destination"),
//     over all of the mesh's calls between the two clusters, /1000: the
//     time a call spends between the two sidecars, i.e. the network's
//     round trip (plus the caller's sidecar's own time). Istio has no
//     probe of its own; a pair with no calls in the window has no value
//     (see RouteObserver.Observe).
//   - Background: none. No standard metric says how much of a
//     location's CPU other tenants take; a query (node_exporter's CPU
//     less the mesh's own containers', say) can be set here.
func DefaultRouteQueries() RouteQueries {
	edge := func(metric, extra string) string {
		return `sum by (` + routeBy + `) (increase(` + metric + `{` + routeSel + extra + `}[{{.Period}}]))`
	}
	mean := func(reporter string) string {
		sum := `sum by (` + pairBy + `) (increase(istio_request_duration_milliseconds_sum{reporter="` + reporter + `"}[{{.Period}}]))`
		count := `sum by (` + pairBy + `) (increase(istio_request_duration_milliseconds_count{reporter="` + reporter + `"}[{{.Period}}]))`
		return sum + ` / ` + count
	}
	deploy := `{namespace="{{.Namespace}}",deployment="{{.Workload}}",cluster="{{.Location}}"}`
	return RouteQueries{
		Calls:       edge("istio_requests_total", ""),
		Failures:    edge("istio_requests_total", `,response_code=~"5..|429"`),
		LatencySum:  edge("istio_request_duration_milliseconds_sum", "") + ` / 1000`,
		Completions: edge("istio_request_duration_milliseconds_count", ""),
		Replicas:    `sum(kube_deployment_status_replicas` + deploy + `)`,
		Ready:       `sum(kube_deployment_status_replicas_ready` + deploy + `)`,
		RTT:         `(` + mean("source") + ` - ` + mean("destination") + `) / 1000`,

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
	rReplicas
	rReady
	rRTT
	rBackground
	numRouteFields
)

var routeFieldNames = [numRouteFields]string{"calls", "failures", "latency_sum", "completions", "replicas", "ready", "rtt", "background"}

func (q RouteQueries) list() [numRouteFields]string {
	return [numRouteFields]string{q.Calls, q.Failures, q.LatencySum, q.Completions, q.Replicas, q.Ready, q.RTT, q.Background}
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
//   - Locations: the locations in order, the RTT of each pair (the mean
//     of both directions' measurements; a pair with none this period
//     keeps the last one measured, 0 before any), and Background (0
//     without its query).
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
	for _, f := range []int{rCalls, rFailures, rLatencySum, rCompletions} {
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
		n := len(o.locations)
		sum, cnt := make([]float64, n*n), make([]int, n*n)
		for _, smp := range vec {
			v := float64(smp.Value)
			i, j := loc(string(smp.Metric[model.LabelName(o.q.FromLabel)])), loc(string(smp.Metric[model.LabelName(o.q.ToLabel)]))
			if i < 0 || j < 0 || i == j || math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			a, b := min(i, j), max(i, j)
			sum[a*n+b] += max(v, 0)
			cnt[a*n+b]++
		}
		for a := range n {
			for b := a + 1; b < n; b++ {
				if cnt[a*n+b] > 0 {
					d := time.Duration(sum[a*n+b] / float64(cnt[a*n+b]) * float64(time.Second))
					o.rtt[a][b], o.rtt[b][a] = d, d
				}
			}
		}
	}
	locations := make([]metrics.LocationStats, 0, len(o.locations))
	for i, l := range o.locations {
		ls := metrics.LocationStats{Name: l, RTT: slices.Clone(o.rtt[i])}
		if o.tmpl[rBackground] != nil {
			v, _, err := o.scalar(ctx, rBackground, "", l, now)
			if err != nil {
				return err
			}
			ls.Background = min(max(v, 0), 1)
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
