package operator

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/kube/kubetest"
	"github.com/shoal-project/shoal/operator/api/v1alpha1"
	"github.com/shoal-project/shoal/proxy"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
)

// TestBalancerFollowsTheEndpoints: a Balancer's ConfigMap holds a proxy
// configuration that 'shoal proxy' accepts, listing the ready pods of its
// Service (the real endpoint-slice controller's view of KWOK pods), and
// follows them when the Deployment scales; the API refuses a distr-lb
// Balancer without an agent file.
func TestBalancerFollowsTheEndpoints(t *testing.T) {
	c := kubetest.Start(t, 1)
	c.InstallCRDDir(t, filepath.Join("..", "deploy", "helm", "shoal", "crds"))
	c.Deploy(t, "default", "web", 3)
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := c.Client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k := startManager(t, c, func(mgr ctrl.Manager) error {
		r := &BalancerReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("shoal-operator")}
		return r.SetupWithManager(mgr)
	})

	b := &v1alpha1.Balancer{ObjectMeta: metav1.ObjectMeta{Name: "web-lb", Namespace: "default"},
		Spec: v1alpha1.BalancerSpec{Service: "web", Port: 8080, Policy: "p2c",
			Admission: &v1alpha1.Admission{MaxRequests: 16, QueueTimeout: &metav1.Duration{Duration: 500 * time.Millisecond}}}}
	if err := k.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	known := lb.Classical()
	delete(known, "oracle")
	// backends waits until want pods of web are ready and the ConfigMap
	// lists exactly their addresses, and returns the configuration. (If two
	// pods shared an address, a balancer would rightly list it once: one
	// suspected cause, not confirmed, of CI seeing 2 backends for 3 pods.)
	backends := func(want int) *proxy.Config {
		t.Helper()
		var cfg *proxy.Config
		var last string
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			ips, ready, err := readyAddresses(ctx, c, "web")
			if err != nil || ready != want {
				return false, nil
			}
			cm, err := c.Client.CoreV1().ConfigMaps("default").Get(ctx, "web-lb-proxy", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			last = cm.Data[ProxyConfigKey]
			if cfg, err = proxy.Decode(bytes.NewReader([]byte(last)), "web-lb-proxy", known.Names()); err != nil {
				return false, err
			}
			var listed []string
			for _, be := range cfg.Backends {
				listed = append(listed, be.URL)
			}
			return slices.Equal(listed, ips), nil
		})
		if err != nil {
			t.Fatalf("the ConfigMap never listed the %d ready pods: %v\n%s\n%s", want, err, last, endpointsOf(ctx, c, "web"))
		}
		return cfg
	}
	cfg := backends(3)
	if cfg.Policy != "p2c" || cfg.Name != "web-lb" || cfg.Listen != ":8080" || cfg.Admin != ":9090" {
		t.Errorf("configuration %+v", cfg)
	}
	if want := (lb.Admission{MaxRequests: 16, MaxPending: lb.DefaultMaxPending, QueueTimeout: 500 * time.Millisecond}); cfg.Admission != want {
		t.Errorf("admission %+v, want the Balancer's with the proxy's defaults, %+v", cfg.Admission, want)
	}
	scale, err := c.Client.AppsV1().Deployments("default").GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 5
	if _, err := c.Client.AppsV1().Deployments("default").UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	listed := len(backends(5).Backends)
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return k.Get(ctx, types.NamespacedName{Namespace: "default", Name: "web-lb"}, b) == nil && int(b.Status.Backends) == listed, nil
	})
	if err != nil || b.Status.ConfigMap != "web-lb-proxy" {
		t.Errorf("status %+v", b.Status)
	}

	bad := &v1alpha1.Balancer{ObjectMeta: metav1.ObjectMeta{Name: "learned", Namespace: "default"},
		Spec: v1alpha1.BalancerSpec{Service: "web", Policy: "distr-lb"}}
	if err := k.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "agentFrom is required") {
		t.Errorf("a distr-lb Balancer without an agent: %v", err)
	}
	bad = &v1alpha1.Balancer{ObjectMeta: metav1.ObjectMeta{Name: "uncapped", Namespace: "default"},
		Spec: v1alpha1.BalancerSpec{Service: "web", Admission: &v1alpha1.Admission{MaxRequests: -3}}}
	if err := k.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "maxRequests") {
		t.Errorf("a Balancer with admission.maxRequests -3: %v", err)
	}
}

// readyAddresses are the sorted, distinct backend URLs of the Service's
// ready pods, and how many pods are ready.
func readyAddresses(ctx context.Context, c *kubetest.Cluster, svc string) ([]string, int, error) {
	pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + svc})
	if err != nil {
		return nil, 0, err
	}
	var urls []string
	for _, p := range pods.Items {
		if podReady(&p) && p.DeletionTimestamp == nil && p.Status.PodIP != "" {
			urls = append(urls, "http://"+p.Status.PodIP+":8080")
		}
	}
	n := len(urls)
	slices.Sort(urls)
	return slices.Compact(urls), n, nil
}

func podReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// endpointsOf describes the Service's pods and EndpointSlices as the API
// server holds them, for a failure message: whether the operator or the
// control plane lagged.
func endpointsOf(ctx context.Context, c *kubetest.Cluster, svc string) string {
	var b strings.Builder
	pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + svc})
	if err != nil {
		return err.Error()
	}
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s: ip %q phase %s ready %v deleting %v\n", p.Name, p.Status.PodIP, p.Status.Phase, podReady(&p), p.DeletionTimestamp != nil)
	}
	list, err := c.Client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		return b.String() + err.Error()
	}
	for _, s := range list.Items {
		for _, e := range s.Endpoints {
			fmt.Fprintf(&b, "slice %s: %v ready %v\n", s.Name, e.Addresses, e.Conditions.Ready != nil && *e.Conditions.Ready)
		}
	}
	return b.String()
}
