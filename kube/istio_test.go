package kube

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/kube/kubetest"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPercentages(t *testing.T) {
	for _, c := range []struct {
		w    map[string]float64
		want string
	}{
		{map[string]float64{"east": 2, "west": 1}, "east=67 west=33"},
		{map[string]float64{"a": 1, "b": 1, "c": 1}, "a=34 b=33 c=33"}, // a tie: by name
		{map[string]float64{"a": 0.7, "b": 0.3}, "a=70 b=30"},
		{map[string]float64{"a": 1, "b": 0}, "a=100"},
		{map[string]float64{"a": 0.004, "b": 0.996}, "b=100"},
		{map[string]float64{"a": 0.125, "b": 0.125, "c": 0.75}, "a=13 b=12 c=75"},
		{map[string]float64{"x": 3}, "x=100"},
	} {
		p, err := Percentages(c.w)
		if err != nil {
			t.Fatalf("%v: %v", c.w, err)
		}
		if got := percentString(p); got != c.want {
			t.Errorf("%v: %s, want %s", c.w, got, c.want)
		}
	}
	// Any weights: whole percentages summing to 100, none off its exact
	// share by a point or more.
	for i := range 200 {
		w := map[string]float64{}
		for k := range 2 + i%5 {
			w[fmt.Sprintf("l%d", k)] = float64((i*7919+k*104729)%97) + 0.5
		}
		p, err := Percentages(w)
		if err != nil {
			t.Fatal(err)
		}
		total, sum := 0.0, int32(0)
		for _, x := range w {
			total += x
		}
		for _, x := range p {
			sum += x.Percent
			if d := float64(x.Percent) - w[x.Location]/total*100; d <= -1 || d >= 1 {
				t.Errorf("%v: %s gets %d%%, exact %.2f", w, x.Location, x.Percent, w[x.Location]/total*100)
			}
		}
		if sum != 100 {
			t.Errorf("%v: %s sums to %d", w, percentString(p), sum)
		}
	}
	for _, bad := range []map[string]float64{nil, {"a": 0}, {"a": -1, "b": 2}, {"": 1}} {
		if _, err := Percentages(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func percentString(p []LocationPercent) string {
	var s []string
	for _, x := range p {
		s = append(s, fmt.Sprintf("%s=%d", x.Location, x.Percent))
	}
	return strings.Join(s, " ")
}

// TestRouteWeightsOnARealControlPlane: on a real apiserver without Istio,
// SetRouteWeights fails naming the missing API; once Istio's own
// VirtualService CRD is installed (the same actuator asks again), the
// weights of two caller locations land in one VirtualService, rounded to
// whole percentages summing to 100 and accepted by Istio's schema; an
// update of one location keeps the other's route; two writers updating
// different locations at once conflict, retry, and lose no update; and a
// target's own host and locality label are used.
func TestRouteWeightsOnARealControlPlane(t *testing.T) {
	c := kubetest.Start(t, 0)
	ctx := context.Background()
	targets := []Target{
		{Service: "reviews", Namespace: "default", Name: "reviews"},
		{Service: "ratings", Namespace: "default", Name: "ratings", Host: "ratings.shop.example", LocalityLabel: "topology.kubernetes.io/region"},
	}
	a, err := New(c.Config, targets, "")
	if err != nil {
		t.Fatal(err)
	}
	err = a.Apply(0, control.SetRouteWeights{Service: "reviews", From: "east", Weights: map[string]float64{"east": 1}})
	if err == nil || !strings.Contains(err.Error(), "networking.istio.io/v1") || !strings.Contains(err.Error(), "does not serve") {
		t.Fatalf("SetRouteWeights without Istio: %v, want an error naming networking.istio.io/v1", err)
	}
	if err := a.Apply(0, control.SetReplicas{Service: "nope", Replicas: 1}); err == nil {
		t.Error("an unknown service: no error")
	}

	c.InstallCRDDir(t, "testdata")
	ic := istioclient.NewForConfigOrDie(c.Config)
	// routes reads the VirtualService of a service as from -> "loc=pct ...".
	routes := func(svc string) map[string]string {
		t.Helper()
		vs, err := ic.NetworkingV1().VirtualServices("default").Get(ctx, VirtualServicePrefix+svc, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		var names []string
		for _, r := range vs.Spec.Http {
			names = append(names, r.Name)
			var s []string
			sum := int32(0)
			for _, d := range r.Route {
				s = append(s, fmt.Sprintf("%s=%d", d.Destination.Subset, d.Weight))
				sum += d.Weight
				if d.Destination.Host != vs.Spec.Hosts[0] {
					t.Errorf("route %s: host %s, want %s", r.Name, d.Destination.Host, vs.Spec.Hosts[0])
				}
			}
			if r.Name == DefaultRoute {
				if len(r.Match) != 0 || len(r.Route) != 1 || r.Route[0].Destination.Subset != "" {
					t.Errorf("default route %v, want the host without a match", r)
				}
				continue
			}
			from := strings.TrimPrefix(r.Name, RoutePrefix)
			if len(r.Match) != 1 || len(r.Match[0].SourceLabels) != 1 {
				t.Errorf("route %s: match %v, want one of source labels", r.Name, r.Match)
			}
			for k, v := range r.Match[0].SourceLabels {
				from = k + "=" + v
			}
			if sum != 100 {
				t.Errorf("route %s: weights sum to %d", r.Name, sum)
			}
			out[from] = strings.Join(s, " ")
		}
		if len(names) == 0 || names[len(names)-1] != DefaultRoute || !slices.IsSorted(names[:len(names)-1]) {
			t.Errorf("routes %v: want the from- routes sorted, then %s", names, DefaultRoute)
		}
		return out
	}
	const cl = DefaultLocalityLabel + "="
	apply(t, a, control.SetRouteWeights{Service: "reviews", From: "east", Weights: map[string]float64{"east": 2, "west": 1}})
	apply(t, a, control.SetRouteWeights{Service: "reviews", From: "west", Weights: map[string]float64{"east": 1, "west": 1, "south": 1}})
	want := map[string]string{cl + "east": "east=67 west=33", cl + "west": "east=34 south=33 west=33"}
	if got := routes("reviews"); !maps.Equal(got, want) {
		t.Errorf("routes %v, want %v", got, want)
	}
	vs, err := ic.NetworkingV1().VirtualServices("default").Get(ctx, "shoal-reviews", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := vs.Spec.Hosts; len(h) != 1 || h[0] != "reviews.default.svc.cluster.local" || vs.Labels[ManagedBy] != "shoal" {
		t.Errorf("hosts %v, labels %v", h, vs.Labels)
	}
	// An update of east keeps west; and an earlier location sorts first.
	apply(t, a, control.SetRouteWeights{Service: "reviews", From: "east", Weights: map[string]float64{"east": 0.5, "west": 0.5, "north": 0}})
	apply(t, a, control.SetRouteWeights{Service: "reviews", From: "central", Weights: map[string]float64{"west": 1}})
	want = map[string]string{cl + "central": "west=100", cl + "east": "east=50 west=50", cl + "west": "east=34 south=33 west=33"}
	if got := routes("reviews"); !maps.Equal(got, want) {
		t.Errorf("after updating east: routes %v, want %v", got, want)
	}

	apply(t, a, control.SetRouteWeights{Service: "ratings", From: "eu", Weights: map[string]float64{"eu": 9, "us": 1}})
	if got := routes("ratings"); !maps.Equal(got, map[string]string{"topology.kubernetes.io/region=eu": "eu=90 us=10"}) {
		t.Errorf("ratings' routes %v", got)
	}
	if vs, _ := ic.NetworkingV1().VirtualServices("default").Get(ctx, "shoal-ratings", metav1.GetOptions{}); vs == nil || vs.Spec.Hosts[0] != "ratings.shop.example" {
		t.Errorf("ratings' VirtualService %v, want host ratings.shop.example", vs)
	}

	// Two writers (each its own client) update east and west at once:
	// their writes conflict, are retried on the latest object, and each
	// location ends with its writer's last weights.
	b, err := New(c.Config, targets, "")
	if err != nil {
		t.Fatal(err)
	}
	const n = 25
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for w, act := range map[string]*Actuator{"east": a, "west": b} {
		wg.Go(func() {
			for i := 1; i <= n; i++ {
				errs <- act.Apply(0, control.SetRouteWeights{Service: "reviews", From: w, Weights: map[string]float64{"east": float64(i), "west": float64(100 - i)}})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	want = map[string]string{cl + "central": "west=100", cl + "east": "east=25 west=75", cl + "west": "east=25 west=75"}
	if got := routes("reviews"); !maps.Equal(got, want) {
		t.Errorf("after concurrent writers: routes %v, want %v", got, want)
	}
	conflicts := a.istio.conflicts.Load() + b.istio.conflicts.Load()
	t.Logf("%d writes retried after a conflict", conflicts)
	if conflicts == 0 {
		t.Error("no write conflicted: the test did not test concurrent writers")
	}

	for _, bad := range []struct {
		act  control.Action
		want string
	}{
		{control.SetRouteWeights{Service: "reviews", From: "east", Weights: map[string]float64{"east": -1, "west": 2}}, "want finite and >= 0"},
		{control.SetRouteWeights{Service: "reviews", From: "east", Weights: map[string]float64{"east": 0}}, "positive"},
		{control.SetRouteWeights{Service: "reviews", From: "", Weights: map[string]float64{"east": 1}}, "not a label value"},
		{control.SetRouteWeights{Service: "reviews", From: "east", Weights: map[string]float64{"East_1": 1}}, "no subset name"},
		{control.SetRouteWeights{Service: "nope", From: "east", Weights: map[string]float64{"east": 1}}, `no target for service "nope"`},
	} {
		if err := a.Apply(0, bad.act); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want an error with %q", bad.act, err, bad.want)
		}
	}
	if _, err := New(c.Config, []Target{{Service: "x", Namespace: "default", Name: "x", LocalityLabel: "no spaces allowed"}}, ""); err == nil {
		t.Error("a bad locality label: no error")
	}
}
