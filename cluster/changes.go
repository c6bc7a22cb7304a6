package cluster

import (
	"time"

	"github.com/shoal-project/shoal/sim"
)

// changeEvent is a Change scheduled on the kernel.
type changeEvent struct {
	cl *Cluster
	ch *Change
	ev sim.Event
}

// scheduleChanges schedules the configuration's changes that fall within
// the horizon.
func (cl *Cluster) scheduleChanges(changes []Change) {
	cl.changeEvs = make([]changeEvent, len(changes))
	for i := range changes {
		ce := &cl.changeEvs[i]
		ce.cl, ce.ch = cl, &changes[i]
		ce.ev = simEvent(ce, 0)
		if ce.ch.At <= cl.opt.Horizon {
			cl.k.Schedule(&ce.ev, ce.ch.At)
		}
	}
}

// Handle implements sim.Handler: the change happens.
func (ce *changeEvent) Handle(now time.Duration, _ int) {
	cl, ch := ce.cl, ce.ch
	if ch.Location != "" {
		i := cl.locIndex(ch.Location)
		for other, d := range ch.RTT {
			j := cl.locIndex(other)
			cl.rtt[i][j], cl.rtt[j][i] = d, d
		}
		if ch.Background != nil {
			cl.setBackground(i, *ch.Background)
		}
	}
	if ch.Service != "" && ch.Replicas != nil {
		s := cl.svcByName[ch.Service]
		if cur, _ := s.replicas(); cur != *ch.Replicas {
			s.setReplicas(*ch.Replicas)
			cl.recordScale(now, s)
		}
	}
}

// setBackground sets the share of location loc's CPU that other tenants
// take, slowing every instance there.
func (cl *Cluster) setBackground(loc int32, share float64) {
	cl.background[loc] = share
	for _, s := range cl.services {
		if s.loc != loc {
			continue
		}
		for _, in := range s.slots {
			if in != nil {
				in.cpu.setCapacity(&cl.k, in.cpuLimit, in.cpuSpeed())
			}
		}
	}
}
