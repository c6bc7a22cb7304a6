package drpcenv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/control/autoscale"
	"github.com/shoal-project/shoal/control/drpc"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/scenario"
)

// Baseline runs one of the scenario's autoscaler policies (a registry
// name: "hpa", "hpa:target=45") on the episodes Validate runs (drawn from
// cfg.Arrivals with the selection seeds, never a training or evaluation
// seed), deciding every control period of the scenario as shoal sim does,
// and returns their mean cost (vCPUs with memory at its price, measured
// each decision period as a training episode measures it) and SLO
// violations. With "hpa" it is what --budget-cpu hpa states: the bill of
// the scenario's HPA on the training workloads.
func Baseline(ctx context.Context, sc *scenario.Scenario, policy string, cfg Config) (Episode, error) {
	cfg = withDefaults(cfg, sc)
	deps, err := Deployments(sc, cfg.Period)
	if err != nil {
		return Episode{}, err
	}
	world := *sc // static:scale=2 starts from other replicas
	c, err := sc.ConfigFor(policy)
	if err != nil {
		return Episode{}, fmt.Errorf("drpcenv: %w", err)
	}
	world.Config = *c
	gb := gbInCPU(sc)
	step := sc.ControlPeriod
	if step <= 0 || cfg.Period%step != 0 {
		step = cfg.Period
	}
	var v Episode
	n := float64(cfg.ValidationEpisodes)
	for k := range cfg.ValidationEpisodes {
		ctls, err := sc.Autoscalers(policy)
		if err != nil {
			return Episode{}, fmt.Errorf("drpcenv: %w", err)
		}
		seed, spec := selectionEpisode(cfg, k)
		w, err := newWorld(&world, spec, seed, cfg)
		if err != nil {
			return Episode{}, err
		}
		var snap metrics.Snapshot
		var cost float64
		periods := int(cfg.EpisodeLength / cfg.Period)
		for now := time.Duration(0); now <= time.Duration(periods+1)*cfg.Period; now += step {
			if err := ctx.Err(); err != nil {
				return Episode{}, err
			}
			w.cl.RunUntil(now)
			w.cl.Observe(&snap)
			if now >= 2*cfg.Period && now%cfg.Period == 0 { // as run() counts: after each of its periods
				cost += allocated(&snap, deps, gb)
			}
			for _, c := range ctls {
				for _, a := range c.Decide(now, &snap) {
					if err := w.cl.Apply(now, a); err != nil {
						return Episode{}, fmt.Errorf("drpcenv: %w", err)
					}
				}
			}
		}
		w.cl.Drain(time.Minute)
		v.Cost += cost / float64(periods) / n
		v.SLOViolations += sloViolations(w.cl.Results()) / n
	}
	v.Phase = policy
	return v, nil
}

// allocated is the deployments' resources in the snapshot, in vCPUs.
func allocated(snap *metrics.Snapshot, deps []drpc.Deployment, gbInCPU float64) float64 {
	var c float64
	for i := range snap.Services {
		s := &snap.Services[i]
		for _, d := range deps {
			if d.Name == s.Name {
				c += drpc.Allocated(s, gbInCPU)
				break
			}
		}
	}
	return c
}

// Select returns the index of the policy, of several trained with
// different seeds, that does best on episodes selection episodes drawn
// from arrivals, the training's (nil: the default), as Beats judges under
// the budget (Validate's), and each one's
// validation: choosing the seed without an evaluation seed's help.
func Select(ctx context.Context, sc *scenario.Scenario, pols []*drpc.Policy, budget float64, episodes int, arrivals func(*rand.Rand) Traffic) (int, []Episode, error) {
	vs := make([]Episode, len(pols))
	best := 0
	for i, pol := range pols {
		v, err := Validate(ctx, sc, pol, Config{ValidationEpisodes: episodes, Arrivals: arrivals})
		if err != nil {
			return 0, nil, err
		}
		vs[i] = v
		if i > 0 && Beats(v, vs[best], budget) {
			best = i
		}
	}
	return best, vs, nil
}

// HPATarget is the CPU utilisation target (percent) of the scenario's HPA,
// the one a policy acts over by default (drpc.OverHPA). Every autoscaled
// service's HPA must aim at the same CPU target.
func HPATarget(sc *scenario.Scenario) (float64, error) {
	ctls, err := sc.Autoscalers("hpa")
	if err != nil {
		return 0, fmt.Errorf("drpcenv: %w", err)
	}
	target := 0.0
	for _, c := range ctls {
		h, ok := c.(*autoscale.HPA)
		if !ok {
			continue
		}
		for _, m := range h.Config().Metrics {
			switch {
			case m.Kind != autoscale.MetricCPU:
				return 0, fmt.Errorf("the HPA of %s scales on %s, not CPU: give a CPU target", h.Config().Service, m.Kind)
			case target != 0 && m.Target != target:
				return 0, fmt.Errorf("the scenario's HPAs aim at %g%% and %g%% CPU: give one target", target, m.Target)
			}
			target = m.Target
		}
	}
	if target == 0 {
		return 0, fmt.Errorf("scenario %s has no HPA", sc.Name)
	}
	return target, nil
}
