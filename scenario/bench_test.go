package scenario

import (
	"testing"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/workload"
)

// trainTicketAt is the embedded TrainTicket scenario at rate req/s with the
// replicas scaled by rate/200, so that it serves the load as at 200 req/s.
func trainTicketAt(tb testing.TB, rate float64) *Scenario {
	tb.Helper()
	sc, err := Embedded("trainticket")
	if err != nil {
		tb.Fatal(err)
	}
	if err := sc.SetArrivals(workload.ProcessSpec{Kind: workload.KindPoisson, Rate: rate}); err != nil {
		tb.Fatal(err)
	}
	for i := range sc.Services {
		s := &sc.Services[i]
		s.Replicas = int(float64(max(s.Replicas, 1))*rate/200 + 0.5)
		s.MaxReplicas = max(s.MaxReplicas, s.Replicas)
	}
	return sc
}

// BenchmarkTrainTicket simulates TrainTicket at 800 req/s (its 40 services
// scaled 4x), b.N requests, and reports service calls simulated per second
// of wall time. Run it on one core: go test -bench TrainTicket -cpu 1.
func BenchmarkTrainTicket(b *testing.B) {
	const rate = 800
	sc := trainTicketAt(b, rate)
	horizon := time.Duration(float64(b.N) / rate * float64(time.Second))
	cl, err := cluster.New(&sc.Config, cluster.Options{Seed: 1, Traces: sc.Traces(), Horizon: max(horizon, time.Millisecond),
		SamplePeriod: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cl.RunUntil(horizon)
	cl.Drain(time.Minute)
	b.StopTimer()
	r := cl.Results()
	var calls int64
	for i := range r.Services {
		calls += r.Services[i].Calls
	}
	b.ReportMetric(float64(calls)/b.Elapsed().Seconds(), "calls/s")
	b.ReportMetric(float64(calls)/float64(max(r.ArrivedAll, 1)), "calls/req")
	b.ReportMetric(float64(r.Events)/float64(max(calls, 1)), "events/call")
	if f := r.Failures.Total(); f > r.ArrivedAll/100 {
		b.Fatalf("%d of %d requests failed: the scaled deployment should serve the load", f, r.ArrivedAll)
	}
}
