package operator

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/autoscale"
	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/kube"
	"github.com/shoal-project/shoal/operator/api/v1alpha1"
	"github.com/shoal-project/shoal/prom"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxPolicyBytes bounds a policy file read from a URL (a ConfigMap holds
// at most 1 MiB).
const maxPolicyBytes = 64 << 20

// loop returns the Autoscaler's loop, building it when its spec or its
// policy file is new. A policy file that does not load leaves the loop in
// force, if there is one, and is reported once.
func (r *AutoscalerReconciler) loop(ctx context.Context, key types.NamespacedName, as *v1alpha1.Autoscaler) (*loop, error) {
	cur := r.loops.get(key)
	// A reconcile of one Autoscaler never runs beside another of it, so
	// cur is this reconcile's alone until it is replaced below.
	version, raw, err := r.policyFile(ctx, as, cur)
	if err != nil {
		return r.reject(as, cur, version, err)
	}
	if cur != nil && cur.knows(as.Generation, version) {
		return cur, nil
	}
	l, err := r.build(ctx, as, version, raw)
	if err != nil {
		return r.reject(as, cur, version, err)
	}
	if version != "" {
		setCondition(&as.Status.Conditions, as.Generation, CondPolicyLoaded, true, "Loaded", version)
	}
	r.loops.set(key, l)
	return l, nil
}

// reject keeps cur, if there is one, when a new spec or policy file
// fails, and says why once per version.
func (r *AutoscalerReconciler) reject(as *v1alpha1.Autoscaler, cur *loop, version string, err error) (*loop, error) {
	if cur == nil || version == "" {
		return nil, err
	}
	if cur.rejected != version {
		cur.rejected = version
		policyRejected.WithLabelValues(autoscalerController).Inc()
		r.Recorder.Eventf(as, nil, corev1.EventTypeWarning, "PolicyRejected", "Load", "%s: %v; the policy in force (%s) stays", version, err, cur.policy)
	}
	setCondition(&as.Status.Conditions, as.Generation, CondPolicyLoaded, false, "PolicyRejected", fmt.Sprintf("%s: %v", version, err))
	return cur, nil
}

// policyFile returns the version of as's policy file ("" for hpa) and its
// bytes, unless cur already runs or rejected that version.
func (r *AutoscalerReconciler) policyFile(ctx context.Context, as *v1alpha1.Autoscaler, cur *loop) (string, []byte, error) {
	src := as.Spec.PolicyFrom
	if policyOf(as) != "drpc" || src == nil {
		return "", nil, nil
	}
	return readSource(ctx, r.APIReader, as.Namespace, src, func(v string) bool {
		return cur != nil && cur.knows(as.Generation, v)
	})
}

// readSource returns the version of a policy or model file and its bytes;
// none if seen says that version is known already.
func readSource(ctx context.Context, reader client.Reader, namespace string, src *v1alpha1.PolicySource, seen func(string) bool) (string, []byte, error) {
	switch {
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		var cm corev1.ConfigMap
		if err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, &cm); err != nil {
			return "configmap " + ref.Name, nil, err
		}
		v := fmt.Sprintf("configmap %s/%s@%s", ref.Name, ref.Key, cm.ResourceVersion)
		if seen(v) {
			return v, nil, nil
		}
		if b, ok := cm.BinaryData[ref.Key]; ok {
			return v, b, nil
		}
		if s, ok := cm.Data[ref.Key]; ok {
			return v, []byte(s), nil
		}
		return v, nil, fmt.Errorf("configmap %s has no key %s", ref.Name, ref.Key)
	case src.URL != "":
		v := "url " + src.URL
		if seen(v) {
			return v, nil, nil
		}
		b, err := fetch(ctx, src.URL)
		return v, b, err
	}
	return "", nil, fmt.Errorf("policyFrom: set configMapKeyRef or url")
}

func fetch(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxPolicyBytes))
}

// build makes a new loop for as's spec and policy file.
func (r *AutoscalerReconciler) build(ctx context.Context, as *v1alpha1.Autoscaler, version string, raw []byte) (*loop, error) {
	spec := &as.Spec
	l := &loop{fileState: fileState{generation: as.Generation, policy: version, about: version}, period: spec.Period.Duration}
	if l.period <= 0 {
		l.period = 15 * time.Second
	}
	target := float64(spec.TargetCPUUtilization)
	if target <= 0 {
		target = 80
	}
	var targets []kube.Target
	switch policyOf(as) {
	case "hpa":
		if spec.Target == nil {
			return nil, fmt.Errorf("spec.target is required by the hpa policy")
		}
		t := kube.Target{Service: spec.Target.Name, Namespace: as.Namespace, Kind: spec.Target.Kind, Name: spec.Target.Name, Container: spec.Target.Container}
		targets = append(targets, t)
		hpa, err := autoscale.NewHPA(autoscale.HPAConfig{Service: t.Service, MinReplicas: int(spec.MinReplicas), MaxReplicas: int(spec.MaxReplicas),
			Metrics: []autoscale.HPAMetric{{Kind: autoscale.MetricCPU, Target: target}}, SyncPeriod: l.period})
		if err != nil {
			return nil, fmt.Errorf("spec: %w", err)
		}
		l.ctl = hpa
	case "drpc":
		pol, err := drpc.ReadPolicy(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		l.period = time.Duration(pol.Period)
		var fallback []control.Controller
		l.managed = map[string]bool{}
		for _, d := range pol.Deployments {
			l.managed[d.Name] = true
			targets = append(targets, kube.Target{Service: d.Name, Namespace: as.Namespace, Name: d.Name})
			hpa, err := autoscale.NewHPA(autoscale.HPAConfig{Service: d.Name, MinReplicas: max(d.MinReplicas, 1), MaxReplicas: d.MaxReplicas,
				Metrics: []autoscale.HPAMetric{{Kind: autoscale.MetricCPU, Target: target}}, SyncPeriod: l.period})
			if err != nil {
				return nil, fmt.Errorf("the fallback of %s: %w", d.Name, err)
			}
			fallback = append(fallback, hpa)
		}
		// The ingress services are observed too (their response time is
		// the application's); they are scaled only if the policy names
		// them among its deployments.
		for _, name := range pol.Ingress {
			if !l.managed[name] {
				targets = append(targets, kube.Target{Service: name, Namespace: as.Namespace, Name: name})
			}
		}
		if l.drpc, err = drpc.NewController(pol, drpc.Options{Fallback: fallback, Seed: 1}); err != nil {
			return nil, err
		}
		l.ctl = l.drpc
		if p := pol.Provenance; p.Scenario != "" {
			l.about = fmt.Sprintf("%s (trained on %s, seed %d)", version, p.Scenario, p.Seed)
		}
	default:
		return nil, fmt.Errorf("policy %q: want hpa or drpc", spec.Policy)
	}
	return l, r.connect(ctx, l, as.Namespace, targets)
}

// connect gives l its actuator and observer of the targets, each with its
// serving container (the first, unless named).
func (r *AutoscalerReconciler) connect(ctx context.Context, l *loop, namespace string, targets []kube.Target) error {
	kc, err := r.loops.client(r.Config)
	if err != nil {
		return err
	}
	workloads := make([]prom.Workload, len(targets))
	for i := range targets {
		t := &targets[i]
		if t.Kind == "" {
			t.Kind = kube.Deployment
		}
		if t.Container == "" {
			c, err := r.firstContainer(ctx, namespace, t.Kind, t.Name)
			if err != nil {
				return err
			}
			t.Container = c
		}
		workloads[i] = prom.Workload{Service: t.Service, Namespace: namespace, Name: t.Name, Container: t.Container}
	}
	if l.act, err = kc.Actuator(targets); err != nil {
		return err
	}
	q := prom.DefaultQueries()
	if r.Queries != nil {
		q = *r.Queries
	}
	if l.obs, err = prom.New(r.Prometheus, l.period, workloads, q); err != nil {
		return err
	}
	l.obs.SetMinWindow(r.MinWindow)
	return nil
}

// firstContainer is the name of a workload's first container.
func (r *AutoscalerReconciler) firstContainer(ctx context.Context, namespace, kind, name string) (string, error) {
	var obj client.Object = &appsv1.Deployment{}
	if kind == kube.StatefulSet {
		obj = &appsv1.StatefulSet{}
	}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
		return "", fmt.Errorf("%s %s: %w", kind, name, err)
	}
	var cs []corev1.Container
	switch w := obj.(type) {
	case *appsv1.Deployment:
		cs = w.Spec.Template.Spec.Containers
	case *appsv1.StatefulSet:
		cs = w.Spec.Template.Spec.Containers
	}
	if len(cs) == 0 {
		return "", fmt.Errorf("%s %s has no container", kind, name)
	}
	return cs[0].Name, nil
}
