package cluster

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/workload"
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
		v.share(fmt.Sprintf("locations[%d].background", i), l.Background)
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
	services, optional := map[string]bool{}, map[string]bool{}
	for i := range c.Services {
		c.validateService(v, i, services, knownLoc)
		optional[c.Services[i].Name] = c.Services[i].Optional
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
		if optional[cl.Call.Service] {
			v.bad(p+".call.service", "service %q is optional: a request cannot start at a service brownout can skip", cl.Call.Service)
		}
		validateCall(v, &cl.Call, p+".call", services, optional, nil)
	}
	lbs := map[string]bool{}
	for i, l := range c.LBs {
		p := fmt.Sprintf("lbs[%d]", i)
		v.name(p, l.Name, lbs)
		if !services[l.Service] {
			v.bad(p+".service", "unknown service %q", l.Service)
		} else if c.placed(l.Service) {
			v.bad(p+".service", "service %q is placed in several locations: an explicit LB point needs a service in one", l.Service)
		}
		knownLoc(p+".location", l.Location)
		if a := l.Admission; a != nil {
			if err := a.Validate(p + ".admission"); err != nil {
				v.errs = append(v.errs, err)
			}
		}
	}
	for i := range c.Classes {
		c.validateCallLBs(v, &c.Classes[i].Call, fmt.Sprintf("classes[%d].call", i), true)
	}
	sources := map[string]bool{}
	for i := range c.Sources {
		s := &c.Sources[i]
		p := fmt.Sprintf("sources[%d]", i)
		v.name(p, s.Name, sources)
		visit := []string{s.Class}
		switch {
		case s.Users.IsSet():
			c.validateUsers(v, s, p, classes)
			if len(s.Visit) > 0 {
				visit = s.Visit
			}
		case s.Class == "" && len(s.Visit) > 0:
			v.bad(p+".visit", "only for closed-loop users (set users), or give the class")
		default:
			if !classes[s.Class] {
				v.bad(p+".class", "unknown class %q", s.Class)
			}
			if len(s.Visit) > 0 {
				v.bad(p+".visit", "only for closed-loop users (set users)")
			}
			if s.Think.Dist != "" {
				v.bad(p+".think", "only for closed-loop users (set users)")
			}
			if err := s.Arrivals.Validate(p + ".arrivals"); err != nil {
				v.errs = append(v.errs, err)
			}
		}
		switch {
		case s.Sessions < 0:
			v.bad(p+".sessions", "must be >= 0, got %d", s.Sessions)
		case s.Sessions > 0 && s.Users.IsSet():
			v.bad(p+".sessions", "only for open-loop sources: each closed-loop user is a session")
		}
		if s.LB != "" && !lbs[s.LB] {
			v.bad(p+".lb", "unknown lb %q", s.LB)
		} else if s.LB != "" {
			lbSvc := c.lbService(s.LB)
			for _, name := range visit {
				if root := c.classRoot(name); classes[name] && lbSvc != root {
					v.bad(p+".lb", "lb %q is in front of service %q, but class %q starts at service %q", s.LB, lbSvc, name, root)
				}
			}
		}
		knownLoc(p+".location", s.Location)
		v.nonNegative(p+".share", s.Share)
	}
	if len(c.Sources) == 0 {
		v.bad("sources", "at least one source is needed")
	}
	v.nonNegative("prices.vcpu_second", c.Prices.VCPUSecond)
	v.nonNegative("prices.gb_second", c.Prices.GBSecond)
	v.nonNegative("prices.egress_gb", c.Prices.EgressGB)
	for i := range c.Changes {
		c.validateChange(v, i, services, knownLoc)
	}
	if r := c.RandomChanges; r != nil {
		c.validateRandomChanges(v, r)
	}
	reg := lb.Classical()
	for _, name := range slices.Sorted(maps.Keys(c.SelectorParams)) {
		if _, ok := reg[name]; !ok || name == "oracle" {
			v.bad("selector_params."+name, "not a selector with parameters (known: %s)", strings.Join(reg.Names(), ", "))
		} else if _, err := reg.New(name, lb.Deps{Rand: rand.New(rand.NewPCG(0, 0)), Params: c.SelectorParams[name]}); err != nil {
			v.bad("selector_params."+name, "%v", err)
		}
	}
	return errors.Join(v.errs...)
}

// placed reports whether the service named name has a placement.
func (c *Config) placed(name string) bool {
	s := c.service(name)
	return s != nil && len(s.Placement) > 0
}

// service is the service named name, nil if none is.
func (c *Config) service(name string) *Service {
	i := slices.IndexFunc(c.Services, func(s Service) bool { return s.Name == name })
	if i < 0 {
		return nil
	}
	return &c.Services[i]
}

// validatePlacement checks a service deployed in several locations.
func (c *Config) validatePlacement(v *validator, s *Service, p string, knownLoc func(string, string)) {
	if len(s.Placement) == 0 {
		return
	}
	if s.Location != "" {
		v.bad(p+".location", "not with placement (placement names the locations)")
	}
	if s.Replicas != 0 || len(s.Instances) > 0 {
		v.bad(p+".replicas", "not with placement (placement gives the replicas per location)")
	}
	if s.Optional {
		v.bad(p+".optional", "a placed service cannot be browned out")
	}
	for _, loc := range slices.Sorted(maps.Keys(s.Placement)) {
		q := fmt.Sprintf("%s.placement[%s]", p, loc)
		knownLoc(q, loc)
		if n := s.Placement[loc]; n < 1 || n > maxCount || n < s.MinReplicas || (s.MaxReplicas > 0 && n > s.MaxReplicas) {
			v.bad(q, "must be in [max(1, min_replicas), max_replicas or %d], got %d", maxCount, n)
		}
	}
}

// validateChange checks one change of the system over time.
func (c *Config) validateChange(v *validator, i int, services map[string]bool, knownLoc func(string, string)) {
	ch := &c.Changes[i]
	p := fmt.Sprintf("changes[%d]", i)
	if ch.At < 0 {
		v.bad(p+".at", "must be >= 0, got %v", ch.At)
	}
	if ch.Location == "" && ch.Service == "" {
		v.bad(p, "must name a location or a service")
	}
	if ch.Location != "" {
		knownLoc(p+".location", ch.Location)
	} else if len(ch.RTT) > 0 || ch.Background != nil {
		v.bad(p+".location", "rtt and background need the location they change")
	}
	for _, other := range slices.Sorted(maps.Keys(ch.RTT)) {
		knownLoc(p+".rtt["+other+"]", other)
		if d := ch.RTT[other]; d < 0 {
			v.bad(p+".rtt["+other+"]", "must be >= 0, got %v", d)
		}
	}
	if ch.Background != nil {
		v.share(p+".background", *ch.Background)
	}
	if ch.Service != "" {
		name, loc, part := strings.Cut(ch.Service, "@")
		switch {
		case !services[name]:
			v.bad(p+".service", "unknown service %q", name)
		case part && !c.placedIn(name, loc):
			v.bad(p+".service", "service %q is not placed in location %q", name, loc)
		case !part && c.placed(name):
			v.bad(p+".service", "service %q is placed in several locations: name one as %s@LOCATION", name, name)
		}
		switch {
		case ch.Instance != nil:
			c.validateSpeedChange(v, p, ch)
		case ch.Replicas == nil || *ch.Replicas < 0:
			v.bad(p+".replicas", "a service's change must set replicas >= 0, or an instance's speed")
		}
	} else if ch.Replicas != nil || ch.Instance != nil {
		v.bad(p+".service", "replicas need the service they change")
	}
}

func (c *Config) placedIn(name, loc string) bool {
	i := slices.IndexFunc(c.Services, func(s Service) bool { return s.Name == name })
	_, ok := c.Services[i].Placement[loc]
	return ok
}

func (c *Config) validateService(v *validator, i int, names map[string]bool, knownLoc func(string, string)) {
	s := &c.Services[i]
	p := fmt.Sprintf("services[%d]", i)
	v.name(p, s.Name, names)
	if strings.Contains(s.Name, "@") {
		v.bad(p+".name", "must not contain @ (NAME@LOCATION names a placed service's part), got %q", s.Name)
	}
	knownLoc(p+".location", s.Location)
	c.validatePlacement(v, s, p, knownLoc)
	v.nonNegative(p+".request_kb", s.RequestKB)
	v.nonNegative(p+".response_kb", s.ResponseKB)
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
	if a := s.Activator; a != nil && (a.Capacity < 0 || a.Timeout < 0) {
		v.bad(p+".activator", "capacity and timeout must be >= 0, got %d and %v", a.Capacity, a.Timeout)
	}
	if s.ProbeCPU < 0 {
		v.bad(p+".probe_cpu", "must be >= 0, got %g", s.ProbeCPU)
	}
	if s.ColdStart < 0 {
		v.bad(p+".cold_start", "must be >= 0, got %v", s.ColdStart)
	}
	validateRoute(v, &s.Route, p)
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
		locs := []string{c.location(s.Location)}
		if len(s.Placement) > 0 {
			locs = slices.Sorted(maps.Keys(s.Placement))
		}
		for _, loc := range locs {
			fits := slices.ContainsFunc(c.Nodes, func(n Node) bool {
				return c.location(n.Location) == loc && n.CPU >= cpu && (n.MemoryMB == 0 || n.MemoryMB >= s.MemoryMB)
			})
			if !fits {
				v.bad(p+".cpu", "limit %g cores, memory %g MB fits on no node of location %q", cpu, s.MemoryMB, loc)
			}
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

// validateUsers checks a closed-loop source.
func (c *Config) validateUsers(v *validator, s *Source, p string, classes map[string]bool) {
	u := s.Users
	switch {
	case u.Over != nil:
		if err := u.Over.Validate(p + ".users"); err != nil {
			v.errs = append(v.errs, err)
		}
		if k := u.Over.Kind; k != "" && k != workload.KindSeries && k != workload.KindTrace {
			v.bad(p+".users.kind", "must be series or trace (a number of users over time), got %q", k)
		}
	case u.Count < 0 || u.Count > maxCount:
		v.bad(p+".users", "must be in [1, %d], got %d", maxCount, u.Count)
	}
	if s.Arrivals.Kind != "" {
		v.bad(p+".arrivals", "must be unset for closed-loop users (users sets the load)")
	}
	if s.Think.Dist == "" {
		v.bad(p+".think", "must be set: users need a think time (Locust's wait_time), or a user whose requests fail at once would spin")
	} else if err := s.Think.Validate(p + ".think"); err != nil {
		v.errs = append(v.errs, err)
	}
	switch {
	case s.Class != "" && len(s.Visit) > 0:
		v.bad(p+".visit", "cannot be combined with class (a visit of one class is the class)")
	case s.Class == "" && len(s.Visit) == 0:
		v.bad(p+".class", "must name the class of the users' requests (or set visit)")
	case s.Class != "" && !classes[s.Class]:
		v.bad(p+".class", "unknown class %q", s.Class)
	}
	for j, name := range s.Visit {
		if !classes[name] {
			v.bad(fmt.Sprintf("%s.visit[%d]", p, j), "unknown class %q", name)
		}
	}
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
func validateCall(v *validator, c *Call, path string, services, optional map[string]bool, onPath []string) {
	if !services[c.Service] {
		v.bad(path+".service", "unknown service %q", c.Service)
	} else if slices.Contains(onPath, c.Service) {
		v.bad(path+".service", "call graph has a cycle: %s -> %s", strings.Join(onPath, " -> "), c.Service)
		return
	}
	if len(onPath) > 0 && optional[c.Service] && !c.Optional {
		v.bad(path+".optional", "must be true: service %q is optional (brownout can skip it)", c.Service)
	}
	if c.Route != nil {
		validateRoute(v, c.Route, path+".route")
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
			validateCall(v, &st.Calls[j], fmt.Sprintf("%s.calls[%d]", sp, j), services, optional, onPath)
		}
	}
}

// validateCallLBs checks the explicit LB points calls name: each must be
// in front of the call's service, and a root call's is its source's.
func (c *Config) validateCallLBs(v *validator, call *Call, path string, root bool) {
	if call.LB != "" {
		i := slices.IndexFunc(c.LBs, func(l LBPoint) bool { return l.Name == call.LB })
		switch {
		case root:
			v.bad(path+".lb", "a request enters through its source's lb: set sources[].lb instead")
		case i < 0:
			v.bad(path+".lb", "unknown lb %q", call.LB)
		case c.LBs[i].Service != call.Service:
			v.bad(path+".lb", "lb %q is in front of %s, not %s", call.LB, c.LBs[i].Service, call.Service)
		}
	}
	for i := range call.Stages {
		for j := range call.Stages[i].Calls {
			c.validateCallLBs(v, &call.Stages[i].Calls[j], fmt.Sprintf("%s.stages[%d].calls[%d]", path, i, j), false)
		}
	}
}

// maxRetries bounds a route's retries.
const maxRetries = 100

func validateRoute(v *validator, r *Route, p string) {
	if r.Timeout < 0 {
		v.bad(p+".timeout", "must be >= 0 (0: none), got %v", r.Timeout)
	}
	if r.PerTryTimeout < 0 {
		v.bad(p+".per_try_timeout", "must be >= 0 (0: none), got %v", r.PerTryTimeout)
	} else if r.Timeout > 0 && r.PerTryTimeout > r.Timeout {
		v.bad(p+".per_try_timeout", "must be at most timeout (%v), got %v", r.Timeout, r.PerTryTimeout)
	}
	if r.Retries < 0 || r.Retries > maxRetries {
		v.bad(p+".retries", "must be in [0, %d], got %d", maxRetries, r.Retries)
	}
	if len(r.RetryOn) > 0 && r.Retries == 0 {
		v.bad(p+".retry_on", "not used without retries")
	}
	for j, name := range r.RetryOn {
		if _, ok := retryKinds[name]; !ok {
			v.bad(fmt.Sprintf("%s.retry_on[%d]", p, j), "must be one of timeout, 429, oom, no_capacity, shed, got %q", name)
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

// share checks a fraction in [0, 1).
func (v *validator) share(path string, x float64) {
	if !(x >= 0 && x < 1) {
		v.bad(path, "must be in [0, 1), got %g", x)
	}
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

// validateSpeedChange checks a change of one instance's speed.
func (c *Config) validateSpeedChange(v *validator, p string, ch *Change) {
	if ch.Replicas != nil {
		v.bad(p+".replicas", "a change sets replicas or an instance's speed, not both")
	}
	if ch.Speed == nil || !(*ch.Speed > 0) {
		v.bad(p+".speed", "an instance's change must set speed > 0")
	}
	if s := c.service(ch.Service); s != nil {
		if n := max(len(s.Instances), s.Replicas, 1); *ch.Instance < 0 || *ch.Instance >= n {
			v.bad(p+".instance", "must be an initial instance of %s, 0 to %d, got %d", ch.Service, n-1, *ch.Instance)
		}
	}
}

// validateRandomChanges checks the ranges of random changes.
func (c *Config) validateRandomChanges(v *validator, r *RandomChanges) {
	const p = "random_changes"
	if r.Every <= 0 {
		v.bad(p+".every", "must be > 0, got %v", r.Every)
	}
	if len(r.RTT) != 0 && (len(r.RTT) != 2 || r.RTT[0] < 0 || r.RTT[1] < r.RTT[0]) {
		v.bad(p+".rtt", "must be [min, max] with 0 <= min <= max, got %v", r.RTT)
	}
	if len(r.Background) != 0 && (len(r.Background) != 2 || !(r.Background[0] >= 0 && r.Background[1] >= r.Background[0] && r.Background[1] < 1)) {
		v.bad(p+".background", "must be [min, max] with 0 <= min <= max < 1, got %v", r.Background)
	}
	if len(r.Services) > 0 && (len(r.Replicas) != 2 || r.Replicas[0] < 0 || r.Replicas[1] < r.Replicas[0]) {
		v.bad(p+".replicas", "must be [min, max] with 0 <= min <= max, got %v", r.Replicas)
	}
	if len(r.Drift) > 0 && (len(r.Speed) != 2 || !(r.Speed[0] > 0 && r.Speed[1] >= r.Speed[0])) {
		v.bad(p+".speed", "must be [min, max] with 0 < min <= max, got %v", r.Speed)
	}
	for i, name := range r.Drift {
		if c.service(name) == nil {
			v.bad(fmt.Sprintf("%s.drift[%d]", p, i), "unknown service %q", name)
		}
	}
	for i, name := range r.Services {
		if !c.placed(name) {
			v.bad(fmt.Sprintf("%s.services[%d]", p, i), "%q is not a placed service", name)
		}
	}
}
