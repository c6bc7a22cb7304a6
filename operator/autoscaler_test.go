package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/kube/kubetest"
	"github.com/shoal-project/shoal/learn/nn"
	"github.com/shoal-project/shoal/operator/api/v1alpha1"
	"github.com/shoal-project/shoal/prom/promtest"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"
)

// TestAutoscalerClosesTheLoop: on a real control plane with KWOK nodes,
// a real Prometheus scrapes the cluster's metrics (each pod busy at 0.9
// of its one core); the operator's HPA policy, targeting 50%, scales
// front up to its maximum through the API; a dry-run Autoscaler on back
// decides the same but leaves back alone, saying what it would do; while
// another client keeps changing front's Autoscaler, the conflicting
// status writes are retried and none is lost; and with Prometheus gone
// the operator holds, MetricsAvailable false.
func TestAutoscalerClosesTheLoop(t *testing.T) {
	c := kubetest.Start(t, 1)
	c.InstallCRDDir(t, filepath.Join("..", "deploy", "helm", "shoal", "crds"))
	c.Deploy(t, "default", "front", 1)
	c.Deploy(t, "default", "back", 1)
	srv := promtest.Start(t, c.ServeMetrics(t, kubetest.Busy(0.9)))

	k := startOperator(t, c, srv.URL)
	for _, a := range []*v1alpha1.Autoscaler{
		{ObjectMeta: metav1.ObjectMeta{Name: "front", Namespace: "default"},
			Spec: v1alpha1.AutoscalerSpec{Target: &v1alpha1.Target{Name: "front", Container: "app"}, MinReplicas: 1, MaxReplicas: 4,
				TargetCPUUtilization: 50, Period: metav1.Duration{Duration: 2 * time.Second}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "default"},
			Spec: v1alpha1.AutoscalerSpec{Target: &v1alpha1.Target{Name: "back", Container: "app"}, MinReplicas: 1, MaxReplicas: 4,
				TargetCPUUtilization: 50, Period: metav1.Duration{Duration: 2 * time.Second}, DryRun: true}},
	} {
		if err := k.Create(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	// Meanwhile another client keeps changing front's Autoscaler (its
	// labels): the operator's status writes conflict, are retried with
	// backoff, and none is lost.
	churn, stopChurn := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(churn)
		for i := 0; ; i++ {
			select {
			case <-stopChurn:
				return
			case <-time.After(20 * time.Millisecond):
			}
			var a v1alpha1.Autoscaler
			if k.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "front"}, &a) == nil {
				a.Labels = map[string]string{"churn": strconv.Itoa(i)}
				_ = k.Update(context.Background(), &a)
			}
		}
	}()
	c.WaitReady(t, "default", "front", 4, 2*time.Minute)
	close(stopChurn)
	<-churn
	var front v1alpha1.Autoscaler
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := k.Get(ctx, types.NamespacedName{Namespace: "default", Name: "front"}, &front); err != nil {
			return false, nil
		}
		return front.Status.Replicas == 4 && front.Status.LastDecision != nil, nil
	})
	if err != nil {
		t.Errorf("front's status after the churn: %+v", front.Status)
	}

	var back v1alpha1.Autoscaler
	get := func(name string, a *v1alpha1.Autoscaler) {
		t.Helper()
		if err := k.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: name}, a); err != nil {
			t.Fatal(err)
		}
	}
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		get("back", &back)
		return back.Status.DesiredReplicas > 1, nil
	})
	if err != nil {
		t.Fatalf("the dry-run Autoscaler never decided to scale back up: %+v", back.Status)
	}
	if d, _ := c.Client.AppsV1().Deployments("default").Get(context.Background(), "back", metav1.GetOptions{}); *d.Spec.Replicas != 1 || back.Status.Acting != ActingDryRun {
		t.Errorf("dry run: back has %d replicas (want 1), acting %q", *d.Spec.Replicas, back.Status.Acting)
	}

	// The operator's metrics count what it did, and how old the data
	// behind each action was.
	if n := counter(t, "shoal_operator_actions_total", "SetReplicas", "applied"); n < 1 {
		t.Errorf("%g SetReplicas applied in the metrics", n)
	}
	if n := counter(t, "shoal_operator_actions_total", "SetReplicas", "dry-run"); n < 1 {
		t.Errorf("%g SetReplicas dry runs in the metrics", n)
	}
	if n, sum := histogram(t, "shoal_operator_action_latency_seconds"); n < 1 || sum <= 0 {
		t.Errorf("action latency: %d observations, sum %g s", n, sum)
	}
	dashboardChartsExportedMetrics(t)

	srv.Stop()
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		get("front", &front)
		return meta.IsStatusConditionFalse(front.Status.Conditions, CondMetricsAvailable), nil
	})
	if err != nil || front.Status.Acting != ActingHolding {
		t.Errorf("Prometheus stopped: conditions %+v, acting %q", front.Status.Conditions, front.Status.Acting)
	}
}

// dashboardChartsExportedMetrics: every metric the chart's Grafana dashboard (deploy/helm/shoal/files)
// queries is one the operator exports (checked once it has acted, since
// a labelled series exists only once used).
func dashboardChartsExportedMetrics(t *testing.T) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "helm", "shoal", "files", "shoal-operator.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	fams, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, f := range fams {
		exported[f.GetName()] = true
	}
	name := regexp.MustCompile(`\b(shoal|controller_runtime|workqueue|process)_[a-z_]+`)
	charted := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, m := range name.FindAllString(tg.Expr, -1) {
				charted++
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
				if !exported[m] && !exported[base] {
					t.Errorf("dashboard panel %q charts %s, which the operator does not export", p.Title, m)
				}
			}
		}
	}
	if charted < 8 {
		t.Errorf("the dashboard charts %d metrics", charted)
	}
}

// counter is the sum of a counter's series whose label values include
// all of values, from the operator's registry.
func counter(t *testing.T, name string, values ...string) float64 {
	t.Helper()
	sum := 0.0
	for _, m := range family(t, name).GetMetric() {
		have := map[string]bool{}
		for _, l := range m.GetLabel() {
			have[l.GetValue()] = true
		}
		ok := true
		for _, v := range values {
			ok = ok && have[v]
		}
		if ok {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// histogram is a histogram's count and sum over its series.
func histogram(t *testing.T, name string) (n uint64, sum float64) {
	t.Helper()
	for _, m := range family(t, name).GetMetric() {
		n += m.GetHistogram().GetSampleCount()
		sum += m.GetHistogram().GetSampleSum()
	}
	return n, sum
}

func family(t *testing.T, name string) *dto.MetricFamily {
	t.Helper()
	fams, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return f
		}
	}
	return &dto.MetricFamily{}
}

// TestExamplesDecode keeps deploy/examples true to the API:
// each decodes strictly into its kind.
func TestExamplesDecode(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "examples", "autoscaler.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var a v1alpha1.Autoscaler
	if err := yaml.UnmarshalStrict(raw, &a); err != nil {
		t.Fatal(err)
	}
	if a.Spec.Target.Name != "frontend" || a.Spec.MaxReplicas != 10 || a.Spec.Period.Duration != 15*time.Second || !a.Spec.DryRun {
		t.Errorf("example decodes as %+v", a.Spec)
	}
	raw, err = os.ReadFile(filepath.Join("..", "deploy", "examples", "drpc-autoscaler.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	a = v1alpha1.Autoscaler{}
	if err := yaml.UnmarshalStrict(raw, &a); err != nil {
		t.Fatal(err)
	}
	if ref := a.Spec.PolicyFrom; a.Spec.Policy != "drpc" || ref == nil || ref.ConfigMapKeyRef == nil || ref.ConfigMapKeyRef.Key != "drpc.policy" || !a.Spec.DryRun {
		t.Errorf("the DRPC example decodes as %+v", a.Spec)
	}
	var rp v1alpha1.RoutePolicy
	if raw, err = os.ReadFile(filepath.Join("..", "deploy", "examples", "routepolicy.yaml")); err == nil {
		err = yaml.UnmarshalStrict(raw, &rp)
	}
	if err != nil || len(rp.Spec.Services) != 2 || len(rp.Spec.Locations) != 2 || rp.Spec.Policy != "locality" || !rp.Spec.DryRun {
		t.Errorf("the RoutePolicy example decodes as %+v: %v", rp.Spec, err)
	}
	var b v1alpha1.Balancer
	if raw, err = os.ReadFile(filepath.Join("..", "deploy", "examples", "balancer.yaml")); err == nil {
		err = yaml.UnmarshalStrict(raw, &b)
	}
	if err != nil || b.Spec.Service != "web" || b.Spec.Port != 8080 || b.Spec.Policy != "p2c" {
		t.Errorf("the Balancer example decodes as %+v: %v", b.Spec, err)
	}
}

// startOperator runs the Autoscaler reconciler in a manager on c until
// the test ends.
func startOperator(t *testing.T, c *kubetest.Cluster, prometheus string) client.Client {
	t.Helper()
	return startManager(t, c, func(mgr ctrl.Manager) error {
		r := &AutoscalerReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: c.Config, Recorder: mgr.GetEventRecorder("shoal-operator"), Prometheus: prometheus}
		return r.SetupWithManager(mgr)
	})
}

// residualPolicy is a DRPC policy whose networks output zero, so that it
// acts exactly as its base rule: add a replica above a demand
// utilisation of 0.8, remove one after two periods below 0.3. Its inputs'
// trained range is everything, but cpu_util at most cpuMax. Optional lets
// it brown web out.
func residualPolicy(t *testing.T, cpuMax float64, optional bool) []byte {
	t.Helper()
	p, err := drpc.NewPolicy(drpc.Policy{Period: drpc.Duration(2 * time.Second), Ingress: []string{"web"},
		Deployments: []drpc.Deployment{{Name: "web", MinReplicas: 1, MaxReplicas: 3, CPUMin: 1, CPUMax: 1, Optional: optional,
			Period: drpc.Duration(2 * time.Second)}},
		Steps:         drpc.Steps{CPU: 0.25, Replicas: 1},
		StudentHidden: []int{4}, TeacherHidden: []int{4}, Base: &drpc.Base{Low: 0.3, High: 0.8, Stabilize: 2},
		Reward: drpc.DefaultReward(time.Second), Notifier: drpc.NotifierConfig{NPR: 10, TH: -1e9},
		Provenance: drpc.Provenance{Scenario: "test", Seed: 7}}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range append([]*nn.MLP[float32]{p.Teacher()}, p.Student(0)) {
		for _, n := range m.Params() {
			clear(n.Value.Data)
		}
	}
	p.Low, p.High = make([]float64, drpc.LocalFeatures), make([]float64, drpc.LocalFeatures)
	for i, name := range drpc.LocalFeatureNames {
		p.Low[i], p.High[i] = -1e9, 1e9
		if name == "cpu_util" {
			p.High[i] = cpuMax
		}
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestAutoscalerRunsADRPCPolicy: an Autoscaler runs a DRPC policy file
// from a ConfigMap on a real control plane, read through a real
// Prometheus (no traffic, each pod 0.9 busy): the policy scales web down
// to its minimum (its base rule sees no demand), where the HPA would
// scale up; a corrupt file put in the ConfigMap is rejected with an
// event and the policy in force stays; a policy trained only up to a CPU
// utilisation of 0.5 falls back to the HPA, which scales web up.
func TestAutoscalerRunsADRPCPolicy(t *testing.T) {
	c := kubetest.Start(t, 1)
	c.InstallCRDDir(t, filepath.Join("..", "deploy", "helm", "shoal", "crds"))
	c.Deploy(t, "default", "web", 3)
	srv := promtest.Start(t, c.ServeMetrics(t, kubetest.Busy(0.9)))
	k := startOperator(t, c, srv.URL)
	ctx := context.Background()

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-policy", Namespace: "default"},
		BinaryData: map[string][]byte{"drpc.policy": residualPolicy(t, 1e9, false)}}
	if err := k.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	as := &v1alpha1.Autoscaler{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"},
		Spec: v1alpha1.AutoscalerSpec{Policy: "drpc", TargetCPUUtilization: 50,
			PolicyFrom: &v1alpha1.PolicySource{ConfigMapKeyRef: &v1alpha1.ConfigMapKey{Name: "web-policy", Key: "drpc.policy"}}}}
	if err := k.Create(ctx, as); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "default", Name: "app"}
	t.Cleanup(func() {
		if t.Failed() {
			var a v1alpha1.Autoscaler
			_ = k.Get(ctx, key, &a)
			t.Logf("status: %+v", a.Status)
			var events eventsv1.EventList
			_ = k.List(ctx, &events, client.InNamespace("default"))
			for _, e := range events.Items {
				t.Logf("event %s %s: %s", e.Regarding.Name, e.Reason, e.Note)
			}
		}
	})
	c.WaitReady(t, "default", "web", 1, 2*time.Minute)
	get := func() {
		t.Helper()
		if err := k.Get(ctx, key, as); err != nil {
			t.Fatal(err)
		}
	}
	// The status follows the scaling (the reconciler writes it second).
	var first string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		get()
		first = as.Status.Policy
		return as.Status.Acting == ActingPolicy && strings.Contains(first, "configmap web-policy/drpc.policy@") && strings.Contains(first, "trained on test, seed 7"), nil
	})
	if err != nil {
		t.Errorf("after the policy scaled down: acting %q, policy %q", as.Status.Acting, first)
	}

	cm.BinaryData["drpc.policy"] = []byte("not a policy")
	if err := k.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		get()
		return meta.IsStatusConditionFalse(as.Status.Conditions, CondPolicyLoaded), nil
	})
	if err != nil {
		t.Fatalf("a corrupt policy file: conditions %+v", as.Status.Conditions)
	}
	decided := as.Status.LastDecision.Time
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		get()
		return as.Status.LastDecision.After(decided), nil
	})
	if err != nil || as.Status.Policy != first || as.Status.Acting != ActingPolicy {
		t.Errorf("after the corrupt file the old policy should run on: policy %q (was %q), acting %q, %v", as.Status.Policy, first, as.Status.Acting, err)
	}
	// Events reach the API server asynchronously: wait for the rejection's.
	rejected := 0
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var events eventsv1.EventList
		if err := k.List(ctx, &events, client.InNamespace("default")); err != nil {
			return false, nil
		}
		rejected = 0
		for _, e := range events.Items {
			if e.Reason == "PolicyRejected" && e.Regarding.Name == "app" {
				rejected++
			}
		}
		return rejected > 0, nil
	})
	if n := counter(t, "shoal_operator_policy_rejected_total", autoscalerController); rejected != 1 || n != 1 {
		t.Errorf("%d PolicyRejected events and %g in the metrics, want 1 (once per version)", rejected, n)
	}

	cm.BinaryData["drpc.policy"] = residualPolicy(t, 0.5, false)
	if err := k.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	c.WaitReady(t, "default", "web", 3, 2*time.Minute)
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		get()
		return as.Status.Acting == ActingFallback && as.Status.Policy != first && len(as.Status.Workloads) == 1 && as.Status.Workloads[0].Fallback, nil
	})
	if err != nil {
		t.Errorf("out of the trained range: acting %q, policy %q, workloads %+v", as.Status.Acting, as.Status.Policy, as.Status.Workloads)
	}

	// A policy that may brown web out, which is not annotated optional,
	// is refused at load, naming it; with onMismatch Drop it runs without
	// brownout, and says so.
	cm.BinaryData["drpc.policy"] = residualPolicy(t, 1e9, true)
	if err := k.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		get()
		c := meta.FindStatusCondition(as.Status.Conditions, CondPolicyLoaded)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "web: the policy may brown it out, but it is not optional here"), nil
	})
	if err != nil {
		t.Fatalf("a policy that browns out a workload that is not optional: conditions %+v", as.Status.Conditions)
	}
	as.Spec.OnMismatch = "Drop"
	if err := k.Update(ctx, as); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		get()
		if !meta.IsStatusConditionTrue(as.Status.Conditions, CondPolicyLoaded) {
			return false, nil
		}
		var events eventsv1.EventList
		if err := k.List(ctx, &events, client.InNamespace("default")); err != nil {
			return false, nil
		}
		return slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
			return e.Reason == "PolicyAdjusted" && strings.Contains(e.Note, "not optional here; brownout dropped")
		}), nil
	})
	if err != nil {
		t.Errorf("onMismatch Drop: conditions %+v", as.Status.Conditions)
	}
}
