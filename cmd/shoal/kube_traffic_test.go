package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/kube/kubetest"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/operator/api/v1alpha1"
	"github.com/shoal-project/shoal/prom"
	"github.com/shoal-project/shoal/prom/promtest"
	"github.com/shoal-project/shoal/scenario"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// podServers plays the containers of a Deployment's KWOK pods: every
// ready pod gets a 'shoal backend' process of as many cores as the pod's
// CPU limit, and a 'shoal proxy' in front of them follows the pods (its
// file rewritten and reloaded with SIGHUP), as a Service's endpoints
// follow them. A pod resized in place gets a new backend of its new
// cores; the old one, like a deleted pod's, leaves the proxy first and
// then drains (SIGTERM), so that no request is lost, as none is when a
// real container is resized or a pod terminates gracefully. Each
// backend's busy core-seconds are its pod's cAdvisor CPU counter.
type podServers struct {
	t          *testing.T
	bin, cpu   string // the shoal binary; the backends' CPU demand
	c          *kubetest.Cluster
	namespace  string
	app        string
	conf       string // the proxy's file
	head       string // its fixed part
	admin      string // the proxy's admin address
	proxy      *exec.Cmd
	proxyLog   syncBuffer     // the proxy's log, shown if the test fails
	generation int            // the proxy's configuration generation last written
	draining   sync.WaitGroup // backends retired, still draining

	mu    sync.Mutex
	procs map[string]*podServer // by pod name
}

type podServer struct {
	cmd   *exec.Cmd
	addr  string
	cores string
}

// startPodServers starts the proxy and follows app's pods until the test
// ends; the proxy listens on listen and serves its admin API on admin.
func startPodServers(t *testing.T, bin string, c *kubetest.Cluster, namespace, app, cpu, listen, admin string) *podServers {
	ps := &podServers{t: t, bin: bin, cpu: cpu, c: c, namespace: namespace, app: app, conf: filepath.Join(t.TempDir(), "proxy.yaml"),
		head: fmt.Sprintf("listen: %s\nadmin: %s\nname: %s\npolicy: lsq\n", listen, admin, app), admin: admin, procs: map[string]*podServer{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			ps.sync(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		ps.draining.Wait()
		ps.mu.Lock()
		defer ps.mu.Unlock()
		for _, p := range ps.procs {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
		if ps.proxy != nil {
			_ = ps.proxy.Process.Kill()
			_ = ps.proxy.Wait()
		}
		if t.Failed() {
			t.Logf("the proxy's log:\n%s", ps.proxyLog.String())
		}
	})
	return ps
}

// sync starts backends for the ready pods, points the proxy at them, and
// then retires the backends of pods resized or gone.
func (ps *podServers) sync(ctx context.Context) {
	pods, err := ps.c.Client.CoreV1().Pods(ps.namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + ps.app})
	if err != nil {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	live := map[string]bool{}
	started := false
	var retired []*podServer
	for i := range pods.Items {
		p := &pods.Items[i]
		if !kubetest.PodReady(p) {
			continue
		}
		live[p.Name] = true
		cores := p.Spec.Containers[0].Resources.Limits.Cpu().AsApproximateFloat64()
		want := strconv.FormatFloat(cores, 'g', -1, 64)
		old := ps.procs[p.Name]
		if old != nil && old.cores == want {
			continue
		}
		addr := promtest.FreeAddr(ps.t)
		cmd := exec.Command(ps.bin, "backend", "--listen", addr, "--cores", want, "--cpu", ps.cpu)
		if err := cmd.Start(); err != nil {
			ps.t.Errorf("backend for pod %s: %v", p.Name, err)
			continue
		}
		if !healthy(addr) {
			ps.t.Errorf("backend for pod %s never answered /healthz", p.Name)
		}
		ps.procs[p.Name] = &podServer{cmd: cmd, addr: addr, cores: want}
		started = true
		if old != nil {
			retired = append(retired, old)
		}
	}
	for name, s := range ps.procs {
		if !live[name] {
			retired = append(retired, s)
			delete(ps.procs, name)
		}
	}
	if !started && len(retired) == 0 {
		return
	}
	if len(ps.procs) > 0 { // a proxy needs a backend
		ps.reloadProxy()
	}
	for _, s := range retired {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		ps.draining.Add(1)
		go func() {
			defer ps.draining.Done()
			_ = s.cmd.Wait()
		}()
	}
}

// reloadProxy writes the proxy's backends and starts or reloads it, and
// waits until the proxy runs the new configuration.
func (ps *podServers) reloadProxy() {
	var urls []string
	for _, s := range ps.procs {
		urls = append(urls, "{url: http://"+s.addr+"}")
	}
	sort.Strings(urls)
	text := ps.head + "backends: [" + strings.Join(urls, ", ") + "]\n"
	if err := os.WriteFile(ps.conf, []byte(text), 0o644); err != nil {
		ps.t.Error(err)
		return
	}
	if ps.proxy == nil {
		ps.proxy = exec.Command(ps.bin, "proxy", "-c", ps.conf, "--log-level", "debug")
		ps.proxy.Stderr = &ps.proxyLog
		if err := ps.proxy.Start(); err != nil {
			ps.t.Error(err)
			ps.proxy = nil
			return
		}
		// Until it serves its admin API a SIGHUP would kill it: wait.
		ps.waitGeneration(0)
		return
	}
	_ = ps.proxy.Process.Signal(syscall.SIGHUP)
	ps.generation++
	ps.waitGeneration(ps.generation)
}

// waitGeneration waits up to a minute for the proxy to run configuration
// generation g or a later one.
func (ps *podServers) waitGeneration(g int) {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var st struct {
			Generation int `json:"generation"`
		}
		if resp, err := http.Get("http://" + ps.admin + "/status"); err == nil {
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err == nil && st.Generation >= g {
				return
			}
		}
	}
	ps.t.Errorf("the proxy did not run configuration %d in a minute", g)
}

// healthy waits up to a minute for a backend to answer /healthz (the
// readiness probe of a real pod).
func healthy(addr string) bool {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}
	}
	return false
}

// cpuSeconds is a pod's busy core-seconds, as its backend counts them.
func (ps *podServers) cpuSeconds(p *corev1.Pod) float64 {
	ps.mu.Lock()
	s := ps.procs[p.Name]
	ps.mu.Unlock()
	if s == nil {
		return 0
	}
	resp, err := http.Get("http://" + s.addr + "/stats")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var st struct {
		Busy float64 `json:"busy_core_seconds"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&st)
	return st.Busy
}

// load runs 'shoal load' at rate requests per second until the returned
// function stops it.
func load(t *testing.T, bin, url string, rate float64) func() {
	t.Helper()
	cmd := exec.Command(bin, "load", url, "--rate", strconv.FormatFloat(rate, 'g', -1, 64), "--duration", "30m", "--seed", "3")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestOperatorOnRealTraffic closes the loop with real components only:
// 'shoal operator' (with the chart's role (deploy/helm/shoal/files/role.yaml)) -> kube-apiserver -> KWOK
// pods, each played by a 'shoal backend' process behind 'shoal proxy' ->
// traffic from 'shoal load' -> a real Prometheus scraping the proxy and
// the pods' CPU -> the operator. A DRPC policy trained in the simulator on
// the same service ('shoal train drpc testdata/kube-web.yaml') scales web
// up under 20 req/s of 50 ms calls; given replicas of four times the
// memory it was trained with, web falls back to the HPA, which scales it
// to its maximum.
func TestOperatorOnRealTraffic(t *testing.T) {
	bin := buildShoal(t)
	pol := filepath.Join(t.TempDir(), "web.policy")
	if out, err := runCLI(t, "train", "drpc", filepath.Join("testdata", "kube-web.yaml"), "-o", pol, "--episodes", "40",
		"--episode-length", "2m", "--period", "2s", "--seed", "1", "--quiet",
		"--seeds", "1", "--forecast=false", "--budget-cpu", "none", "--over-hpa", "none"); err != nil { // the policy this test was written for, its fallback the Autoscaler's HPA (the guide's defaults: TestGettingStarted)
		t.Fatalf("train: %v\n%s", err, out)
	}
	policy, err := os.ReadFile(pol)
	if err != nil {
		t.Fatal(err)
	}

	c := kubetest.Start(t, 1)
	c.InstallCRDDir(t, filepath.Join(repoRoot, "deploy", "helm", "shoal", "crds"))
	c.Deploy(t, "default", "web", 1)
	listen, admin := promtest.FreeAddr(t), promtest.FreeAddr(t)
	ps := startPodServers(t, bin, c, "default", "web", "exp:0.05", listen, admin)
	srv := promtest.StartGroups(t, promtest.Group{Targets: []string{c.ServeMetrics(t, ps.cpuSeconds)}},
		promtest.Group{Targets: []string{admin}, Labels: map[string]string{"namespace": "default", "service": "web"}})

	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	k, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := k.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-policy", Namespace: "default"},
		BinaryData: map[string][]byte{"drpc.policy": policy}}); err != nil {
		t.Fatal(err)
	}
	as := &v1alpha1.Autoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: v1alpha1.AutoscalerSpec{Policy: "drpc", TargetCPUUtilization: 50,
			PolicyFrom: &v1alpha1.PolicySource{ConfigMapKeyRef: &v1alpha1.ConfigMapKey{Name: "web-policy", Key: "drpc.policy"}}}}
	if err := k.Create(ctx, as); err != nil {
		t.Fatal(err)
	}
	// The same observation from the cluster and from the simulator: at 12
	// req/s on one replica, the DRPC features Prometheus gives match those
	// the simulator gives of the scenario the policy was trained on.
	stopLoad := load(t, bin, "http://"+listen+"/", 12)
	sameObservation(t, srv.URL, policy, 12)
	stopLoad()
	stopLoad = load(t, bin, "http://"+listen+"/", 20)
	startOperator(t, operatorUser(t, c), srv.URL, "--queries", "shoal-proxy", "--min-window", "4s", "--leader-elect=false")

	key := types.NamespacedName{Namespace: "default", Name: "web"}
	var seen []string // acting, replicas -> desired, and why, as the status said at each poll
	// poll waits until ok says the status is where it should be, checking
	// every status on the way with each.
	poll := func(what string, timeout time.Duration, each, ok func(*v1alpha1.Autoscaler, v1alpha1.WorkloadStatus) bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
			if err := k.Get(ctx, key, as); err != nil || len(as.Status.Workloads) != 1 {
				return false, nil
			}
			w := as.Status.Workloads[0]
			seen = append(seen, fmt.Sprintf("%s %d->%d %s", as.Status.Acting, w.Replicas, w.DesiredReplicas, w.Reason))
			if !each(as, w) {
				return false, fmt.Errorf("unexpected status")
			}
			return ok(as, w), nil
		})
		if err != nil {
			t.Fatalf("%s: %v; status %+v; seen %q", what, err, as.Status, seen)
		}
	}
	any := func(*v1alpha1.Autoscaler, v1alpha1.WorkloadStatus) bool { return true }
	// Until the load's first requests are in Prometheus, web's rate is
	// below anything the policy was trained on (fallback).
	poll("the policy takes charge under 20 req/s", 2*time.Minute, any, func(a *v1alpha1.Autoscaler, _ v1alpha1.WorkloadStatus) bool {
		return a.Status.Acting == "policy"
	})
	// A period whose rate dips out of the trained range (a backend
	// ejected for a moment, say) hands it to the HPA for that period, as
	// the guard rail should; nothing else may.
	poll("the policy scales web up under 20 req/s", 2*time.Minute, func(a *v1alpha1.Autoscaler, w v1alpha1.WorkloadStatus) bool {
		return a.Status.Acting == "policy" || (w.Fallback && strings.HasPrefix(w.Reason, "rate ") && strings.Contains(w.Reason, " outside "))
	}, func(a *v1alpha1.Autoscaler, w v1alpha1.WorkloadStatus) bool {
		return a.Status.Acting == "policy" && w.Replicas >= 2
	})

	// Given 2 GiB per replica, four times what it was trained with, web
	// falls back to the HPA; set back to one replica under 60 req/s (three
	// cores of demand), the HPA scales it to its maximum, in charge all
	// along.
	stopLoad()
	load(t, bin, "http://"+listen+"/", 60)
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{"limits":{"memory":"2Gi"},"requests":{"memory":"2Gi"}}}]}}}}`
	if _, err := c.Client.AppsV1().Deployments("default").Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	fellBack := func(a *v1alpha1.Autoscaler, w v1alpha1.WorkloadStatus) bool {
		return a.Status.Acting == "fallback" && strings.HasPrefix(w.Reason, "memory_limit ")
	}
	poll("the fallback takes charge with 2 GiB replicas", 2*time.Minute, any, fellBack)
	c.WaitReady(t, "default", "web", 4, 2*time.Minute) // the rollout done
	if _, err := c.Client.AppsV1().Deployments("default").UpdateScale(ctx, "web", &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: 1}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The fallback stays in charge; while a surge pod of the rollout lingers
	// the first feature out of range may be replicas, not memory_limit.
	inFallback := func(a *v1alpha1.Autoscaler, w v1alpha1.WorkloadStatus) bool {
		return a.Status.Acting == "fallback" && w.Fallback
	}
	poll("web back at one replica", time.Minute, inFallback, func(_ *v1alpha1.Autoscaler, w v1alpha1.WorkloadStatus) bool { return w.Replicas == 1 })
	poll("the HPA scales web to 4", 2*time.Minute, inFallback, func(a *v1alpha1.Autoscaler, w v1alpha1.WorkloadStatus) bool {
		return w.Replicas == 4 && fellBack(a, w)
	})
	t.Logf("acting and replicas, period by period: %v", seen)
}

// sameObservation compares the mean DRPC features of web over ten 2 s
// periods read from Prometheus (shoal proxy's series, windows of 4 s)
// with those of 150 periods of testdata/kube-web.yaml in the simulator,
// one replica, at rate req/s.
func sameObservation(t *testing.T, prometheus string, policy []byte, rate float64) {
	t.Helper()
	pol, err := drpc.ReadPolicy(bytes.NewReader(policy))
	if err != nil {
		t.Fatal(err)
	}
	const period = 2 * time.Second
	features := func(next func(*metrics.Snapshot) error, periods int) []float64 {
		t.Helper()
		obs := drpc.NewObserver(pol.Deployments, pol.Ingress, time.Duration(pol.Reward.RTMax))
		mean := make([]float64, drpc.LocalFeatures)
		var snap metrics.Snapshot
		for range periods {
			if err := next(&snap); err != nil {
				t.Fatal(err)
			}
			if !obs.Observe(&snap, nil) {
				t.Fatalf("web is missing from the snapshot %+v", snap)
			}
			for k, v := range obs.Local(0) {
				mean[k] += v / float64(periods)
			}
		}
		return mean
	}
	o, err := prom.New(prometheus, period, []prom.Workload{{Service: "web", Namespace: "default", Name: "web", Container: "app"}}, prom.ProxyQueries())
	if err != nil {
		t.Fatal(err)
	}
	o.SetMinWindow(2 * period)
	time.Sleep(15 * time.Second) // the load settles, and a window fills
	real := features(func(snap *metrics.Snapshot) error {
		time.Sleep(period)
		return o.Observe(context.Background(), time.Now(), snap)
	}, 10)

	sc, err := scenario.Load(filepath.Join("testdata", "kube-web.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := cluster.New(&sc.Config, cluster.Options{Seed: 5, Selectors: lb.Classical(), Traces: sc.Traces(), Rates: []float64{rate}, Horizon: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Minute
	cl.RunUntil(at)
	cl.Observe(new(metrics.Snapshot))
	sim := features(func(snap *metrics.Snapshot) error {
		at += period
		cl.RunUntil(at)
		cl.Observe(snap)
		return nil
	}, 150)

	// Tolerances: the cluster's ten periods are a sample (about 240
	// calls); its response time has the proxy's and HTTP's overhead.
	tol := map[string]float64{"cpu_util": 0.15, "rate": 0.2, "rate_per_pod": 0.2, "latency": 0.5, "demand": 0.2, "trend": 0.3}
	for k, name := range drpc.LocalFeatureNames {
		if math.Abs(real[k]-sim[k]) > tol[name]+1e-9 {
			t.Errorf("feature %s: %.3f from the cluster, %.3f from the simulator", name, real[k], sim[k])
		}
	}
	t.Logf("features from the cluster:   %.3f\nfeatures from the simulator: %.3f\n(%v)", real, sim, drpc.LocalFeatureNames)
}
