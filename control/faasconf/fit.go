package faasconf

import "math"

// Footprint is what a policy knows of the cluster it configures, recorded
// from the training scenario (and editable in the policy file for another
// cluster): each function's memory model and the nodes its instances are
// placed on. A configuration is only applied once it is Safe: memory
// that holds the calls the concurrency limit admits, and instances that
// fit the nodes. Without it (empty) configurations run as proposed.
type Footprint struct {
	// Memory is every function's memory model, in the policy's function
	// order: an instance uses BaseMB plus PerCallMB for each admitted call
	// (OpenFaaS's classic watchdog forks a process per request; on a
	// cluster, the slope of container_memory_working_set_bytes over the
	// watchdog's in-flight requests).
	Memory []MemoryModel `json:"memory"`
	// Nodes are the nodes' allocatable CPU and memory, Count of each.
	Nodes []NodeGroup `json:"nodes"`
	// Others are the instances of the workflow's services that are not
	// tuned (the orchestrator): they hold their room first.
	Others []Instance `json:"others"`
}

// MemoryModel is a function instance's memory use.
type MemoryModel struct {
	BaseMB    float64 `json:"base_mb"`
	PerCallMB float64 `json:"per_call_mb"`
}

// Floor is the least memory limit, MB, that holds k admitted calls.
func (m MemoryModel) Floor(k int) float64 { return m.BaseMB + m.PerCallMB*float64(k) }

// Holds is the calls a memory limit of mb holds (Floor's inverse); only for
// a model with a per-call size.
func (m MemoryModel) Holds(mb float64) int { return int((mb - m.BaseMB) / m.PerCallMB) }

// NodeGroup is Count nodes of the same allocatable size.
type NodeGroup struct {
	CPU      float64 `json:"cpu"`
	MemoryMB float64 `json:"memory_mb"` // 0: not limited
	Count    int     `json:"count"`
}

// Instance is one instance's requests.
type Instance struct {
	CPU      float64 `json:"cpu"`
	MemoryMB float64 `json:"memory_mb"`
}

// Fitter makes configurations safe (Footprint) without allocating.
type Fitter struct {
	fp    Footprint
	space Space
	free  [][2]float64 // per node: free CPU and memory during a placement
}

// NewFitter returns a fitter of the footprint's cluster for the space.
func NewFitter(fp Footprint, space Space) *Fitter {
	f := &Fitter{fp: fp, space: space}
	for _, g := range fp.Nodes {
		for range g.Count {
			f.free = append(f.free, [2]float64{})
		}
	}
	return f
}

// cpuStep is how far a function's CPU limit shrinks at a time when its
// instances cannot shrink further and still do not fit (the oracle's grid
// step).
const cpuStep = 0.125

// Safe makes cs safe in place: memory that holds the calls each
// function's concurrency limit admits (the limit lowered to what the
// space's largest memory holds), then, while the instances do not fit the
// nodes, the function holding the most CPU loses an instance (or, at its
// least instances, CPU). In a hardware-only space there is no limit, so no
// number of calls to hold: memory stays as proposed.
func (f *Fitter) Safe(cs []Config) {
	if f.space.Hybrid() && len(f.fp.Memory) == len(cs) {
		for j := range cs {
			m, c := f.fp.Memory[j], &cs[j]
			if m.PerCallMB > 0 {
				c.Concurrency = max(f.space.Concurrency[0], min(c.Concurrency, m.Holds(f.space.MemoryMB[1])))
			}
			c.MemoryMB = min(f.space.MemoryMB[1], max(c.MemoryMB, m.Floor(c.Concurrency)))
		}
	}
	if len(f.free) == 0 {
		return
	}
	for !f.fits(cs) {
		j := 0
		for k := range cs {
			if float64(cs[k].Instances)*cs[k].CPU > float64(cs[j].Instances)*cs[j].CPU {
				j = k
			}
		}
		switch c := &cs[j]; {
		case c.Instances > f.space.Instances[0]:
			c.Instances--
		case c.CPU > f.space.CPU[0]:
			c.CPU = max(f.space.CPU[0], c.CPU-cpuStep)
		default:
			return // every function at its least: nothing more to give
		}
	}
}

// Fits reports whether the configurations' instances fit the nodes
// (always, without a footprint's nodes).
func (f *Fitter) Fits(cs []Config) bool { return len(f.free) == 0 || f.fits(cs) }

// fits places the other services' instances, then every function's, first
// fit in order as the cluster's scheduler does, and reports whether all
// found room.
func (f *Fitter) fits(cs []Config) bool {
	i := 0
	for _, g := range f.fp.Nodes {
		for range g.Count {
			f.free[i] = [2]float64{g.CPU, g.MemoryMB}
			if g.MemoryMB <= 0 {
				f.free[i][1] = math.Inf(1)
			}
			i++
		}
	}
	for _, in := range f.fp.Others {
		if !f.place(in.CPU, in.MemoryMB) {
			return false
		}
	}
	for _, c := range cs {
		for range c.Instances {
			if !f.place(c.CPU, c.MemoryMB) {
				return false
			}
		}
	}
	return true
}

func (f *Fitter) place(cpu, mem float64) bool {
	for i := range f.free {
		n := &f.free[i]
		if n[0]+1e-9 >= cpu && n[1]+1e-9 >= mem {
			n[0], n[1] = n[0]-cpu, n[1]-mem
			return true
		}
	}
	return false
}
