package slate

import (
	"math"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/multicloud"
	"github.com/shoal-project/shoal/metrics"
)

// Exact data of a·load² + b give back a and b; data that fall with the
// load give a flat line at their mean.
func TestFitRecoversTheQuadratic(t *testing.T) {
	var ws []Window
	for _, load := range []float64{2, 5, 9, 14, 20} {
		ws = append(ws, Window{Load: load, Exclusive: 3e-4*load*load + 0.012})
	}
	ws = append(ws, Window{Load: 30, Exclusive: math.NaN()}) // no call completed: left out
	a, b, ok := Fit(ws)
	if !ok || math.Abs(a-3e-4) > 1e-12 || math.Abs(b-0.012) > 1e-12 {
		t.Errorf("fit a = %v, b = %v (%v), want 3e-4 and 0.012", a, b, ok)
	}
	a, b, _ = Fit([]Window{{Load: 1, Exclusive: 0.03}, {Load: 4, Exclusive: 0.01}})
	if a != 0 || math.Abs(b-0.02) > 1e-12 {
		t.Errorf("falling times: a = %v, b = %v, want 0 and their mean 0.02", a, b)
	}
	if _, _, ok := Fit([]Window{{Load: 3, Exclusive: 0.01}}); ok {
		t.Error("one window fitted two parameters")
	}
}

// A service's exclusive time at a location is what its callers waited,
// less the RTT they paid and the time its own calls from there took: at A,
// 20 ms; at B, 20 ms less the 5 ms its call to a child took, with the 10 ms
// RTT from A removed.
func TestObserveTakesOutTheNetworkAndTheChildren(t *testing.T) {
	s := &metrics.Snapshot{Period: 10 * time.Second,
		Locations: []metrics.LocationStats{
			{Name: "A", RTT: []time.Duration{0, 10 * time.Millisecond}},
			{Name: "B", RTT: []time.Duration{10 * time.Millisecond, 0}},
		},
		Services: []metrics.ServiceStats{{Name: "s@A"}, {Name: "s@B"}, {Name: "c@A"}, {Name: "c@B"}},
		Routes: []metrics.RouteStats{
			{Caller: "", Service: "s", From: "A", To: "A", Calls: 100, Latency: metrics.LatencySum{Count: 100, Sum: 100 * 0.020}},
			{Caller: "", Service: "s", From: "A", To: "B", Calls: 50, Latency: metrics.LatencySum{Count: 50, Sum: 50 * 0.030}},
			{Caller: "s", Service: "c", From: "B", To: "B", Calls: 50, Latency: metrics.LatencySum{Count: 50, Sum: 50 * 0.005}},
		},
	}
	top, err := multicloud.ReadTopology(s)
	if err != nil {
		t.Fatal(err)
	}
	var svc *multicloud.Service
	for i := range top.Services {
		if top.Services[i].Name == "s" {
			svc = &top.Services[i]
		}
	}
	ws := Observe(top, s, svc)
	if math.Abs(ws[0].Load-10) > 1e-12 || math.Abs(ws[1].Load-5) > 1e-12 {
		t.Errorf("loads %v and %v calls/s, want 10 and 5", ws[0].Load, ws[1].Load)
	}
	if math.Abs(ws[0].Exclusive-0.020) > 1e-9 || math.Abs(ws[1].Exclusive-0.015) > 1e-9 {
		t.Errorf("exclusive times %v and %v s, want 0.020 and 0.015", ws[0].Exclusive, ws[1].Exclusive)
	}
}
