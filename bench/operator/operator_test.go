// Package operator measures 'shoal operator' managing 100 Deployments on a
// real control plane (kubetest: etcd, kube-apiserver, controller manager,
// scheduler, KWOK nodes) with a real Prometheus: the operator's CPU and
// memory, read from /proc, its reconcile time (controller-runtime's
// controller_runtime_reconcile_time_seconds: the PromQL queries, the
// policy's decision and the API patch) and its action latency (from the
// scrape of the newest sample a decision read to the API server's
// acceptance of the action: shoal_operator_action_latency_seconds), read
// from its own /metrics.
//
//	go test ./bench/operator -run '^$' -bench . -benchtime 1x
//
// With SHOAL_BENCH_CONTAINER=1 the operator runs as a container of
// scripts/image.sh's image (podman, host network), measured the same way
// through its command's PID on this host.
package operator

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/containertest"
	"github.com/shoal-project/shoal/kube/kubetest"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/operator/api/v1alpha1"
	"github.com/shoal-project/shoal/prom"
	"github.com/shoal-project/shoal/prom/promtest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var workloads = 100

const (
	settle = 90 * time.Second // to let every Autoscaler scale up
	window = 60 * time.Second // the steady state measured
)

func BenchmarkOperator100(b *testing.B) {
	if n, err := strconv.Atoi(os.Getenv("SHOAL_BENCH_WORKLOADS")); err == nil && n > 0 {
		workloads = n
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	c := kubetest.Start(b, 10) // 320 cores: room for 300 pods of one core
	c.InstallCRDDir(b, filepath.Join(root, "deploy", "helm", "shoal", "crds"))
	srv := promtest.Start(b, c.ServeMetrics(b, kubetest.Busy(0.9)))

	scheme := k8sruntime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	k, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	for i := range workloads {
		name := fmt.Sprintf("svc-%03d", i)
		c.Deploy(b, "default", name, 1)
		as := &v1alpha1.Autoscaler{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: v1alpha1.AutoscalerSpec{Target: &v1alpha1.Target{Name: name, Container: "app"}, MinReplicas: 1, MaxReplicas: 3,
				TargetCPUUtilization: 50, Period: metav1.Duration{Duration: 15 * time.Second}}}
		if err := k.Create(context.Background(), as); err != nil {
			b.Fatal(err)
		}
	}
	metricsAddr := promtest.FreeAddr(b)
	args := []string{"operator", "--prometheus", srv.URL, "--leader-elect=false",
		"--metrics-address", metricsAddr, "--health-address", "0", "--min-window", "4s"} // Prometheus scrapes every second
	var pid int
	if os.Getenv("SHOAL_BENCH_CONTAINER") != "" {
		pid = container(b, c, args)
	} else {
		pid = process(b, root, c, args)
	}
	b.ResetTimer()
	scaled := 0
	_ = wait.PollUntilContextTimeout(context.Background(), time.Second, settle, true, func(ctx context.Context) (bool, error) {
		ds, err := c.Client.AppsV1().Deployments("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		scaled = 0
		for _, d := range ds.Items {
			if *d.Spec.Replicas == 3 {
				scaled++
			}
		}
		return scaled == workloads, nil
	})
	hist := map[int32]int{}
	if ds, err := c.Client.AppsV1().Deployments("default").List(context.Background(), metav1.ListOptions{}); err == nil {
		for _, d := range ds.Items {
			hist[*d.Spec.Replicas]++
		}
	}
	if o, err := prom.New(srv.URL, 15*time.Second, []prom.Workload{{Service: "svc-000", Namespace: "default", Name: "svc-000", Container: "app"}}, prom.DefaultQueries()); err == nil {
		var snap metrics.Snapshot
		err := o.Observe(context.Background(), time.Now(), &snap)
		b.Logf("svc-000 in Prometheus: %v %+v", err, snap.Services)
	}
	var one v1alpha1.Autoscaler
	if err := k.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "svc-000"}, &one); err == nil {
		b.Logf("replicas after %v: %v; svc-000's status: %+v", settle, hist, one.Status)
	}
	cpu0, at0 := cpuSeconds(b, pid), time.Now()
	n0, s0 := reconciles(b, metricsAddr)
	time.Sleep(window)
	cpu1, at1 := cpuSeconds(b, pid), time.Now()
	n1, s1 := reconciles(b, metricsAddr)
	b.StopTimer()

	lat := latencies(b, metricsAddr)
	cores := (cpu1 - cpu0) / at1.Sub(at0).Seconds()
	rss, hwm := memKB(b, pid, "VmRSS:"), memKB(b, pid, "VmHWM:")
	mean := (s1 - s0) / (n1 - n0)
	b.ReportMetric(cores, "cores")
	b.ReportMetric(rss/1024, "rss-MB")
	b.ReportMetric(1000*mean, "reconcile-ms")
	b.ReportMetric(lat.quantile(0.5), "action-latency-p50-s")
	b.ReportMetric(lat.quantile(0.95), "action-latency-p95-s")
	b.Logf("action latency (newest sample scraped to action accepted) over %d actions: mean %.2f s, p50 ≤ %.2f s, p95 ≤ %.2f s (bucket bounds)",
		int(lat.count), lat.sum/lat.count, lat.quantile(0.5), lat.quantile(0.95))
	b.Logf("%d Autoscalers (%d scaled to 3 within %v); over %v: %.4f cores, RSS %.1f MB (peak %.1f MB), %.0f reconciles of mean %.1f ms",
		workloads, scaled, settle, window, cores, rss/1024, hwm/1024, n1-n0, 1000*mean)
}

// process runs the operator as a process of a binary built here and
// returns its PID.
func process(b *testing.B, root string, c *kubetest.Cluster, args []string) int {
	bin := filepath.Join(b.TempDir(), "shoal")
	build := exec.Command("go", "build", "-o", bin, "./cmd/shoal")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	op := exec.Command(bin, append(args, "--kubeconfig", c.Kubeconfig)...)
	logf, err := os.Create(filepath.Join(b.TempDir(), "operator.log"))
	if err != nil {
		b.Fatal(err)
	}
	op.Stdout, op.Stderr = logf, logf
	b.Cleanup(func() {
		if raw, _ := os.ReadFile(logf.Name()); len(raw) > 0 {
			b.Logf("operator log (end): %s", raw[max(0, len(raw)-3000):])
		}
	})
	if err := op.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = op.Process.Kill(); _ = op.Wait() })
	return op.Process.Pid
}

// container runs the operator as a container of scripts/image.sh's image
// (read-only, no capabilities, as the manifests declare; the admin
// kubeconfig mounted) and returns its command's PID on this host.
func container(b *testing.B, c *kubetest.Cluster, args []string) int {
	raw, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	kc := filepath.Join(b.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, raw, 0o644); err != nil { // readable by the container's user
		b.Fatal(err)
	}
	op := containertest.Run(b, []string{"--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"-v", kc + ":/etc/shoal/kubeconfig:ro"}, append(args, "--kubeconfig", "/etc/shoal/kubeconfig")...)
	b.Cleanup(func() { b.Logf("operator log (end): %s", tail(op.Logs(), 3000)) })
	return op.Pid()
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }

// cpuSeconds is a process's user and system CPU time (/proc/PID/stat).
func cpuSeconds(b *testing.B, pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ is 100 on Linux
}

// memKB reads a field of /proc/PID/status, in kB.
func memKB(b *testing.B, pid int, field string) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, field) {
			v, _ := strconv.ParseFloat(strings.Fields(line)[1], 64)
			return v
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// histogram is a cumulative histogram read from /metrics.
type histogram struct {
	le, cum    []float64 // bucket bounds and counts, in order
	count, sum float64
}

// quantile is the upper bound of the bucket where quantile q falls.
func (h histogram) quantile(q float64) float64 {
	for i, c := range h.cum {
		if c >= q*h.count {
			return h.le[i]
		}
	}
	return h.le[len(h.le)-1]
}

// latencies reads shoal_operator_action_latency_seconds from the
// operator's /metrics.
func latencies(b *testing.B, addr string) histogram {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var h histogram
	const name = "shoal_operator_action_latency_seconds"
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || !strings.HasPrefix(f[0], name) {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch {
		case strings.HasPrefix(f[0], name+"_bucket{"):
			i := strings.Index(f[0], `le="`)
			le, _ := strconv.ParseFloat(strings.TrimSuffix(f[0][i+4:], `"}`), 64)
			h.le, h.cum = append(h.le, le), append(h.cum, v)
		case strings.HasPrefix(f[0], name+"_count"):
			h.count = v
		case strings.HasPrefix(f[0], name+"_sum"):
			h.sum = v
		}
	}
	if h.count == 0 {
		b.Fatalf("no action latencies in the operator's metrics")
	}
	return h
}

// reconciles reads the Autoscaler controller's reconcile count and total
// seconds from the operator's /metrics.
func reconciles(b *testing.B, addr string) (count, sum float64) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(raw), "\n") {
		for _, m := range []struct {
			prefix string
			dst    *float64
		}{{`controller_runtime_reconcile_time_seconds_count{controller="autoscaler"}`, &count}, {`controller_runtime_reconcile_time_seconds_sum{controller="autoscaler"}`, &sum}} {
			if strings.HasPrefix(line, m.prefix) {
				*m.dst, _ = strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, m.prefix)), 64)
			}
		}
	}
	if count == 0 {
		b.Fatalf("no reconciles of the autoscaler controller in the operator's metrics")
	}
	return count, sum
}
