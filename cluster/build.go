package cluster

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/sim"
	"github.com/shoal-project/shoal/workload"
)

func simEvent(h sim.Handler, arg int) sim.Event { return sim.Event{Handler: h, Arg: arg} }

// New builds a cluster from a configuration, which it validates first.
func New(cfg *Config, opt Options) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	placed := cfg
	cfg = expandPlacements(cfg)
	if opt.Horizon <= 0 {
		return nil, fmt.Errorf("cluster: horizon must be > 0, got %v", opt.Horizon)
	}
	if opt.SamplePeriod <= 0 {
		opt.SamplePeriod = time.Second
	}
	if opt.Policy == "" {
		opt.Policy = "rr"
	}
	if opt.Selectors == nil {
		opt.Selectors = lb.Classical()
	}
	if opt.Traces == nil {
		opt.Traces = workload.NewTraces("")
	}
	streams := sim.NewStreams(opt.Seed)
	cl := &Cluster{opt: opt, svcByName: map[string]*service{}, lbByName: map[string]*lbPoint{}, prices: cfg.Prices, slo: cfg.SLO, selectorParams: cfg.SelectorParams,
		retryRng: streams.Stream("retries"), routeRng: streams.Stream("routes"), telemetry: telemetry{rng: streams.Stream("telemetry")},
		groups: map[string]*routeGroup{}, edgeByKey: map[string]int32{}}
	if cl.prices == (Prices{}) {
		cl.prices = DefaultPrices()
	}
	cl.buildLocations(cfg)
	for _, n := range cfg.Nodes {
		for i := 0; i < max(n.Count, 1); i++ {
			name := n.Name
			if n.Count > 1 {
				name = fmt.Sprintf("%s-%d", n.Name, i)
			}
			cl.nodes = append(cl.nodes, &node{name: name, loc: cl.locOrFirst(n.Location), cpu: n.CPU, memory: n.MemoryMB})
		}
	}
	for i := range cfg.Services {
		sc := &cfg.Services[i]
		s := &service{
			cl: cl, idx: i, name: sc.Name, cfg: sc, loc: cl.locOrFirst(sc.Location),
			cpuLimit: or(sc.CPU, 1), memLimit: sc.MemoryMB, memBase: sc.MemoryBaseMB, memPerCall: sc.MemoryPerCallMB,
			concurrency: sc.Concurrency, queueLimit: sc.Queue, minReplicas: sc.MinReplicas, maxReplicas: sc.MaxReplicas,
			route: sc.Route.resolve(), probeCPU: or(sc.ProbeCPU, 0.0001),
		}
		if a := sc.Activator; a != nil {
			s.activator = &activator{capacity: a.Capacity, timeout: a.Timeout}
			if s.activator.capacity == 0 {
				s.activator.capacity = 10000
			}
			if s.activator.timeout == 0 {
				s.activator.timeout = 5 * time.Minute
			}
		}
		s.period.Name = sc.Name
		cl.services = append(cl.services, s)
		cl.svcByName[sc.Name] = s
		sel := sc.Selector
		if sel == "" {
			sel = "rr"
		}
		p, err := cl.newLB(sc.Name+"/implicit", s, s.loc, sel, streams)
		if err != nil {
			return nil, fmt.Errorf("services[%d].selector: %w", i, err)
		}
		s.lb = p
	}
	cl.buildGroups(placed)
	for i, lc := range cfg.LBs {
		s := cl.svcByName[lc.Service]
		p, err := cl.newLB(lc.Name, s, cl.locOrFirst(lc.Location), opt.Policy, streams)
		if err != nil {
			return nil, fmt.Errorf("lbs[%d]: policy %q: %w", i, opt.Policy, err)
		}
		if lc.Admission != nil {
			p.adm = newAdmission(*lc.Admission, lb.Hashing(opt.Policy))
		}
		cl.lbs = append(cl.lbs, p)
		cl.lbByName[lc.Name] = p
	}
	for _, s := range cl.services { // C3's n: the explicit LB points, else the implicit one
		for _, p := range s.lbs {
			if sh, ok := p.sel.(lb.Shared); ok {
				sh.SetClients(max(1, len(s.lbs)-1))
			}
		}
	}
	for i := range cfg.Classes {
		c, err := cl.buildClass(&cfg.Classes[i], fmt.Sprintf("classes[%d]", i))
		if err != nil {
			return nil, err
		}
		cl.classes = append(cl.classes, c)
	}
	// Instances after every LB point exists, so each view has every slot.
	for _, s := range cl.services {
		if len(s.cfg.Instances) > 0 {
			for _, spec := range s.cfg.Instances {
				s.newInstance(spec, true)
			}
		} else {
			for r := 0; r < max(s.cfg.Replicas, 1); r++ {
				s.newInstance(InstanceSpec{}, true)
			}
		}
	}
	changes := cfg.Changes
	if r := cfg.RandomChanges; r != nil {
		changes = append(slices.Clone(changes), r.Draw(placed, opt.Horizon)...)
	}
	cl.scheduleChanges(changes)
	if err := cl.buildSources(cfg, streams); err != nil {
		return nil, err
	}
	cl.res.Classes = make([]ClassResult, len(cl.classes))
	if err := cl.chooseSeries(); err != nil {
		return nil, err
	}
	cl.sampler.start(cl)
	return cl, nil
}

func (cl *Cluster) buildLocations(cfg *Config) {
	if len(cfg.Locations) == 0 {
		cl.locNames = []string{"local"}
		cl.rtt = [][]time.Duration{{0}}
		cl.background = []float64{0}
		return
	}
	n := len(cfg.Locations)
	cl.rtt = make([][]time.Duration, n)
	cl.background = make([]float64, n)
	for i, l := range cfg.Locations {
		cl.locNames = append(cl.locNames, l.Name)
		cl.rtt[i] = make([]time.Duration, n)
		cl.background[i] = l.Background
	}
	for i, l := range cfg.Locations {
		for other, d := range l.RTT {
			j := cl.locIndex(other)
			cl.rtt[i][j], cl.rtt[j][i] = d, d
		}
	}
}

func (cl *Cluster) locOrFirst(name string) int32 {
	if name == "" {
		return 0
	}
	return cl.locIndex(name)
}

func (cl *Cluster) newLB(name string, s *service, loc int32, policy string, streams sim.Streams) (*lbPoint, error) {
	p := &lbPoint{name: name, svc: s, loc: loc}
	params := cl.selectorParams[policy]
	if policy == cl.opt.Policy && len(cl.opt.Params) > 0 {
		params = maps.Clone(params)
		if params == nil {
			params = lb.Params{}
		}
		maps.Copy(params, cl.opt.Params)
	}
	sel, err := cl.opt.Selectors.New(policy, lb.Deps{Rand: streams.Stream("lb/" + name), Est: p, Params: params})
	if err != nil {
		return nil, err
	}
	p.sel = sel
	cl.hashing = cl.hashing || lb.Hashing(policy)
	p.fb, _ = sel.(lb.Feedback) // a selector that learns from responses (SetFeedback adds to it)
	p.prober, _ = sel.(lb.Prober)
	p.lf, _ = sel.(lb.LoadFeedback)
	if p.prober != nil || p.lf != nil {
		s.loadReports = true
	}
	s.lbs = append(s.lbs, p)
	return p, nil
}

func (cl *Cluster) buildClass(c *Class, path string) (*class, error) {
	root, err := cl.buildCall(&c.Call, "", path+".call")
	if err != nil {
		return nil, err
	}
	slo := c.SLO
	if slo == 0 {
		slo = cl.slo
	}
	return &class{name: c.Name, timeout: c.Timeout, slo: slo, root: root, period: metrics.ClassStats{Name: c.Name}}, nil
}

// buildCall builds the call c of the service named caller ("" for a root).
func (cl *Cluster) buildCall(c *Call, caller, path string) (*callNode, error) {
	n := &callNode{svc: cl.svcByName[c.Service], phases: int32(max(c.Phases, 1)), prob: or(c.Prob, 1), optional: c.Optional,
		edge: cl.edgeIndex(caller, c.Service)}
	if g := cl.groups[c.Service]; g != nil {
		n.svc, n.group = g.first(), g
	}
	n.lb = cl.lbByName[c.LB]
	n.route = n.svc.route
	if c.Route != nil {
		n.route = c.Route.resolve()
	}
	var err error
	if c.CPU.Dist != "" {
		if n.cpu, err = c.CPU.BuildWith(cl.opt.Traces); err != nil {
			return nil, fmt.Errorf("%s.cpu: %w", path, err)
		}
	}
	if c.IO.Dist != "" {
		if n.io, err = c.IO.BuildWith(cl.opt.Traces); err != nil {
			return nil, fmt.Errorf("%s.io: %w", path, err)
		}
	}
	for i := range c.Stages {
		st := &c.Stages[i]
		sn := stageNode{choice: st.Choice}
		for j := range st.Calls {
			child, err := cl.buildCall(&st.Calls[j], c.Service, fmt.Sprintf("%s.stages[%d].calls[%d]", path, i, j))
			if err != nil {
				return nil, err
			}
			sn.calls = append(sn.calls, child)
			sn.probSum += child.prob
		}
		n.stages = append(n.stages, sn)
	}
	return n, nil
}

func (cl *Cluster) buildSources(cfg *Config, streams sim.Streams) error {
	classes := map[string]*class{}
	for _, c := range cl.classes {
		classes[c.name] = c
	}
	for i := range cfg.Sources {
		sc := &cfg.Sources[i]
		path := fmt.Sprintf("sources[%d]", i)
		src := &source{cl: cl, name: sc.Name, class: classes[sc.Class], idx: i}
		src.ev = simEvent(src, 0)
		if sc.LB != "" {
			src.lb = cl.lbByName[sc.LB]
			src.loc = src.lb.loc
		}
		if sc.Location != "" {
			src.loc = cl.locIndex(sc.Location)
		}
		cl.sources = append(cl.sources, src)
		if sc.Users.IsSet() {
			if err := src.buildUsers(sc, classes, streams.Stream("source/"+sc.Name+"/users")); err != nil {
				return fmt.Errorf("%s.%w", path, err)
			}
			continue
		}
		var rate float64
		if i < len(cl.opt.Rates) {
			rate = cl.opt.Rates[i]
		}
		proc, err := sc.Arrivals.BuildWith(rate, cl.opt.Traces)
		if err != nil {
			return fmt.Errorf("%s.arrivals: %w", path, err)
		}
		src.proc = proc
		src.arrRng = streams.Stream("source/" + sc.Name + "/arrivals")
		src.reqRng = streams.Stream("source/" + sc.Name + "/requests")
		src.keyRng = streams.Stream("source/" + sc.Name + "/sessions")
		src.sessions = sc.Sessions
		if first, ok := proc.Next(0, src.arrRng); ok && first < cl.opt.Horizon {
			cl.k.Schedule(&src.ev, first)
		}
	}
	return nil
}

// buildUsers makes a closed-loop source's users, each with its own stream
// seeded from st, and starts the ones the level includes at time 0.
func (s *source) buildUsers(sc *Source, classes map[string]*class, st *rand.Rand) error {
	visit := sc.Visit
	if len(visit) == 0 {
		visit = []string{sc.Class}
	}
	for _, name := range visit {
		s.visit = append(s.visit, classes[name])
	}
	d, err := sc.Think.BuildWith(s.cl.opt.Traces)
	if err != nil {
		return fmt.Errorf("think: %w", err)
	}
	if !(d.Mean() > 0) {
		return fmt.Errorf("think: mean must be > 0, got %g", d.Mean())
	}
	s.think = d
	n := sc.Users.Count
	if sc.Users.Over != nil {
		p, err := sc.Users.Over.BuildWith(0, s.cl.opt.Traces)
		if err != nil {
			return fmt.Errorf("users: %w", err)
		}
		var ok bool
		if s.level, ok = p.(*workload.SeriesReplay); !ok {
			return fmt.Errorf("users: must be a rate series (kind series, or a trace of rates), got recorded instants")
		}
		n = int(math.Round(s.level.Peak()))
	}
	s.users = make([]*user, n)
	for k := range s.users {
		u := &user{src: s, idx: k, idle: true}
		u.pcg.Seed(st.Uint64(), st.Uint64())
		u.rng = rand.New(&u.pcg)
		u.ev = simEvent(u, 0)
		s.users[k] = u
	}
	if s.level != nil {
		s.setLevel(0)
		return nil
	}
	s.active = n
	for _, u := range s.users {
		u.idle = false
		u.done(0)
	}
	return nil
}

func (cl *Cluster) chooseSeries() error {
	switch {
	case cl.opt.Series != "":
		cl.series = cl.svcByName[cl.opt.Series]
		if cl.series == nil {
			return fmt.Errorf("cluster: series: unknown service %q", cl.opt.Series)
		}
	case len(cl.lbs) > 0:
		cl.series = cl.lbs[0].svc
	case len(cl.classes) > 0:
		cl.series = cl.classes[0].root.svc
	}
	if cl.series == nil && len(cl.services) > 0 {
		cl.series = cl.services[0]
	}
	if cl.series == nil {
		return fmt.Errorf("cluster: no service to observe: the configuration has no services")
	}
	return nil
}
