// Package autothrottleenv warms the Autothrottle-like baseline
// (control/autothrottle) up in the simulator, as the authors' release warms
// its Tower up before the measured runs (evaluation.py, §A.7): the
// services' two clusters from a run at constant limits (k-means on mean CPU
// use, §A.3), then episodes of the exploring Tower (each action drawn among
// the least tried and held two minutes, the second a sample), then episodes
// of the Tower exploring a neighbour half the time. The workloads are
// DRPC's training ones (drpcenv.Surges), never an evaluation's.
package autothrottleenv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/autothrottle"
	"github.com/shoal-project/shoal/envs/drpcenv"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/workload"
)

// Config sets a warm-up. Zero fields take DefaultConfig's.
type Config struct {
	Seed uint64
	// ExploreEpisodes run the exploring Tower and GreedyEpisodes the Tower
	// exploring with chance GreedyExplore, each EpisodeLength long (the
	// release: six hours of each).
	ExploreEpisodes, GreedyEpisodes int
	GreedyExplore                   float64
	EpisodeLength                   time.Duration
	Arrivals                        func(rng *rand.Rand) workload.ProcessSpec
	Tower                           autothrottle.TowerConfig
	// Progress, if set, is called after every episode with its index, the
	// samples so far and the episode's SLO violations.
	Progress func(episode, samples int, violations float64)
}

// DefaultConfig is six hours of each phase in 20-minute episodes (the
// training workloads' length), the release's Tower aiming at the
// scenario's SLO as the p99.
func DefaultConfig(sc *scenario.Scenario) Config {
	tw := autothrottle.DefaultTower()
	tw.SLO = sc.SLO.Seconds()
	return Config{ExploreEpisodes: 18, GreedyEpisodes: 18, GreedyExplore: 0.5, EpisodeLength: 20 * time.Minute,
		Arrivals: drpcenv.Surges(sc), Tower: tw}
}

// Train warms a Tower up on the scenario's managed services.
func Train(ctx context.Context, sc *scenario.Scenario, cfg Config) (*autothrottle.Policy, error) {
	if len(sc.ManagedServices()) == 0 {
		return nil, fmt.Errorf("autothrottleenv: %s autoscales no service", sc.Name)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x7a7))
	use, err := meanUse(ctx, sc, cfg, rng)
	if err != nil {
		return nil, err
	}
	p := &autothrottle.Policy{Format: autothrottle.PolicyFormat, Version: 1, Scenario: sc.Name, Clusters: autothrottle.Clusters(use),
		Tower: cfg.Tower, Seed: cfg.Seed}
	for ep := range cfg.ExploreEpisodes + cfg.GreedyEpisodes {
		explore := cfg.GreedyExplore
		c := autothrottle.NewController(p, explore, rng.Uint64())
		if ep < cfg.ExploreEpisodes {
			c.Tower().ExploreLeastTried()
		}
		v, err := episode(ctx, sc, cfg, rng, c)
		if err != nil {
			return nil, err
		}
		p.Samples = c.Tower().Samples
		if cfg.Progress != nil {
			cfg.Progress(ep+1, len(p.Samples), v)
		}
	}
	return p, nil
}

// meanUse runs an episode at the scenario's own limits and replicas and
// returns each managed service's mean CPU use.
func meanUse(ctx context.Context, sc *scenario.Scenario, cfg Config, rng *rand.Rand) (map[string]float64, error) {
	use := map[string]float64{}
	for _, name := range sc.ManagedServices() {
		use[name] = 0
	}
	rec := recorder(func(snap *metrics.Snapshot) {
		for i := range snap.Services {
			if _, ok := use[snap.Services[i].Name]; ok {
				use[snap.Services[i].Name] += snap.Services[i].CPUUse * snap.Period.Seconds() / cfg.EpisodeLength.Seconds()
			}
		}
	})
	if _, err := episode(ctx, sc, cfg, rng, rec); err != nil {
		return nil, err
	}
	return use, nil
}

// recorder is a controller that only watches.
type recorder func(*metrics.Snapshot)

func (r recorder) Decide(_ time.Duration, snap *metrics.Snapshot) []control.Action {
	r(snap)
	return nil
}

// episode runs one training workload under the controller, deciding every
// control period of the scenario, and returns its SLO violations.
func episode(ctx context.Context, sc *scenario.Scenario, cfg Config, rng *rand.Rand, ctl control.Controller) (float64, error) {
	spec := cfg.Arrivals(rng)
	cl, err := drpcenv.EpisodeCluster(sc, drpcenv.Traffic{Total: spec}, rng.Uint64()|1<<63, cfg.EpisodeLength)
	if err != nil {
		return 0, fmt.Errorf("autothrottleenv: %w", err)
	}
	var snap metrics.Snapshot
	for now := sc.ControlPeriod; now <= cfg.EpisodeLength; now += sc.ControlPeriod {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		cl.RunUntil(now)
		cl.Observe(&snap)
		for _, a := range ctl.Decide(now, &snap) {
			if err := cl.Apply(now, a); err != nil {
				cl.Refuse(err)
			}
		}
	}
	cl.Drain(time.Minute)
	r := cl.Results()
	if n := r.SLOArrivals(); n > 0 {
		return float64(r.SLOViolations()) / float64(n), nil
	}
	return 0, nil
}
