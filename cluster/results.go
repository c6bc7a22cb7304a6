package cluster

import (
	"fmt"
	"math"
	"time"

	"github.com/shoal-project/shoal/metrics"
)

// Results are the outcomes of one run. Latency and failure figures count the
// requests that arrived after the warm-up.
type Results struct {
	Latency    metrics.Histogram // completion time of successful requests, seconds (filled by Drain)
	Classes    []ClassResult
	Arrivals   int64 // requests that arrived after the warm-up
	ArrivedAll int64 // requests that arrived, warm-up included
	Completed  int64 // of the Arrivals, completed successfully
	// Degraded counts the completed requests that missed some optional call
	// (browned out, or failed).
	Degraded   int64
	Failures   metrics.Failures
	Unfinished int64         // requests still in progress when the drain limit ran out
	Window     time.Duration // measurement window: horizon minus warm-up
	// Throughput is the successful completions per second that happen
	// inside the window [warm-up, horizon] (whenever the requests arrived;
	// completions during the drain do not count), so an overloaded system
	// shows what it served, not what was offered.
	Throughput float64
	// Fairness is Jain's index of the utilisation of the series service's
	// instances over the window (1 = perfectly even).
	Fairness float64
	// Makespan is the mean over samples of max_j l_j, the time the busiest
	// server needs to finish its work (Distr-LB paper, Def. 1), seconds.
	Makespan float64
	// Cost is the price of the resources allocated over the window and of
	// the egress between locations (EgressGB at the egress price).
	Cost     float64
	EgressGB float64 // GB sent between locations by calls made in the window
	Little   LittleCheck
	Series   LoadSeries
	Events   uint64 // simulation events fired
	// OOMKills counts OOM kills of instances over the whole run (warm-up included).
	OOMKills int64
	// Probes counts the load probes the LB points sent after the warm-up.
	Probes int64
	// Refused counts the controllers' actions the cluster refused (Apply
	// failed; the run went on without them), and FirstRefusal says why
	// the first was.
	Refused      int64
	FirstRefusal string
	// Services are each service's resources over the window and its
	// state over time (at Series.Times).
	Services []ServiceResult
	// Requests is the end-to-end outcome over time (at Series.Times).
	Requests RequestSeries
	// Scaling lists every action that changed a service, in order.
	Scaling []ScaleEvent
	End     time.Duration

	finished     int64
	doneInWindow int64 // successful completions inside [warm-up, horizon]
	sojourn      float64
}

// ClassResult is the outcome of one request class.
type ClassResult struct {
	Name     string
	SLO      time.Duration // response-time target (0 = none)
	Arrivals int64         // requests that arrived after the warm-up
	Latency  metrics.Histogram
	Failures metrics.Failures
	Slow     int64 // requests completed later than the SLO
	Degraded int64 // requests completed without some optional call
	// SlowDegraded counts the requests both slow and degraded.
	SlowDegraded int64
}

// Completed is the number of requests completed successfully.
func (c *ClassResult) Completed() int64 { return c.Latency.Count() }

// LittleCheck compares the time-average number of requests in the system, L,
// with the arrival rate times the mean time in system, lambda*W, over the
// whole run. The two are measured independently (one integrates the count
// over time, the other sums per-request times) and must agree (Little 1961).
type LittleCheck struct {
	L, Lambda, W float64
	RelErr       float64
}

// OK reports whether Little's law holds to within 1e-6 relative error.
func (l LittleCheck) OK() bool { return l.RelErr <= 1e-6 || (l.L == 0 && l.Lambda*l.W == 0) }

// LoadSeries is the load of each instance of the series service over time.
type LoadSeries struct {
	Times       []float64   // end of each sample period, seconds
	Names       []string    // instance names
	Utilisation [][]float64 // [instance][sample]: busy cores / CPU limit over the period
	InFlight    [][]float64 // [instance][sample]: admitted calls at the sample
}

// sampler records the load series every sample period up to the horizon.
type sampler struct {
	cl        *Cluster
	last      time.Duration
	makespan  metrics.Welford
	warmTaken bool
	// Per service: the last sample's marks, and the window's ends.
	services, warm, end []serviceMark
	endTaken            bool
	requests            requestTotals // at the last sample
}

func (s *sampler) start(cl *Cluster) {
	s.cl = cl
	cl.res.Series.Names = nil
	for _, in := range cl.series.slots {
		cl.res.Series.Names = append(cl.res.Series.Names, fmt.Sprintf("%s-%d", cl.series.name, in.id))
	}
	n := len(cl.res.Series.Names)
	cl.res.Services = make([]ServiceResult, len(cl.services))
	for i, sv := range cl.services {
		cl.res.Services[i].Name = sv.name
	}
	s.services = make([]serviceMark, len(cl.services))
	s.warm = make([]serviceMark, len(cl.services))
	s.end = make([]serviceMark, len(cl.services))
	cl.res.Series.Utilisation = make([][]float64, n)
	cl.res.Series.InFlight = make([][]float64, n)
	s.reserve(n)
	cl.sampleEv = simEvent(s, 0)
	cl.k.Schedule(&cl.sampleEv, min(cl.opt.SamplePeriod, cl.opt.Horizon))
	if cl.opt.Warmup == 0 {
		s.warmTaken = true
	} else {
		cl.warmEv = simEvent(s, 1)
		cl.k.Schedule(&cl.warmEv, cl.opt.Warmup)
	}
}

// maxReserved bounds the samples whose room the series reserve at the
// start: a run stopped early wastes no more than that.
const maxReserved = 4096

// reserve gives every series room for the run's samples, carved from one
// block, so that sampling does not grow slices one by one.
func (s *sampler) reserve(instances int) {
	cl := s.cl
	per := min(int(cl.opt.Horizon/max(cl.opt.SamplePeriod, 1))+1, maxReserved)
	const perService, perRequest = 8, 4
	block := make([]float64, per*(1+2*instances+perService*len(cl.services)+perRequest))
	carve := func() []float64 {
		b := block[:0:per]
		block = block[per:]
		return b
	}
	ser := &cl.res.Series
	ser.Times = carve()
	for i := range instances {
		ser.Utilisation[i], ser.InFlight[i] = carve(), carve()
	}
	for i := range cl.res.Services {
		v := &cl.res.Services[i].Series
		v.Replicas, v.Ready, v.CPU, v.MemoryMB = carve(), carve(), carve(), carve()
		v.Rate, v.Latency, v.Utilisation, v.Failed = carve(), carve(), carve(), carve()
	}
	r := &cl.res.Requests
	r.Rate, r.Latency, r.Failed, r.Violated = carve(), carve(), carve(), carve()
}

// Handle implements sim.Handler: arg 0 samples, arg 1 marks the warm-up's end.
func (s *sampler) Handle(now time.Duration, arg int) {
	cl := s.cl
	if arg == 1 {
		for _, in := range cl.series.slots {
			if in != nil {
				in.busyWarm = in.cpu.BusyUntil(now)
			}
		}
		s.markWindow(now, true)
		s.warmTaken = true
		return
	}
	s.sample(now)
	if next := now + cl.opt.SamplePeriod; next <= cl.opt.Horizon {
		cl.k.Schedule(&cl.sampleEv, next)
	} else if now < cl.opt.Horizon {
		cl.k.Schedule(&cl.sampleEv, cl.opt.Horizon)
	}
}

func (s *sampler) sample(now time.Duration) {
	cl := s.cl
	dt := (now - s.last).Seconds()
	s.last = now
	if dt <= 0 {
		return
	}
	ser := &cl.res.Series
	ser.Times = append(ser.Times, now.Seconds())
	ms := 0.0
	for i, in := range cl.series.slots {
		if i >= len(ser.Names) {
			break // instances added by scaling are not in the fixed series
		}
		u, q := 0.0, 0.0
		if in != nil {
			busy := in.cpu.BusyUntil(now)
			u = (busy - in.busyAt) / (in.cpuLimit * dt)
			in.busyAt = busy
			q = float64(in.admitted)
			ms = math.Max(ms, in.remainingTime())
		}
		ser.Utilisation[i] = append(ser.Utilisation[i], u)
		ser.InFlight[i] = append(ser.InFlight[i], q)
	}
	if now > cl.opt.Warmup {
		s.makespan.Add(ms)
	}
	s.sampleServices(now, dt)
	if now == cl.opt.Horizon {
		s.markWindow(now, false)
	}
}

// flush closes the results after the run.
func (s *sampler) flush(cl *Cluster) {
	now := cl.k.Now()
	r := &cl.res
	r.End = now
	r.Events = cl.k.Fired()
	r.Window = cl.opt.Horizon - cl.opt.Warmup
	if w := r.Window.Seconds(); w > 0 {
		r.Throughput = float64(r.doneInWindow) / w
	}
	r.Unfinished = cl.inSystem.n
	r.Makespan = s.makespan.Mean()
	var util []float64
	for _, in := range cl.series.slots {
		if in == nil {
			continue
		}
		util = append(util, (in.cpu.BusyUntil(now)-in.busyWarm)/in.cpuLimit)
	}
	r.Fairness = metrics.Jain(util)
	r.Latency.Reset()
	for i, c := range cl.classes {
		r.Classes[i] = ClassResult{Name: c.name, SLO: c.slo, Arrivals: c.arrivals, Latency: c.latency, Failures: c.failures, Slow: c.slow, Degraded: c.degraded, SlowDegraded: c.slowDeg}
		r.Latency.Merge(&c.latency)
	}
	s.flushServices(now)
	r.Cost = 0 // flush may run again after another Drain
	for i := range r.Services {
		r.Cost += r.Services[i].Cost
	}
	r.Cost += r.EgressGB * cl.prices.EgressGB
	r.Scaling = cl.scaling
	// Little's law over [0, now]: requests unfinished at the end count their
	// time so far on both sides.
	T := now.Seconds()
	sum := r.sojourn + float64(r.Unfinished)*T - cl.liveStarts
	if T > 0 && r.ArrivedAll > 0 {
		L := cl.inSystem.seconds(now) / T
		lambda := float64(r.ArrivedAll) / T
		W := sum / float64(r.ArrivedAll)
		r.Little = LittleCheck{L: L, Lambda: lambda, W: W, RelErr: math.Abs(L-lambda*W) / math.Max(L, 1e-300)}
	}
}

// Results returns the outcomes; call it after Drain.
func (cl *Cluster) Results() *Results { return &cl.res }

// Refuse counts an action that Apply refused with err: a controller asked
// for what this world cannot do, and the run goes on without it.
func (cl *Cluster) Refuse(err error) {
	if cl.res.Refused++; cl.res.FirstRefusal == "" {
		cl.res.FirstRefusal = fmt.Sprintf("at %v: %v", cl.k.Now(), err)
	}
}
