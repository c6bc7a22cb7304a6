package operator

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/kube/kubetest"
	"github.com/shoal-project/shoal/operator/api/v1alpha1"
	"github.com/shoal-project/shoal/proxy"
	corev1 "k8s.io/api/core/v1"
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
	c.InstallCRDDir(t, filepath.Join("..", "deploy", "crds"))
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
		Spec: v1alpha1.BalancerSpec{Service: "web", Port: 8080, Policy: "p2c"}}
	if err := k.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	known := lb.Classical()
	delete(known, "oracle")
	// backends waits until the ConfigMap lists want backends, one per
	// ready pod of web, and returns the configuration.
	backends := func(want int) *proxy.Config {
		t.Helper()
		var cfg *proxy.Config
		var last string
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			cm, err := c.Client.CoreV1().ConfigMaps("default").Get(ctx, "web-lb-proxy", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			last = cm.Data[ProxyConfigKey]
			if cfg, err = proxy.Decode(bytes.NewReader([]byte(last)), "web-lb-proxy", known.Names()); err != nil {
				return false, err
			}
			return len(cfg.Backends) == want, nil
		})
		if err != nil {
			t.Fatalf("the ConfigMap never listed %d backends: %v\n%s", want, err, last)
		}
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		ips := map[string]bool{}
		for _, p := range pods.Items {
			ips["http://"+p.Status.PodIP+":8080"] = true
		}
		for _, be := range cfg.Backends {
			if !ips[be.URL] {
				t.Errorf("backend %s is no pod of web's (%v)", be.URL, ips)
			}
		}
		return cfg
	}
	cfg := backends(3)
	if cfg.Policy != "p2c" || cfg.Name != "web-lb" || cfg.Listen != ":8080" || cfg.Admin != ":9090" {
		t.Errorf("configuration %+v", cfg)
	}
	scale, err := c.Client.AppsV1().Deployments("default").GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 5
	if _, err := c.Client.AppsV1().Deployments("default").UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	backends(5)
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return k.Get(ctx, types.NamespacedName{Namespace: "default", Name: "web-lb"}, b) == nil && b.Status.Backends == 5, nil
	})
	if err != nil || b.Status.ConfigMap != "web-lb-proxy" {
		t.Errorf("status %+v", b.Status)
	}

	bad := &v1alpha1.Balancer{ObjectMeta: metav1.ObjectMeta{Name: "learned", Namespace: "default"},
		Spec: v1alpha1.BalancerSpec{Service: "web", Policy: "distr-lb"}}
	if err := k.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "agentFrom is required") {
		t.Errorf("a distr-lb Balancer without an agent: %v", err)
	}
}
