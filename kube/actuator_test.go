package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/kube/kubetest"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

func apply(t *testing.T, a *Actuator, act control.Action) {
	t.Helper()
	if err := a.Apply(0, act); err != nil {
		t.Fatalf("%+v: %v", act, err)
	}
}

// TestActuatorOnARealControlPlane: on a real apiserver with the
// controllers and KWOK nodes, replicas appear and disappear through the
// scale subresource; running pods resize in place without a rollout, or
// the template rolls them; an optional workload browns out to zero and
// comes back to its replicas; OpenFaaS's and Knative's concurrency limits
// land where those platforms read them; and bad actions are refused by
// name.
func TestActuatorOnARealControlPlane(t *testing.T) {
	c := kubetest.Start(t, 1)
	ctx := context.Background()
	for _, d := range []string{"front", "recs", "fn"} {
		c.Deploy(t, "default", d, 1)
	}
	knativeCRD(t, c)
	targets := []Target{
		{Service: "front", Namespace: "default", Name: "front"},
		{Service: "recs", Namespace: "default", Name: "recs", Optional: true},
		{Service: "fn", Namespace: "default", Name: "fn", Platform: OpenFaaS},
		{Service: "ksvc", Namespace: "default", Name: "ksvc", Kind: KnativeService, Platform: Knative},
	}
	a, err := New(c.Config, targets, "")
	if err != nil {
		t.Fatal(err)
	}
	if a.Mode() != InPlace {
		t.Errorf("resize mode %s on Kubernetes 1.37, want in-place", a.Mode())
	}

	apply(t, a, control.SetReplicas{Service: "front", Replicas: 3})
	c.WaitReady(t, "default", "front", 3, time.Minute)
	apply(t, a, control.SetReplicas{Service: "front", Replicas: 1})
	c.WaitReady(t, "default", "front", 1, time.Minute)

	// In place: the running pod's container changes, the pod stays, the
	// template does not.
	before := pods(t, c, "front")
	apply(t, a, control.SetResources{Service: "front", CPU: 0.5, MemoryMB: 256})
	after := pods(t, c, "front")
	if len(after) != 1 || after[0].Name != before[0].Name {
		t.Fatalf("pods %v after an in-place resize of %v", names(after), names(before))
	}
	if got := after[0].Spec.Containers[0].Resources.Limits; got.Cpu().MilliValue() != 500 || got.Memory().Value() != 256<<20 {
		t.Errorf("resized pod's limits %v, want 500m and 256Mi", got)
	}
	if d, _ := c.Client.AppsV1().Deployments("default").Get(ctx, "front", metav1.GetOptions{}); d.Spec.Template.Spec.Containers[0].Resources.Limits.Cpu().MilliValue() != 1000 {
		t.Errorf("in-place resize changed the template: %v", d.Spec.Template.Spec.Containers[0].Resources.Limits)
	}

	// Rolling: the template changes, and new pods carry it.
	rolling, err := New(c.Config, targets, Rolling)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, rolling, control.SetResources{Service: "front", CPU: 2})
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		ps := pods(t, c, "front")
		return len(ps) == 1 && ps[0].Name != before[0].Name && ps[0].Spec.Containers[0].Resources.Limits.Cpu().MilliValue() == 2000, nil
	})
	if err != nil {
		t.Errorf("no pod with the new template's 2 CPUs: %v (pods %v)", err, names(pods(t, c, "front")))
	}

	apply(t, a, control.SetReplicas{Service: "recs", Replicas: 2})
	c.WaitReady(t, "default", "recs", 2, time.Minute)
	apply(t, a, control.SetBrownout{Service: "recs", On: true})
	apply(t, a, control.SetBrownout{Service: "recs", On: true}) // idempotent: the 2 stay remembered
	c.WaitReady(t, "default", "recs", 0, time.Minute)
	apply(t, a, control.SetBrownout{Service: "recs", On: false})
	c.WaitReady(t, "default", "recs", 2, time.Minute)

	apply(t, a, control.SetConcurrency{Service: "fn", Limit: 4})
	d, err := c.Client.AppsV1().Deployments("default").Get(ctx, "fn", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if env := d.Spec.Template.Spec.Containers[0].Env; len(env) != 1 || env[0].Name != "max_inflight" || env[0].Value != "4" {
		t.Errorf("OpenFaaS function's env %v, want max_inflight=4", env)
	}
	apply(t, a, control.SetConcurrency{Service: "ksvc", Limit: 8})
	dyn := dynamic.NewForConfigOrDie(c.Config)
	ks, err := dyn.Resource(knativeServices).Namespace("default").Get(ctx, "ksvc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cc, _, _ := unstructured.NestedInt64(ks.Object, "spec", "template", "spec", "containerConcurrency"); cc != 8 {
		t.Errorf("Knative containerConcurrency %d, want 8", cc)
	}

	for _, bad := range []struct {
		act  control.Action
		want string
	}{
		{control.SetReplicas{Service: "nope", Replicas: 1}, `no target for service "nope"`},
		{control.SetBrownout{Service: "front", On: true}, "not optional"},
		{control.SetConcurrency{Service: "front", Limit: 2}, "no platform reads"},
		{control.SetResources{Service: "front"}, "want one positive"},
		{control.SetWeights{LB: "lb0"}, "not supported"},
	} {
		if err := a.Apply(0, bad.act); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want an error with %q", bad.act, err, bad.want)
		}
	}
	if _, err := New(c.Config, []Target{{Service: "x", Namespace: "default", Name: "x", Kind: "CronJob"}}, ""); err == nil || !strings.Contains(err.Error(), "kind") {
		t.Errorf("a CronJob target: %v", err)
	}
}

func pods(t *testing.T, c *kubetest.Cluster, app string) []corev1.Pod {
	t.Helper()
	l, err := c.Client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func names(ps []corev1.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

// knativeCRD installs Knative's Service kind (its schema left open) and
// one Knative service, ksvc.
func knativeCRD(t *testing.T, c *kubetest.Cluster) {
	t.Helper()
	open := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "services.serving.knative.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "serving.knative.dev", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "services", Singular: "service", Kind: "Service", ListKind: "ServiceList", ShortNames: []string{"ksvc"}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &open}}}},
		},
	}
	c.InstallCRDs(t, crd)
	ks := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "serving.knative.dev/v1", "kind": "Service",
		"metadata": map[string]any{"name": "ksvc", "namespace": "default"},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"image": "fn"}}}}}}}
	dyn := dynamic.NewForConfigOrDie(c.Config)
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(knativeServices).Namespace("default").Create(ctx, ks, metav1.CreateOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("creating a Knative service: %v", err)
	}
}
