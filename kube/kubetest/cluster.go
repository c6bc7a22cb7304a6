// Package kubetest starts a real Kubernetes control plane on loopback for
// tests: etcd and kube-apiserver (controller-runtime's envtest), and
// kube-controller-manager and kube-scheduler, so that Deployments make
// pods and pods are placed, and KWOK, which plays the kubelets: fake
// nodes on which every pod runs and becomes ready (the cluster reports
// running containers' resources itself, as a kubelet with in-place
// resize does and KWOK does not). The binaries are built
// from the Go module proxy by scripts/kube-bins.sh, which
// scripts/test.sh runs; SHOAL_KUBE_BIN names their directory (default
// $HOME/.cache/shoal/bin).
package kubetest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Cluster is a running test cluster.
type Cluster struct {
	Config     *rest.Config
	Kubeconfig string // a kubeconfig file of an admin user
	Client     kubernetes.Interface
	env        *envtest.Environment
	dir        string
}

// Bin is the directory of the binaries.
func Bin() string {
	if d := os.Getenv("SHOAL_KUBE_BIN"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "shoal", "bin")
}

// Start starts a cluster with the given number of KWOK nodes (each 32
// cores, 256 GiB, 110 pods) and stops it when the test ends. It fails the
// test, saying how to build them, when the binaries are missing.
func Start(t testing.TB, nodes int) *Cluster {
	t.Helper()
	bin := Bin()
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Fatalf("kubetest: %s is missing from %s: run scripts/kube-bins.sh (scripts/test.sh does)", b, bin)
		}
	}
	env := &envtest.Environment{BinaryAssetsDirectory: bin, ControlPlaneStartTimeout: time.Minute}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("kubetest: control plane: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	user, err := env.AddUser(envtest.User{Name: "kubetest-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := &Cluster{Config: cfg, Kubeconfig: filepath.Join(dir, "kubeconfig"), env: env, dir: dir}
	if err := os.WriteFile(c.Kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	if c.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	c.run(t, dir, "kube-controller-manager", "--kubeconfig="+c.Kubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0",
		"--controllers=deployment,replicaset,statefulset,garbagecollector,endpointslice", "--concurrent-deployment-syncs=5")
	c.run(t, dir, "kube-scheduler", "--kubeconfig="+c.Kubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0")
	c.run(t, dir, "kwok", "--kubeconfig="+c.Kubeconfig, "--manage-all-nodes=true", "--cidr=10.0.0.1/16", "--node-ip=10.0.0.1", "--server-address=")
	for i := range nodes {
		c.addNode(t, fmt.Sprintf("kwok-node-%d", i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.reportResources(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return c
}

// reportResources plays the part of the kubelet that KWOK does not: a
// kubelet with in-place resize reports each running container's resources
// in its status (the apiserver refuses to resize a pod whose node does
// not), and applies a resize, after which they equal the spec's.
func (c *Cluster) reportResources(ctx context.Context) {
	for ctx.Err() == nil {
		pods, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err == nil {
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
					continue
				}
				stale := false
				for j, cs := range p.Status.ContainerStatuses {
					want := p.Spec.Containers[j].Resources
					if cs.Resources == nil || !equality.Semantic.DeepEqual(cs.Resources.Limits, want.Limits) || !equality.Semantic.DeepEqual(cs.Resources.Requests, want.Requests) {
						p.Status.ContainerStatuses[j].Resources = &corev1.ResourceRequirements{Limits: want.Limits, Requests: want.Requests}
						stale = true
					}
				}
				if stale {
					_, _ = c.Client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}) // a conflict is retried next round
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// run starts a component, logging to a file in dir, and stops it when
// the test ends.
func (c *Cluster) run(t testing.TB, dir, name string, args ...string) {
	t.Helper()
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(Bin(), name), args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("kubetest: %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("%s's log (end):\n%s", name, b)
		}
	})
}

// addNode registers a KWOK node and waits until it is ready.
func (c *Cluster) addNode(t testing.TB, name string) {
	t.Helper()
	ctx := context.Background()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if _, err := c.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("kubetest: node %s never became ready (is kwok running?): %v", name, err)
	}
	// The apiserver taints a new node not-ready; without the node
	// lifecycle controller (which needs kubelets' leases) nothing lifts it.
	if _, err := c.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"taints":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// WaitReady waits until a Deployment's ready replicas equal want.
func (c *Cluster) WaitReady(t testing.TB, namespace, name string, want int32, timeout time.Duration) {
	t.Helper()
	var last int32 = -1
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		d, err := c.Client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = d.Status.ReadyReplicas
		return last == want && d.Status.Replicas == want, nil
	})
	if err != nil {
		t.Fatalf("deployment %s/%s: %d ready replicas, want %d: %v", namespace, name, last, want, err)
	}
}

// InstallCRDs installs custom resource definitions and waits until they
// are served.
func (c *Cluster) InstallCRDs(t testing.TB, crds ...*apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	if _, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
		t.Fatalf("kubetest: installing CRDs: %v", err)
	}
}

// ServeMetrics serves, on a loopback port, what kube-state-metrics and
// the kubelets' cAdvisor would export of the cluster's Deployments and
// running pods at each scrape (the series prom.DefaultQueries read):
// replicas and ready replicas, each pod's readiness and containers' CPU
// CPU and memory limits, and their CPU use (cpuSeconds(pod): CPU seconds used so far)
// and memory (100 MiB each). It returns the address (host:port).
func (c *Cluster) ServeMetrics(t testing.TB, cpuSeconds func(pod *corev1.Pod) float64) string {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		deps, err := c.Client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		pods, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		var b strings.Builder
		for _, d := range deps.Items {
			fmt.Fprintf(&b, "kube_deployment_status_replicas{namespace=%q,deployment=%q} %d\n", d.Namespace, d.Name, d.Status.Replicas)
			fmt.Fprintf(&b, "kube_deployment_status_replicas_ready{namespace=%q,deployment=%q} %d\n", d.Namespace, d.Name, d.Status.ReadyReplicas)
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || p.Status.StartTime == nil {
				continue
			}
			ready := 0
			if PodReady(p) {
				ready = 1
			}
			fmt.Fprintf(&b, "kube_pod_status_ready{namespace=%q,pod=%q,condition=\"true\"} %d\n", p.Namespace, p.Name, ready)
			used := cpuSeconds(p)
			for _, ct := range p.Spec.Containers {
				l := fmt.Sprintf("namespace=%q,pod=%q,container=%q", p.Namespace, p.Name, ct.Name)
				fmt.Fprintf(&b, "kube_pod_container_resource_limits{%s,resource=\"cpu\"} %g\n", l, ct.Resources.Limits.Cpu().AsApproximateFloat64())
				fmt.Fprintf(&b, "kube_pod_container_resource_limits{%s,resource=\"memory\"} %d\n", l, ct.Resources.Limits.Memory().Value())
				fmt.Fprintf(&b, "container_cpu_usage_seconds_total{%s} %g\n", l, used)
				fmt.Fprintf(&b, "container_memory_working_set_bytes{%s} %d\n", l, 100<<20)
			}
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = io.WriteString(w, b.String())
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// PodReady reports whether a pod runs, is not being deleted, and is
// ready.
func PodReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// Busy is a pod CPU counter (ServeMetrics) of cores busy all the time
// since the pod started.
func Busy(cores float64) func(*corev1.Pod) float64 {
	return func(p *corev1.Pod) float64 { return cores * time.Since(p.Status.StartTime.Time).Seconds() }
}

// User adds a user with no permissions but those bound to it later (for
// testing a least-privilege role) and returns its kubeconfig file.
func (c *Cluster) User(t testing.TB, name string) string {
	t.Helper()
	u, err := c.env.AddUser(envtest.User{Name: name}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(c.dir, name+".kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Deploy creates a Deployment of replicas pods of one container, "app",
// limited to (and requesting) one core and 512 MiB.
func (c *Cluster) Deploy(t testing.TB, namespace, name string, replicas int32) {
	t.Helper()
	labels := map[string]string{"app": name}
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "shoal/backend",
					Resources: corev1.ResourceRequirements{Limits: res, Requests: res}}}},
			},
		},
	}
	if _, err := c.Client.AppsV1().Deployments(namespace).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// InstallCRDDir installs the custom resource definitions in a directory
// of YAML files and waits until they are served.
func (c *Cluster) InstallCRDDir(t testing.TB, dir string) {
	t.Helper()
	if _, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("kubetest: installing the CRDs of %s: %v", dir, err)
	}
}
