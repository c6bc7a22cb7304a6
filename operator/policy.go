package operator

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/autoscale"
	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/kube"
	"github.com/shoal-project/shoal/operator/api/v1alpha1"
	"github.com/shoal-project/shoal/prom"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	l := &loop{fileState: fileState{generation: as.Generation, policy: version, about: version}, core: core{period: spec.Period.Duration}}
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
		if err := r.fit(ctx, as, pol, targets); err != nil {
			return nil, err
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
		w, err := r.workload(ctx, namespace, t)
		if err != nil {
			return err
		}
		t.Container, t.Optional = w.container, w.optional
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

// OptionalAnnotation marks a workload that may be browned out (scaled to
// zero while its callers answer without it): "true".
const OptionalAnnotation = "shoal.io/optional"

// workloadInfo is what the operator reads of a workload: its serving
// container (the first, unless the target names one) and that
// container's limits, and whether it may be browned out.
type workloadInfo struct {
	container     string
	optional      bool
	cpu, memoryMB float64 // limits per replica (0: none)
}

// workload reads t's workload.
func (r *AutoscalerReconciler) workload(ctx context.Context, namespace string, t *kube.Target) (workloadInfo, error) {
	var obj client.Object = &appsv1.Deployment{}
	if t.Kind == kube.StatefulSet {
		obj = &appsv1.StatefulSet{}
	}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: t.Name}, obj); err != nil {
		return workloadInfo{}, fmt.Errorf("%s %s: %w", t.Kind, t.Name, err)
	}
	var cs []corev1.Container
	switch w := obj.(type) {
	case *appsv1.Deployment:
		cs = w.Spec.Template.Spec.Containers
	case *appsv1.StatefulSet:
		cs = w.Spec.Template.Spec.Containers
	}
	if len(cs) == 0 {
		return workloadInfo{}, fmt.Errorf("%s %s has no container", t.Kind, t.Name)
	}
	c := cs[0]
	if t.Container != "" {
		i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == t.Container })
		if i < 0 {
			return workloadInfo{}, fmt.Errorf("%s %s has no container %q", t.Kind, t.Name, t.Container)
		}
		c = cs[i]
	}
	w := workloadInfo{container: c.Name, optional: obj.GetAnnotations()[OptionalAnnotation] == "true"}
	if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		w.cpu = q.AsApproximateFloat64()
	}
	if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		w.memoryMB = q.AsApproximateFloat64() / (1 << 20)
	}
	return w, nil
}

// fit checks a drpc policy against the cluster's Deployments it names
// (spec.onMismatch): refused with every mismatch named, or run without
// what does not fit, said in a PolicyAdjusted event.
func (r *AutoscalerReconciler) fit(ctx context.Context, as *v1alpha1.Autoscaler, pol *drpc.Policy, targets []kube.Target) error {
	var world []drpc.Service
	for i := range targets {
		t := targets[i]
		if t.Kind == "" {
			t.Kind = kube.Deployment
		}
		w, err := r.workload(ctx, as.Namespace, &t)
		if apierrors.IsNotFound(err) {
			continue // Fit names it
		}
		if err != nil {
			return err
		}
		world = append(world, drpc.Service{Name: t.Service, Optional: w.optional, CPU: w.cpu, MemoryMB: w.memoryMB})
	}
	dropped, err := pol.Fit(world, as.Spec.OnMismatch == "Drop")
	if err != nil {
		return fmt.Errorf("%w (spec.onMismatch: Drop runs it without what does not fit)", err)
	}
	if len(dropped) > 0 {
		parts := make([]string, len(dropped))
		for i, m := range dropped {
			parts[i] = m.String()
		}
		r.Recorder.Eventf(as, nil, corev1.EventTypeWarning, "PolicyAdjusted", "Load", "%d mismatches dropped: %s", len(dropped), strings.Join(parts, "; "))
	}
	return nil
}
