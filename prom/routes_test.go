package prom

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/prom/promtest"
)

// meshEdge is the traffic of one edge between two clusters: calls per
// second answered and failed, and the mean response time each side's
// sidecar sees (source: the caller's, network included; destination: the
// callee's).
type meshEdge struct {
	caller, callerNS, service, serviceNS, from, to string
	ok, failed                                     float64
	sourceMS, destMS                               float64
}

// mesh exports what Istio's sidecars and each cluster's kube-state-metrics
// (labelled cluster) would, as counters that grow at the edges' rates
// while the test runs, and extra's lines. It returns the address
// (host:port).
// requestBytes and responseBytes are the sizes of the mesh's calls and
// their successful answers.
const requestBytes, responseBytes = 1000, 4000

func mesh(t *testing.T, replicas []string, extra func(s float64) []string, edges []meshEdge) string {
	t.Helper()
	start := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s := time.Since(start).Seconds()
		var b strings.Builder
		for _, r := range replicas {
			b.WriteString(r + "\n")
		}
		if extra != nil {
			for _, r := range extra(s) {
				b.WriteString(r + "\n")
			}
		}
		for _, e := range edges {
			l := fmt.Sprintf(`source_workload=%q,source_workload_namespace=%q,destination_service_name=%q,destination_service_namespace=%q,source_cluster=%q,destination_cluster=%q`,
				e.caller, e.callerNS, e.service, e.serviceNS, e.from, e.to)
			for _, rep := range []struct {
				name string
				ms   float64
			}{{"source", e.sourceMS}, {"destination", e.destMS}} {
				ll := fmt.Sprintf(`reporter=%q,%s`, rep.name, l)
				fmt.Fprintf(&b, "istio_requests_total{%s,response_code=\"200\"} %g\n", ll, e.ok*s)
				fmt.Fprintf(&b, "istio_requests_total{%s,response_code=\"503\"} %g\n", ll, e.failed*s)
				fmt.Fprintf(&b, "istio_request_duration_milliseconds_sum{%s} %g\n", ll, (e.ok+e.failed)*s*rep.ms)
				fmt.Fprintf(&b, "istio_request_duration_milliseconds_count{%s} %g\n", ll, (e.ok+e.failed)*s)
				fmt.Fprintf(&b, "istio_request_bytes_sum{%s} %g\n", ll, (e.ok+e.failed)*s*requestBytes)
				fmt.Fprintf(&b, "istio_response_bytes_sum{%s} %g\n", ll, e.ok*s*responseBytes)
			}
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(b.String()))
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestRouteObserverReadsARealPrometheus: a real Prometheus scrapes Istio's
// request metrics and kube-state-metrics of two clusters, and the route
// queries give control/multicloud's snapshot: each edge's calls, failures
// and response time by the caller's and callee's cluster (callers that
// are routed services by name, others as clients, other namespaces and
// clusters left out), each service's replicas in each cluster; and, from
// node_exporter, cAdvisor and the blackbox prober, each cluster's cores,
// the cores its nodes and the namespace's pods used (sidecars in, other
// namespaces and pause containers out), and each way's probed RTT. With
// Prometheus gone it fails and leaves the snapshot as it was.
func TestRouteObserverReadsARealPrometheus(t *testing.T) {
	ksm := func(dep, cluster string, replicas, ready int) []string {
		l := fmt.Sprintf(`namespace="shop",deployment=%q,cluster=%q`, dep, cluster)
		return []string{fmt.Sprintf("kube_deployment_status_replicas{%s} %d", l, replicas), fmt.Sprintf("kube_deployment_status_replicas_ready{%s} %d", l, ready)}
	}
	replicas := slices.Concat(ksm("reviews-v1", "east", 2, 1), ksm("reviews-v1", "west", 3, 3), ksm("ratings", "east", 1, 1))
	gw := func(from, to string, ok, failed, src float64) meshEdge {
		return meshEdge{"istio-ingressgateway", "istio-system", "reviews", "shop", from, to, ok, failed, src, 20}
	}
	edges := []meshEdge{
		gw("east", "east", 10, 0, 21),
		gw("west", "west", 4, 0, 21),
		gw("west", "east", 2, 1, 120), // 100 ms between the sidecars
		gw("east", "west", 1, 0, 80),  // 60 ms the other way
		{"reviews-v1", "shop", "ratings", "shop", "east", "east", 6, 0, 5, 4},
		{"reviews-v1", "shop", "details", "other", "east", "east", 50, 0, 5, 4}, // another namespace's service
		{"reviews-v1", "shop", "ratings", "shop", "south", "east", 50, 0, 5, 4}, // a cluster not routed
	}
	nodes := []promtest.Nodes{{Cluster: "east", Namespace: "shop", CPUs: 4, Used: 2.5, Pods: 1.5}, {Cluster: "west", Namespace: "shop", CPUs: 2, Used: 0.6, Pods: 0.5}}
	probes := map[[2]string]float64{{"east", "west"}: 0.042, {"west", "east"}: 0.038, {"east", "south"}: 0.1}
	srv := promtest.Start(t, mesh(t, replicas, promtest.LocationSeries(nodes, probes), edges))
	const period = 5 * time.Second
	o, err := NewRouteObserver(srv.URL, period, "shop", []RouteService{{Name: "reviews", Workload: "reviews-v1"}, {Name: "ratings"}}, []string{"east", "west"}, DefaultRouteQueries())
	if err != nil {
		t.Fatal(err)
	}
	var snap metrics.Snapshot
	promtest.Wait(t, 30*time.Second, "the mesh's calls", func() (bool, error) {
		err := o.Observe(context.Background(), time.Now(), &snap)
		return err == nil && len(snap.Routes) > 0, err
	})
	time.Sleep(period + time.Second) // a whole window of samples
	if err := o.Observe(context.Background(), time.Now(), &snap); err != nil {
		t.Fatal(err)
	}
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol*want {
			t.Errorf("%s: %g, want %g ± %.0f%%", what, got, want, 100*tol)
		}
	}
	type key struct{ caller, service, from, to string }
	want := map[key][3]float64{ // calls/s, failed/s, source ms
		{"", "reviews", "east", "east"}:        {10, 0, 21},
		{"", "reviews", "west", "west"}:        {4, 0, 21},
		{"", "reviews", "west", "east"}:        {3, 1, 120},
		{"", "reviews", "east", "west"}:        {1, 0, 80},
		{"reviews", "ratings", "east", "east"}: {6, 0, 5},
	}
	got := map[key]metrics.RouteStats{}
	for _, r := range snap.Routes {
		got[key{r.Caller, r.Service, r.From, r.To}] = r
	}
	if len(got) != len(want) {
		t.Errorf("routes %+v, want %d edges", snap.Routes, len(want))
	}
	for k, w := range want {
		r, ok := got[k]
		if !ok {
			t.Errorf("no route %+v", k)
			continue
		}
		s := period.Seconds()
		near(fmt.Sprintf("%+v calls", k), float64(r.Calls), w[0]*s, 0.2)
		if w[1] > 0 {
			near(fmt.Sprintf("%+v failures", k), float64(r.Failures), w[1]*s, 0.3)
		} else if r.Failures != 0 {
			t.Errorf("%+v: %d failures", k, r.Failures)
		}
		near(fmt.Sprintf("%+v completions", k), float64(r.Latency.Count), w[0]*s, 0.2)
		near(fmt.Sprintf("%+v mean response time", k), r.Latency.Mean()*1000, w[2], 0.01)
		near(fmt.Sprintf("%+v bytes", k), r.Bytes, ((w[0]-w[1])*(requestBytes+responseBytes)+w[1]*requestBytes)*s, 0.2)
	}
	if !slices.IsSortedFunc(snap.Routes, func(a, b metrics.RouteStats) int {
		return strings.Compare(a.Caller+" "+a.Service+" "+a.From+" "+a.To, b.Caller+" "+b.Service+" "+b.From+" "+b.To)
	}) {
		t.Errorf("routes not in order: %+v", snap.Routes)
	}

	var names []string
	for _, s := range snap.Services {
		names = append(names, fmt.Sprintf("%s:%d/%d", s.Name, s.Ready, s.Replicas))
	}
	if w := "reviews@east:1/2 reviews@west:3/3 ratings@east:1/1 ratings@west:0/0"; strings.Join(names, " ") != w {
		t.Errorf("services %v, want %s", names, w)
	}
	near("calls reaching reviews@east", float64(snap.Services[0].Arrivals), 13*period.Seconds(), 0.2)

	if len(snap.Locations) != 2 || snap.Locations[0].Name != "east" || snap.Locations[1].Name != "west" {
		t.Fatalf("locations %+v", snap.Locations)
	}
	east, west := snap.Locations[0], snap.Locations[1]
	near("RTT east to west, ms", float64(east.RTT[1])/float64(time.Millisecond), 42, 0.001)
	near("RTT west to east, ms", float64(west.RTT[0])/float64(time.Millisecond), 38, 0.001)
	if east.RTT[0] != 0 || west.RTT[1] != 0 {
		t.Errorf("locations %+v: an RTT to itself", snap.Locations)
	}
	for i, n := range nodes {
		l := snap.Locations[i]
		if l.Cores != float64(n.CPUs) {
			t.Errorf("%s: %g cores, want %d", n.Cluster, l.Cores, n.CPUs)
		}
		near(n.Cluster+" node CPU", l.NodeCPU, n.Used, 0.05)
		near(n.Cluster+" pods' CPU, sidecars in", l.PodCPU, n.Pods, 0.05)
		near(n.Cluster+" background", l.Background(), (n.Used-n.Pods)/float64(n.CPUs), 0.1)
	}

	ghost, err := NewRouteObserver(srv.URL, period, "shop", []RouteService{{Name: "ghost"}}, []string{"east", "west"}, DefaultRouteQueries())
	if err != nil {
		t.Fatal(err)
	}
	var empty metrics.Snapshot
	if err := ghost.Observe(context.Background(), time.Now(), &empty); err == nil || !strings.Contains(err.Error(), "no replicas of ghost") {
		t.Errorf("a service without replicas anywhere: %v", err)
	}

	srv.Stop()
	before := len(snap.Routes)
	if err := o.Observe(context.Background(), time.Now(), &snap); err == nil {
		t.Error("Prometheus stopped: no error")
	}
	if len(snap.Routes) != before || len(snap.Services) != 4 {
		t.Errorf("a failed observation changed the snapshot: %d routes, %d services", len(snap.Routes), len(snap.Services))
	}

	for _, bad := range []func() error{
		func() error {
			_, err := NewRouteObserver(srv.URL, period, "shop", []RouteService{{Name: "a"}}, []string{"east"}, DefaultRouteQueries())
			return err
		},
		func() error {
			_, err := NewRouteObserver(srv.URL, period, "shop", []RouteService{{Name: "a"}, {Name: "a"}}, []string{"east", "west"}, DefaultRouteQueries())
			return err
		},
		func() error {
			_, err := NewRouteObserver(srv.URL, period, "", []RouteService{{Name: "a"}}, []string{"east", "west"}, DefaultRouteQueries())
			return err
		},
	} {
		if bad() == nil {
			t.Error("a bad route observer: no error")
		}
	}
}
