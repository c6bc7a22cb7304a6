package cluster

import (
	"slices"
	"strconv"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/sim/ps"
)

// service is the run-time state of a Service.
type service struct {
	cl   *Cluster
	idx  int
	name string
	cfg  *Service
	loc  int32

	cpuLimit, memLimit  float64
	memBase, memPerCall float64
	concurrency         int
	queueLimit          int
	brownout            bool
	route               route
	minReplicas         int
	maxReplicas         int

	activator *activator // nil: calls that find no ready instance are refused

	probeCPU    float64 // CPU work of answering a probe
	loadReports bool    // an LB point reads the instances' load: keep it

	slots  []*instance // backends, by LB slot; nil = free slot
	lb     *lbPoint    // the implicit LB point
	lbs    []*lbPoint  // every LB point in front of the service
	nextID int

	period        metrics.ServiceStats // counters of the current period
	goneBusy      float64              // busy core-seconds this period of instances now gone
	goneCFS       [2]int64             // CFS periods and throttled periods this period of instances now gone
	allocCPU      metrics.TimeAverage  // cores allocated
	allocMem      metrics.TimeAverage  // MB allocated
	costShown     float64              // cost already reported
	observed      serviceTotals        // counters of the periods Observe has closed
	goneBusyTotal float64              // busy core-seconds of instances now gone, since the start
}

// activator is an Activator's run-time state: its FIFO of held calls.
type activator struct {
	capacity int
	timeout  time.Duration
	held     []*call
}

// route is a Route resolved: retryOn has bit 1<<kind for each retried
// failure kind.
type route struct {
	timeout, perTry time.Duration
	retries         int
	retryOn         uint8
}

// retryKinds are the names of the failure kinds retry_on accepts.
var retryKinds = map[string]uint8{"timeout": failTimeout, "429": failRejected, "oom": failOOM, "no_capacity": failNoCapacity, "shed": failShed}

func (r *Route) resolve() route {
	out := route{timeout: r.Timeout, perTry: r.PerTryTimeout, retries: r.Retries, retryOn: 1<<failNoCapacity | 1<<failShed}
	if len(r.RetryOn) > 0 {
		out.retryOn = 0
		for _, name := range r.RetryOn {
			out.retryOn |= 1 << retryKinds[name]
		}
	}
	return out
}

// lbPoint is a load balancer in front of a service with its own view.
type lbPoint struct {
	name  string
	svc   *service
	loc   int32
	sel   lb.Selector
	view  lb.View
	stats []metrics.BackendStats // per slot, current period
	fb    lb.Feedback            // optional: a learning agent's view of its own traffic

	prober  lb.Prober       // optional: a selector that probes the instances
	lf      lb.LoadFeedback // optional: a selector that reads piggybacked load
	targets []int           // scratch: the probes of one decision

	adm *admission // optional: the explicit LB point's admission (nil: none)
}

// EstimateCompletion implements lb.Estimator with perfect knowledge.
func (p *lbPoint) EstimateCompletion(j int, r lb.Request) float64 {
	return p.svc.slots[j].estimateCompletion(r.CPU, r.IO)
}

// allocated reports whether an instance in state st holds resources.
func allocated(st int) bool { return st != stPending && st != stGone }

// newInstance creates an instance from spec (zero fields take the service's
// values) in a free slot; ready says whether it starts without a cold start.
func (s *service) newInstance(spec InstanceSpec, ready bool) *instance {
	c := s.cfg
	spec = c.Resolve(spec, s.cpuLimit)
	in := &instance{
		svc:      s,
		id:       s.nextID,
		loc:      s.loc,
		state:    stPending,
		cpuLimit: spec.CPU,
		speed:    spec.Speed,
		ioSpeed:  spec.IOSpeed,
		weight:   spec.Weight,
	}
	in.name = s.name + "-" + strconv.Itoa(in.id)
	s.nextID++
	now := s.cl.k.Now()
	in.cpu = ps.Scheduled[*call]{Queue: ps.New[*call](in.cpuLimit, in.cpuSpeed(), now), Event: simEvent(in, evCPU)}
	in.ioDelay = c.IOParallelism == 0
	in.io = ps.Scheduled[*call]{Queue: ps.New[*call](float64(c.IOParallelism), in.ioSpeed, now), Event: simEvent(in, evIO)}
	if s.cl.opt.Unobserved {
		in.cpu.SkipThrottling() // only a snapshot reads them
	}
	in.readyEv = simEvent(in, evReady)

	in.slot = slices.Index(s.slots, nil)
	if in.slot < 0 {
		in.slot = len(s.slots)
		s.slots = append(s.slots, nil)
		for _, p := range s.lbs {
			p.view.InFlight = append(p.view.InFlight, 0)
			p.view.Weights = append(p.view.Weights, 0)
			p.view.Up = append(p.view.Up, false)
			p.view.Names = append(p.view.Names, "")
			p.stats = append(p.stats, metrics.BackendStats{})
			if p.adm != nil {
				p.adm.ready = append(p.adm.ready, false)
			}
		}
	}
	s.slots[in.slot] = in
	for _, p := range s.lbs {
		p.view.Weights[in.slot] = in.weight
		p.view.InFlight[in.slot] = 0
		p.view.Names[in.slot] = in.name
		p.view.Version++
	}
	s.place(in, ready)
	return in
}

// place puts a pending instance on a node, starting it, if there is room.
func (s *service) place(in *instance, ready bool) bool {
	n, ok := s.cl.nodeFor(in.loc, in.cpuLimit, s.memLimit)
	if !ok {
		return false
	}
	in.node = n
	if ready || s.cfg.ColdStart == 0 {
		s.setState(in, stReady)
	} else {
		s.setState(in, stStarting)
		s.cl.k.After(&in.readyEv, s.cfg.ColdStart)
	}
	return true
}

// setState moves an instance through its lifecycle, keeping the LB views,
// allocation integrals and node usage in step.
func (s *service) setState(in *instance, st int) {
	now := s.cl.k.Now()
	was := in.state
	if allocated(was) != allocated(st) {
		sign := 1.0
		if !allocated(st) {
			sign = -1
		}
		s.allocCPU.Add(now, sign*in.cpuLimit)
		s.allocMem.Add(now, sign*s.memLimit)
	}
	in.state = st
	up := st == stReady
	for _, p := range s.lbs {
		if p.adm != nil {
			p.setReady(in.slot, up)
		} else if p.view.Up[in.slot] != up {
			p.view.Up[in.slot] = up
			p.view.Version++
		}
	}
	switch st {
	case stRestarting:
		d := s.cfg.OOMRestart
		if d == 0 {
			d = 5 * time.Second
		}
		s.cl.k.After(&in.readyEv, d)
	case stReady:
		for _, p := range s.lbs {
			if p.adm != nil {
				s.cl.admitWaiting(p)
			}
		}
		if a := s.activator; a != nil {
			s.cl.releaseHeld(s)
		}
	case stGone:
		s.cl.k.Cancel(&in.readyEv)
		if n := in.node; n != nil {
			n.usedCPU -= in.cpuLimit
			n.usedMemory -= s.memLimit
			in.node = nil
		}
		// Keep its busy time of the period for Observe.
		s.goneBusy += in.cpu.BusyUntil(now) - in.busyObs
		p, th := in.cpu.Throttling(now)
		s.goneCFS[0] += p - in.cfsObs[0]
		s.goneCFS[1] += th - in.cfsObs[1]
		s.goneBusyTotal += in.cpu.BusyUntil(now)
		s.slots[in.slot] = nil
		for _, p := range s.lbs {
			p.view.Weights[in.slot] = 0
			p.view.InFlight[in.slot] = 0 // responses still on their way no longer count
		}
		s.cl.placePending()
	}
	if was == stReady && st != stReady {
		// A hashing selector sends the keys of a backend no longer ready
		// to others: calls that waited for it may have room there.
		for _, p := range s.lbs {
			if p.adm != nil && p.adm.hashing {
				s.cl.admitWaiting(p)
			}
		}
	}
}

// replicas counts instances that are not terminating or gone.
func (s *service) replicas() (n, ready int) {
	for _, in := range s.slots {
		if in == nil || in.state == stTerminating {
			continue
		}
		n++
		if in.state == stReady {
			ready++
		}
	}
	return n, ready
}

// setReplicas scales to n instances: new ones take the service's values (not
// per-instance overrides) and cold-start; removed ones are the least advanced
// (pending, then starting or restarting, then the least busy ready) and
// drain before they go.
func (s *service) setReplicas(n int) {
	cur, _ := s.replicas()
	for ; cur < n; cur++ {
		s.newInstance(InstanceSpec{}, false)
	}
	for ; cur > n; cur-- {
		var victim *instance
		for _, in := range s.slots {
			if in == nil || in.state == stTerminating {
				continue
			}
			if victim == nil || rank(in) < rank(victim) {
				victim = in
			}
		}
		switch victim.state {
		case stPending, stStarting, stRestarting:
			s.setState(victim, stGone)
		default:
			s.setState(victim, stTerminating)
			victim.maybeGone()
		}
	}
}

// rank orders instances for removal: lower goes first.
func rank(in *instance) int {
	switch in.state {
	case stPending:
		return 0
	case stStarting, stRestarting:
		return 1
	}
	return 2 + in.admitted + in.queued() + in.transit
}

// placePending starts instances that were waiting for room on a node.
func (cl *Cluster) placePending() {
	if len(cl.nodes) == 0 {
		return
	}
	for _, s := range cl.services {
		for _, in := range s.slots {
			if in != nil && in.state == stPending {
				s.place(in, false)
			}
		}
	}
}

func or(x, def float64) float64 {
	if x == 0 {
		return def
	}
	return x
}
