package scenario

import (
	"fmt"
	"math"
	"slices"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/workload"
)

// Capacity is the largest request rate (req/s) the service the sources enter
// can sustain with the scenario's request mix: the sum over its instances of
// min(CPU capacity / mean CPU demand, I/O capacity / mean I/O demand), with
// the mix weighted by the sources' shares. It is defined for single-tier
// scenarios (root calls without downstream stages), the load-balancing ones.
func (s *Scenario) Capacity() (float64, error) {
	if err := s.openLoop("load"); err != nil {
		return 0, err
	}
	shares := s.shares()
	var svc string
	var cpu, io float64
	for i, src := range s.Sources {
		cls := s.class(src.Class)
		if cls == nil {
			return 0, fmt.Errorf("sources[%d].class: unknown class %q", i, src.Class)
		}
		entry := cls.Call.Service
		if src.LB != "" {
			for _, l := range s.LBs {
				if l.Name == src.LB {
					entry = l.Service
				}
			}
		}
		if svc != "" && entry != svc {
			return 0, fmt.Errorf("load: sources enter different services (%s, %s); set each source's arrivals.rate instead", svc, entry)
		}
		svc = entry
		if len(cls.Call.Stages) > 0 {
			return 0, fmt.Errorf("load: class %q calls other services; capacity is defined for single-tier scenarios, set arrivals.rate instead", cls.Name)
		}
		m, err := means(&cls.Call)
		if err != nil {
			return 0, fmt.Errorf("classes %q: %w", cls.Name, err)
		}
		cpu += shares[i] * m[0]
		io += shares[i] * m[1]
	}
	var sv *cluster.Service
	for i := range s.Services {
		if s.Services[i].Name == svc {
			sv = &s.Services[i]
		}
	}
	if sv == nil {
		return 0, fmt.Errorf("load: unknown service %q", svc)
	}
	total := 0.0
	for _, in := range sv.InitialInstances() {
		c := math.Inf(1)
		if cpu > 0 {
			c = in.CPU * in.Speed / cpu
		}
		if io > 0 && sv.IOParallelism > 0 {
			c = math.Min(c, float64(sv.IOParallelism)*in.IOSpeed/io)
		}
		total += c
	}
	if math.IsInf(total, 0) || total <= 0 {
		return 0, fmt.Errorf("load: capacity of %q is unbounded (no CPU demand and no I/O contention)", svc)
	}
	return total, nil
}

// SetLoad sets the offered load as a fraction of capacity: every source's
// mean arrival rate becomes load x capacity x its share (rate-driven kinds
// like trace replay and MMPP are rescaled to that mean).
func (s *Scenario) SetLoad(load float64) error {
	if !(load > 0) || load > 10 {
		return fmt.Errorf("load: must be in (0, 10] (a fraction of capacity), got %g", load)
	}
	c, err := s.Capacity()
	if err != nil {
		return err
	}
	for i, sh := range s.shares() {
		s.Sources[i].Arrivals.Rate = load * c * sh
	}
	s.Load = load
	return nil
}

// openLoop reports an error naming what (load, arrivals) if a source is
// closed-loop: its users, not an arrival rate, set its load.
func (s *Scenario) openLoop(what string) error {
	for i, src := range s.Sources {
		if src.Users.IsSet() {
			return fmt.Errorf("%s: sources[%d] (%s) has closed-loop users, whose number sets the load, not an arrival rate; edit the scenario's users instead", what, i, src.Name)
		}
	}
	return nil
}

// shares are the sources' normalised shares (equal when none is set).
func (s *Scenario) shares() []float64 {
	out := make([]float64, len(s.Sources))
	sum := 0.0
	for _, src := range s.Sources {
		sum += src.Share
	}
	for i, src := range s.Sources {
		if sum == 0 {
			out[i] = 1 / float64(len(s.Sources))
		} else {
			out[i] = src.Share / sum
		}
	}
	return out
}

func (s *Scenario) class(name string) *cluster.Class {
	for i := range s.Classes {
		if s.Classes[i].Name == name {
			return &s.Classes[i]
		}
	}
	return nil
}

// means are the mean CPU work and I/O time of a call's local work.
func means(c *cluster.Call) ([2]float64, error) {
	var m [2]float64
	for i, spec := range []workload.DistSpec{c.CPU, c.IO} {
		if spec.Dist == "" {
			continue
		}
		d, err := spec.Build()
		if err != nil {
			return m, err
		}
		m[i] = d.Mean()
	}
	return m, nil
}

// SetArrivals gives every source the arrival process spec, keeping the
// scenario's mix of sources: each source gets a share of the total rate in
// proportion to its current rate (its share field when some source has no
// rate). The total is spec's rate; without one, a Poisson or diurnal
// process keeps the scenario's total, and a replay (trace, series) or MMPP
// keeps its own rate, split the same way (scale, or the phases' rates).
func (s *Scenario) SetArrivals(spec workload.ProcessSpec) error {
	if err := s.openLoop("arrivals"); err != nil {
		return err
	}
	shares := s.shares()
	total := 0.0
	for _, src := range s.Sources {
		total += src.Arrivals.Rate
	}
	if slices.IndexFunc(s.Sources, func(src cluster.Source) bool { return !(src.Arrivals.Rate > 0) }) < 0 {
		for i, src := range s.Sources {
			shares[i] = src.Arrivals.Rate / total
		}
	}
	for i, sh := range shares {
		a := spec
		a.States = slices.Clone(spec.States)
		switch {
		case spec.Rate > 0:
			a.Rate = spec.Rate * sh
		case spec.Kind == workload.KindPoisson || spec.Kind == workload.KindDiurnal:
			a.Rate = total * sh
		case spec.Kind == workload.KindMMPP:
			for j := range a.States {
				a.States[j].Rate *= sh
			}
		default:
			a.Scale = max(spec.Scale, 1) * sh
		}
		if err := a.Validate(""); err != nil {
			return err // the same for every source
		}
		s.Sources[i].Arrivals = a
	}
	s.Load = 0
	return nil
}
