package jolteon

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/shoal-project/shoal/control/callgraph"
	"github.com/shoal-project/shoal/control/faasconf"
	"github.com/shoal-project/shoal/metrics"
)

// Sample is one profiling window, as a cluster's metrics show it: the
// configuration that ran, and the telemetry of every configured function
// (in the model's order) and of the workflow's request classes.
type Sample struct {
	Configs  []faasconf.Config
	Period   time.Duration
	Services []metrics.ServiceStats
	Classes  []metrics.ClassStats
}

// requests is the workflow's requests that arrived in the window.
func (s *Sample) requests() int64 {
	var n int64
	for _, c := range s.Classes {
		n += c.Arrivals
	}
	return n
}

// rate is the workflow's request rate, per second.
func (s *Sample) rate() float64 { return float64(s.requests()) / s.Period.Seconds() }

// residualPoints is how many quantiles the black box keeps; perSample how
// many each window's histogram contributes.
const (
	residualPoints = 400
	perSample      = 400
)

// Fit fits the model of the functions from profiling windows: each
// function's visits per request and CPU work per call as measured (calls
// over requests, CPU seconds over completions), its time off the CPU by
// least squares of the white box's mean against the measured means, and
// its black box from the measured latencies over the white box's mean;
// then the untuned services' time per request from the workflow's means.
func Fit(functions []string, memory []faasconf.MemoryModel, graph callgraph.Graph, samples []Sample) (*Model, error) {
	if len(samples) == 0 {
		return nil, fmt.Errorf("jolteon: no profiling samples")
	}
	m := &Model{Graph: graph, Shares: shares(len(graph.Roots), samples)}
	var requests int64
	for i := range samples {
		requests += samples[i].requests()
	}
	if requests == 0 {
		return nil, fmt.Errorf("jolteon: no requests in %d profiling samples", len(samples))
	}
	for j, name := range functions {
		f := Function{Name: name, Memory: memory[j]}
		var calls, done int64
		var cpu float64
		for i := range samples {
			s := &samples[i].Services[j]
			calls, done, cpu = calls+s.Arrivals, done+s.Completions, cpu+s.CPUUse*samples[i].Period.Seconds()
		}
		if done == 0 {
			return nil, fmt.Errorf("jolteon: function %s completed no call in %d profiling samples", name, len(samples))
		}
		f.Visits, f.Work = float64(calls)/float64(requests), cpu/float64(done)
		f.Refusal = refusal(&f, j, samples)
		m.Functions = append(m.Functions, f)
	}
	// A function that calls others waits for them, so its measured latency
	// holds its callees' (Jolteon's workflows are flat stages; Shoal's may
	// nest): its time off the CPU is what its measured mean leaves after its
	// white box and its callees' expected latency on the model, so callees
	// are fitted first, and its black box is its measured latency over that
	// whole expectation, drawn for the call and all below it (Solver.call).
	sv := &Solver{Model: m, QoS: faasconf.QoS{Latency: time.Hour}, Samples: 1, Seed: 1}
	for _, j := range sv.calleesFirst() {
		f := &m.Functions[j]
		f.Delay = delay(sv, f, j, samples)
		f.Residual = residuals(sv, f, j, samples)
	}
	m.Offset = offset(m, samples)
	return m, nil
}

// shares are the request classes' shares of the requests.
func shares(roots int, samples []Sample) []float64 {
	out := make([]float64, roots)
	total := 0.0
	for i := range samples {
		for k, c := range samples[i].Classes {
			if k < roots {
				out[k] += float64(c.Arrivals)
				total += float64(c.Arrivals)
			}
		}
	}
	for k := range out {
		out[k] /= max(total, 1)
	}
	return out
}

// refusal is the calls refused at a concurrency limit over the white
// box's loss, summed over the windows that had a limit, smoothed towards 1
// by one call each way, so that a few windows cannot set it to 0.
func refusal(f *Function, j int, samples []Sample) float64 {
	measured, predicted := 1.0, 1.0
	for i := range samples {
		s := &samples[i]
		if s.Configs[j].Concurrency <= 0 {
			continue
		}
		measured += float64(s.Services[j].Failures.Rejected)
		predicted += f.Blocking(s.Configs[j], s.rate()) * float64(s.Services[j].Arrivals)
	}
	return measured / predicted
}

// stable is whether the white box keeps up with a window (under 90%
// utilisation), so that its mean says something of the function.
func stable(f *Function, s *Sample, j int) bool {
	return s.Services[j].Latency.Count > 0 && f.Utilisation(s.Configs[j], s.rate()) < 0.9
}

// delay is the least-squares time off the CPU: the mean, over the stable
// windows, of the measured mean less the white box's without it and, for
// a caller, less its callees' expected latency on the model (at least 0),
// weighted by completions.
func delay(sv *Solver, f *Function, j int, samples []Sample) float64 {
	f.Delay = 0
	var sum, w float64
	for i := range samples {
		s := &samples[i]
		callees, _, ok := sv.callees(j, s)
		if !ok || !stable(f, s, j) {
			continue
		}
		n := float64(s.Services[j].Latency.Count)
		sum += n * (s.Services[j].Latency.Mean() - f.Mean(s.Configs[j], s.rate()) - callees)
		w += n
	}
	if w == 0 {
		return 0
	}
	return math.Max(0, sum/w)
}

// residuals are the black box: per utilisation band, quantiles of the
// measured latencies over the model's mean (the white box's, plus a
// caller's callees'), pooled over the band's stable windows.
func residuals(sv *Solver, f *Function, j int, samples []Sample) [][]float64 {
	pooled := make([][]float64, len(ResidualBands))
	for i := range samples {
		s := &samples[i]
		callees, b, ok := sv.callees(j, s)
		if !ok || !stable(f, s, j) {
			continue
		}
		mean := f.Mean(s.Configs[j], s.rate()) + callees
		h := &s.Services[j].LatencyHist
		for k := range perSample {
			pooled[b] = append(pooled[b], h.Quantile((float64(k)+0.5)/perSample)/mean)
		}
	}
	out := make([][]float64, len(pooled))
	for b, p := range pooled {
		if len(p) == 0 {
			continue
		}
		slices.Sort(p)
		out[b] = make([]float64, residualPoints)
		for k := range out[b] {
			out[b][k] = p[min(len(p)-1, int((float64(k)+0.5)/residualPoints*float64(len(p))))]
		}
	}
	return out
}

// callees is function j's callees' expected latency in the window, and
// its black box's band there (0 and its own for a function that calls
// none); ok is false when the model's instances cannot keep up.
func (s *Solver) callees(j int, w *Sample) (float64, int, bool) {
	if !s.callsOut(j) {
		return 0, bandOf(s.Model.Functions[j].Utilisation(w.Configs[j], w.rate())), true
	}
	return s.calleeMean(j, memoryFree(w.Configs), w.rate())
}

// offset is the services' time per request that the functions do not
// explain: the mean, over the windows the model can compose, of the
// workflow's measured mean latency less the model's mean.
func offset(m *Model, samples []Sample) float64 {
	sv := &Solver{Model: m, QoS: faasconf.QoS{Latency: time.Hour}, Samples: 500, Seed: 1}
	var sum, w float64
	for i := range samples {
		s := &samples[i]
		var lat metrics.LatencySum
		for _, c := range s.Classes {
			lat.Count += c.Latency.Count
			lat.Sum += c.Latency.Sum
		}
		ok := lat.Count > 0
		for j := range m.Functions {
			ok = ok && stable(&m.Functions[j], s, j)
		}
		if !ok {
			continue
		}
		_, mean := sv.Check(memoryFree(s.Configs), s.rate())
		sum += float64(lat.Count) * (lat.Mean() - mean)
		w += float64(lat.Count)
	}
	if w == 0 {
		return 0
	}
	return math.Max(0, sum/w)
}

// memoryFree is cs with no memory bound: the model's means, whatever the
// memory held.
func memoryFree(cs []faasconf.Config) []faasconf.Config {
	cs = slices.Clone(cs)
	for j := range cs {
		cs[j].MemoryMB = 0
	}
	return cs
}
