package drpc

import (
	"fmt"
	"math"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/autoscale"
	"github.com/shoal-project/shoal/metrics"
)

// OverHPA makes a policy act over the Kubernetes HPA instead of in its
// place (not in the DRPC paper; issue 48's "acting over a tuned HPA"):
// every deployment keeps an HPA on CPU utilisation, upstream's algorithm
// (control/autoscale), and the network's replicas component a, instead of
// adding replicas, moves that HPA's target to Target x 2^(-Range x a), at
// most Cap: a positive action asks for more replicas by lowering the
// target. CPU, memory and brownout stay the network's. An action of 0 (an
// untrained network, a deployment outside the trained range) is the HPA at
// Target.
type OverHPA struct {
	Target float64 `json:"target"` // percent CPU utilisation
	Range  float64 `json:"range"`  // log2 of the largest factor the target moves by
	// Cap is the highest target the policy may move to (0: 95%, or
	// Target if higher). At Target, the policy never has fewer replicas
	// than the HPA would: it only adds capacity.
	Cap float64 `json:"cap,omitempty"`
}

// validate checks the setting.
func (o *OverHPA) validate() error {
	switch {
	case !(o.Target >= 1 && o.Target <= 1000):
		return fmt.Errorf("over_hpa.target: %v is not a CPU utilisation in [1, 1000] %%", o.Target)
	case !(o.Range >= 0 && o.Range <= 4):
		return fmt.Errorf("over_hpa.range: %v is not in [0, 4]", o.Range)
	case o.Cap != 0 && !(o.Cap >= o.Target && o.Cap <= 1000):
		return fmt.Errorf("over_hpa.cap: %v is not a CPU target from over_hpa.target (%v) to 1000 %%", o.Cap, o.Target)
	}
	return nil
}

// maxTarget bounds the targets a policy moves to by default: a pod's CPU
// utilisation cannot pass 100% of a request equal to its limit, so an HPA
// aiming higher would never scale up.
const maxTarget = 95

// target is the HPA target for replicas action a.
func (o *OverHPA) target(a float64) float64 {
	ceiling := o.Cap
	if ceiling == 0 {
		ceiling = math.Max(o.Target, maxTarget)
	}
	return math.Min(o.Target*math.Exp2(-o.Range*clip(a, -1, 1)), ceiling)
}

// HPAs are the HPAs a policy with OverHPA acts through, one per
// deployment. Training and the run-time controller both use them.
type HPAs struct {
	over *OverHPA
	hpas []*autoscale.HPA
	acts []control.Action
}

// NewHPAs returns the HPAs of p's deployments at p.OverHPA.Target, or nil
// when the policy does not act over the HPA.
func (p *Policy) NewHPAs() (*HPAs, error) {
	if p.OverHPA == nil {
		return nil, nil
	}
	h := &HPAs{over: p.OverHPA, hpas: make([]*autoscale.HPA, len(p.Deployments))}
	for i, d := range p.Deployments {
		var err error
		h.hpas[i], err = autoscale.NewHPA(autoscale.HPAConfig{Service: d.Name, MinReplicas: max(d.MinReplicas, 1), MaxReplicas: d.MaxReplicas,
			Metrics: []autoscale.HPAMetric{{Kind: autoscale.MetricCPU, Target: p.OverHPA.Target}}})
		if err != nil {
			return nil, fmt.Errorf("deployments[%d]: %w", i, err)
		}
	}
	return h, nil
}

// Steer sets deployment i's HPA target from action a and takes the
// replicas component out of a: the HPA scales.
func (h *HPAs) Steer(i int, a []float64) {
	h.hpas[i].SetTarget(0, h.over.target(a[aReplicas]))
	a[aReplicas] = 0
}

// AtTarget puts deployment i's HPA back at the policy's own target, as
// an action of 0 does: for a deployment the policy does not decide.
func (h *HPAs) AtTarget(i int) { h.hpas[i].SetTarget(0, h.over.Target) }

// Decide runs every HPA on the period's snapshot (each keeps its own
// history and syncs on its own clock) and appends their replica changes
// to dst. A browned-out deployment's HPA sees no load and scales it down
// to its minimum, which leaving brownout needs ready.
func (h *HPAs) Decide(dst []control.Action, now time.Duration, snap *metrics.Snapshot) []control.Action {
	for _, hpa := range h.hpas {
		dst = append(dst, hpa.Decide(now, snap)...)
	}
	return dst
}
