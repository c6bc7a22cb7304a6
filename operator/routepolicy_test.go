package operator

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/multicloud"
	"github.com/shoal-project/shoal/control/slate"
	"github.com/shoal-project/shoal/kube"
	"github.com/shoal-project/shoal/kube/kubetest"
	"github.com/shoal-project/shoal/learn/nn"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/operator/api/v1alpha1"
	"github.com/shoal-project/shoal/prom"
	"github.com/shoal-project/shoal/prom/promtest"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// twoClusters exports what a multi-cluster mesh's Prometheus holds of two
// clusters, east and west (kube-state-metrics labelled cluster, Istio's
// sidecars' request metrics): reviews has 2 replicas in east, 1 of them
// ready, and 2 ready in west; ratings and details 1 ready in each; the
// ingress gateways call reviews and details at home, 10 calls a second
// each, counters growing while the test runs; and what the learned
// router's inputs come from: node_exporter, cAdvisor (east's nodes busy
// 2.5 of 4 cores, 1 of them the namespace's pods; west's 0.6 of 2, 0.5)
// and the blackbox probes (22 ms east to west, 18 back).
func twoClusters(t *testing.T) string {
	t.Helper()
	ksm := map[string][2][2]int{"reviews": {{2, 1}, {2, 2}}, "ratings": {{1, 1}, {1, 1}}, "details": {{1, 1}, {1, 1}}}
	locations := promtest.LocationSeries([]promtest.Nodes{{Cluster: "east", Namespace: "default", CPUs: 4, Used: 2.5, Pods: 1},
		{Cluster: "west", Namespace: "default", CPUs: 2, Used: 0.6, Pods: 0.5}}, map[[2]string]float64{{"east", "west"}: 0.022, {"west", "east"}: 0.018})
	start := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s := time.Since(start).Seconds()
		var b strings.Builder
		for _, l := range locations(s) {
			b.WriteString(l + "\n")
		}
		for dep, byCluster := range ksm {
			for i, cl := range []string{"east", "west"} {
				l := fmt.Sprintf(`namespace="default",deployment=%q,cluster=%q`, dep, cl)
				fmt.Fprintf(&b, "kube_deployment_status_replicas{%s} %d\nkube_deployment_status_replicas_ready{%s} %d\n", l, byCluster[i][0], l, byCluster[i][1])
			}
		}
		for _, svc := range []string{"reviews", "details"} {
			for _, cl := range []string{"east", "west"} {
				for _, rep := range []string{"source", "destination"} {
					l := fmt.Sprintf(`reporter=%q,source_workload="istio-ingressgateway",source_workload_namespace="istio-system",destination_service_name=%q,destination_service_namespace="default",source_cluster=%q,destination_cluster=%q`, rep, svc, cl, cl)
					fmt.Fprintf(&b, "istio_requests_total{%s,response_code=\"200\"} %g\n", l, 10*s)
					fmt.Fprintf(&b, "istio_request_duration_milliseconds_sum{%s} %g\n", l, 10*s*20)
					fmt.Fprintf(&b, "istio_request_duration_milliseconds_count{%s} %g\n", l, 10*s)
				}
			}
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(b.String()))
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// randomModels is a multicloud model file for details in east and west
// whose network is untrained, its first layer's weights of the request
// shift (the last input) scaled up so that the shift dominates what it
// predicts: it loads, and moves calls between the clusters.
func randomModels(t *testing.T) []byte {
	t.Helper()
	n := multicloud.Inputs(2, len(multicloud.StandardRPS), multicloud.Pairs(2))
	sc := nn.Scaler{Mean: make([]float64, n), Std: make([]float64, n)}
	for i := range sc.Std {
		sc.Std[i] = 1
	}
	p := multicloud.NewPolicy(multicloud.Policy{Scenario: "test", Locations: []string{"east", "west"}, Inputs: multicloud.InputsPaper,
		Services:   []multicloud.ServiceModel{{Name: "details", Standard: []float64{5, 6, 7, 8, 9}, NNScaler: sc, Test: map[string]multicloud.Accuracy{"nn": {MAE: 0.01}}}},
		Provenance: multicloud.Provenance{Seed: 3}}, rand.New(rand.NewPCG(1, 2)))
	w := p.Net(0).Hidden[0].W.Value
	for j := range w.Cols {
		w.Data[(n-1)*w.Cols+j] *= 50
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestRoutePolicyWritesVirtualServiceWeights: on a real control plane
// with Istio's VirtualService CRD and a real Prometheus scraping two
// clusters' series, a locality RoutePolicy writes the weights Envoy's
// priority load gives (east, half of reviews' replicas ready, keeps 70%
// of its calls and sends 30% to west; west keeps all), the status says
// the same; a dry-run RoutePolicy writes no VirtualService and reports
// its weights; a multicloud RoutePolicy loads its models from a
// ConfigMap and writes what its status says, and a corrupt file is
// rejected once while the models in force stay; a SLATE-like RoutePolicy
// decides from the same series what a fresh controller decides, and a
// negative egress price is refused; with Prometheus gone
// the loops hold, MetricsAvailable false. The operator's metrics count
// the decisions and actions.
func TestRoutePolicyWritesVirtualServiceWeights(t *testing.T) {
	c := kubetest.Start(t, 0)
	c.InstallCRDDir(t, filepath.Join("..", "deploy", "helm", "shoal", "crds"))
	c.InstallCRDDir(t, filepath.Join("..", "kube", "testdata"))
	srv := promtest.Start(t, twoClusters(t))

	k := startManager(t, c, func(mgr ctrl.Manager) error {
		r := &RoutePolicyReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: c.Config, Recorder: mgr.GetEventRecorder("shoal-operator"), Prometheus: srv.URL}
		return r.SetupWithManager(mgr)
	})
	bg := context.Background()

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "routes", Namespace: "default"}, BinaryData: map[string][]byte{"models": randomModels(t)}}
	if err := k.Create(bg, cm); err != nil {
		t.Fatal(err)
	}
	locations := []v1alpha1.RouteLocation{{Name: "east"}, {Name: "west"}}
	period := metav1.Duration{Duration: 2 * time.Second}
	for _, rp := range []*v1alpha1.RoutePolicy{
		{ObjectMeta: metav1.ObjectMeta{Name: "reviews", Namespace: "default"},
			Spec: v1alpha1.RoutePolicySpec{Services: []v1alpha1.RouteService{{Name: "reviews"}}, Locations: locations, Period: period}},
		{ObjectMeta: metav1.ObjectMeta{Name: "ratings", Namespace: "default"},
			Spec: v1alpha1.RoutePolicySpec{Services: []v1alpha1.RouteService{{Name: "ratings"}}, Locations: locations, Period: period, DryRun: true}},
	} {
		if err := k.Create(bg, rp); err != nil {
			t.Fatal(err)
		}
	}
	// The learned router starts once Prometheus holds a whole window of
	// every series, so that its first decision reads what a later
	// observation reads (a partial window's rates are lower).
	obs, err := prom.NewRouteObserver(srv.URL, period.Duration, "default", []prom.RouteService{{Name: "details"}}, []string{"east", "west"}, prom.DefaultRouteQueries())
	if err != nil {
		t.Fatal(err)
	}
	var snap metrics.Snapshot
	promtest.Wait(t, 30*time.Second, "details' calls and the locations' series", func() (bool, error) {
		err := obs.Observe(bg, time.Now(), &snap)
		return err == nil && len(snap.Routes) > 0 && snap.Locations[1].NodeCPU > 0, nil
	})
	time.Sleep(period.Duration + 2*time.Second)
	if err := k.Create(bg, &v1alpha1.RoutePolicy{ObjectMeta: metav1.ObjectMeta{Name: "details", Namespace: "default"},
		Spec: v1alpha1.RoutePolicySpec{Services: []v1alpha1.RouteService{{Name: "details"}}, Locations: locations, Period: period, Policy: RouteMulticloud,
			PolicyFrom: &v1alpha1.PolicySource{ConfigMapKeyRef: &v1alpha1.ConfigMapKey{Name: "routes", Key: "models"}}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			var l v1alpha1.RoutePolicyList
			_ = k.List(bg, &l, client.InNamespace("default"))
			for _, rp := range l.Items {
				t.Logf("%s: %+v", rp.Name, rp.Status)
			}
			var events eventsv1.EventList
			_ = k.List(bg, &events, client.InNamespace("default"))
			for _, e := range events.Items {
				t.Logf("event %s %s: %s", e.Regarding.Name, e.Reason, e.Note)
			}
		}
	})
	get := func(name string) *v1alpha1.RoutePolicy {
		t.Helper()
		var rp v1alpha1.RoutePolicy
		if err := k.Get(bg, types.NamespacedName{Namespace: "default", Name: name}, &rp); err != nil {
			t.Fatal(err)
		}
		return &rp
	}
	ic := istioclient.NewForConfigOrDie(c.Config)
	// weights reads a VirtualService's from- routes as from -> location -> %.
	weights := func(service string) (map[string]map[string]int32, error) {
		vs, err := ic.NetworkingV1().VirtualServices("default").Get(bg, kube.VirtualServicePrefix+service, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		out := map[string]map[string]int32{}
		for _, rt := range vs.Spec.Http {
			if !strings.HasPrefix(rt.Name, kube.RoutePrefix) {
				continue
			}
			from := rt.Match[0].SourceLabels[kube.DefaultLocalityLabel]
			out[from] = map[string]int32{}
			for _, d := range rt.Route {
				out[from][d.Destination.Subset] = d.Weight
			}
		}
		return out, nil
	}
	status := func(rp *v1alpha1.RoutePolicy) map[string]map[string]int32 {
		out := map[string]map[string]int32{}
		for _, rs := range rp.Status.Routes {
			out[rs.From] = rs.Weights
		}
		return out
	}
	equal := func(a, b map[string]map[string]int32) bool {
		return maps.EqualFunc(a, b, func(x, y map[string]int32) bool { return maps.Equal(x, y) })
	}

	// Locality: Envoy's priority load over each cluster's ready replicas.
	want := map[string]map[string]int32{"east": {"east": 70, "west": 30}, "west": {"west": 100}}
	var got map[string]map[string]int32
	err = wait.PollUntilContextTimeout(bg, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		got, err = weights("reviews")
		return err == nil && equal(got, want), nil
	})
	if err != nil {
		t.Fatalf("reviews' VirtualService routes %v (%v), want %v", got, err, want)
	}
	// The status follows the VirtualService (the reconciler writes it
	// second), and a period whose scrape Prometheus missed holds, so wait
	// for a period that acted.
	var rv *v1alpha1.RoutePolicy
	acted := func() bool {
		rv = get("reviews")
		return equal(status(rv), want) && rv.Status.Acting == ActingPolicy && meta.IsStatusConditionTrue(rv.Status.Conditions, CondReady) &&
			meta.IsStatusConditionTrue(rv.Status.Conditions, CondMetricsAvailable) && rv.Status.LastDecision != nil && rv.Status.ObservedGeneration == rv.Generation
	}
	if wait.PollUntilContextTimeout(bg, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return acted(), nil }) != nil {
		t.Errorf("reviews' status %+v, want routes %v", rv.Status, want)
	}

	// Dry run: the same policy decides, nothing is written.
	var rt *v1alpha1.RoutePolicy
	err = wait.PollUntilContextTimeout(bg, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		rt = get("ratings")
		return len(rt.Status.Routes) == 2, nil
	})
	if err != nil || !equal(status(rt), map[string]map[string]int32{"east": {"east": 100}, "west": {"west": 100}}) || rt.Status.Acting != ActingDryRun || !rt.Status.Routes[0].DryRun {
		t.Errorf("the dry run's status %+v (%v)", rt.Status, err)
	}
	if _, err := weights("ratings"); !apierrors.IsNotFound(err) {
		t.Errorf("a dry run wrote a VirtualService: %v", err)
	}

	// The learned router: its models load, and the VirtualService carries
	// what its status says.
	var dt *v1alpha1.RoutePolicy
	err = wait.PollUntilContextTimeout(bg, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		dt = get("details")
		w, err := weights("details")
		return err == nil && len(dt.Status.Routes) == 2 && equal(w, status(dt)), nil
	})
	if err != nil {
		w, werr := weights("details")
		t.Fatalf("details: VirtualService %v (%v), status %+v", w, werr, dt.Status)
	}
	// The same model file on the same series, read by the same queries,
	// decides as it does in the simulator: a fresh controller given the
	// snapshot the route observer reads writes the same weights.
	if err := obs.Observe(bg, time.Now(), &snap); err != nil {
		t.Fatal(err)
	}
	if bgEast, bgWest := snap.Locations[0].Background(), snap.Locations[1].Background(); math.Abs(bgEast-0.375) > 0.02 || math.Abs(bgWest-0.05) > 0.02 ||
		math.Abs(snap.Locations[0].RTT[1].Seconds()-0.022) > 1e-6 {
		t.Errorf("the learned router's inputs: background %.3f and %.3f (want 0.375 and 0.05), RTT east-west %v (want 22ms)", bgEast, bgWest, snap.Locations[0].RTT[1])
	}
	pol, err := multicloud.ReadPolicy(bytes.NewReader(randomModels(t)))
	if err != nil {
		t.Fatal(err)
	}
	models, err := pol.Models(multicloud.KindChosen)
	if err != nil {
		t.Fatal(err)
	}
	sim := percentages(t, multicloud.NewController(models, multicloud.DefaultOptions()).Decide(0, &snap))
	t.Logf("details' weights on both sides: %v", sim)
	if w, _ := weights("details"); !equal(w, sim) {
		t.Errorf("details: the operator wrote %v, the controller decides %v on the same series", w, sim)
	}
	first := dt.Status.Policy
	if !meta.IsStatusConditionTrue(dt.Status.Conditions, CondPolicyLoaded) || !strings.Contains(first, "configmap routes/models@") || !strings.Contains(first, "chosen models of details, trained on test, seed 3") {
		t.Errorf("details' model: policy %q, conditions %+v", first, dt.Status.Conditions)
	}
	// The p95 objective needs p95 models, which this file has not: the
	// policy is refused, with the reason (the budget, a quantity, passes
	// the API server's schema).
	budget := resource.MustParse("0.5")
	if err := k.Create(bg, &v1alpha1.RoutePolicy{ObjectMeta: metav1.ObjectMeta{Name: "details-p95", Namespace: "default"},
		Spec: v1alpha1.RoutePolicySpec{Services: []v1alpha1.RouteService{{Name: "details"}}, Locations: locations, Period: period, Policy: RouteMulticloud,
			Objective: multicloud.ObjectiveP95, MaxEgressGBPerHour: &budget, DryRun: true,
			PolicyFrom: &v1alpha1.PolicySource{ConfigMapKeyRef: &v1alpha1.ConfigMapKey{Name: "routes", Key: "models"}}}}); err != nil {
		t.Fatal(err)
	}
	var p95 v1alpha1.RoutePolicy
	err = wait.PollUntilContextTimeout(bg, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := k.Get(ctx, types.NamespacedName{Namespace: "default", Name: "details-p95"}, &p95); err != nil {
			return false, nil // not in the client's cache yet
		}
		c := meta.FindStatusCondition(p95.Status.Conditions, CondPolicyLoaded)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "no p95 model"), nil
	})
	if err != nil {
		t.Errorf("the p95 objective without p95 models: conditions %+v", p95.Status.Conditions)
	}
	// The SLATE-like optimiser fits its models from the same series: both
	// clusters serve details in 20 ms well under capacity, so with 22 ms
	// between them it keeps every call at home, and it decides what a
	// fresh controller decides on the observed snapshot. A negative
	// egress price is refused, naming the field.
	price := resource.MustParse("2")
	if err := k.Create(bg, &v1alpha1.RoutePolicy{ObjectMeta: metav1.ObjectMeta{Name: "details-slate", Namespace: "default"},
		Spec: v1alpha1.RoutePolicySpec{Services: []v1alpha1.RouteService{{Name: "details"}}, Locations: locations, Period: period, Policy: RouteSlate,
			EgressSecondsPerGB: &price, DryRun: true}}); err != nil {
		t.Fatal(err)
	}
	sl := &v1alpha1.RoutePolicy{}
	err = wait.PollUntilContextTimeout(bg, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := k.Get(ctx, types.NamespacedName{Namespace: "default", Name: "details-slate"}, sl); err != nil {
			return false, nil // not in the client's cache yet
		}
		return len(sl.Status.Routes) == 2, nil
	})
	home := map[string]map[string]int32{"east": {"east": 100}, "west": {"west": 100}}
	if err != nil || !equal(status(sl), home) || sl.Status.Acting != ActingDryRun {
		t.Errorf("the SLATE-like policy's status %+v (%v), want routes %v", sl.Status, err, home)
	}
	if err := obs.Observe(bg, time.Now(), &snap); err != nil {
		t.Fatal(err)
	}
	fresh := percentages(t, slate.NewController(slate.Options{EgressWeight: 2}).Decide(0, &snap))
	if !equal(fresh, status(sl)) {
		t.Errorf("details: the SLATE-like operator decided %v, a fresh controller %v on the same series", status(sl), fresh)
	}
	negative := resource.MustParse("-1")
	if err := k.Create(bg, &v1alpha1.RoutePolicy{ObjectMeta: metav1.ObjectMeta{Name: "details-slate-bad", Namespace: "default"},
		Spec: v1alpha1.RoutePolicySpec{Services: []v1alpha1.RouteService{{Name: "details"}}, Locations: locations, Period: period, Policy: RouteSlate,
			EgressSecondsPerGB: &negative, DryRun: true}}); err != nil {
		t.Fatal(err)
	}
	var bad v1alpha1.RoutePolicy
	err = wait.PollUntilContextTimeout(bg, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := k.Get(ctx, types.NamespacedName{Namespace: "default", Name: "details-slate-bad"}, &bad); err != nil {
			return false, nil
		}
		c := meta.FindStatusCondition(bad.Status.Conditions, CondReady)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "egressSecondsPerGB"), nil
	})
	if err != nil {
		t.Errorf("a negative egress price: conditions %+v", bad.Status.Conditions)
	}

	cm.BinaryData["models"] = []byte("not a model")
	if err := k.Update(bg, cm); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(bg, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		dt = get("details")
		return meta.IsStatusConditionFalse(dt.Status.Conditions, CondPolicyLoaded), nil
	})
	if err != nil {
		t.Fatalf("a corrupt model file: conditions %+v", dt.Status.Conditions)
	}
	decided := dt.Status.LastDecision.Time
	err = wait.PollUntilContextTimeout(bg, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		dt = get("details")
		return dt.Status.LastDecision.After(decided), nil
	})
	if err != nil || dt.Status.Policy != first || dt.Status.Acting != ActingPolicy {
		t.Errorf("after the corrupt file the models in force should run on: policy %q (was %q), acting %q, %v", dt.Status.Policy, first, dt.Status.Acting, err)
	}
	// Events of one reason about one object make one event with a
	// series (the events API's aggregation). They reach the API server
	// asynchronously: wait for those expected.
	var count map[string]int
	_ = wait.PollUntilContextTimeout(bg, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var events eventsv1.EventList
		if err := k.List(ctx, &events, client.InNamespace("default")); err != nil {
			return false, nil
		}
		count = map[string]int{}
		for _, e := range events.Items {
			n := 1
			if e.Series != nil {
				n = int(e.Series.Count)
			}
			count[e.Regarding.Name+" "+e.Reason] += n
		}
		return count["details PolicyRejected"] > 0 && count["ratings WouldAct"] > 0 && count["reviews Acted"] > 0, nil
	})
	if count["details PolicyRejected"] != 1 || count["ratings WouldAct"] < 1 || count["reviews Acted"] < 1 || count["ratings Acted"] != 0 {
		t.Errorf("events %v: want details PolicyRejected once, ratings WouldAct (and not Acted), reviews Acted", count)
	}

	// The operator's metrics count them, by controller.
	for _, m := range []struct {
		name   string
		labels []string
		min    float64
	}{
		{"shoal_operator_actions_total", []string{routePolicyController, "SetRouteWeights", "applied"}, 4},
		{"shoal_operator_actions_total", []string{routePolicyController, "SetRouteWeights", "dry-run"}, 2},
		{"shoal_operator_decisions_total", []string{routePolicyController, ActingDryRun}, 1},
		{"shoal_operator_policy_rejected_total", []string{routePolicyController}, 1},
	} {
		if n := counter(t, m.name, m.labels...); n < m.min {
			t.Errorf("%s%v: %g, want at least %g", m.name, m.labels, n, m.min)
		}
	}

	srv.Stop()
	err = wait.PollUntilContextTimeout(bg, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		rv = get("reviews")
		return meta.IsStatusConditionFalse(rv.Status.Conditions, CondMetricsAvailable), nil
	})
	if err != nil || rv.Status.Acting != ActingHolding {
		t.Errorf("Prometheus stopped: conditions %+v, acting %q", rv.Status.Conditions, rv.Status.Acting)
	}
	if got, err := weights("reviews"); err != nil || !equal(got, want) {
		t.Errorf("holding changed reviews' routes: %v (%v)", got, err)
	}
}

// percentages are the route weights that actions set, as the whole
// percentages a VirtualService gets, from -> location -> %.
func percentages(t *testing.T, acts []control.Action) map[string]map[string]int32 {
	t.Helper()
	out := map[string]map[string]int32{}
	for _, a := range acts {
		sw, ok := a.(control.SetRouteWeights)
		if !ok {
			continue
		}
		ps, err := kube.Percentages(sw.Weights)
		if err != nil {
			t.Fatal(err)
		}
		out[sw.From] = map[string]int32{}
		for _, p := range ps {
			out[sw.From][p.Location] = p.Percent
		}
	}
	return out
}
