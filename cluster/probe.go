package cluster

import (
	"time"

	"github.com/shoal-project/shoal/control/lb"
)

// Load probes (Prequal) and load piggybacked on responses (C3): what an
// instance knows of itself, and the messages that carry it. A probe is a
// call object marked probe: it travels half the RTT to its instance, costs
// it Service.ProbeCPU of processor-shared CPU, and its answer travels back;
// a probe to an instance that is not serving is lost, as a refused
// connection would be.

// sendProbes sends the probes p's selector asks for after a decision at now,
// from the caller's location.
func (cl *Cluster) sendProbes(p *lbPoint, from int32, now time.Duration) {
	p.targets = p.prober.ProbeTargets(now, &p.view, p.targets[:0])
	for _, j := range p.targets {
		in := p.svc.slots[j]
		if in == nil {
			continue
		}
		if now >= cl.opt.Warmup {
			cl.res.Probes++
		}
		c := cl.newCall()
		c.probe, c.lbp, c.slot, c.inst, c.from = true, p, int32(j), in, from
		if !cl.travel(c, in, from) {
			in.probed(c)
		}
	}
}

// probed takes probe c at its instance: the answer is the load now; the
// CPU it costs delays it.
func (in *instance) probed(c *call) {
	if in.state != stReady && in.state != stTerminating {
		in.svc.cl.freeCall(c)
		return
	}
	rif := in.rifNow()
	c.load = lb.Load{RIF: rif, Latency: in.latency.Estimate(rif)}
	if w := in.svc.probeCPU; w > 0 {
		c.at = atCPU
		in.cpu.Admit(in.k(), &c.ps, w)
		return
	}
	in.answerProbe(c)
}

// answerProbe sends probe c's answer back to its LB point.
func (in *instance) answerProbe(c *call) {
	c.at = atNone
	if cl := in.svc.cl; !cl.travelBack(c, in) {
		cl.probeAnswered(c)
	}
}

// probeAnswered hands probe c's answer to its LB point's selector, unless
// its slot went to another instance meanwhile.
func (cl *Cluster) probeAnswered(c *call) {
	p := c.lbp
	if p.svc.slots[c.slot] == c.inst {
		p.prober.Probed(cl.k.Now(), int(c.slot), c.load)
	}
	cl.freeCall(c)
}

// rifNow is the instance's requests in flight: in service or waiting.
func (in *instance) rifNow() int32 { return int32(in.admitted + in.queued()) }
