package main

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/shoal-project/shoal/prom/promtest"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/workload"
)

// The shop the recording test serves: front (Deployment frontend, 2 pods
// of 0.5 cores) takes 20 requests/s at 10 ms of CPU each and calls back
// (backend, 1 pod of 1 core) 1.5 times per request at 4 ms each.
const (
	shopRate      = 20.0
	frontDemand   = 0.010
	backDemand    = 0.004
	backPerFront  = 1.5
	shopNamespace = "shop"
)

// shop exports, on 127.0.0.1, what kube-state-metrics, cAdvisor and
// Istio's sidecars would of the shop, with the label names of
// prom.DefaultQueries. The counters grow at the rates above, however late
// the ticks come on a busy machine.
func shop(t *testing.T) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	gauge := func(name string, labels prometheus.Labels, v float64) {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, ConstLabels: labels})
		g.Set(v)
		reg.MustRegister(g)
	}
	pods := map[string][]string{"frontend": {"frontend-7d9c5b-x2x4k", "frontend-7d9c5b-9qz7d"}, "backend": {"backend-5f6d8c-abcde"}}
	limits := map[string]float64{"frontend": 0.5, "backend": 1}
	for deploy, ps := range pods {
		gauge("kube_deployment_status_replicas", prometheus.Labels{"namespace": shopNamespace, "deployment": deploy}, float64(len(ps)))
		for _, p := range ps {
			gauge("kube_pod_container_resource_limits", prometheus.Labels{"namespace": shopNamespace, "pod": p, "container": "app", "resource": "cpu"}, limits[deploy])
		}
	}
	cpu := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "container_cpu_usage_seconds_total"}, []string{"namespace", "pod", "container"})
	istio := []string{"reporter", "destination_workload", "destination_workload_namespace", "response_code"}
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "istio_requests_total"}, istio)
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "istio_request_duration_milliseconds",
		Buckets: []float64{1, 5, 10, 25, 50, 100, 250}}, istio)
	reg.MustRegister(cpu, reqs, dur)
	serve := func(deploy string, n int, demand float64) {
		for range n {
			reqs.WithLabelValues("destination", deploy, shopNamespace, "200").Inc()
			dur.WithLabelValues("destination", deploy, shopNamespace, "200").Observe(20)
		}
		for _, p := range pods[deploy] {
			cpu.WithLabelValues(shopNamespace, p, "app").Add(float64(n) * demand / float64(len(pods[deploy])))
		}
	}
	promtest.Paced(t, 100*time.Millisecond, func(int) {
		// Per 100 ms: 2 front requests, 3 back calls.
		serve("frontend", 2, frontDemand)
		serve("backend", 3, backDemand)
	})
	return promtest.Serve(t, reg)
}

// TestRecordThenSimulate: 'shoal record' reads 20 s of the shop from a
// real Prometheus; the scenario it writes loads, with the CPU demands,
// call ratio, replicas and limits the shop had and a trace of its
// request rate, and 'shoal sim' replays it at that rate and CPU use.
func TestRecordThenSimulate(t *testing.T) {
	srv := promtest.Start(t, shop(t))
	client, err := api.NewClient(api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	papi := promv1.NewAPI(client)
	promtest.Wait(t, 30*time.Second, "the shop's series", func() (bool, error) {
		res, _, _, err := papi.Query(context.Background(), "count(istio_requests_total)", time.Now())
		v, ok := res.(model.Vector)
		return err == nil && ok && len(v) == 1 && v[0].Value == 2, err
	})
	const span = 20 * time.Second
	start := time.Now().Truncate(time.Second).Add(2 * time.Second)
	end := start.Add(span)
	time.Sleep(time.Until(end))
	// The scrape at the end is in: Prometheus holds a sample from the end
	// of the range on (it scrapes every second, later on a busy machine).
	promtest.Wait(t, time.Minute, "a scrape at the end of the range", func() (bool, error) {
		res, _, _, err := papi.Query(context.Background(), "max(timestamp(istio_requests_total))", time.Now())
		v, ok := res.(model.Vector)
		return err == nil && ok && len(v) == 1 && float64(v[0].Value) >= float64(end.Unix()), err
	})

	dir := filepath.Join(t.TempDir(), "rec")
	out, err := runCLI(t, "record", "--prometheus", srv.URL, "--start", start.UTC().Format(time.RFC3339), "--end", end.UTC().Format(time.RFC3339),
		"--step", "5s", "--namespace", shopNamespace, "--service", "front=frontend:app", "--service", "back=backend:app", "--ingress", "front", "-o", dir)
	if err != nil {
		t.Fatalf("record: %v\n%s", err, out)
	}
	t.Logf("shoal record:\n%s", out)
	path := filepath.Join(dir, "scenario.yaml")
	sc, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if !(math.Abs(got-want) <= tol*want) {
			t.Errorf("%s: %.5g, want %.5g ± %.0f%%", what, got, want, 100*tol)
		} else {
			t.Logf("%s: %.5g (true %.5g, %+.2f%%)", what, got, want, 100*(got-want)/want)
		}
	}
	if len(sc.Services) != 2 || sc.Services[0].Name != "front" || sc.Services[0].Replicas != 2 || sc.Services[0].CPU != 0.5 ||
		sc.Services[1].Name != "back" || sc.Services[1].Replicas != 1 || sc.Services[1].CPU != 1 {
		t.Errorf("services %+v: want front (2 replicas of 0.5 cores), back (1 of 1 core)", sc.Services)
	}
	root := sc.Classes[0].Call
	if root.Service != "front" || len(root.Stages) != 2 {
		t.Fatalf("the call tree %+v: want front, then back once and back again with probability 0.5", root)
	}
	first, second := root.Stages[0].Calls[0], root.Stages[1].Calls[0]
	near("front's CPU demand (s)", root.CPU.Mean, frontDemand, 0.03)
	near("back's CPU demand (s)", first.CPU.Mean, backDemand, 0.03)
	near("back's calls per front request", 1+second.Prob, backPerFront, 0.03)
	if first.Service != "back" || first.Prob != 0 || second.Service != "back" {
		t.Errorf("stages %+v: want back, then back with a probability", root.Stages)
	}

	raw, err := os.Open(filepath.Join(dir, "arrivals.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	tr, err := workload.ReadTrace(raw, workload.FormatNASA)
	if err != nil {
		t.Fatal(err)
	}
	if tr.NASA.Duration() != span {
		t.Errorf("the trace covers %v, want the range's %v", tr.NASA.Duration(), span)
	}
	rate := tr.NASA.Mean()
	near("the trace's mean rate (req/s)", rate, shopRate, 0.05)

	js, err := runCLI(t, "sim", path, "--policy", "static", "--seeds", "2", "--horizon", "5m", "--json", "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Policies []struct {
			Summary map[string]struct{ Mean float64 } `json:"summary"`
		} `json:"policies"`
	}
	if err := json.Unmarshal([]byte(js), &res); err != nil || len(res.Policies) != 1 {
		t.Fatalf("sim --json: %v\n%s", err, js)
	}
	sum := res.Policies[0].Summary
	near("simulated throughput (req/s)", sum["throughput"].Mean, rate, 0.05)
	// 20/s x 10 ms + 30/s x 4 ms = 0.32 of the 2 cores allocated.
	near("simulated CPU utilisation", sum["utilisation"].Mean, (shopRate*frontDemand+shopRate*backPerFront*backDemand)/2, 0.08)
}

// TestRecordFlagErrors: each bad flag of 'shoal record' is a usage error
// that names it; a Prometheus that does not answer fails the run.
func TestRecordFlagErrors(t *testing.T) {
	dir := t.TempDir()
	ok := []string{"record", "--prometheus", "http://127.0.0.1:9", "--start", "-1h", "--service", "a=a", "--service", "b=b", "-o", dir}
	with := func(args ...string) []string { return append(append([]string(nil), ok...), args...) }
	without := func(flag string) []string {
		var out []string
		for i := 0; i < len(ok); i++ {
			if ok[i] == flag {
				i++
				continue
			}
			out = append(out, ok[i])
		}
		return out
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{without("--prometheus"), "--prometheus"},
		{with("--prometheus", "127.0.0.1:9090"), "--prometheus"},
		{without("--start"), "--start"},
		{with("--start", "yesterday"), "--start"},
		{with("--start", "-x"), "--start"},
		{with("--end", "2026-13-01T00:00:00Z"), "--end"},
		{with("--end", "now-2h"), "--end"},     // before the start
		{with("--end", "4102444800"), "--end"}, // 2100: in the future
		{with("--step", "1500ms"), "--step"},
		{with("--step", "0s"), "--step"},
		{with("--queries", "no-such-queries.yaml"), "--queries"},
		{with("--step", "2h"), "--end"}, // the hour is shorter than a step
		{with("--namespace", ""), "--namespace"},
		{without("--service"), "--service"},
		{with("--service", "c"), "--service"},
		{with("--service", "c=d:"), ""},         // fine: the container defaults
		{with("--service", "a=x"), "--service"}, // a twice
		{with("--service", `c=d"`), "--service"},
		{with("--ingress", "z"), "--ingress"},
		{with("--call", "a"), "--call"},
		{with("--call", "a=z"), "--call"},
		{with("--call", "b=a"), "--call"}, // the ingress has no caller
		{with("--service", "c=c", "--call", "b=c", "--call", "c=b"), "--call"},
		{without("-o"), "-o"},
	} {
		_, err := runCLI(t, tc.args...)
		if tc.want == "" {
			if errors.Is(err, errUsage) {
				t.Errorf("%v: usage error %v, want the run to fail (no Prometheus)", tc.args[1:], err)
			}
			continue
		}
		if err == nil || !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want a usage error naming %s", tc.args[1:], err, tc.want)
		}
	}
	// No Prometheus listens at port 9: the run fails, not the command line.
	_, err := runCLI(t, ok...)
	if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "record") {
		t.Errorf("no Prometheus: err %v, want a failed run", err)
	}
}
