package cluster

import (
	"math/rand/v2"
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
	if ch.Service != "" && ch.Instance != nil {
		s := cl.svcByName[ch.Service]
		for _, in := range s.slots {
			if in != nil && in.id == *ch.Instance {
				in.speed = *ch.Speed
				in.cpu.Resize(&cl.k, in.cpuLimit, in.cpuSpeed())
			}
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
				in.cpu.Resize(&cl.k, in.cpuLimit, in.cpuSpeed())
			}
		}
	}
}

// Draw returns the changes r makes up to horizon, for the locations and
// placed services of cfg, in time order.
func (r *RandomChanges) Draw(cfg *Config, horizon time.Duration) []Change {
	rng := rand.New(rand.NewPCG(r.Seed, 0x6d756c7469636c64)) // "multicld"
	var out []Change
	for at := r.Every; at <= horizon; at += r.Every {
		for i, l := range cfg.Locations {
			ch := Change{At: at, Location: l.Name}
			if len(r.RTT) == 2 {
				ch.RTT = map[string]time.Duration{}
				for _, o := range cfg.Locations[i+1:] {
					ch.RTT[o.Name] = r.RTT[0] + time.Duration(rng.Int64N(int64(r.RTT[1]-r.RTT[0])+1)).Round(time.Millisecond)
				}
			}
			if len(r.Background) == 2 {
				b := r.Background[0] + rng.Float64()*(r.Background[1]-r.Background[0])
				ch.Background = &b
			}
			out = append(out, ch)
		}
		for _, name := range r.Drift {
			s := cfg.service(name)
			specs := s.Instances
			if len(specs) == 0 {
				specs = make([]InstanceSpec, max(s.Replicas, 1))
			}
			for i, spec := range specs {
				speed := s.Resolve(spec, or(s.CPU, 1)).Speed * (r.Speed[0] + rng.Float64()*(r.Speed[1]-r.Speed[0]))
				out = append(out, Change{At: at, Service: name, Instance: &i, Speed: &speed})
			}
		}
		for _, name := range r.Services {
			for _, l := range cfg.Locations {
				if !cfg.placedIn(name, l.Name) {
					continue
				}
				n := r.Replicas[0] + rng.IntN(r.Replicas[1]-r.Replicas[0]+1)
				out = append(out, Change{At: at, Service: name + "@" + l.Name, Replicas: &n})
			}
		}
	}
	return out
}
