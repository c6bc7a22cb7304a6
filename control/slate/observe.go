package slate

import (
	"math"

	"github.com/shoal-project/shoal/control/multicloud"
	"github.com/shoal-project/shoal/metrics"
)

// Window is a period's measurement of a service at one location: the calls
// per second it served there, and their mean exclusive time, seconds (NaN
// when none completed).
type Window struct {
	Load, Exclusive float64
}

// Observe reads service svc's windows, by location, from snapshot s, as
// SLATE's data plane reports them: the calls served at each location
// (route telemetry to it), and their response time as their callers saw
// it less the probed RTT the callers paid and less the time the service's
// own calls from there took (its exclusive time, the release's "xt").
func Observe(t *multicloud.Topology, s *metrics.Snapshot, svc *multicloud.Service) []Window {
	n := len(t.Locations)
	in, out, rtt := make([]float64, n), make([]float64, n), make([]float64, n)
	calls, done := make([]float64, n), make([]int64, n)
	for i := range s.Routes {
		r := &s.Routes[i]
		from, to := t.Location(r.From), t.Location(r.To)
		if from < 0 || to < 0 {
			continue
		}
		switch svc.Name {
		case r.Service:
			calls[to] += float64(r.Calls)
			done[to] += r.Latency.Count
			in[to] += r.Latency.Sum
			rtt[to] += float64(r.Latency.Count) * multicloud.ProbedRTT(s, from, to)
		case r.Caller:
			out[from] += r.Latency.Sum
		}
	}
	ws := make([]Window, n)
	for l := range ws {
		ws[l] = Window{Load: calls[l] / s.Period.Seconds(), Exclusive: math.NaN()}
		if done[l] > 0 {
			ws[l].Exclusive = max(in[l]-rtt[l]-out[l], 0) / float64(done[l])
		}
	}
	return ws
}

// Fit fits a·load² + b to the windows that completed calls, by least
// squares (the release's "poly" model of degree 2,
// new_fit_polynomial_regression), with a and b at least 0: where the
// times fall with the load, a flat line at their mean. ok is false
// without two windows of different loads.
func Fit(ws []Window) (a, b float64, ok bool) {
	var n, sx, sy, sxx, sxy float64
	for _, w := range ws {
		if math.IsNaN(w.Exclusive) {
			continue
		}
		x := w.Load * w.Load
		n, sx, sy, sxx, sxy = n+1, sx+x, sy+w.Exclusive, sxx+x*x, sxy+x*w.Exclusive
	}
	den := n*sxx - sx*sx
	if n < 2 || den <= 0 {
		return 0, 0, false
	}
	a = (n*sxy - sx*sy) / den
	if a < 0 {
		return 0, max(sy/n, 0), true
	}
	return a, max((sy-a*sx)/n, 0), true
}
