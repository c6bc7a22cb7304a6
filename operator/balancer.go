package operator

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/control/policy"
	"github.com/shoal-project/shoal/operator/api/v1alpha1"
	"github.com/shoal-project/shoal/proxy"
	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ProxyConfigKey is the key of a Balancer's ConfigMap that holds the
// proxy's configuration file.
const ProxyConfigKey = "proxy.yaml"

// +kubebuilder:rbac:groups=shoal.io,resources=balancers,verbs=get;list;watch
// +kubebuilder:rbac:groups=shoal.io,resources=balancers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create;update

// BalancerReconciler keeps each Balancer's proxy configuration in a
// ConfigMap (<name>-proxy, key proxy.yaml, owned by the Balancer): the
// backends are its Service's ready endpoints, rewritten whenever they
// change, so that a 'shoal proxy --watch' mounting it follows the pods as
// kube-proxy would, with Shoal's selectors.
type BalancerReconciler struct {
	Client client.Client
	// APIReader reads and writes ConfigMaps uncached (default Client).
	APIReader client.Reader
	Recorder  events.EventRecorder
}

// SetupWithManager registers the reconciler: a Balancer is reconciled when
// it changes and when its Service's EndpointSlices do.
func (r *BalancerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = r.Client
	}
	skip := true
	return ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.Balancer{}).Named("balancer").
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(r.balancersOf)).
		WithOptions(controller.Options{SkipNameValidation: &skip}).Complete(r)
}

// balancersOf maps an EndpointSlice to the Balancers of its Service.
func (r *BalancerReconciler) balancersOf(ctx context.Context, o client.Object) []reconcile.Request {
	svc := o.GetLabels()[discoveryv1.LabelServiceName]
	if svc == "" {
		return nil
	}
	var list v1alpha1.BalancerList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, b := range list.Items {
		if b.Spec.Service == svc {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}})
		}
	}
	return reqs
}

// Reconcile writes the Balancer's configuration for its current
// endpoints.
func (r *BalancerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var b v1alpha1.Balancer
	if err := r.Client.Get(ctx, req.NamespacedName, &b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	backends, err := r.backends(ctx, &b)
	if err != nil {
		return ctrl.Result{}, err
	}
	b.Status.ObservedGeneration = b.Generation
	raw, err := proxyConfig(&b, backends)
	if err != nil {
		// No ready endpoint, or a configuration the proxy would refuse:
		// the last good one stays.
		setCondition(&b.Status.Conditions, b.Generation, CondReady, false, "Invalid", err.Error())
		r.Recorder.Eventf(&b, nil, corev1.EventTypeWarning, "NotConfigured", "Configure", "%v; the last configuration stays", err)
		return ctrl.Result{}, writeStatus(ctx, r.Client, &b)
	}
	changed, err := r.writeConfigMap(ctx, &b, raw)
	if err != nil {
		return ctrl.Result{}, err
	}
	if changed {
		r.Recorder.Eventf(&b, nil, corev1.EventTypeNormal, "Configured", "Configure", "%d backends, policy %s", len(backends), b.Spec.Policy)
	}
	b.Status.ConfigMap, b.Status.Backends = configMapName(&b), int32(len(backends))
	setCondition(&b.Status.Conditions, b.Generation, CondReady, true, "Configured", fmt.Sprintf("%d backends", len(backends)))
	return ctrl.Result{}, writeStatus(ctx, r.Client, &b)
}

// backends are the URLs of the ready endpoints of b's Service, sorted.
func (r *BalancerReconciler) backends(ctx context.Context, b *v1alpha1.Balancer) ([]string, error) {
	var slices_ discoveryv1.EndpointSliceList
	if err := r.Client.List(ctx, &slices_, client.InNamespace(b.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: b.Spec.Service}); err != nil {
		return nil, err
	}
	var urls []string
	for _, s := range slices_.Items {
		port := b.Spec.Port
		if port == 0 && len(s.Ports) > 0 && s.Ports[0].Port != nil {
			port = *s.Ports[0].Port
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				urls = append(urls, "http://"+net.JoinHostPort(a, strconv.Itoa(int(port))))
			}
		}
	}
	slices.Sort(urls)
	return slices.Compact(urls), nil
}

// proxyConfig is b's proxy configuration file, checked as the proxy
// will read it.
func proxyConfig(b *v1alpha1.Balancer, backends []string) ([]byte, error) {
	if len(backends) == 0 {
		return nil, fmt.Errorf("service %s has no ready endpoint", b.Spec.Service)
	}
	c := proxy.Config{Listen: b.Spec.Listen, Admin: b.Spec.Admin, Name: b.Name, Policy: b.Spec.Policy}
	if c.Policy == proxy.PolicyDistrLB {
		c.Agent = &proxy.AgentConfig{File: b.Spec.AgentPath}
	}
	if a := b.Spec.Admission; a != nil {
		c.Admission = lb.Admission{MaxRequests: int(a.MaxRequests), MaxPending: int(a.MaxPending)}
		if a.QueueTimeout != nil {
			c.Admission.QueueTimeout = a.QueueTimeout.Duration
		}
	}
	for _, u := range backends {
		c.Backends = append(c.Backends, proxy.BackendConfig{URL: u, Weight: 1})
	}
	raw, err := yaml.Marshal(&c)
	if err != nil {
		return nil, err
	}
	known := lb.Classical().Runs(policy.Proxy) // as 'shoal proxy'
	if _, err := proxy.Decode(bytes.NewReader(raw), configMapName(b), known.Names()); err != nil {
		return nil, err
	}
	return raw, nil
}

func configMapName(b *v1alpha1.Balancer) string { return b.Name + "-proxy" }

// writeConfigMap creates or updates b's ConfigMap with raw, and reports
// whether it changed.
func (r *BalancerReconciler) writeConfigMap(ctx context.Context, b *v1alpha1.Balancer, raw []byte) (bool, error) {
	var cm corev1.ConfigMap
	key := types.NamespacedName{Namespace: b.Namespace, Name: configMapName(b)}
	err := r.APIReader.Get(ctx, key, &cm)
	if apierrors.IsNotFound(err) {
		cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Data: map[string]string{ProxyConfigKey: string(raw)}}
		if err := controllerutil.SetControllerReference(b, &cm, r.Client.Scheme()); err != nil {
			return false, err
		}
		return true, r.Client.Create(ctx, &cm)
	}
	if err != nil {
		return false, err
	}
	if cm.Data[ProxyConfigKey] == string(raw) {
		return false, nil
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[ProxyConfigKey] = string(raw)
	return true, r.Client.Update(ctx, &cm)
}
