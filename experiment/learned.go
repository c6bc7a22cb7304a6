package experiment

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/store"
)

// Learned is a policy driven by controllers: every LB point runs a
// data-plane selector, and controllers decide every control period (for
// example Distr-LB agents setting the weights of argmin (q+1)/a).
type Learned struct {
	// Selector is the data-plane selector every LB point runs.
	Selector string
	// Factory, if set, builds Selector (a selector that runs a trained
	// policy, not one of the registry's).
	Factory lb.Factory
	// New builds one run's controllers and connects them to the cluster.
	New func(cl *cluster.Cluster) ([]control.Controller, error)
	// Period, if set, is the control period of these controllers instead
	// of the scenario's (a trained policy observes periods of the length it
	// was trained with).
	Period time.Duration
	// Write writes the trained policy's file, whose hash the run store
	// keeps (nil for a built-in policy). It is called only when a
	// comparison is recorded.
	Write func(io.Writer) error
}

// policyHash is the hash of the bytes write gives: a trained policy's
// file, as the run store identifies it.
func policyHash(write func(io.Writer) error) string {
	var b bytes.Buffer
	if err := write(&b); err != nil {
		return ""
	}
	return store.Hash(b.Bytes())
}

// DRPCPolicy runs a trained DRPC policy: its students decide for the
// scenario's autoscaled services, with the scenario's HPA as the fallback
// for deployments whose inputs leave the trained range.
func DRPCPolicy(p *drpc.Policy, sc *scenario.Scenario) Learned {
	return drpcLearned(p, sc, drpc.Options{})
}

// DRPCWorld is what the scenario says of its services, to check a DRPC
// policy against (drpc.Policy.Fit).
func DRPCWorld(sc *scenario.Scenario) []drpc.Service {
	world := make([]drpc.Service, len(sc.Services))
	for i, s := range sc.Services {
		world[i] = drpc.Service{Name: s.Name, Optional: s.Optional, MinReplicas: s.MinReplicas, MaxReplicas: s.MaxReplicas,
			CPU: cmp.Or(s.CPU, 1), MemoryMB: s.MemoryMB}
	}
	return world
}

// LBPolicy runs a trained load-balancing policy: fresh agents per run, each
// fed by its LB points, over the "sed" data plane (argmin (q+1)/a with the
// agents' weights, paper Alg. 2 line 12).
func LBPolicy(p *lb.Policy) Learned {
	return Learned{Selector: "sed", Write: p.Write, New: func(cl *cluster.Cluster) ([]control.Controller, error) {
		var ctls []control.Controller
		for _, a := range p.NewAgents() {
			for k, name := range a.LBs() {
				if err := cl.SetFeedback(name, a.Feedback(k)); err != nil {
					return nil, fmt.Errorf("policy for %v: %w", a.LBs(), err)
				}
			}
			ctls = append(ctls, a)
		}
		return ctls, nil
	}}
}

// LBHybrid runs a trained Distr-LB policy over Shoal's probing data plane
// (lb.ProbingSED): the agents' weights divide the load the backends report
// (on their responses and to probes), instead of this LB point's own
// in-flight counts.
func LBHybrid(p *lb.Policy) Learned {
	l := LBPolicy(p)
	l.Selector = "probing-sed"
	return l
}

// LBGeneral runs a general Distr-LB policy (lb.GeneralPolicy): every LB
// point's selector is probing-sed with the policy's corrections, and no
// controller runs beside it.
func LBGeneral(p *lb.GeneralPolicy) Learned {
	return Learned{Selector: lb.GeneralName, Factory: p.Selector, Write: p.Write,
		New: func(*cluster.Cluster) ([]control.Controller, error) { return nil, nil }}
}

// controlLoop returns a run function that advances the cluster one control
// period at a time: at every period boundary each controller sees the
// telemetry of the period and its actions are applied, from time 0 on. An
// action the cluster refuses is counted (Results.Refused) and skipped: it
// never ends the run, as a real cluster's refusal would not stop its
// controllers.
func controlLoop(cl *cluster.Cluster, ctls []control.Controller, period time.Duration) func(until time.Duration) error {
	var snap metrics.Snapshot
	next := cl.Now()
	return func(until time.Duration) error {
		for next <= until {
			cl.RunUntil(next)
			cl.Observe(&snap)
			for _, c := range ctls {
				for _, a := range c.Decide(next, &snap) {
					if err := cl.Apply(next, a); err != nil {
						cl.Refuse(err)
					}
				}
			}
			next += period
		}
		cl.RunUntil(until)
		return nil
	}
}
