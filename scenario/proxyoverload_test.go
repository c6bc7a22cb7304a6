package scenario

import (
	"math"
	"testing"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control/lb"
)

// TestProxyOverload keeps proxy-overload the proxy's overload benchmark
// (bench/proxy/overload.sh) and its overload phase what the simulator
// should give: two saturated one-core backends serve their capacity, 200
// requests per second, and the LB point sheds the rest of the 600/s, about
// two thirds.
func TestProxyOverload(t *testing.T) {
	sc, err := Embedded("proxy-overload")
	if err != nil {
		t.Fatal(err)
	}
	want := lb.Admission{MaxRequests: 16, MaxPending: 64, QueueTimeout: time.Second}
	if len(sc.LBs) != 1 || sc.LBs[0].Admission == nil || *sc.LBs[0].Admission != want || sc.Horizon != 80*time.Second || sc.Warmup != 10*time.Second {
		t.Fatalf("proxy-overload: lbs %+v, horizon %v, warm-up %v", sc.LBs, sc.Horizon, sc.Warmup)
	}
	phase, err := Load("testdata/proxy-overload-phase.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if phase.Horizon != 70*time.Second || phase.Warmup != 10*time.Second || *phase.LBs[0].Admission != want {
		t.Fatalf("proxy-overload-phase: horizon %v, warm-up %v, admission %+v", phase.Horizon, phase.Warmup, phase.LBs[0].Admission)
	}
	cl, err := cluster.New(&phase.Config, cluster.Options{Seed: 1, Traces: phase.Traces(), Policy: "least-request",
		Horizon: phase.Horizon, Warmup: phase.Warmup})
	if err != nil {
		t.Fatal(err)
	}
	cl.RunUntil(phase.Horizon)
	cl.Drain(phase.Drain)
	r := cl.Results()
	shed := float64(r.Failures.Shed) / float64(r.Arrivals)
	t.Logf("overload: %d requests, goodput %.1f/s, shed %.4f, mean served %.3f s, p99 %.3f s",
		r.Arrivals, r.Throughput, shed, r.Latency.Mean(), r.Latency.Quantile(0.99))
	if math.Abs(r.Throughput/200-1) > 0.03 || math.Abs(shed-2.0/3) > 0.02 || r.Failures.Total() != r.Failures.Shed {
		t.Errorf("goodput %.1f/s (want 200 within 3%%), shed %.4f (want 2/3 within 0.02), failures %+v", r.Throughput, shed, r.Failures)
	}
}
