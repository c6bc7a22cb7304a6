// Package kube runs Shoal's controllers on Kubernetes: an implementation
// of the controller contract (control.Actuator) that turns each action
// into the API change a cluster understands. The same controller code
// that drives the simulator drives a cluster through it.
//
//   - SetReplicas patches the scale subresource of a Deployment or a
//     StatefulSet (absolute, so a retry never loses or doubles an update).
//   - SetResources resizes the running pods in place (the pods/resize
//     subresource, Kubernetes 1.33+) where discovery finds it, leaving the
//     template, whose change would roll every pod (new pods start from it
//     until the next SetResources, as VPA's in-place mode does); where the
//     cluster has no in-place resize, it patches the template, and the
//     pods roll.
//   - SetConcurrency sets what the target's platform reads: OpenFaaS's
//     max_inflight environment variable, or Knative's
//     containerConcurrency.
//   - SetBrownout scales an optional workload to zero, remembering its
//     replicas in an annotation, and back.
//   - SetRouteWeights writes the route weights of an Istio VirtualService
//     (below).
//
// # Route weights on Istio
//
// A Shoal location (a cloud, a cluster, a region) is a locality of the
// mesh, named by a label of the pods: Target.LocalityLabel, by default
// topology.istio.io/cluster, the label Istio itself gives every workload
// and endpoint with its cluster's ID (the same ID its metrics carry as
// source_cluster and destination_cluster). Each location is a subset of
// the service's host (Target.Host, by default
// NAME.NAMESPACE.svc.cluster.local) named after the location: the user's
// DestinationRule defines those subsets by that label (Shoal creates no
// DestinationRule). For example, with locations east and west:
//
//	subsets:
//	- {name: east, labels: {topology.istio.io/cluster: east}}
//	- {name: west, labels: {topology.istio.io/cluster: west}}
//
// The actuator owns one VirtualService per service, shoal-SERVICE in the
// target's namespace (labelled app.kubernetes.io/managed-by=shoal; one
// of that name without the label is left alone, with an error), whose
// hosts are [the host]. SetRouteWeights{Service, From, Weights} sets its
// HTTP route from-FROM, which matches the callers whose locality label
// is FROM (match: [{sourceLabels: {LABEL: FROM}}]) and sends their calls
// to the subsets, weighted. Only that route changes: the VirtualService
// is read, the route replaced or added, and the object updated, again on
// a conflict (another writer changed it in between), so concurrent
// writers of different From lose no update. The from- routes are kept in
// the order of their From, so the same weights always make the same
// object, and a last route without a match sends the calls of any other
// caller to the host as a whole (Istio's default balancing), where a
// VirtualService without it would refuse them (404).
//
// Istio's weights are whole percentages summing to 100. The weights are
// normalised to their sum and rounded by the largest remainder method:
// each location gets the floor of its exact percentage, and the
// percentage points still missing go one each to the locations with the
// largest fractional parts (ties: in the order of their names).
// Locations left with 0 are omitted from the route.
//
// The VirtualService API (networking.istio.io/v1, Istio 1.22+) is found by
// discovery at the first SetRouteWeights, so clusters without Istio are
// served all other actions; there SetRouteWeights fails, naming the
// missing API.
package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-project/shoal/control"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// Workload kinds.
const (
	Deployment  = "Deployment"
	StatefulSet = "StatefulSet"
	// KnativeService is a Knative Service (serving.knative.dev/v1).
	KnativeService = "KnativeService"
)

// Platforms that read a concurrency limit.
const (
	OpenFaaS = "openfaas"
	Knative  = "knative"
)

// BrownoutAnnotation holds the replicas a browned-out workload had.
const BrownoutAnnotation = "shoal.io/brownout-replicas"

// Target is the workload behind one of Shoal's services.
type Target struct {
	Service   string `json:"service"`
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"` // Deployment (default), StatefulSet or KnativeService
	Name      string `json:"name"`
	// Container is the container whose resources are set (default: the
	// first).
	Container string `json:"container,omitempty"`
	// Platform reads the concurrency limit: openfaas or knative ("" for
	// none).
	Platform string `json:"platform,omitempty"`
	// Optional workloads may be browned out.
	Optional bool `json:"optional,omitempty"`
	// Host is the service's host in the mesh, whose VirtualService
	// SetRouteWeights writes (default NAME.NAMESPACE.svc.cluster.local).
	Host string `json:"host,omitempty"`
	// LocalityLabel is the pod label whose value is a workload's
	// location: callers are matched by it, and the DestinationRule's
	// subsets, named after the locations, select by it (default
	// topology.istio.io/cluster).
	LocalityLabel string `json:"localityLabel,omitempty"`
}

// ResizeMode is how SetResources reaches running pods.
type ResizeMode string

// The resize modes.
const (
	InPlace ResizeMode = "in-place" // pods/resize on the running pods
	Rolling ResizeMode = "rolling"  // the template: the pods roll
)

// Client is a connection to a cluster: its clients, and how pods resize
// there. Actuators share it (and its rate limit). It is safe for
// concurrent use.
type Client struct {
	client  kubernetes.Interface
	dynamic dynamic.Interface
	mode    ResizeMode
	istio   istioRoutes
}

// Connect connects to the cluster of cfg. With resize "" it learns by
// discovery whether pods resize in place; Rolling forces template patches
// (for example where in-place resizes are not wanted).
func Connect(cfg *rest.Config, resize ResizeMode) (*Client, error) {
	if resize != "" && resize != InPlace && resize != Rolling {
		return nil, fmt.Errorf("kube: resize %q, want in-place, rolling or empty (discover)", resize)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	res, err := cs.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		return nil, fmt.Errorf("kube: discovery: %w", err)
	}
	inPlace := false
	for _, r := range res.APIResources {
		inPlace = inPlace || r.Name == "pods/resize"
	}
	ic, err := istioclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	c := &Client{client: cs, dynamic: dyn, mode: Rolling, istio: istioRoutes{client: ic}}
	switch {
	case resize == InPlace && !inPlace:
		return nil, errors.New("kube: resize in-place: the cluster has no pods/resize subresource (Kubernetes 1.33+)")
	case resize == "" && inPlace, resize == InPlace:
		c.mode = InPlace
	}
	return c, nil
}

// Actuator applies actions to a cluster. It is safe for concurrent use.
type Actuator struct {
	*Client
	targets map[string]Target
	// Timeout bounds each API call (default 10 s).
	Timeout time.Duration
}

// New connects to the cluster of cfg (as Connect) and returns an actuator
// of the targets.
func New(cfg *rest.Config, targets []Target, resize ResizeMode) (*Actuator, error) {
	c, err := Connect(cfg, resize)
	if err != nil {
		return nil, err
	}
	return c.Actuator(targets)
}

// Actuator checks the targets and returns their actuator on c.
func (c *Client) Actuator(targets []Target) (*Actuator, error) {
	a := &Actuator{Client: c, targets: map[string]Target{}, Timeout: 10 * time.Second}
	for i, t := range targets {
		if t.Kind == "" {
			t.Kind = Deployment
		}
		switch {
		case t.Service == "" || t.Name == "" || t.Namespace == "":
			return nil, fmt.Errorf("kube: targets[%d]: service, namespace and name are required", i)
		case t.Kind != Deployment && t.Kind != StatefulSet && t.Kind != KnativeService:
			return nil, fmt.Errorf("kube: targets[%d] (%s): kind %q, want Deployment, StatefulSet or KnativeService", i, t.Service, t.Kind)
		case t.Platform != "" && t.Platform != OpenFaaS && t.Platform != Knative:
			return nil, fmt.Errorf("kube: targets[%d] (%s): platform %q, want openfaas or knative", i, t.Service, t.Platform)
		case (t.Kind == KnativeService) != (t.Platform == Knative):
			return nil, fmt.Errorf("kube: targets[%d] (%s): a KnativeService is the knative platform's, and only it", i, t.Service)
		}
		if t.Host == "" {
			t.Host = t.Name + "." + t.Namespace + ".svc.cluster.local"
		}
		if t.LocalityLabel == "" {
			t.LocalityLabel = DefaultLocalityLabel
		}
		if msgs := content.IsLabelKey(t.LocalityLabel); len(msgs) > 0 {
			return nil, fmt.Errorf("kube: targets[%d] (%s): locality label %q: %s", i, t.Service, t.LocalityLabel, strings.Join(msgs, "; "))
		}
		if _, dup := a.targets[t.Service]; dup {
			return nil, fmt.Errorf("kube: targets[%d]: service %s twice", i, t.Service)
		}
		a.targets[t.Service] = t
	}
	return a, nil
}

// Mode is how SetResources reaches running pods on this cluster.
func (c *Client) Mode() ResizeMode { return c.mode }

// Apply implements control.Actuator.
func (a *Actuator) Apply(_ time.Duration, act control.Action) error {
	ctx, cancel := context.WithTimeout(context.Background(), a.Timeout)
	defer cancel()
	switch x := act.(type) {
	case control.SetReplicas:
		t, err := a.target(x.Service)
		if err != nil {
			return err
		}
		if x.Replicas < 0 {
			return fmt.Errorf("kube: %s: %d replicas", x.Service, x.Replicas)
		}
		return a.scale(ctx, t, x.Replicas)
	case control.SetResources:
		t, err := a.target(x.Service)
		if err != nil {
			return err
		}
		return a.resources(ctx, t, x.CPU, x.MemoryMB)
	case control.SetConcurrency:
		t, err := a.target(x.Service)
		if err != nil {
			return err
		}
		return a.concurrency(ctx, t, x.Limit)
	case control.SetBrownout:
		t, err := a.target(x.Service)
		if err != nil {
			return err
		}
		if !t.Optional {
			return fmt.Errorf("kube: %s is not optional: it cannot be browned out", x.Service)
		}
		return a.brownout(ctx, t, x.On)
	case control.SetRouteWeights:
		t, err := a.target(x.Service)
		if err != nil {
			return err
		}
		return a.routeWeights(ctx, t, x.From, x.Weights)
	}
	return fmt.Errorf("kube: %T is not supported on Kubernetes", act)
}

func (a *Actuator) target(service string) (Target, error) {
	t, ok := a.targets[service]
	if !ok {
		return t, fmt.Errorf("kube: no target for service %q", service)
	}
	return t, nil
}

// scale patches the workload's scale subresource.
func (a *Actuator) scale(ctx context.Context, t Target, replicas int) error {
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	var err error
	switch t.Kind {
	case Deployment:
		_, err = a.client.AppsV1().Deployments(t.Namespace).Patch(ctx, t.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "scale")
	case StatefulSet:
		_, err = a.client.AppsV1().StatefulSets(t.Namespace).Patch(ctx, t.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "scale")
	case KnativeService: // Knative scales by its autoscaler's bounds
		patch = fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{"autoscaling.knative.dev/min-scale":"%d","autoscaling.knative.dev/max-scale":"%d"}}}}}`, replicas, replicas)
		_, err = a.dynamic.Resource(knativeServices).Namespace(t.Namespace).Patch(ctx, t.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	return wrap(t, "scale", err)
}

var knativeServices = schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}

func wrap(t Target, what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("kube: %s (%s %s/%s): %s: %w", t.Service, t.Kind, t.Namespace, t.Name, what, err)
}

// workload is what Shoal reads of a Deployment or a StatefulSet.
type workload struct {
	meta     *metav1.ObjectMeta
	replicas int32 // spec.replicas (1 when unset, as the API defaults it)
	template *corev1.PodTemplateSpec
	selector *metav1.LabelSelector
}

// get reads the target's workload.
func (a *Actuator) get(ctx context.Context, t Target) (workload, error) {
	var w workload
	var r *int32
	switch t.Kind {
	case Deployment:
		d, err := a.client.AppsV1().Deployments(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
		if err != nil {
			return w, err
		}
		w, r = workload{meta: &d.ObjectMeta, template: &d.Spec.Template, selector: d.Spec.Selector}, d.Spec.Replicas
	case StatefulSet:
		s, err := a.client.AppsV1().StatefulSets(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
		if err != nil {
			return w, err
		}
		w, r = workload{meta: &s.ObjectMeta, template: &s.Spec.Template, selector: s.Spec.Selector}, s.Spec.Replicas
	default:
		return w, fmt.Errorf("%s workloads have no pod template Shoal patches", t.Kind)
	}
	w.replicas = 1
	if r != nil {
		w.replicas = *r
	}
	return w, nil
}

// container is the index of the target's container in spec.
func container(t Target, spec *corev1.PodSpec) (int, error) {
	if len(spec.Containers) == 0 {
		return 0, errors.New("no containers")
	}
	if t.Container == "" {
		return 0, nil
	}
	for i, c := range spec.Containers {
		if c.Name == t.Container {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no container %q", t.Container)
}

// resourcesPatch is a strategic merge patch of one container's CPU and
// memory (limits and requests alike; zero leaves a value).
func resourcesPatch(name string, cpu, memMB float64) []byte {
	list := corev1.ResourceList{}
	if cpu > 0 {
		list[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(cpu*1000+0.5), resource.DecimalSI)
	}
	if memMB > 0 {
		list[corev1.ResourceMemory] = *resource.NewQuantity(int64(memMB*1024*1024+0.5), resource.BinarySI)
	}
	c := map[string]any{"name": name, "resources": map[string]any{"limits": list, "requests": list}}
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"containers": []any{c}}})
	return b
}

// resources sets the target container's CPU and memory: in place on the
// running pods where the cluster can, on the template where it cannot.
func (a *Actuator) resources(ctx context.Context, t Target, cpu, memMB float64) error {
	if cpu < 0 || memMB < 0 || (cpu == 0 && memMB == 0) {
		return fmt.Errorf("kube: %s: resources cpu %g, memory %g MB: want one positive, none negative", t.Service, cpu, memMB)
	}
	w, err := a.get(ctx, t)
	if err != nil {
		return wrap(t, "resources", err)
	}
	i, err := container(t, &w.template.Spec)
	if err != nil {
		return wrap(t, "resources", err)
	}
	name := w.template.Spec.Containers[i].Name
	pod := resourcesPatch(name, cpu, memMB)
	if a.mode == Rolling {
		tpl := fmt.Appendf(nil, `{"spec":{"template":%s}}`, pod)
		return wrap(t, "resources", a.patchWorkload(ctx, t, types.StrategicMergePatchType, tpl))
	}
	s, err := metav1.LabelSelectorAsSelector(w.selector)
	if err != nil {
		return wrap(t, "resources", err)
	}
	pods, err := a.client.CoreV1().Pods(t.Namespace).List(ctx, metav1.ListOptions{LabelSelector: s.String()})
	if err != nil {
		return wrap(t, "resources", err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		_, err := a.client.CoreV1().Pods(t.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, pod, metav1.PatchOptions{}, "resize")
		if err != nil && !apierrors.IsNotFound(err) {
			return wrap(t, "resize pod "+p.Name, err)
		}
	}
	return nil
}

func (a *Actuator) patchWorkload(ctx context.Context, t Target, pt types.PatchType, patch []byte) error {
	var err error
	switch t.Kind {
	case Deployment:
		_, err = a.client.AppsV1().Deployments(t.Namespace).Patch(ctx, t.Name, pt, patch, metav1.PatchOptions{})
	case StatefulSet:
		_, err = a.client.AppsV1().StatefulSets(t.Namespace).Patch(ctx, t.Name, pt, patch, metav1.PatchOptions{})
	default:
		err = fmt.Errorf("%s workloads are not patched here", t.Kind)
	}
	return err
}

// concurrency sets the limit the target's platform reads.
func (a *Actuator) concurrency(ctx context.Context, t Target, limit int) error {
	if limit < 0 {
		return fmt.Errorf("kube: %s: concurrency %d", t.Service, limit)
	}
	switch t.Platform {
	case Knative: // spec.template.spec.containerConcurrency, 0 = unlimited
		patch := fmt.Appendf(nil, `{"spec":{"template":{"spec":{"containerConcurrency":%d}}}}`, limit)
		_, err := a.dynamic.Resource(knativeServices).Namespace(t.Namespace).Patch(ctx, t.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		return wrap(t, "concurrency", err)
	case OpenFaaS: // the of-watchdog's max_inflight, 0 = unlimited
		w, err := a.get(ctx, t)
		if err != nil {
			return wrap(t, "concurrency", err)
		}
		i, err := container(t, &w.template.Spec)
		if err != nil {
			return wrap(t, "concurrency", err)
		}
		c := map[string]any{"name": w.template.Spec.Containers[i].Name, "env": []corev1.EnvVar{{Name: "max_inflight", Value: strconv.Itoa(limit)}}}
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{c}}}}})
		return wrap(t, "concurrency", a.patchWorkload(ctx, t, types.StrategicMergePatchType, patch))
	}
	return fmt.Errorf("kube: %s: no platform reads a concurrency limit (set platform: openfaas or knative)", t.Service)
}

// brownout scales an optional workload to zero, keeping its replicas in
// an annotation, or back to them. Both are idempotent.
func (a *Actuator) brownout(ctx context.Context, t Target, on bool) error {
	if t.Kind == KnativeService {
		return fmt.Errorf("kube: %s: Knative services are browned out by their routes, not here", t.Service)
	}
	return wrap(t, "brownout", retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		w, err := a.get(ctx, t)
		if err != nil {
			return err
		}
		meta, replicas := w.meta, w.replicas
		kept, browned := meta.Annotations[BrownoutAnnotation]
		var patch []byte
		switch {
		case on && !browned:
			patch = fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"%d"},"resourceVersion":%q},"spec":{"replicas":0}}`, BrownoutAnnotation, replicas, meta.ResourceVersion)
		case !on && browned:
			n, err := strconv.Atoi(kept)
			if err != nil || n < 0 {
				n = 1
			}
			patch = fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null},"resourceVersion":%q},"spec":{"replicas":%d}}`, BrownoutAnnotation, meta.ResourceVersion, n)
		default:
			return nil
		}
		return a.patchWorkload(ctx, t, types.MergePatchType, patch)
	}))
}
