// Package multicloudenv trains the multi-cloud routing paper's performance
// models (multicloud-routing-bo.txt, section III-A): it collects the
// offline data set in the simulator (random replicas, RTTs, background
// loads and request rates, and random request shifts of every routed
// service), measures the standard processing times, and fits each
// service's SVR and neural network.
package multicloudenv

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/control"
	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/control/multicloud"
	"github.com/shoal-project/shoal/metrics"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/workload"
)

// Sample is one service's measured period: the model's input and the
// measured mean response time, ms.
type Sample struct {
	X []float64
	Y float64
}

// Data are samples by service name, in the topology's order.
type Data struct {
	Services []string
	Samples  map[string][]Sample
}

// Collection configures a data collection run.
type Collection struct {
	Seed uint64
	// Periods is the number of measurement periods (each gives one sample
	// per routed service that was called).
	Periods int
	// Period is the measurement period (10 s: the paper's Prometheus
	// scrape interval, II-B).
	Period time.Duration
	// Settle is the wait after each route update before the period's
	// measurement starts (II-C: "controller has to wait for 10 seconds to
	// guarantee that metrics are accurate after route update").
	Settle time.Duration
	// Hold is how many periods an environment setting holds before the
	// next random one.
	Hold int
	// Random is true for the offline data set: random rates per cloud
	// (uniform up to twice each source's mean) and random changes of every
	// routed service's replicas (within the scenario's range), RTTs and
	// background loads, with the collection's seed. False keeps the
	// scenario's own workload and changes (its online test settings).
	Random bool
}

// DefaultCollection is the paper's offline data set: 2500 periods.
func DefaultCollection() Collection {
	return Collection{Seed: 1, Periods: 2500, Period: 10 * time.Second, Settle: 10 * time.Second, Hold: 3, Random: true}
}

// Collect runs the scenario period by period with a random request shift
// for every routed service in every period and returns the samples, with
// standard the services' standard processing times (nil: zeros).
func Collect(ctx context.Context, sc *scenario.Scenario, c Collection, standard map[string][]float64, progress func(float64)) (*Data, error) {
	cfg := sc.Config
	step := c.Settle + c.Period
	horizon := time.Duration(c.Periods) * step
	if c.Random {
		cfg = randomised(sc, c, horizon)
	}
	cl, err := cluster.New(&cfg, cluster.Options{Seed: c.Seed, Selectors: lb.Classical(), Traces: sc.Traces(), Horizon: horizon + step})
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x7368696674)) // "shift"
	var snap metrics.Snapshot
	cl.Observe(&snap)
	topo, err := multicloud.ReadTopology(&snap)
	if err != nil {
		return nil, err
	}
	data := &Data{Samples: map[string][]Sample{}}
	for _, s := range topo.Services {
		data.Services = append(data.Services, s.Name)
	}
	shifts := make([][]float64, len(topo.Services))
	var st multicloud.State
	for p := range c.Periods {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		now := time.Duration(p) * step
		var acts []control.Action
		for i := range topo.Services {
			svc := &topo.Services[i]
			shifts[i] = randomShift(shifts[i], len(topo.Locations), rng)
			acts = topo.Actions(acts, svc, multicloud.Weights(nil, shifts[i], svc))
		}
		for _, a := range acts {
			if err := cl.Apply(now, a); err != nil {
				return nil, err
			}
		}
		cl.RunUntil(now + c.Settle)
		cl.Observe(&snap)
		cl.RunUntil(now + step)
		cl.Observe(&snap)
		for i := range topo.Services {
			svc := &topo.Services[i]
			topo.Observe(&st, &snap, svc)
			if math.IsNaN(st.SelfTime) {
				continue
			}
			std := standard[svc.Name]
			if std == nil {
				std = make([]float64, len(multicloud.StandardRPS))
			}
			data.Samples[svc.Name] = append(data.Samples[svc.Name], Sample{X: multicloud.Features(nil, &st, std, shifts[i]), Y: st.SelfTime})
		}
		if progress != nil {
			progress(float64(p+1) / float64(c.Periods))
		}
	}
	return data, nil
}

func randomShift(dst []float64, n int, rng *rand.Rand) []float64 {
	dst = slices.Grow(dst[:0], multicloud.Pairs(n))[:multicloud.Pairs(n)]
	for k := range dst {
		dst[k] = 2*rng.Float64() - 1
	}
	return dst
}

// randomised returns the scenario's system with the offline data set's
// random environment: each location's users at a rate uniform in [0, twice
// their mean], redrawn every Hold periods (every source of a location at
// the same rate, as the paper's load generator issues all request types
// at once), and random changes of every routed service's replicas, the
// RTTs and the background loads at the same pace.
func randomised(sc *scenario.Scenario, c Collection, horizon time.Duration) cluster.Config {
	cfg := sc.Config
	rng := rand.New(rand.NewPCG(c.Seed, 0x6c6f6164)) // "load"
	step := time.Duration(c.Hold) * (c.Settle + c.Period)
	steps := int(horizon/step) + 1
	byLoc := map[string][]float64{}
	cfg.Sources = slices.Clone(cfg.Sources)
	for i := range cfg.Sources {
		src := &cfg.Sources[i]
		rates, ok := byLoc[src.Location]
		if !ok {
			rates = make([]float64, steps)
			for k := range rates {
				rates[k] = rng.Float64()
			}
			byLoc[src.Location] = rates
		}
		peak := 2 * src.Arrivals.Rate
		scaled := make([]float64, steps)
		for k, u := range rates {
			scaled[k] = u * peak
		}
		src.Arrivals = workload.ProcessSpec{Kind: workload.KindSeries, Step: step, Rates: scaled}
	}
	rc := cluster.RandomChanges{Every: step, Seed: c.Seed, RTT: []time.Duration{10 * time.Millisecond, 40 * time.Millisecond},
		Replicas: []int{1, 3}, Background: []float64{0, 0.4}}
	if r := sc.RandomChanges; r != nil {
		if len(r.RTT) == 2 {
			rc.RTT = r.RTT
		}
		if len(r.Replicas) == 2 {
			rc.Replicas = r.Replicas
		}
		if len(r.Background) == 2 {
			rc.Background = r.Background
		}
	}
	for _, s := range cfg.Services {
		if len(s.Placement) > 0 {
			rc.Services = append(rc.Services, s.Name)
		}
	}
	cfg.RandomChanges = &rc
	cfg.Changes = nil
	return cfg
}

// Standard measures the standard processing times (III-A: "collected under
// the environment where only one cloud is available and all replicas are
// set to one"): every call stays in the first location, whose users send
// each of multicloud.StandardRPS (scaled so that 50 is twice a source's
// mean rate: the offline data's top), with no other users, changes or
// background load; each service's mean response time, ms, over window.
func Standard(ctx context.Context, sc *scenario.Scenario, seed uint64, window time.Duration) (map[string][]float64, error) {
	out := map[string][]float64{}
	first := sc.Locations[0].Name
	for _, rps := range multicloud.StandardRPS {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cfg := sc.Config
		cfg.RandomChanges, cfg.Changes = nil, nil
		cfg.Locations = slices.Clone(cfg.Locations)
		for i := range cfg.Locations {
			cfg.Locations[i].Background = 0
		}
		cfg.Sources = slices.Clone(cfg.Sources)
		rates := make([]float64, len(cfg.Sources))
		for i := range cfg.Sources {
			src := &cfg.Sources[i]
			if src.Location == first {
				rates[i] = rps / 50 * 2 * src.Arrivals.Rate
			}
			src.Arrivals = workload.ProcessSpec{Kind: "poisson", Rate: math.Max(rates[i], 1e-9)}
		}
		cl, err := cluster.New(&cfg, cluster.Options{Seed: seed, Selectors: lb.Classical(), Traces: sc.Traces(), Horizon: window})
		if err != nil {
			return nil, err
		}
		var snap metrics.Snapshot
		cl.Observe(&snap)
		topo, err := multicloud.ReadTopology(&snap)
		if err != nil {
			return nil, err
		}
		for i := range topo.Services {
			svc := &topo.Services[i]
			for _, a := range topo.Actions(nil, svc, toFirst(len(topo.Locations))) {
				if err := cl.Apply(0, a); err != nil {
					return nil, err
				}
			}
		}
		cl.RunUntil(window)
		cl.Observe(&snap)
		var st multicloud.State
		for i := range topo.Services {
			svc := &topo.Services[i]
			topo.Observe(&st, &snap, svc)
			if math.IsNaN(st.SelfTime) {
				return nil, fmt.Errorf("standard processing time of %s at %g req/s: no call completed", svc.Name, rps)
			}
			out[svc.Name] = append(out[svc.Name], st.SelfTime)
		}
	}
	return out, nil
}

// toFirst routes every call to the first location.
func toFirst(n int) [][]float64 {
	w := make([][]float64, n)
	for i := range w {
		w[i] = make([]float64, n)
		w[i][0] = 1
	}
	return w
}
