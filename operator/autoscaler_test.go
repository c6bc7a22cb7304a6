package operator

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/shoal-project/shoal/kube/kubetest"
	"github.com/shoal-project/shoal/operator/api/v1alpha1"
	"github.com/shoal-project/shoal/prom/promtest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
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
	c.InstallCRDDir(t, filepath.Join("..", "deploy", "crds"))
	c.Deploy(t, "default", "front", 1)
	c.Deploy(t, "default", "back", 1)
	srv := promtest.Start(t, c.ServeMetrics(t, func(*corev1.Pod) float64 { return 0.9 }))

	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(c.Config, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	r := &AutoscalerReconciler{Client: mgr.GetClient(), Config: c.Config, Recorder: mgr.GetEventRecorder("shoal-operator"), Prometheus: srv.URL}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	k := mgr.GetClient()
	for _, a := range []*v1alpha1.Autoscaler{
		{ObjectMeta: metav1.ObjectMeta{Name: "front", Namespace: "default"},
			Spec: v1alpha1.AutoscalerSpec{Target: v1alpha1.Target{Name: "front", Container: "app"}, MinReplicas: 1, MaxReplicas: 4,
				TargetCPUUtilization: 50, Period: metav1.Duration{Duration: 2 * time.Second}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "default"},
			Spec: v1alpha1.AutoscalerSpec{Target: v1alpha1.Target{Name: "back", Container: "app"}, MinReplicas: 1, MaxReplicas: 4,
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
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
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

	srv.Stop()
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		get("front", &front)
		return meta.IsStatusConditionFalse(front.Status.Conditions, CondMetricsAvailable), nil
	})
	if err != nil || front.Status.Acting != ActingHolding {
		t.Errorf("Prometheus stopped: conditions %+v, acting %q", front.Status.Conditions, front.Status.Acting)
	}
}

// TestExampleAutoscalerDecodes keeps deploy/examples/autoscaler.yaml true
// to the API: it decodes strictly into an Autoscaler.
func TestExampleAutoscalerDecodes(t *testing.T) {
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
}
