package scenario

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control/autoscale"
	"github.com/shoal-project/shoal/workload"
)

// TestAutoscalersFromTheScenario: each kind gets one controller per managed
// service (those with max_replicas), with the section's settings and the
// service's replica bounds; "a+b" builds both; static builds none.
func TestAutoscalersFromTheScenario(t *testing.T) {
	sc, err := Load("testdata/good/autoscaled.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.ManagedServices(); len(got) != 1 || got[0] != "s" {
		t.Fatalf("managed %v, want [s]", got)
	}
	ctls, err := sc.Autoscalers("hpa+kpa")
	if err != nil {
		t.Fatal(err)
	}
	if len(ctls) != 2 {
		t.Fatalf("%d controllers, want 2", len(ctls))
	}
	h, ok := ctls[0].(*autoscale.HPA)
	if !ok {
		t.Fatalf("first controller %T, want *autoscale.HPA", ctls[0])
	}
	hc := h.Config()
	if hc.Service != "s" || hc.MinReplicas != 1 || hc.MaxReplicas != 6 || len(hc.Metrics) != 2 || hc.Metrics[1].Target != 8 ||
		*hc.ScaleDown.StabilizationWindow != time.Minute || *hc.ScaleUp.StabilizationWindow != 0 {
		t.Errorf("hpa config %+v", hc)
	}
	k := ctls[1].(*autoscale.KPA).Config()
	if k.Service != "s" || k.TargetConcurrency != 2 || k.StableWindow != 30*time.Second || k.MaxScale != 6 || k.PanicThreshold != 2 {
		t.Errorf("kpa config %+v", k)
	}
	ctls, err = sc.Autoscalers("keda+vpa")
	if err != nil || len(ctls) != 2 {
		t.Fatalf("keda+vpa: %d controllers, %v", len(ctls), err)
	}
	if k := ctls[0].(*autoscale.KEDA).Config(); k.Threshold != 7 || k.PollingInterval != 15*time.Second || k.MaxReplicaCount != 6 {
		t.Errorf("keda with the override: %+v", k)
	}
	if v := ctls[1].(*autoscale.VPA).Config(); v.MinAllowedCPU != 0.5 || v.SampleInterval != 30*time.Second || v.Mode != "Auto" {
		t.Errorf("vpa with the override: %+v", v)
	}
	if sc.Autoscaling.KEDA.Threshold != 6 {
		t.Errorf("the override changed the shared settings: %+v", sc.Autoscaling.KEDA)
	}
	if ctls, err := sc.Autoscalers("static"); err != nil || len(ctls) != 0 {
		t.Errorf("static: %d controllers, %v", len(ctls), err)
	}
	for _, bad := range []string{"hpa+nope", "", "rr"} {
		if _, err := sc.Autoscalers(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// A policy's settings (hpa:target=45) win over the section's and the
// services' overrides, for every service; a wrong one names itself.
func TestAutoscalerSettingsInTheName(t *testing.T) {
	sc, err := Load("testdata/good/autoscaled.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctls, err := sc.Autoscalers("hpa:target=45:tolerance=0.05+kpa:concurrency=4")
	if err != nil || len(ctls) != 2 {
		t.Fatalf("%d controllers, %v", len(ctls), err)
	}
	if hc := ctls[0].(*autoscale.HPA).Config(); len(hc.Metrics) != 1 || hc.Metrics[0].Kind != autoscale.MetricCPU || hc.Metrics[0].Target != 45 || hc.Tolerance != 0.05 {
		t.Errorf("hpa:target=45:tolerance=0.05 built %+v", hc)
	}
	if k := ctls[1].(*autoscale.KPA).Config(); k.TargetConcurrency != 4 || k.StableWindow != 30*time.Second {
		t.Errorf("kpa:concurrency=4 built %+v (the section's other settings stay)", k)
	}
	for bad, want := range map[string]string{
		"hpa:target=0":  "policy hpa: parameter target must be a number in [1, 1000] %",
		"drpc:x.policy": "not an autoscaler built from the scenario",
		"hpa:x=1":       "policy hpa: unknown parameter x",
	} {
		if _, err := sc.Autoscalers(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", bad, err, want)
		}
	}
}

// TestSetArrivalsKeepsTheMix: the sources keep their shares of the new
// total, and a replay without a rate is split by scale.
func TestSetArrivalsKeepsTheMix(t *testing.T) {
	sc, err := Embedded("trainticket")
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.SetArrivals(workload.ProcessSpec{Kind: "trace", Trace: "nasa", Rate: 800, Speedup: 60}); err != nil {
		t.Fatal(err)
	}
	want := []float64{480, 200, 80, 40} // 60/25/10/5 % of 800
	for i, w := range want {
		a := sc.Sources[i].Arrivals
		if a.Kind != "trace" || a.Trace != "nasa" || math.Abs(a.Rate-w) > 1e-9 {
			t.Errorf("source %d: %+v, want rate %g", i, a, w)
		}
	}
	if err := sc.SetArrivals(workload.ProcessSpec{Kind: "series", Step: 10 * time.Second, Rates: []float64{200, 800}}); err != nil {
		t.Fatal(err)
	}
	if a := sc.Sources[1].Arrivals; a.Rate != 0 || math.Abs(a.Scale-0.25) > 1e-9 {
		t.Errorf("series: source 1 %+v, want scale 0.25", a)
	}
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := sc.SetArrivals(workload.ProcessSpec{Kind: "trace"}); err == nil {
		t.Error("a trace without a name: no error")
	}
}

// kpa:scale=F, the DRPC study's knob of the KPA, multiplies every
// service's target concurrency: the section's (or Knative's default 100)
// and each override's.
func TestKPAScaleMultipliesEveryTarget(t *testing.T) {
	sc, err := Embedded("trainticket")
	if err != nil {
		t.Fatal(err)
	}
	base, err := sc.Autoscalers("kpa")
	if err != nil {
		t.Fatal(err)
	}
	scaled, err := sc.Autoscalers("kpa:scale=2.5")
	if err != nil || len(scaled) != len(base) {
		t.Fatalf("kpa:scale=2.5: %d controllers, %v", len(scaled), err)
	}
	seen270 := false
	for i := range base {
		b, s := base[i].(*autoscale.KPA).Config(), scaled[i].(*autoscale.KPA).Config()
		if s.TargetConcurrency != 2.5*b.TargetConcurrency {
			t.Errorf("%s: target %v, want 2.5 x %v", b.Service, s.TargetConcurrency, b.TargetConcurrency)
		}
		seen270 = seen270 || (b.Service == "ts-ui-dashboard" && b.TargetConcurrency == 270)
	}
	if !seen270 {
		t.Error("ts-ui-dashboard's override (270) is not among the KPAs")
	}
}

// static:scale=X starts every autoscaled service at X times its replicas,
// rounded up and within its bounds, on a copy of the configuration.
func TestStaticScale(t *testing.T) {
	sc, err := Embedded("trainticket")
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := sc.ConfigFor("hpa"); err != nil || cfg != &sc.Config {
		t.Fatalf("hpa runs a configuration of its own (%v)", err)
	}
	cfg, err := sc.ConfigFor("static:scale=2.5")
	if err != nil {
		t.Fatal(err)
	}
	managed := sc.ManagedServices()
	changed := 0
	for i, sv := range sc.Services {
		got := cfg.Services[i].Replicas
		want := sv.Replicas
		if slices.Contains(managed, sv.Name) {
			want = int(math.Ceil(float64(max(sv.Replicas, 1)) * 2.5))
			want = max(want, sv.MinReplicas, 1)
			if sv.MaxReplicas > 0 {
				want = min(want, sv.MaxReplicas)
			}
		}
		if got != want {
			t.Errorf("%s: %d replicas, want %d (from %d)", sv.Name, got, want, sv.Replicas)
		}
		if got != sv.Replicas {
			changed++
		}
	}
	if changed == 0 {
		t.Error("static:scale=2.5 changed no service")
	}
	if again, _ := sc.ConfigFor("static"); again != &sc.Config {
		t.Error("static without a scale runs a copy")
	}
}

// static:resources=Y multiplies every autoscaled service's CPU and memory
// limits, and only theirs, keeping the replicas.
func TestStaticResources(t *testing.T) {
	sc, err := Embedded("faas-sequential")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := sc.ConfigFor("static:resources=0.5")
	if err != nil {
		t.Fatal(err)
	}
	managed := sc.ManagedServices()
	for i, sv := range sc.Services {
		got, want := cfg.Services[i], sv
		if slices.Contains(managed, sv.Name) {
			want.CPU, want.MemoryMB = sv.CPU/2, sv.MemoryMB/2
		}
		if got.CPU != want.CPU || got.MemoryMB != want.MemoryMB || got.Replicas != sv.Replicas {
			t.Errorf("%s: cpu %v, memory %v MB, %d replicas; want %v, %v and %d", sv.Name, got.CPU, got.MemoryMB, got.Replicas, want.CPU, want.MemoryMB, sv.Replicas)
		}
	}
	if sc.Services[slices.IndexFunc(sc.Services, func(s cluster.Service) bool { return s.Name == managed[0] })].CPU == 0 {
		t.Fatal("the first function has no CPU limit to scale")
	}
}
