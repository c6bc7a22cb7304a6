package cluster

import (
	"math"
	"time"
)

// ServiceResult is one service's resources over the measurement window
// [warm-up, horizon] and its state over time.
type ServiceResult struct {
	Name string
	// VCPUSeconds and GBSeconds are the CPU and memory allocated (limits
	// of instances that hold resources: starting, ready, restarting,
	// draining), integrated over the window.
	VCPUSeconds, GBSeconds float64
	// BusyCPUSeconds is the CPU used over the window, core-seconds.
	BusyCPUSeconds float64
	// Cost prices the allocation with the config's prices.
	Cost float64
	// Calls counts the calls that reached the service over the whole run,
	// and Retries the attempts sent again to it.
	Calls, Retries int64
	Series         ServiceSeries
}

// Utilisation is the CPU used over the CPU allocated in the window (NaN
// with nothing allocated).
func (s *ServiceResult) Utilisation() float64 { return ratio(s.BusyCPUSeconds, s.VCPUSeconds) }

// ServiceSeries is a service's state at each sample (the times are the
// results' Series.Times): what a scaling controller did and what it got.
type ServiceSeries struct {
	Replicas    []float64 // instances that exist (starting or ready) at the sample
	Ready       []float64 // of them, ready
	CPU         []float64 // per-instance CPU limit, cores
	MemoryMB    []float64 // per-instance memory limit, MB (0 = none)
	Rate        []float64 // calls arriving per second over the sample period
	Latency     []float64 // mean response time of the calls completed in the period, s (NaN: none)
	Utilisation []float64 // CPU used over CPU allocated in the period (NaN: nothing allocated)
	Failed      []float64 // calls failed per second over the period
}

// RequestSeries is the end-to-end outcome of all requests (warm-up
// included) in each sample period.
type RequestSeries struct {
	Rate     []float64 // requests arriving per second
	Latency  []float64 // mean response time of the requests completed successfully, s (NaN: none)
	Failed   []float64 // requests failed (or timed out) per second
	Violated []float64 // requests that violated their SLO per second (classes with an SLO)
}

// ScaleEvent is a service's configuration after an action changed it.
type ScaleEvent struct {
	At          time.Duration
	Service     string
	Replicas    int     // replicas requested (after min/max)
	CPU         float64 // per-instance CPU limit, cores
	MemoryMB    float64 // per-instance memory limit, MB
	Concurrency int     // per-instance concurrency limit (0 = none)
	Brownout    bool
}

// requestTotals counts every request since the start.
type requestTotals struct {
	arrivals, done, failed, violated int64
	latSum                           float64
}

func (t *requestTotals) record(ok bool, latency float64, slo time.Duration) {
	if !ok {
		t.failed++
		if slo > 0 {
			t.violated++
		}
		return
	}
	t.done++
	t.latSum += latency
	if slo > 0 && latency > secs(slo) {
		t.violated++
	}
}

// serviceTotals are a service's counters since the start: what Observe
// has reset so far plus the current period.
type serviceTotals struct {
	arrivals, completions, failed, latCount, retries int64
	latSum                                           float64
}

func (s *service) totals() serviceTotals {
	t := s.observed
	p := &s.period
	t.arrivals += p.Arrivals
	t.completions += p.Completions
	t.failed += p.Failures.Total()
	t.latCount += p.Latency.Count
	t.latSum += p.Latency.Sum
	t.retries += p.Retries
	return t
}

// keepPeriod adds the current period's counters to the totals before
// Observe resets them.
func (s *service) keepPeriod() { s.observed = s.totals() }

// busyTotal is the CPU the service used since the start, core-seconds.
func (s *service) busyTotal(now time.Duration) float64 {
	b := s.goneBusyTotal
	for _, in := range s.slots {
		if in != nil {
			b += in.cpu.BusyUntil(now)
		}
	}
	return b
}

// serviceMark is what a sample needs from the previous one.
type serviceMark struct {
	totals     serviceTotals
	busy       float64
	cpu, memMB float64 // allocation integrals: core-seconds, MB-seconds
}

func (s *service) mark(now time.Duration) serviceMark {
	return serviceMark{totals: s.totals(), busy: s.busyTotal(now), cpu: s.allocCPU.Integral(now), memMB: s.allocMem.Integral(now)}
}

// sampleServices appends every service's state over the period since the
// last sample.
func (smp *sampler) sampleServices(now time.Duration, dt float64) {
	cl := smp.cl
	for i, s := range cl.services {
		ser := &cl.res.Services[i].Series
		m := s.mark(now)
		last := smp.services[i]
		smp.services[i] = m
		n, ready := s.replicas()
		d := m.totals
		ser.Replicas = append(ser.Replicas, float64(n))
		ser.Ready = append(ser.Ready, float64(ready))
		ser.CPU = append(ser.CPU, s.cpuLimit)
		ser.MemoryMB = append(ser.MemoryMB, s.memLimit)
		ser.Rate = append(ser.Rate, float64(d.arrivals-last.totals.arrivals)/dt)
		ser.Latency = append(ser.Latency, ratio(d.latSum-last.totals.latSum, float64(d.latCount-last.totals.latCount)))
		ser.Utilisation = append(ser.Utilisation, ratio(m.busy-last.busy, m.cpu-last.cpu))
		ser.Failed = append(ser.Failed, float64(d.failed-last.totals.failed)/dt)
	}
	t, last := cl.requests, smp.requests
	smp.requests = t
	r := &cl.res.Requests
	r.Rate = append(r.Rate, float64(t.arrivals-last.arrivals)/dt)
	r.Latency = append(r.Latency, ratio(t.latSum-last.latSum, float64(t.done-last.done)))
	r.Failed = append(r.Failed, float64(t.failed-last.failed)/dt)
	r.Violated = append(r.Violated, float64(t.violated-last.violated)/dt)
}

// markWindow records where the measurement window starts (warm == true)
// or ends.
func (smp *sampler) markWindow(now time.Duration, warm bool) {
	for i, s := range smp.cl.services {
		if warm {
			smp.warm[i] = s.mark(now)
		} else {
			smp.end[i] = s.mark(now)
		}
	}
	if !warm {
		smp.endTaken = true
	}
}

// flushServices fills the services' window figures.
func (smp *sampler) flushServices(now time.Duration) {
	cl := smp.cl
	if !smp.endTaken {
		smp.markWindow(min(now, cl.opt.Horizon), false)
	}
	for i := range cl.services {
		r := &cl.res.Services[i]
		w, e := smp.warm[i], smp.end[i]
		r.VCPUSeconds = e.cpu - w.cpu
		r.GBSeconds = (e.memMB - w.memMB) / 1024
		r.BusyCPUSeconds = e.busy - w.busy
		r.Cost = r.VCPUSeconds*cl.prices.VCPUSecond + r.GBSeconds*cl.prices.GBSecond
		t := cl.services[i].totals()
		r.Calls, r.Retries = t.arrivals, t.retries
	}
}

// recordScale notes s's configuration after an action at now.
func (cl *Cluster) recordScale(now time.Duration, s *service) {
	n, _ := s.replicas()
	cl.scaling = append(cl.scaling, ScaleEvent{At: now, Service: s.name, Replicas: n, CPU: s.cpuLimit,
		MemoryMB: s.memLimit, Concurrency: s.concurrency, Brownout: s.brownout})
}

// Resources sums the services' window figures.
func (r *Results) Resources() (vcpuSeconds, gbSeconds, busyCPUSeconds float64) {
	for i := range r.Services {
		s := &r.Services[i]
		vcpuSeconds += s.VCPUSeconds
		gbSeconds += s.GBSeconds
		busyCPUSeconds += s.BusyCPUSeconds
	}
	return
}

// Retries sums the services' retries.
func (r *Results) Retries() int64 {
	var n int64
	for i := range r.Services {
		n += r.Services[i].Retries
	}
	return n
}

// ScalingActions counts the scale events inside the measurement window.
func (r *Results) ScalingActions(warmup time.Duration) int {
	n := 0
	for _, e := range r.Scaling {
		if e.At >= warmup && e.At <= warmup+r.Window {
			n++
		}
	}
	return n
}

// SLOViolations counts the requests after the warm-up of classes with an
// SLO that were not completed successfully within it: failed, slower, or
// still unfinished when the drain ended.
func (r *Results) SLOViolations() int64 { return r.sumClasses((*ClassResult).SLOViolations) }

// SLOViolations counts the class's requests after the warm-up that were not
// completed successfully within its SLO (0 without one).
func (c *ClassResult) SLOViolations() int64 {
	if c.SLO == 0 {
		return 0
	}
	return c.Arrivals - (c.Completed() - c.Slow)
}

// SLOViolationsOrDegraded counts the requests after the warm-up of
// classes with an SLO that violated it or were answered degraded (some
// optional call skipped or failed): brownout as a cost on the quality
// axis.
func (r *Results) SLOViolationsOrDegraded() int64 {
	return r.sumClasses((*ClassResult).SLOViolationsOrDegraded)
}

// sumClasses sums a count over the classes.
func (r *Results) sumClasses(count func(*ClassResult) int64) int64 {
	var n int64
	for i := range r.Classes {
		n += count(&r.Classes[i])
	}
	return n
}

// SLOViolationsOrDegraded counts the class's requests after the warm-up
// that violated its SLO or were answered degraded (0 without an SLO).
func (c *ClassResult) SLOViolationsOrDegraded() int64 {
	if c.SLO == 0 {
		return 0
	}
	return c.SLOViolations() + c.Degraded - c.SlowDegraded
}

// SLOArrivals counts the requests after the warm-up of classes with an SLO.
func (r *Results) SLOArrivals() int64 {
	var n int64
	for _, c := range r.Classes {
		if c.SLO > 0 {
			n += c.Arrivals
		}
	}
	return n
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return math.NaN()
	}
	return a / b
}
