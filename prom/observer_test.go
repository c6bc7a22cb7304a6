package prom

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/prom/promtest"
)

// cluster exports what kube-state-metrics, cAdvisor and Istio's sidecars
// would of one Deployment, front, in default: 3 replicas (2 ready) of a
// container "app" limited to 0.5 cores and 512 MiB, using 0.25 cores and
// 300 MiB, and requests at 20/s (1 in 10 a 503) that take 40 ms (a tenth
// 400 ms). Every series moves as the real ones would while the test runs.
func cluster(t *testing.T) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	gauge := func(name string, labels prometheus.Labels, v float64) {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, ConstLabels: labels})
		g.Set(v)
		reg.MustRegister(g)
	}
	pod := func(p string) prometheus.Labels {
		return prometheus.Labels{"namespace": "default", "pod": p, "container": "app"}
	}
	gauge("kube_deployment_status_replicas", prometheus.Labels{"namespace": "default", "deployment": "front"}, 3)
	gauge("kube_deployment_status_replicas_ready", prometheus.Labels{"namespace": "default", "deployment": "front"}, 2)
	// Another deployment's pods, frontend-*, must not count as front's.
	for _, p := range []string{"front-6b9f7c-x2x4k", "front-6b9f7c-9qz7d", "front-6b9f7c-zz81p", "frontend-7c5d9-abcde"} {
		l := pod(p)
		l["resource"] = "cpu"
		gauge("kube_pod_container_resource_limits", l, 0.5)
		l = pod(p)
		l["resource"] = "memory"
		gauge("kube_pod_container_resource_limits", l, 512<<20)
		gauge("container_memory_working_set_bytes", pod(p), 100<<20)
		ready := 1.0
		if p == "front-6b9f7c-zz81p" { // starting
			ready = 0
		}
		gauge("kube_pod_status_ready", prometheus.Labels{"namespace": "default", "pod": p, "condition": "true"}, ready)
	}
	cpu := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "container_cpu_usage_seconds_total"}, []string{"namespace", "pod", "container"})
	periods := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "container_cpu_cfs_periods_total"}, []string{"namespace", "pod", "container"})
	throttled := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "container_cpu_cfs_throttled_periods_total"}, []string{"namespace", "pod", "container"})
	istio := prometheus.Labels{"reporter": "destination", "destination_workload": "front", "destination_workload_namespace": "default"}
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "istio_requests_total", ConstLabels: istio}, []string{"response_code"})
	dur := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "istio_request_duration_milliseconds", ConstLabels: istio,
		Buckets: []float64{1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000}})
	reg.MustRegister(cpu, periods, throttled, reqs, dur)
	// One 100 ms unit of work per 100 ms of wall time.
	promtest.Paced(t, 100*time.Millisecond, func(n int) {
		for _, p := range []string{"front-6b9f7c-x2x4k", "front-6b9f7c-9qz7d", "frontend-7c5d9-abcde"} {
			cpu.WithLabelValues("default", p, "app").Add(0.0125) // 0.125 cores each: 0.25 for front
			periods.WithLabelValues("default", p, "app").Inc()   // a CFS period with work each 100 ms
			if p == "front-6b9f7c-x2x4k" && n%2 == 0 {
				throttled.WithLabelValues("default", p, "app").Inc() // throttled in every other one
			}
		}
		for i := range 2 { // 20 requests/s
			code := "200"
			if (2*n+i)%10 == 0 {
				code = "503"
			}
			reqs.WithLabelValues(code).Inc()
			ms := 40.0
			if (2*n+i)%10 == 5 {
				ms = 400
			}
			dur.Observe(ms)
		}
	})
	return promtest.Serve(t, reg)
}

// TestObserverReadsARealPrometheus: a real Prometheus scrapes what a
// cluster exports of a Deployment, and the observer's default queries
// (kube-state-metrics, cAdvisor, Istio) turn it into the service's
// snapshot: replicas, limits and use as exported, the period's requests,
// failures, mean and quantiles of their response time, and each pod as an
// instance (ready or not, its utilisation and memory) with a stable ID.
func TestObserverReadsARealPrometheus(t *testing.T) {
	srv := promtest.Start(t, cluster(t))
	w := Workload{Service: "front", Namespace: "default", Name: "front", Container: "app"}
	o, err := New(srv.URL, 5*time.Second, []Workload{w}, DefaultQueries())
	if err != nil {
		t.Fatal(err)
	}
	var snap metrics.Snapshot
	promtest.Wait(t, 30*time.Second, "front's requests", func() (bool, error) {
		err := o.Observe(context.Background(), time.Now(), &snap)
		return err == nil && snap.Services[0].Arrivals > 0, err
	})
	time.Sleep(6 * time.Second) // a whole period of samples
	at := time.Now()
	if err := o.Observe(context.Background(), at, &snap); err != nil {
		t.Fatal(err)
	}
	s := snap.Services[0]
	near := func(name string, got, want, tol float64) {
		if math.Abs(got-want) > tol*want {
			t.Errorf("%s: %g, want %g ± %.0f%%", name, got, want, 100*tol)
		}
	}
	if s.Name != "front" || s.Replicas != 3 || s.Ready != 2 {
		t.Errorf("service %s: %d replicas, %d ready; want front, 3, 2", s.Name, s.Replicas, s.Ready)
	}
	near("cpu limit", s.CPULimit, 0.5, 0)
	near("memory limit (MB)", s.MemoryLimit, 512, 0)
	near("memory use (MB)", s.MemoryUse, 300, 0)
	// rate() and increase() extrapolate to the window's edges.
	near("cpu use (cores)", s.CPUUse, 0.25, 0.1)
	near("arrivals (5 s at 20/s)", float64(s.Arrivals), 100, 0.1)
	near("CFS periods (5 s of 100 ms, two pods)", float64(s.CFSPeriods), 100, 0.1)
	near("CFS periods throttled (one pod, every other)", float64(s.CFSThrottled), 25, 0.15)
	near("failures", float64(s.Failures.Total()), float64(s.Arrivals)/10, 0.35)
	near("mean response time (s)", s.Latency.Mean(), 0.076, 0.1)
	if !(s.P50 > 0.025 && s.P50 <= 0.05) || !(s.P95 > 0.25 && s.P95 <= 0.5) {
		t.Errorf("p50 %g s (want in the 25-50 ms bucket), p95 %g s (want in 250-500 ms)", s.P50, s.P95)
	}
	// Instances, in pod name order: the starting one is not ready and
	// busy with nothing; the others run at a quarter of their limit.
	if len(s.Instances) != 3 {
		t.Fatalf("instances %+v, want front's 3 pods", s.Instances)
	}
	for i, in := range s.Instances {
		busy := i != 2 // front-6b9f7c-zz81p sorts last
		if in.ID != i || in.Ready != busy || in.MemoryUse != 100 || (in.Utilisation > 0.2) != busy {
			t.Errorf("instance %d: %+v", i, in)
		}
		if busy {
			near("instance utilisation", in.Utilisation, 0.25, 0.1)
		}
	}
	if !strings.Contains(o.Query(w, fCPUUse), `[5s]`) {
		t.Errorf("cpu use query %s has no 5 s window", o.Query(w, fCPUUse))
	}
	// Sampled is when the newest sample at the observation's instant was
	// scraped: the last of the raw samples Prometheus holds then.
	raw, _, _, err := o.api.Query(context.Background(), `kube_deployment_status_replicas{namespace="default",deployment="front"}[1m]`, at)
	if m, ok := raw.(model.Matrix); err != nil || !ok || len(m) != 1 || len(m[0].Values) == 0 {
		t.Errorf("raw samples: %v (%v)", raw, err)
	} else if newest := m[0].Values[len(m[0].Values)-1].Timestamp.Time(); o.Sampled().Sub(newest).Abs() >= time.Millisecond || o.Sampled().After(at) {
		t.Errorf("sampled at %v, want the newest sample's %v, before the observation at %v", o.Sampled(), newest, at)
	}
	// A 10 s window counts 10 s of calls and scales them to the 5 s period.
	o.SetMinWindow(10 * time.Second)
	time.Sleep(5 * time.Second)
	if err := o.Observe(context.Background(), time.Now(), &snap); err != nil {
		t.Fatal(err)
	}
	near("arrivals over a 10 s window, per 5 s period", float64(snap.Services[0].Arrivals), 100, 0.1)
	if !strings.Contains(o.Query(w, fArrivals), `[10s]`) {
		t.Errorf("arrivals query %s has no 10 s window", o.Query(w, fArrivals))
	}

	// No data for a workload: an error, not a service of zeros.
	ghost, err := New(srv.URL, 5*time.Second, []Workload{{Service: "ghost", Namespace: "default", Name: "ghost"}}, DefaultQueries())
	if err != nil {
		t.Fatal(err)
	}
	if err := ghost.Observe(context.Background(), time.Now(), &snap); err == nil || !strings.Contains(err.Error(), "no data") {
		t.Errorf("a workload Prometheus does not know: %v", err)
	}
	// Prometheus down: an error.
	srv.Stop()
	if err := o.Observe(context.Background(), time.Now(), &snap); err == nil {
		t.Error("prometheus stopped: no error")
	}
}

// TestNewRefusesBadSettings names what is wrong.
func TestNewRefusesBadSettings(t *testing.T) {
	w := []Workload{{Service: "a", Namespace: "n", Name: "a"}}
	q := DefaultQueries()
	for _, c := range []struct {
		period time.Duration
		ws     []Workload
		q      func(*Queries)
		want   string
	}{
		{100 * time.Millisecond, w, nil, "period"},
		{time.Second, []Workload{{Service: "a"}}, nil, "workloads[0]"},
		{time.Second, w, func(q *Queries) { q.Replicas = "" }, "replicas is required"},
		{time.Second, w, func(q *Queries) { q.CPUUse = "{{.Nope" }, "cpu_use"},
	} {
		qq := q
		if c.q != nil {
			c.q(&qq)
		}
		if _, err := New("http://127.0.0.1:1", c.period, c.ws, qq); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error with %q, got %v", c.want, err)
		}
	}
}
