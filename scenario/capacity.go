package scenario

import (
	"fmt"
	"math"
	"slices"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/workload"
)

// Capacity is the largest request rate (req/s) the scenario can sustain
// with its request mix (the sources weighted by their shares): over the
// services the requests reach, the smallest of the service's capacity for
// its mean demand per request, where a service's capacity is the sum over
// its instances of min(CPU capacity / mean CPU demand, I/O capacity / mean
// I/O demand). A service's demand per request adds up its calls' local work
// through the call tree, each weighted by its probability (a choice stage's
// calls by their share of its probabilities). Services without demand are
// not bottlenecks.
func (s *Scenario) Capacity() (float64, error) {
	if err := s.openLoop("load"); err != nil {
		return 0, err
	}
	shares := s.shares()
	demand := map[string]*[2]float64{}
	var order []string
	var entry string
	for i, src := range s.Sources {
		cls := s.class(src.Class)
		if cls == nil {
			return 0, fmt.Errorf("sources[%d].class: unknown class %q", i, src.Class)
		}
		e := cls.Call.Service
		if src.LB != "" {
			for _, l := range s.LBs {
				if l.Name == src.LB {
					e = l.Service
				}
			}
		}
		if entry != "" && e != entry {
			return 0, fmt.Errorf("load: sources enter different services (%s, %s); set each source's arrivals.rate instead", entry, e)
		}
		entry = e
		if err := addDemand(&cls.Call, shares[i], demand, &order); err != nil {
			return 0, fmt.Errorf("classes %q: %w", cls.Name, err)
		}
	}
	best := math.Inf(1)
	for _, name := range order {
		i := slices.IndexFunc(s.Services, func(sv cluster.Service) bool { return sv.Name == name })
		if i < 0 {
			return 0, fmt.Errorf("load: unknown service %q", name)
		}
		best = math.Min(best, serviceCapacity(&s.Services[i], *demand[name]))
	}
	if math.IsInf(best, 0) || best <= 0 {
		return 0, fmt.Errorf("load: capacity of %q is unbounded (no CPU demand and no I/O contention)", entry)
	}
	return best, nil
}

// addDemand adds call c's mean local work, weighted by w, and its stages'
// to demand (per service, in order of first appearance).
func addDemand(c *cluster.Call, w float64, demand map[string]*[2]float64, order *[]string) error {
	m, err := means(c)
	if err != nil {
		return err
	}
	d := demand[c.Service]
	if d == nil {
		d = &[2]float64{}
		demand[c.Service] = d
		*order = append(*order, c.Service)
	}
	d[0] += w * m[0]
	d[1] += w * m[1]
	for _, st := range c.Stages {
		total := 0.0
		for _, call := range st.Calls {
			total += prob(&call)
		}
		for i := range st.Calls {
			p := prob(&st.Calls[i])
			if st.Choice {
				p /= total
			}
			if err := addDemand(&st.Calls[i], w*p, demand, order); err != nil {
				return err
			}
		}
	}
	return nil
}

func prob(c *cluster.Call) float64 {
	if c.Prob == 0 {
		return 1
	}
	return c.Prob
}

// serviceCapacity is sv's request rate for demand d per request, +Inf
// when it has none that contends.
func serviceCapacity(sv *cluster.Service, d [2]float64) float64 {
	total := 0.0
	for _, in := range sv.InitialInstances() {
		c := math.Inf(1)
		if d[0] > 0 {
			c = in.CPU * in.Speed / d[0]
		}
		if d[1] > 0 && sv.IOParallelism > 0 {
			c = math.Min(c, float64(sv.IOParallelism)*in.IOSpeed/d[1])
		}
		total += c
	}
	return total
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
