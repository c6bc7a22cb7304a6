package cluster

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Validate checks the configuration and returns every problem found, each
// naming the field path and the bad value, e.g.
// `services[2].replicas: must be >= 0, got -1`.
func (c *Config) Validate() error {
	v := &validator{}
	locs := map[string]bool{}
	for i, l := range c.Locations {
		p := fmt.Sprintf("locations[%d]", i)
		v.name(p, l.Name, locs)
	}
	knownLoc := func(path, name string) {
		if name != "" && !locs[name] && !(len(c.Locations) == 0 && name == "local") {
			v.bad(path, "unknown location %q", name)
		}
	}
	for i, l := range c.Locations {
		for _, other := range slices.Sorted(maps.Keys(l.RTT)) { // sorted: the same errors in the same order
			d := l.RTT[other]
			p := fmt.Sprintf("locations[%d].rtt[%s]", i, other)
			knownLoc(p, other)
			if d < 0 {
				v.bad(p, "must be >= 0, got %v", d)
			}
		}
	}
	nodes := map[string]bool{}
	for i, n := range c.Nodes {
		p := fmt.Sprintf("nodes[%d]", i)
		v.name(p, n.Name, nodes)
		knownLoc(p+".location", n.Location)
		v.positive(p+".cpu", n.CPU)
		v.nonNegative(p+".memory_mb", n.MemoryMB)
		if n.Count < 0 || n.Count > maxCount {
			v.bad(p+".count", "must be in [0, %d], got %d", maxCount, n.Count)
		}
	}
	services := map[string]bool{}
	for i := range c.Services {
		c.validateService(v, i, services, knownLoc)
	}
	if c.SLO < 0 {
		v.bad("slo", "must be >= 0 (0: none), got %v", c.SLO)
	}
	classes := map[string]bool{}
	for i := range c.Classes {
		cl := &c.Classes[i]
		p := fmt.Sprintf("classes[%d]", i)
		v.name(p, cl.Name, classes)
		if cl.Timeout < 0 {
			v.bad(p+".timeout", "must be >= 0, got %v", cl.Timeout)
		}
		if cl.SLO < 0 {
			v.bad(p+".slo", "must be >= 0 (0: the config's), got %v", cl.SLO)
		}
		validateCall(v, &cl.Call, p+".call", services, nil)
	}
	lbs := map[string]bool{}
	for i, l := range c.LBs {
		p := fmt.Sprintf("lbs[%d]", i)
		v.name(p, l.Name, lbs)
		if !services[l.Service] {
			v.bad(p+".service", "unknown service %q", l.Service)
		}
		knownLoc(p+".location", l.Location)
	}
	sources := map[string]bool{}
	for i := range c.Sources {
		s := &c.Sources[i]
		p := fmt.Sprintf("sources[%d]", i)
		v.name(p, s.Name, sources)
		if !classes[s.Class] {
			v.bad(p+".class", "unknown class %q", s.Class)
		}
		if s.LB != "" && !lbs[s.LB] {
			v.bad(p+".lb", "unknown lb %q", s.LB)
		} else if s.LB != "" && classes[s.Class] {
			lbSvc, root := c.lbService(s.LB), c.classRoot(s.Class)
			if lbSvc != root {
				v.bad(p+".lb", "lb %q is in front of service %q, but class %q starts at service %q", s.LB, lbSvc, s.Class, root)
			}
		}
		knownLoc(p+".location", s.Location)
		v.nonNegative(p+".share", s.Share)
		if err := s.Arrivals.Validate(p + ".arrivals"); err != nil {
			v.errs = append(v.errs, err)
		}
	}
	if len(c.Sources) == 0 {
		v.bad("sources", "at least one source is needed")
	}
	v.nonNegative("prices.vcpu_second", c.Prices.VCPUSecond)
	v.nonNegative("prices.gb_second", c.Prices.GBSecond)
	return errors.Join(v.errs...)
}

func (c *Config) validateService(v *validator, i int, names map[string]bool, knownLoc func(string, string)) {
	s := &c.Services[i]
	p := fmt.Sprintf("services[%d]", i)
	v.name(p, s.Name, names)
	knownLoc(p+".location", s.Location)
	if s.Replicas < 0 || s.Replicas > maxCount {
		v.bad(p+".replicas", "must be in [0, %d], got %d", maxCount, s.Replicas)
	}
	if s.MinReplicas < 0 || s.MinReplicas > maxCount {
		v.bad(p+".min_replicas", "must be in [0, %d], got %d", maxCount, s.MinReplicas)
	}
	if s.MaxReplicas < 0 || (s.MaxReplicas != 0 && s.MaxReplicas < s.MinReplicas) {
		v.bad(p+".max_replicas", "must be 0 (no bound) or >= min_replicas (%d), got %d", s.MinReplicas, s.MaxReplicas)
	}
	if len(s.Instances) > maxCount {
		v.bad(p+".instances", "must list at most %d instances, got %d", maxCount, len(s.Instances))
	}
	n, field := max(s.Replicas, 1), "replicas"
	if len(s.Instances) > 0 {
		n, field = len(s.Instances), "instances"
	}
	if n < s.MinReplicas {
		v.bad(p+"."+field, "must give at least min_replicas (%d) instances, got %d", s.MinReplicas, n)
	}
	if s.MaxReplicas > 0 && n > s.MaxReplicas {
		v.bad(p+"."+field, "must give at most max_replicas (%d) instances, got %d", s.MaxReplicas, n)
	}
	for _, f := range []struct {
		name string
		x    float64
	}{{"cpu", s.CPU}, {"speed", s.Speed}, {"io_speed", s.IOSpeed}, {"weight", s.Weight},
		{"memory_mb", s.MemoryMB}, {"memory_base_mb", s.MemoryBaseMB}, {"memory_per_call_mb", s.MemoryPerCallMB}} {
		v.nonNegative(p+"."+f.name, f.x)
	}
	if s.MemoryMB > 0 && s.MemoryBaseMB >= s.MemoryMB {
		v.bad(p+".memory_base_mb", "must be below memory_mb (%g), got %g", s.MemoryMB, s.MemoryBaseMB)
	}
	if s.IOParallelism < 0 {
		v.bad(p+".io_parallelism", "must be >= 0, got %d", s.IOParallelism)
	}
	if s.Concurrency < 0 {
		v.bad(p+".concurrency", "must be >= 0, got %d", s.Concurrency)
	}
	if s.Queue < -1 {
		v.bad(p+".queue", "must be >= -1 (-1 = unbounded), got %d", s.Queue)
	}
	if s.OOMRestart < 0 {
		v.bad(p+".oom_restart", "must be >= 0, got %v", s.OOMRestart)
	}
	if s.ColdStart < 0 {
		v.bad(p+".cold_start", "must be >= 0, got %v", s.ColdStart)
	}
	for j, in := range s.Instances {
		q := fmt.Sprintf("%s.instances[%d]", p, j)
		v.nonNegative(q+".cpu", in.CPU)
		v.nonNegative(q+".speed", in.Speed)
		v.nonNegative(q+".io_speed", in.IOSpeed)
		v.nonNegative(q+".weight", in.Weight)
	}
	if len(c.Nodes) > 0 {
		cpu := or(s.CPU, 1)
		for _, in := range s.Instances {
			cpu = math.Max(cpu, in.CPU)
		}
		loc := c.location(s.Location)
		fits := slices.ContainsFunc(c.Nodes, func(n Node) bool {
			return c.location(n.Location) == loc && n.CPU >= cpu && (n.MemoryMB == 0 || n.MemoryMB >= s.MemoryMB)
		})
		if !fits {
			v.bad(p+".cpu", "limit %g cores, memory %g MB fits on no node of location %q", cpu, s.MemoryMB, loc)
		}
	}
}

// Bounds that keep a configuration's size sane (a typo must not allocate
// millions of instances).
const (
	maxCount  = 100000
	maxPhases = 1000000
)

// location is the name a location reference resolves to: empty means the
// first location ("local" when none is declared).
func (c *Config) location(name string) string {
	if name != "" {
		return name
	}
	if len(c.Locations) == 0 {
		return "local"
	}
	return c.Locations[0].Name
}

// lbService is the service of the LB point called name ("" if unknown).
func (c *Config) lbService(name string) string {
	for _, l := range c.LBs {
		if l.Name == name {
			return l.Service
		}
	}
	return ""
}

// classRoot is the root service of the class called name ("" if unknown).
func (c *Config) classRoot(name string) string {
	for _, cl := range c.Classes {
		if cl.Name == name {
			return cl.Call.Service
		}
	}
	return ""
}

// validateCall checks a call and its stages; onPath holds the services on
// the way from the root, to find cycles.
func validateCall(v *validator, c *Call, path string, services map[string]bool, onPath []string) {
	if !services[c.Service] {
		v.bad(path+".service", "unknown service %q", c.Service)
	} else if slices.Contains(onPath, c.Service) {
		v.bad(path+".service", "call graph has a cycle: %s -> %s", strings.Join(onPath, " -> "), c.Service)
		return
	}
	if c.CPU.Dist != "" {
		if err := c.CPU.Validate(path + ".cpu"); err != nil {
			v.errs = append(v.errs, err)
		}
	}
	if c.IO.Dist != "" {
		if err := c.IO.Validate(path + ".io"); err != nil {
			v.errs = append(v.errs, err)
		}
	}
	if c.Phases < 0 || c.Phases > maxPhases {
		v.bad(path+".phases", "must be in [0, %d], got %d", maxPhases, c.Phases)
	}
	if c.Prob < 0 || c.Prob > 1 || math.IsNaN(c.Prob) {
		v.bad(path+".prob", "must be in [0, 1], got %g", c.Prob)
	}
	onPath = append(onPath, c.Service)
	for i := range c.Stages {
		st := &c.Stages[i]
		sp := fmt.Sprintf("%s.stages[%d]", path, i)
		if len(st.Calls) == 0 {
			v.bad(sp+".calls", "a stage needs at least one call")
		}
		for j := range st.Calls {
			validateCall(v, &st.Calls[j], fmt.Sprintf("%s.calls[%d]", sp, j), services, onPath)
		}
	}
}

type validator struct{ errs []error }

func (v *validator) bad(path, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
}

func (v *validator) name(path, name string, seen map[string]bool) {
	switch {
	case name == "":
		v.bad(path+".name", "must not be empty")
	case seen[name]:
		v.bad(path+".name", "duplicate name %q", name)
	}
	seen[name] = true
}

func (v *validator) nonNegative(path string, x float64) {
	if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		v.bad(path, "must be a finite number >= 0, got %g", x)
	}
}

func (v *validator) positive(path string, x float64) {
	if !(x > 0) || math.IsInf(x, 0) {
		v.bad(path, "must be a finite number > 0, got %g", x)
	}
}
