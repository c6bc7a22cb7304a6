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
	RTT        []float64 // round-trip time of each pair of locations as probes measured it, ms (the mean of both ways)
	RPS        []float64 // calls to the service from each location, per second
	Background []float64 // share of each location's CPU others took, from node and pod CPU (metrics.LocationStats.Background)
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
		st.Background[l] = s.Locations[l].Background()
	}
	pairs(n, func(k, i, j int) { st.RTT[k] = ms(ProbedRTT(s, i, j)) })
	var in, out float64
	var calls int64
	period := s.Period.Seconds()
	for i := range s.Routes {
		r := &s.Routes[i]
		switch svc.Name {
		case r.Service:
			if l := t.Location(r.From); l >= 0 && period > 0 {
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

// ProbedRTT is the RTT of locations i and j, seconds: the mean of both
// ways' probes, or the one way probed.
func ProbedRTT(s *metrics.Snapshot, i, j int) float64 {
	a, b := s.Locations[i].RTT[j].Seconds(), s.Locations[j].RTT[i].Seconds()
	switch {
	case a > 0 && b > 0:
		return (a + b) / 2
	case a > 0:
		return a
	}
	return b
}

// Location is the index of the location named name, or -1.
func (t *Topology) Location(name string) int {
	for i, l := range t.Locations {
		if l == name {
			return i
		}
	}
	return -1
}

// Inputs is the length of a performance model's input for n locations,
// std standard processing times and a request shift of length shift.
func Inputs(n, std, shift int) int { return 2*n + Pairs(n) + n + std + shift }

// Layouts of a request shift: the paper's one way per pair of locations,
// or both ways (Weights).
const (
	ShiftOneWay = "one-way"
	ShiftTwoWay = "two-way"
)

// ShiftLen is the length of a request shift of n locations in layout
// (ShiftOneWay when empty).
func ShiftLen(n int, layout string) int {
	if layout == ShiftTwoWay {
		return n * (n - 1)
	}
	return Pairs(n)
}

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

// Input layouts of a performance model: the paper's (Features), or the
// paper's with Derived's features after it.
const (
	InputsPaper   = "paper"
	InputsDerived = "derived"
)

// Derived appends to the paper's input x (for n locations and std
// standard processing times) what its request shift implies, beyond the
// paper: the mean RTT the service's calls cross, and for each location its
// share of the calls and its calls per second per replica at full speed
// (calls / (replicas x (1 - background))). The paper's models must learn
// these products of rates, weights and RTTs from 2500 samples; given them,
// they need not. The weights assume the service runs in every location.
func Derived(dst, x []float64, n, std int) []float64 {
	p := Pairs(n)
	rep, rtt, rps, bg := x[:n], x[n:n+p], x[n+p:2*n+p], x[2*n+p:3*n+p]
	shift := x[3*n+p+std:]
	w, load := shiftLoads(rps, shift)
	dst = append(dst[:0], x...)
	total := total(rps)
	var ert float64
	for f := range n {
		for t := range n {
			if f != t {
				ert += rps[f] * w[f][t] * rtt[pairIndex(n, f, t)]
			}
		}
	}
	if total > 0 {
		ert /= total
	}
	dst = append(dst, ert)
	for t := range n {
		share := 0.0
		if total > 0 {
			share = load[t] / total
		}
		dst = append(dst, share)
	}
	for t := range n {
		dst = append(dst, load[t]/(max(rep[t], 0.5)*(1-bg[t])))
	}
	return dst
}

// shiftLoads returns the route weights a request shift gives a service
// placed in every location, and the calls per second each location would
// get from calls rps from each.
func shiftLoads(rps, shift []float64) (w [][]float64, load []float64) {
	n := len(rps)
	w = Weights(nil, shift, everywhere(n))
	load = make([]float64, n)
	for f := range n {
		for t := range n {
			load[t] += rps[f] * w[f][t]
		}
	}
	return w, load
}

// everywhere is a service placed in all n locations.
func everywhere(n int) *Service { return &Service{Parts: make([]int, n)} }

// pairIndex is the index of the pair {i, j} (i != j) in a request shift.
func pairIndex(n, i, j int) int {
	if i > j {
		i, j = j, i
	}
	return i*n - i*(i+1)/2 + j - i - 1
}

// derivedModel feeds a model the derived input.
type derivedModel struct {
	m      Model
	n, std int
	buf    []float64
}

func (d *derivedModel) Predict(x []float64) float64 {
	d.buf = Derived(d.buf, x, d.n, d.std)
	return d.m.Predict(d.buf)
}
