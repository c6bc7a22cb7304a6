package cluster

import (
	"fmt"
	"slices"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/metrics"
)

// Observe fills snap with the telemetry of the period since the last call
// (or the start), reusing its slices, and starts a new period.
func (cl *Cluster) Observe(snap *metrics.Snapshot) {
	if cl.opt.Unobserved {
		panic("cluster: Observe on a cluster built with Options.Unobserved")
	}
	now := cl.k.Now()
	dt := (now - cl.lastObs).Seconds()
	snap.At, snap.Period = now, now-cl.lastObs
	cl.lastObs = now
	snap.Services = resize(snap.Services, len(cl.services))
	for i, s := range cl.services {
		st := &snap.Services[i]
		insts := st.Instances[:0]
		*st = s.period
		st.P50, st.P95 = st.LatencyHist.Quantile(0.5), st.LatencyHist.Quantile(0.95)
		st.Brownout = s.brownout
		st.Replicas, st.Ready = s.replicas()
		st.CPULimit, st.MemoryLimit, st.Concurrency = s.cpuLimit, s.memLimit, s.concurrency
		for _, in := range s.slots {
			if in == nil {
				continue
			}
			busy := in.cpu.BusyUntil(now)
			use := 0.0
			if dt > 0 {
				use = (busy - in.busyObs) / dt
			}
			in.busyObs = busy
			p, th := in.cpu.Throttling(now)
			periods, throttled := p-in.cfsObs[0], th-in.cfsObs[1]
			in.cfsObs = [2]int64{p, th}
			mem := 0.0
			if allocated(in.state) && in.state != stRestarting {
				mem = in.memory()
			}
			insts = append(insts, metrics.InstanceStats{
				ID: in.id, Ready: in.state == stReady, InFlight: in.admitted, Queued: in.queued(),
				CPUUse: use, Utilisation: use / in.cpuLimit, MemoryUse: mem, Remaining: in.remainingTime(),
				CFSPeriods: periods, CFSThrottled: throttled,
			})
			st.CFSPeriods += periods
			st.CFSThrottled += throttled
			st.InFlight += in.admitted
			st.Queued += in.queued()
			st.CPUUse += use
			st.MemoryUse += mem
		}
		if a := s.activator; a != nil {
			st.Queued += len(a.held)
		}
		if dt > 0 {
			st.CPUUse += s.goneBusy / dt
		}
		s.goneBusy = 0
		st.CFSPeriods += s.goneCFS[0]
		st.CFSThrottled += s.goneCFS[1]
		s.goneCFS = [2]int64{}
		st.Instances = insts
		cost := s.cost(now, cl.prices)
		st.Cost = cost - s.costShown
		s.costShown = cost
		s.keepPeriod()
		s.period = metrics.ServiceStats{Name: s.name}
	}
	snap.Classes = resize(snap.Classes, len(cl.classes))
	for i, c := range cl.classes {
		st := &snap.Classes[i]
		*st = c.period
		st.P50, st.P95 = st.LatencyHist.Quantile(0.5), st.LatencyHist.Quantile(0.95)
		c.period = metrics.ClassStats{Name: c.name}
	}
	cl.observeRoutes(snap)
	snap.LBs = resize(snap.LBs, len(cl.lbs))
	for i, p := range cl.lbs {
		l := &snap.LBs[i]
		l.Name = p.name
		l.Shed = 0
		if p.adm != nil {
			l.Shed, p.adm.shed = p.adm.shed, 0
		}
		l.Backends = resize(l.Backends, len(p.stats))
		for j := range p.stats {
			b := p.stats[j]
			b.InFlight = int(p.view.InFlight[j])
			b.Weight = p.view.Weights[j]
			l.Backends[j] = b
			p.stats[j] = metrics.BackendStats{}
		}
	}
}

// cost is the price of everything the service allocated since the start.
func (s *service) cost(now time.Duration, p Prices) float64 {
	return s.allocCPU.Integral(now)*p.VCPUSecond + s.allocMem.Integral(now)/1024*p.GBSecond
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return append(s[:cap(s)], make([]T, n-cap(s))...)[:n]
	}
	return s[:n]
}

// Apply carries out an action at the current time. It implements
// control.Actuator.
func (cl *Cluster) Apply(now time.Duration, a control.Action) error {
	if now != cl.k.Now() {
		return fmt.Errorf("apply at %v, but the cluster is at %v", now, cl.k.Now())
	}
	switch a := a.(type) {
	case control.SetWeights:
		p, ok := cl.lbByName[a.LB]
		if !ok {
			return fmt.Errorf("set weights: unknown lb %q", a.LB)
		}
		if len(a.Weights) != len(p.view.Weights) {
			return fmt.Errorf("set weights of lb %q: %d weights for %d backends", a.LB, len(a.Weights), len(p.view.Weights))
		}
		for j, w := range a.Weights {
			if !finite(w) || w < 0 {
				return fmt.Errorf("set weights of lb %q: weight %d is %g", a.LB, j, w)
			}
		}
		copy(p.view.Weights, a.Weights)
		p.view.Version++
	case control.SetReplicas:
		s, err := cl.service(a.Service)
		if err != nil {
			return fmt.Errorf("set replicas: %w", err)
		}
		n := max(a.Replicas, s.minReplicas)
		if s.maxReplicas > 0 {
			n = min(n, s.maxReplicas)
		}
		if cur, _ := s.replicas(); cur != n {
			s.setReplicas(n)
			cl.recordScale(now, s)
		}
	case control.SetResources:
		s, err := cl.service(a.Service)
		if err != nil {
			return fmt.Errorf("set resources: %w", err)
		}
		if a.CPU < 0 || a.MemoryMB < 0 || !finite(a.CPU) || !finite(a.MemoryMB) {
			return fmt.Errorf("set resources of %q: cpu %g, memory %g MB", a.Service, a.CPU, a.MemoryMB)
		}
		if (a.CPU > 0 && a.CPU != s.cpuLimit) || (a.MemoryMB > 0 && a.MemoryMB != s.memLimit) {
			s.setResources(a.CPU, a.MemoryMB)
			cl.recordScale(now, s)
		}
	case control.SetConcurrency:
		s, err := cl.service(a.Service)
		if err != nil {
			return fmt.Errorf("set concurrency: %w", err)
		}
		if a.Limit < 0 {
			return fmt.Errorf("set concurrency of %q: limit %d", a.Service, a.Limit)
		}
		if s.concurrency != a.Limit {
			s.concurrency = a.Limit
			cl.recordScale(now, s)
		}
		for _, in := range s.slots {
			if in != nil {
				in.admitQueued()
			}
		}
	case control.SetBrownout:
		s, err := cl.service(a.Service)
		if err != nil {
			return fmt.Errorf("set brownout: %w", err)
		}
		if !s.cfg.Optional {
			return fmt.Errorf("set brownout: service %q is not optional (only a service marked optional: true can be browned out)", a.Service)
		}
		if s.brownout != a.On {
			s.brownout = a.On
			cl.recordScale(now, s)
		}
	case control.SetRouteWeights:
		return cl.setRouteWeights(a)
	default:
		return fmt.Errorf("unknown action %T", a)
	}
	return nil
}

func (cl *Cluster) service(name string) (*service, error) {
	s, ok := cl.svcByName[name]
	if !ok {
		return nil, fmt.Errorf("unknown service %q", name)
	}
	return s, nil
}

// setResources resizes every instance in place (as Kubernetes in-place pod
// resize does; nodes may be overcommitted by a resize, and per-instance CPU
// overrides give way to the new limit); a lower memory limit can OOM-kill at
// once. Pending instances take the new size and are placed
// again, since room may have freed.
func (s *service) setResources(cpu, mem float64) {
	now := s.cl.k.Now()
	if cpu > 0 {
		for _, in := range s.slots {
			if in == nil {
				continue
			}
			if allocated(in.state) {
				s.allocCPU.Add(now, cpu-in.cpuLimit)
			}
			if in.node != nil {
				in.node.usedCPU += cpu - in.cpuLimit
			}
			in.cpuLimit = cpu
			in.cpu.Resize(&s.cl.k, cpu, in.cpuSpeed())
		}
		s.cpuLimit = cpu
	}
	if mem > 0 {
		for _, in := range s.slots {
			if in == nil {
				continue
			}
			if allocated(in.state) {
				s.allocMem.Add(now, mem-s.memLimit)
			}
			if in.node != nil {
				in.node.usedMemory += mem - s.memLimit
			}
		}
		s.memLimit = mem
		for _, in := range slices.Clone(s.slots) {
			if in != nil && (in.state == stReady || in.state == stTerminating) && in.memory() > mem {
				in.oomKill()
			}
		}
	}
	s.cl.placePending()
}
