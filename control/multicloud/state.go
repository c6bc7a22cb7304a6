package multicloud

import (
	"math"

	"github.com/shoal-project/shoal/metrics"
)

// State is what the monitor measured of one service over a period
// (section II-B), the performance model's inputs apart from the standard
// processing times and the request shift.
type State struct {
	Replicas   []float64 // ready replicas in each location
	RTT        []float64 // round-trip time of each pair of locations, ms
	RPS        []float64 // calls to the service from each location, per second
	Background []float64 // share of each location's CPU other tenants take
	// SelfTime is the mean response time of the service's calls, ms, as
	// their callers see it (network included) less the time its own calls
	// to its children took (II-B: "computed by removing the latter one");
	// NaN when no call completed.
	SelfTime float64
}

// Observe fills st with service svc's state in snapshot s.
func (t *Topology) Observe(st *State, s *metrics.Snapshot, svc *Service) {
	n := len(t.Locations)
	st.Replicas = resize(st.Replicas, n)
	st.RPS = resize(st.RPS, n)
	st.Background = resize(st.Background, n)
	st.RTT = resize(st.RTT, Pairs(n))
	for l := range n {
		st.Replicas[l], st.RPS[l] = 0, 0
		if i := svc.Parts[l]; i >= 0 {
			st.Replicas[l] = float64(s.Services[i].Ready)
		}
		st.Background[l] = s.Locations[l].Background
	}
	pairs(n, func(k, i, j int) { st.RTT[k] = ms(s.Locations[i].RTT[j].Seconds()) })
	var in, out float64
	var calls int64
	period := s.Period.Seconds()
	for i := range s.Routes {
		r := &s.Routes[i]
		switch svc.Name {
		case r.Service:
			if l := t.location(r.From); l >= 0 && period > 0 {
				st.RPS[l] += float64(r.Calls) / period
			}
			in += r.Latency.Sum
			calls += r.Latency.Count
		case r.Caller:
			out += r.Latency.Sum
		}
	}
	st.SelfTime = math.NaN()
	if calls > 0 {
		st.SelfTime = ms(max(in-out, 0) / float64(calls))
	}
}

func (t *Topology) location(name string) int {
	for i, l := range t.Locations {
		if l == name {
			return i
		}
	}
	return -1
}

// Inputs is the length of a performance model's input for n locations and
// std standard processing times.
func Inputs(n, std int) int { return 2*n + Pairs(n) + n + std + Pairs(n) }

// Features writes the performance model's input (section II-C1, "Inputs and
// Output"): the environment metrics (replicas in each location, RTT of each
// pair), the microservice metrics (calls from each location per second,
// each location's background load, the standard processing times) and the
// request shift.
func Features(dst []float64, st *State, std, shift []float64) []float64 {
	dst = dst[:0]
	dst = append(dst, st.Replicas...)
	dst = append(dst, st.RTT...)
	dst = append(dst, st.RPS...)
	dst = append(dst, st.Background...)
	dst = append(dst, std...)
	return append(dst, shift...)
}

func ms(seconds float64) float64 { return seconds * 1000 }

func resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}
